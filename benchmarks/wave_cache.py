"""Where a sidecar wave's time goes on a repeated toolset, with and without its prefix cache.

The embedded sidecar (its preset's wave) on the six business tools of ``business_tools.py``,
all six offered on every request, as an agent offers its tools: ``--requests`` single-turn
requests, then ``--sessions`` two-turn conversations (the first request, its gold call and the
tool's result, then another request). Four sidecars over one model, each request run on all
four in turn (after one warm-up wave on other tools):

* ``cold``             — the preset's layout (``dialogue-first``), no prefix cache;
* ``cache``            — the same, with the prefix cache;
* ``tools-first cold`` — the ``tools-first`` layout, no prefix cache;
* ``tools-first``      — the ``tools-first`` layout with the prefix cache.

The embedded adapter was trained on ``dialogue-first`` rows: the ``tools-first`` rows time the
layout, their answers are not what a sidecar trained on it would give. For each sidecar it
prints the mean wave time and its split (``box.usage``: shared-prompt prefill, tool choice,
argument rows, the rest), the shared-prompt tokens served from the cache and run, each row's
own tokens, and whether the cache changed any answer (each layout against its cold sidecar).

    nice -n 10 python benchmarks/wave_cache.py --threads 1
    python benchmarks/wave_cache.py --requests 4 --sessions 2 --json out.json
    python benchmarks/wave_cache.py --profile cache   # cProfile of that sidecar's waves
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from business_tools import REQUESTS, TOOLS

SIDECARS = ("cold", "cache", "tools-first cold", "tools-first")


@dataclass
class Row:
    """One sidecar's waves: times (s), tokens and answers."""

    wave_s: list[float] = field(default_factory=list)
    prefill_s: list[float] = field(default_factory=list)
    choice_s: list[float] = field(default_factory=list)
    rows_s: list[float] = field(default_factory=list)
    cached_tokens: list[int] = field(default_factory=list)
    prefill_tokens: list[int] = field(default_factory=list)
    row_tokens: list[int] = field(default_factory=list)
    answers: list[dict[str, str]] = field(default_factory=list)

    def add(self, wave_s: float, box: Any, report: Any) -> None:
        usage = box.usage
        self.wave_s.append(wave_s)
        self.prefill_s.append(usage.prefill_s)
        self.choice_s.append(usage.choice_s)
        self.rows_s.append(usage.rows_s)
        self.cached_tokens.append(usage.cached_tokens)
        self.prefill_tokens.append(usage.prefill_tokens)
        self.row_tokens.append(usage.row_tokens)
        self.answers.append(dict(report.answers))

    def summary(self, first: int = 0) -> dict[str, float]:
        """Means over the waves from ``first`` on."""
        data = {k: v[first:] for k, v in asdict(self).items() if k != "answers"}
        out = {k: round(statistics.fmean(v), 3) if v else 0.0 for k, v in data.items()}
        out["other_s"] = round(
            out["wave_s"] - out["prefill_s"] - out["choice_s"] - out["rows_s"], 3
        )
        out["waves"] = len(data["wave_s"])
        return out


def tool_dicts(tools: list[Any]) -> list[dict[str, Any]]:
    from ooo_agent.tools import Toolset

    return Toolset(tools).to_openai()


