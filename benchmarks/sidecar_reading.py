"""Where a sidecar's argument rows miss: where the target read the request right, or wrong.

The sidecar is scored against the target's own calls (``ooo-agent eval-sidecar``), so a row
counts as a hit when it predicts what the target wrote — also where the target wrote a value
BFCL refuses. This splits ``argument exact`` (the same rows, the same comparison) by what the
target's value was:

- ``target right``: the target called the gold tool and its value (or its leaving the
  argument out) passes BFCL's check on its own (``ooo_agent.bench.ast_check.argument_ok``) —
  the rows a sidecar that reads the request as the target did gets right;
- ``target wrong``: the gold tool, but a value BFCL refuses — to match it, a sidecar must make
  the target's mistake;
- ``target's tool not gold``: the target called another tool.

    ooo-agent eval-sidecar --sidecar smollm2-135m-sidecar --requests m200-labels.jsonl \\
        --no-direct --value-conventions --out sc-m200.json
    python benchmarks/sidecar_reading.py --report sc-m200.json --labels m200-labels.jsonl \\
        --category multiple

The label file is an ``eval_target --labels-out`` file of a BFCL category (its ids are the
category's), the report ``eval-sidecar``'s JSON for it with target labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ooo_agent.bench.ast_check import argument_ok
from ooo_agent.bench.datasets import BenchItem
from ooo_agent.sidecar.rows import tool_signatures

# eval-sidecar's own parsing and comparison (``1`` equals ``1.0``; not-JSON equals nothing)
from ooo_agent.train._sidecar_metrics import _same_value, _value

GROUPS = ("target right", "target wrong", "target's tool not gold")


def rows(
    predictions: Iterable[Mapping[str, Any]],
    labels: Mapping[str, Mapping[str, Any]],
    items: Mapping[str, BenchItem],
) -> list[tuple[str, str, str, bool]]:
    """``(id, param, group, hit)`` for each argument row of the target's tool that was asked."""
    out = []
    for prediction in predictions:
        label = labels.get(prediction["id"])
        item = items.get(prediction["id"])
        if label is None or item is None or not label.get("target_call"):
            continue
        name, arguments = label["target_call"]["name"], label["target_call"]["arguments"]
        signatures = tool_signatures(label["tools"])
        index = next((i for i, (n, _) in enumerate(signatures) if n == name), None)
        if index is None:
            continue
        for param in signatures[index][1]:
            answer = prediction["answers"].get(f"{index}.{param}")
            if answer is None:
                continue  # not asked
            hit = _same_value(_value(answer), arguments.get(param))
            ok = argument_ok(item, name, param, arguments)
            group = GROUPS[2] if ok is None else GROUPS[0] if ok else GROUPS[1]
            out.append((prediction["id"], param, group, hit))
    return out


def summary(found: Iterable[tuple[str, str, str, bool]]) -> dict[str, dict[str, int]]:
    """Hits and rows per group, and over all rows."""
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for _, _, group, hit in found:
        for key in (group, "all"):
            totals[key] += 1
            hits[key] += hit
    return {key: {"hits": hits[key], "n": totals[key]} for key in (*GROUPS, "all") if totals[key]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, required=True, help="eval-sidecar JSON report")
    parser.add_argument("--labels", type=Path, required=True, help="eval_target label file")
    parser.add_argument("--category", required=True, help="the labels' BFCL category")
    args = parser.parse_args(argv)

    from ooo_agent.bench.datasets import load_bfcl

    report = json.loads(args.report.read_text(encoding="utf-8"))
    with args.labels.open(encoding="utf-8") as handle:
        labels = {row["id"]: row for row in map(json.loads, handle)}
    items = {item.id: item for item in load_bfcl(args.category)}
    table = summary(rows(report["predictions"], labels, items))
    for key, counts in table.items():
        share = counts["hits"] / counts["n"]
        print(f"{key:24s} {counts['hits']:5d}/{counts['n']:<5d} {share:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
