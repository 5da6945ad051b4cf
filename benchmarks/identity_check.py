"""Prove that a change leaves behaviour unchanged: the same tokens, the same sidecar figures.

``run`` measures a checkout (the ``ooo_agent`` that Python imports) on fixed BFCL items, with
the adapters pinned: ``ooo-agent bench`` in every mode (vanilla, toolspec, ooo; the embedded
target and sidecar, one thread each, no warm-up), then ``ooo-agent eval-sidecar`` on the same
items, labelled with the target's vanilla calls. ``compare`` sets two runs side by side, item
by item and mode by mode, prints the figures and exits 1 on any difference in what the models
wrote (tokens, text, calls, AST verdicts, declines; the sidecar's answers, hints and scores).
Latencies, forward passes and when a hint landed are printed, never compared: they follow the
machine's load.

    # the old tree (e.g. a git worktree of the base commit) and the new one, same adapters:
    PYTHONPATH=OLD/src python benchmarks/identity_check.py run --adapters PINNED --out base
    python benchmarks/identity_check.py run --adapters PINNED --labels base/labels.jsonl --out new
    python benchmarks/identity_check.py compare base new

``--adapters`` is a folder holding ``smollm2-135m-toolcall/`` and ``smollm2-135m-sidecar/``
(``OOO_AGENT_ADAPTERS``): both runs read the same adapter weights whatever ``adapters/`` holds
by then. ``--labels`` reuses the first run's labels so the sidecar is scored on the same input.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MODES = ("vanilla", "toolspec", "ooo")
OUTPUT_FIELDS = (
    "token_ids", "text", "calls", "declined", "ast_ok", "ast_reason", "errors", "failure",
)  # fmt: skip
"""What a mode wrote for a request: compared exactly."""
SIDECAR_FIELDS = ("answers", "hint", "direct")
"""What the sidecar answered for a request: compared exactly (``seconds`` is not)."""
SIDECAR_PRESET = "smollm2-135m-sidecar"


def run(args: argparse.Namespace) -> int:
    """Bench, label and score the sidecar into ``args.out``; the return code of the first
    step that fails, else 0."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.adapters is not None:
        env["OOO_AGENT_ADAPTERS"] = str(args.adapters.resolve())
    python = [sys.executable, "-m", "ooo_agent.cli"]
    bench = [*python, "bench", "--categories", args.categories, "--n", str(args.n),
             "--warmup", "0", "--modes", ",".join(MODES), "--threads", "1",
             "--sidecar-threads", "1", "--out", str(out / "bench")]  # fmt: skip
    if not (args.keep_bench and (out / "bench" / "requests.jsonl").is_file()):
        code = _step(bench, env, out / "bench.log")
        if code:
            return code
    labels = out / "labels.jsonl"
    if args.labels is not None:
        labels.write_text(args.labels.read_text(encoding="utf-8"), encoding="utf-8")
    else:
        write_labels(_records(out / "bench" / "requests.jsonl"), args.categories, args.n, labels)
    sidecar = [*python, "eval-sidecar", "--sidecar", SIDECAR_PRESET, "--requests", str(labels),
               "--value-conventions", "--threads", "1", "--out", str(out / "sidecar.json")]  # fmt: skip
    return _step(sidecar, env, out / "sidecar.log")


def _step(command: list[str], env: Mapping[str, str], log: Path) -> int:
    print("$ " + " ".join(command), file=sys.stderr)
    with log.open("w", encoding="utf-8") as handle:
        code = subprocess.call(command, env=dict(env), stdout=handle, stderr=subprocess.STDOUT)
    if code:
        print(f"failed ({code}); see {log}", file=sys.stderr)
    return code


