"""How sure the embedded target is that a call is wanted: its first token's probability of
opening one, on requests a tool serves and on requests none does.

For every item of each category, the probability ``HFTarget(decline_below=...)`` reads (the
first token a call in the target's format starts with, after the prompt; the target's own
prompt and format, a prefill and nothing else), then, for each threshold, how many items fall
below it — how many the decline policy would answer without a call::

    python benchmarks/call_probability.py \\
        --categories live_irrelevance:300,live_simple:200,live_multiple:150 --threads 2
    python benchmarks/call_probability.py \\
        --categories irrelevance,simple_python,multiple --threads 2 --out probs.jsonl

The training categories (``live_*``; ``live_irrelevance`` was never in the embedded target's
data) are the set to choose a threshold on; the evaluation ones show what it does there.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

THRESHOLDS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)


def call_probability(target: Any, messages: Sequence[Mapping[str, Any]], tools: Any) -> float:
    """The probability the target's decline policy reads for this request (a one-token
    greedy run with the policy at 0, which never declines)."""
    from ooo_agent.targets.base import TargetRequest

    saved = target.decline_below
    target.decline_below = 0.0
    try:
        request = TargetRequest(messages, tools, mode="vanilla", max_new_tokens=1)
        probability = target.generate_sync(request).stats.call_probability
    finally:
        target.decline_below = saved
    if probability is None:
        raise ValueError("no call probability: the request offers no tools")
    return float(probability)


def table(
    records: Iterable[Mapping[str, Any]], thresholds: Sequence[float] = THRESHOLDS
) -> list[dict[str, Any]]:
    """Per category, in first-seen order: items and, per threshold, how many fall below it."""
    by_category: dict[str, list[float]] = {}
    for record in records:
        by_category.setdefault(str(record["category"]), []).append(float(record["p"]))
    return [
        {"category": category, "n": len(ps), "below": [sum(p < t for p in ps) for t in thresholds]}
        for category, ps in by_category.items()
    ]


def _categories(text: str) -> list[tuple[str, int | None]]:
    """``name[:limit]`` comma-separated."""
    chosen: list[tuple[str, int | None]] = []
    for part in text.split(","):
        name, _, limit = part.strip().partition(":")
        if name:
            chosen.append((name, int(limit) if limit else None))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--categories",
        required=True,
        help="BFCL categories, each optionally with ':N' (its first N items)",
    )
    parser.add_argument("--preset", default="smollm2-135m-toolcall", help="target preset")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=None, help="one JSON line per item")
    args = parser.parse_args(argv)

    from ooo_agent.bench.datasets import load_bfcl
    from ooo_agent.targets.hf import HFTarget

    target = HFTarget.from_preset(args.preset, num_threads=args.threads)
    records: list[dict[str, Any]] = []
    toolless: dict[str, int] = {}
    out = args.out.open("w", encoding="utf-8") if args.out else None
    try:
        for category, limit in _categories(args.categories):
            for item in load_bfcl(category, limit=limit):
                if not item.tools:  # nothing to call: the policy does not apply
                    toolless[category] = toolless.get(category, 0) + 1
                    continue
                p = call_probability(target, item.messages, item.tools)
                record = {"category": category, "id": item.id, "p": round(p, 6)}
                records.append(record)
                if out is not None:
                    out.write(json.dumps(record) + "\n")
                    out.flush()
    finally:
        if out is not None:
            out.close()
    header = ["category", "n", *(f"< {t:g}" for t in THRESHOLDS)]
    print(" | ".join(header))
    for row in table(records):
        print(" | ".join([row["category"], str(row["n"]), *map(str, row["below"])]))
    for category, count in toolless.items():
        print(f"{category}: {count} request(s) offering no tool left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
