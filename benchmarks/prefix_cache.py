"""Prompt tokens the target's prefix cache saves on interleaved toolsets and sessions.

Three targets over one model, each request run on all three in turn: ``cold``
(``prefix_reuse=False``), ``one-entry`` (a cache of one entry: the single slot the target kept
before its prefix cache) and ``cache`` (the default prefix cache). Two workloads:

* ``toolsets``: the six business tools of ``business_tools.py`` split into two toolsets of
  three, ``--requests`` requests each, alternating A, B, A, B, ...
* ``sessions``: two two-turn conversations, one per toolset, interleaved A1, B1, A2, B2; a
  second turn is the first plus the assistant's call and the tool's result.

For each target and workload it prints the calls, prompt tokens, tokens prefilled and served
from the cache, and the mean latency of a call (``FastToolCaller.call``, from arrival); and
whether every target wrote the same tokens. Latency is wall time on a shared machine: compare
targets within one run only.

    python benchmarks/prefix_cache.py                       # embedded target, toolspec, 1 thread
    python benchmarks/prefix_cache.py --mode vanilla --requests 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from business_tools import REQUESTS, TOOLS

TARGETS = ("cold", "one-entry", "cache")
TOOLSET_A = TOOLS[:3]  # orders, refunds, catalogue
TOOLSET_B = TOOLS[3:]  # calendar, currency, weather


@dataclass
class Row:
    """One target's totals on one workload."""

    calls: int = 0
    prompt_tokens: int = 0
    prefill_tokens: int = 0
    cached_tokens: int = 0
    latency_s: list[float] = field(default_factory=list)
    diverged_at: list[int | None] = field(default_factory=list)
    """Each call's ``stats.cache_diverged_at``: where its best cached entry differed."""
    outputs: list[str] = field(default_factory=list)
    """Each call's raw output text."""

    def add(self, result: Any, latency: float) -> None:
        decode = result.stats.decode
        self.calls += 1
        self.prompt_tokens += decode.prompt_tokens
        self.prefill_tokens += decode.prefill_tokens
        self.cached_tokens += getattr(decode, "cached_tokens", 0)
        self.latency_s.append(latency)
        self.diverged_at.append(getattr(decode, "cache_diverged_at", None))
        self.outputs.append(result.raw_text)

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        del data["outputs"], data["latency_s"]
        data["mean_latency_s"] = round(statistics.fmean(self.latency_s), 3) if self.calls else 0
        return data


def requests_for(tools: list[Any], count: int) -> list[str]:
    """The first ``count`` business requests whose tool is in ``tools``."""
    names = {t.name for t in tools}
    found = [text for text, name, _ in REQUESTS if name in names][:count]
    if len(found) < count:
        raise ValueError(f"only {len(found)} requests for these tools, {count} asked")
    return found


def with_preset_settings(target: Any, **kw: Any) -> Any:
    """Another ``HFTarget`` over ``target``'s model and tokenizer, decoding as it does."""
    from ooo_agent.targets.hf import HFTarget

    return HFTarget(
        target.model,
        target.tokenizer,
        target.format,
        constrain_names=target.constrain_names,
        constrain_json=target.constrain_json,
        constrain_arguments=target.constrain_arguments,
        rules=target.rules,
        decline_below=target.decline_below,
        **kw,
    )


def three_targets(target: Any) -> dict[str, Any]:
    """``cold``, ``one-entry`` and ``cache`` over ``target``'s model (``target`` is ``cache``)."""
    from ooo_agent.decoding.prefix_cache import PrefixCache

    single = with_preset_settings(target)
    single.engine.prefix_cache = PrefixCache(max_entries=1)  # the single slot of old
    return {"cold": with_preset_settings(target, prefix_reuse=False), "one-entry": single,
            "cache": target}  # fmt: skip


async def _call(target: Any, messages: Any, tools: Any, mode: str, row: Row) -> Any:
    from ooo_agent.caller import FastToolCaller

    caller = FastToolCaller(target, mode=mode)
    started = time.perf_counter()
    result = await caller.call(messages, tools, max_new_tokens=96)
    row.add(result, time.perf_counter() - started)
    return result


async def run(targets: dict[str, Any], *, requests: int, mode: str) -> dict[str, Any]:
    """Both workloads on every target, each request on all targets in turn."""
    rows = {work: {name: Row() for name in targets} for work in ("toolsets", "sessions")}
    a, b = requests_for(TOOLSET_A, requests), requests_for(TOOLSET_B, requests)
    for text_a, text_b in zip(a, b, strict=True):
        for text, tools in ((text_a, TOOLSET_A), (text_b, TOOLSET_B)):
            for name, target in targets.items():
                await _call(target, text, tools, mode, rows["toolsets"][name])
    sessions = [(a[-1], TOOLSET_A), (b[-1], TOOLSET_B)]
    for name, target in targets.items():
        histories: list[list[dict[str, Any]]] = []
        for text, tools in sessions:  # turn 1 of A, then of B
            first = await _call(target, text, tools, mode, rows["sessions"][name])
            history = [{"role": "user", "content": text}, first.assistant_message()]
            history += [r.to_message() for r in first.results]
            if not first.results:
                history.append({"role": "user", "content": "Thanks. Anything else?"})
            histories.append(history)
        for history, (_, tools) in zip(histories, sessions, strict=True):  # turn 2 of A, of B
            await _call(target, history, tools, mode, rows["sessions"][name])
    report: dict[str, Any] = {}
    for work, by_target in rows.items():
        outputs = [row.outputs for row in by_target.values()]
        report[work] = {name: row.summary() for name, row in by_target.items()}
        report[work]["identical"] = all(o == outputs[0] for o in outputs)
    return report


def print_report(report: dict[str, Any]) -> None:
    for work, by_target in report.items():
        print(f"{work}: outputs identical across targets: {by_target['identical']}")
        print(f"  {'target':<10} {'calls':>5} {'prompt':>7} {'prefilled':>9} {'cached':>7} "
              f"{'latency':>8}")  # fmt: skip
        for name in TARGETS:
            if name in by_target:
                r = by_target[name]
                print(f"  {name:<10} {r['calls']:>5} {r['prompt_tokens']:>7} "
                      f"{r['prefill_tokens']:>9} {r['cached_tokens']:>7} "
                      f"{r['mean_latency_s']:>7.3f}s")  # fmt: skip


def main(argv: list[str] | None = None, *, target: Any = None) -> int:
    """Run both workloads (on ``target`` when given, else the embedded preset)."""
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3, help="requests per toolset (1-5)")
    parser.add_argument("--mode", default="toolspec", choices=("vanilla", "toolspec"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= 5:
        parser.error("--requests must be between 1 and 5")
    if target is None:
        from ooo_agent.targets.hf import HFTarget

        target = HFTarget.from_preset(num_threads=args.threads)
    report = anyio.run(lambda: run(three_targets(target), requests=args.requests, mode=args.mode))
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
