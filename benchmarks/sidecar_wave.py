"""How long a sidecar wave takes, and when its parts land, per precision and row schedule.

One process, one loaded sidecar per precision, BFCL requests run one wave at a time (no target
beside it), each configuration over the same requests after one warm-up wave:

* ``wave s``      — request arrival → the wave's last answer;
* ``function s``  — arrival → the predicted function in the hint box (multi-tool requests; a
  single offered tool is known at once and not counted);
* ``first slot s`` — arrival → the first slot value published;
* ``rows``        — rows asked per wave (``function-first`` skips the other tools' rows);
* ``same hint``   — requests whose final hint equals the first configuration's.

    python benchmarks/sidecar_wave.py --categories simple_python,multiple --n 20 \\
        --configs float32:parallel,bfloat16:parallel,bfloat16:function-first
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from ooo_agent.sidecar import HFSidecar, HintBox, SidecarRequest, WaveOptions


class TimedBox(HintBox):
    """A hint box that also notes when the function and the first slot landed."""

    def __init__(self) -> None:
        super().__init__()
        self.function_at: float | None = None
        self.first_slot_at: float | None = None

    def set_function(self, name: str | None, *, from_target: bool = False) -> None:
        if self.function_at is None:
            self.function_at = time.perf_counter()
        super().set_function(name, from_target=from_target)

    def set_slot(self, name: str, value: Any) -> None:
        if self.first_slot_at is None:
            self.first_slot_at = time.perf_counter()
        super().set_slot(name, value)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    from ooo_agent.bench.datasets import load_bfcl

    configs = [tuple(c.split(":")) for c in args.configs.split(",") if c]
    if any(len(c) != 2 for c in configs):
        raise SystemExit("--configs: a comma list of DTYPE:SCHEDULE, e.g. bfloat16:function-first")
    if args.data is not None:
        from ooo_agent.bench.datasets import load_jsonl

        items = load_jsonl(args.data)[: args.n]
    else:
        items = [
            item
            for category in args.categories.split(",")
            for item in load_bfcl(category.strip(), limit=args.n)
        ]
    loaded: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    reference: list[Any] | None = None
    for dtype, schedule in configs:
        if dtype not in loaded:
            loaded[dtype] = _load(args.sidecar, getattr(torch, dtype), args.threads)
        row = _measure(loaded[dtype], schedule, dtype, items, reference)
        hints = row.pop("hints")
        reference = reference if reference is not None else hints
        results.append(row)
        print(json.dumps(row), file=sys.stderr)
    return {"sidecar": args.sidecar, "data": str(args.data or args.categories), "n": args.n,
            "threads": args.threads, "results": results}  # fmt: skip


def _load(spec: str, dtype: Any, threads: int) -> HFSidecar:
    """A sidecar preset, an adapter folder on the embedded base, or a model folder."""
    from ooo_agent.models import PRESETS, ensure_smollm2

    if spec in PRESETS:
        return HFSidecar.from_preset(spec, dtype=dtype, num_threads=threads)
    folder = Path(spec)
    if (folder / "adapter_config.json").is_file():
        return HFSidecar.from_pretrained(ensure_smollm2(), folder, dtype=dtype, num_threads=threads)
    return HFSidecar.from_pretrained(folder, dtype=dtype, num_threads=threads)


def _measure(
    sidecar: Any, schedule: str, dtype: str, items: list[Any], reference: list[Any] | None
) -> dict[str, Any]:
    """One configuration over ``items`` after one warm-up wave; ``hints`` holds its final hints
    (``same_hint`` compares them with ``reference``, or with themselves when it is None)."""
    sidecar.options = WaveOptions(schedule=schedule)  # type: ignore[arg-type]
    warm = items[0]
    sidecar.run_wave_sync(SidecarRequest(warm.messages, warm.tools), HintBox())
    hints, waves, functions, slots, rows = [], [], [], [], []
    for item in items:
        box = TimedBox()
        arrival = time.perf_counter()
        report = sidecar.run_wave_sync(SidecarRequest(item.messages, item.tools, arrival), box)
        waves.append(report.latency_s)
        rows.append(float(len(report.answers)))
        if len(item.tools) > 1 and box.function_at is not None:
            functions.append(box.function_at - arrival)
        if box.first_slot_at is not None:
            slots.append(box.first_slot_at - arrival)
        hints.append((report.hint.function, dict(report.hint.slots)))
    same = sum(a == b for a, b in zip(reference or hints, hints, strict=True))
    return {
        "dtype": dtype,
        "schedule": schedule,
        "requests": len(items),
        "wave_s": _mean(waves),
        "function_s": _mean(functions),
        "first_slot_s": _mean(slots),
        "rows": _mean(rows),
        "same_hint": same,
        "hints": hints,
    }


def _table(report: dict[str, Any]) -> str:
    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [
        "| dtype | schedule | requests | wave s | function s | first slot s | rows | same hint |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['dtype']} | {r['schedule']} | {r['requests']} | {cell(r['wave_s'])} | "
            f"{cell(r['function_s'])} | {cell(r['first_slot_s'])} | {cell(r['rows'])} | "
            f"{r['same_hint']}/{r['requests']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sidecar", default="smollm2-135m-sidecar", help="preset or folder")
    parser.add_argument("--categories", default="simple_python", help="comma list of BFCL categories")
    parser.add_argument("--data", type=Path, default=None, help="a JSONL file of items instead")
    parser.add_argument("--n", type=int, default=20, help="requests per category")
    parser.add_argument("--configs", default="float32:parallel,bfloat16:parallel,bfloat16:function-first")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="JSON report")
    args = parser.parse_args(argv)
    report = run(args)
    print(_table(report))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