def write_labels(records: Iterable[Mapping[str, Any]], categories: str, n: int, path: Path) -> None:
    """``eval-sidecar``'s request file: each item with its gold calls and, as the target's
    label, the first call vanilla decoding wrote (none where it wrote none)."""
    from ooo_agent.bench import gold_calls, load_bfcl

    first: dict[str, Any] = {}
    for record in records:
        if record["mode"] == "vanilla" and not record["warmup"]:
            first[record["item_id"]] = (record["calls"] or [None])[0]
    lines = []
    for category in categories.split(","):
        for item in load_bfcl(category.strip(), limit=n):
            if item.id not in first:
                continue
            call = first[item.id]
            lines.append({
                "id": item.id, "source": item.category, "messages": item.messages,
                "tools": item.tools, "answer": "",
                "calls": [{"name": name, "arguments": a} for name, a in gold_calls(item)],
                "target_call": call, "target_text": "",
                "target_problem": "" if call is not None else "no call",
            })  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def compare_bench(base: Path, new: Path) -> tuple[list[str], list[str]]:
    """Figures per mode, and one line per difference in what a mode wrote."""
    old = {(r["item_id"], r["mode"]): r for r in _records(base) if not r["warmup"]}
    now = {(r["item_id"], r["mode"]): r for r in _records(new) if not r["warmup"]}
    differences = [f"{key[0]} {key[1]}: only in the base run" for key in old.keys() - now.keys()]
    differences += [f"{key[0]} {key[1]}: only in the new run" for key in now.keys() - old.keys()]
    by_mode: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for key in sorted(old.keys() & now.keys()):
        a, b = old[key], now[key]
        by_mode[key[1]].append((a, b))
        changed = [f for f in OUTPUT_FIELDS if a.get(f) != b.get(f)]
        if changed:
            differences.append(
                f"{key[0]} {key[1]}: {', '.join(changed)} differ "
                f"({a.get('text', '')!r} -> {b.get('text', '')!r})"
            )
    figures = ["| mode | requests | AST ok | same as vanilla | output differs | "
               "forwards (base -> new) | mean s (base -> new) |",
               "|---|---|---|---|---|---|---|"]  # fmt: skip
    for mode in sorted(by_mode, key=lambda m: MODES.index(m) if m in MODES else len(MODES)):
        pairs = by_mode[mode]
        n = len(pairs)
        ast = [sum(bool(p[i]["ast_ok"]) for p in pairs) for i in (0, 1)]
        same = [sum(p[i]["identical"] is not False for p in pairs) for i in (0, 1)]
        changed = sum(any(a.get(f) != b.get(f) for f in OUTPUT_FIELDS) for a, b in pairs)
        forwards = [sum(p[i]["forward_passes"] for p in pairs) / n for i in (0, 1)]
        seconds = [sum(p[i]["latency_s"] for p in pairs) / n for i in (0, 1)]
        figures.append(
            f"| {mode} | {n} | {ast[0]} -> {ast[1]} | {same[0]} -> {same[1]} | {changed} | "
            f"{forwards[0]:.2f} -> {forwards[1]:.2f} | {seconds[0]:.2f} -> {seconds[1]:.2f} |"
        )
    return figures, differences


def compare_sidecar(base: Path, new: Path) -> tuple[list[str], list[str]]:
    """Each score by label set, and one line per difference in the sidecar's answers."""
    old = json.loads(base.read_text(encoding="utf-8"))
    now = json.loads(new.read_text(encoding="utf-8"))
    figures = ["| labels | score | base | new |", "|---|---|---|---|"]
    differences = []
    for labels in sorted(old["scores"].keys() | now["scores"].keys()):
        a, b = _scores(old["scores"].get(labels)), _scores(now["scores"].get(labels))
        for name in sorted(a.keys() | b.keys()):
            figures.append(f"| {labels} | {name} | {a.get(name, '-')} | {b.get(name, '-')} |")
            if a.get(name) != b.get(name):
                differences.append(
                    f"eval-sidecar vs {labels}: {name} {a.get(name)} -> {b.get(name)}"
                )
    old_p = {p["id"]: p for p in old["predictions"]}
    now_p = {p["id"]: p for p in now["predictions"]}
    if old_p.keys() != now_p.keys():
        differences.append(f"eval-sidecar: requests differ ({len(old_p)} vs {len(now_p)})")
    for rid in sorted(old_p.keys() & now_p.keys()):
        changed = [f for f in SIDECAR_FIELDS if old_p[rid].get(f) != now_p[rid].get(f)]
        if changed:
            differences.append(f"eval-sidecar {rid}: {', '.join(changed)} differ")
    return figures, differences


def _scores(scores: Mapping[str, Any] | None) -> dict[str, str]:
    """A label set's scores as ``name: text``, the timing left out."""
    out = {}
    for name, value in (scores or {}).items():
        if name == "mean_wave_seconds":
            continue
        if isinstance(value, Mapping) and "hits" in value:
            out[name] = f"{value['hits']}/{value['n']}"
        else:
            out[name] = json.dumps(value, sort_keys=True)
    return out


def compare(args: argparse.Namespace) -> int:
    """Print the figures of both runs and every difference; 1 when there is any."""
    figures, differences = compare_bench(
        args.base / "bench" / "requests.jsonl", args.new / "bench" / "requests.jsonl"
    )
    print("ooo-agent bench\n\n" + "\n".join(figures) + "\n")
    if (args.base / "sidecar.json").is_file() or (args.new / "sidecar.json").is_file():
        sidecar_figures, sidecar_differences = compare_sidecar(
            args.base / "sidecar.json", args.new / "sidecar.json"
        )
        print("ooo-agent eval-sidecar\n\n" + "\n".join(sidecar_figures) + "\n")
        differences += sidecar_differences
    for line in differences:
        print("DIFF " + line)
    print(f"{len(differences)} difference(s)" if differences else "identical")
    return 1 if differences else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("run", help="bench and eval-sidecar into a folder")
    measure.add_argument("--out", type=Path, required=True, help="output folder")
    measure.add_argument("--categories", default="simple_python,multiple")
    measure.add_argument("--n", type=int, default=60, help="first N items of each category")
    measure.add_argument("--adapters", type=Path, default=None,
                         help="pinned adapters folder (OOO_AGENT_ADAPTERS)")  # fmt: skip
    measure.add_argument("--labels", type=Path, default=None,
                         help="score the sidecar on this labels.jsonl (an earlier run's)")  # fmt: skip
    measure.add_argument("--keep-bench", action="store_true",
                         help="an OUT/bench run already there is kept (only the sidecar runs)")  # fmt: skip
    check = commands.add_parser("compare", help="compare two run folders; exit 1 on a difference")
    check.add_argument("base", type=Path)
    check.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