def workload(requests: int, sessions: int) -> list[list[dict[str, Any]]]:
    """The conversations: single requests, then two-turn sessions with the gold call and its
    executed result in the history."""
    by_name = {t.name: t for t in TOOLS}
    conversations: list[list[dict[str, Any]]] = [
        [{"role": "user", "content": text}] for text, _, _ in REQUESTS[:requests]
    ]
    for n in range(sessions):
        text, name, gold = REQUESTS[n]
        arguments = {k: v[0] for k, v in gold.items() if v and v[0] != ""}
        result = by_name[name](**arguments)
        follow_up = REQUESTS[(n + 7) % len(REQUESTS)][0]
        conversations.append([
            {"role": "user", "content": text},
            {"role": "assistant", "content": "", "tool_calls": [{
                "id": f"call_{n}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": json.dumps(result)},
            {"role": "user", "content": follow_up},
        ])  # fmt: skip
    return conversations


def sidecars(threads: int, cached: Any = None) -> dict[str, Any]:
    """The four sidecars over one model: ``cached``'s (an ``HFSidecar`` with its prefix
    cache), else the embedded preset's."""
    from ooo_agent.sidecar.hf import HFSidecar

    if cached is None:
        cached = HFSidecar.from_preset("smollm2-135m-sidecar", num_threads=threads)
    options = cached.options
    tools_first = replace(options, layout="tools-first")

    def another(opts: Any, budget: int | None) -> Any:
        return HFSidecar(
            cached.model, cached.tokenizer, num_threads=threads, options=opts,
            prefix_cache_bytes=budget,
        )  # fmt: skip

    return {
        "cold": another(options, 0),
        "cache": cached,
        "tools-first cold": another(tools_first, 0),
        "tools-first": another(tools_first, None),
    }


def run(
    named: dict[str, Any], conversations: list[list[dict[str, Any]]], profile: str | None
) -> tuple[dict[str, Row], cProfile.Profile | None]:
    from ooo_agent.sidecar import HintBox, SidecarRequest

    tools = tool_dicts(TOOLS)
    warm = SidecarRequest([{"role": "user", "content": "hello"}], tool_dicts(TOOLS[:2]))
    for sidecar in named.values():
        sidecar.run_wave_sync(warm, HintBox())
    rows = {name: Row() for name in named}
    profiler = cProfile.Profile() if profile else None
    for messages in conversations:
        for name, sidecar in named.items():
            box = HintBox()
            started = time.perf_counter()
            if profiler is not None and name == profile:
                profiler.enable()
            report = sidecar.run_wave_sync(SidecarRequest(messages, tools, started), box)
            if profiler is not None and name == profile:
                profiler.disable()
            rows[name].add(time.perf_counter() - started, box, report)
    return rows, profiler


def main(argv: list[str] | None = None, *, sidecar: Any = None) -> int:
    """Run the workload (on ``sidecar``'s model and options when given, else the embedded
    preset's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=8, help="single-turn requests (1-16)")
    parser.add_argument("--sessions", type=int, default=4, help="two-turn conversations (0-16)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--profile", choices=SIDECARS, help="cProfile this sidecar's waves")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    conversations = workload(args.requests, args.sessions)
    rows, profiler = run(sidecars(args.threads, sidecar), conversations, args.profile)
    report: dict[str, Any] = {}
    # The first wave fills the cache; the rest are what an agent on this toolset sees.
    for name, row in rows.items():
        report[name] = {"all": row.summary(), "after first": row.summary(first=1)}
    report["cache changed no answer"] = rows["cache"].answers == rows["cold"].answers
    report["tools-first cache changed no answer"] = (
        rows["tools-first"].answers == rows["tools-first cold"].answers
    )
    print(f"{len(conversations)} waves per sidecar ({args.requests} requests, "
          f"{args.sessions} second turns), six tools, {args.threads} thread(s)")  # fmt: skip
    head = ("wave s", "prefill", "choice", "rows", "other", "cached", "run", "row tok")
    print(f"  {'sidecar (after the first wave)':<32}" + "".join(f"{h:>9}" for h in head))
    for name in SIDECARS:
        s = report[name]["after first"]
        cells = [s["wave_s"], s["prefill_s"], s["choice_s"], s["rows_s"], s["other_s"]]
        counts = [s["cached_tokens"], s["prefill_tokens"], s["row_tokens"]]
        print(f"  {name:<32}" + "".join(f"{c:>9.3f}" for c in cells)
              + "".join(f"{c:>9.0f}" for c in counts))  # fmt: skip
    print(f"  cache changed no answer: {report['cache changed no answer']}; tools-first: "
          f"{report['tools-first cache changed no answer']}")  # fmt: skip
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
