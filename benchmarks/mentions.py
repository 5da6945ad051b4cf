"""How well "the request names this optional parameter" predicts that the answer writes it.

For every single-call item of the given BFCL categories, each optional parameter of the gold
call's tool is put in one of three classes by BFCL's possible answers — **must write** (no
``""`` among the acceptable values), **may write** (``""`` and other values), **must leave
out** (only ``""``, or the parameter not listed) — and counted as named or not by
:func:`ooo_agent.rules.mentions.mentioned_parameters` (what ``HFTarget(constrain_mentioned=
True)`` then requires). No model runs:

    python benchmarks/mentions.py --categories live_simple,live_multiple
    python benchmarks/mentions.py --categories simple_python,multiple

A named parameter the answer must leave out is a call the rule breaks; one it must write is a
call the rule can mend (if the model then writes the right value).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ooo_agent.bench.datasets import BenchItem, load_bfcl
from ooo_agent.errors import DatasetError
from ooo_agent.rules.mentions import mentioned_parameters

CLASSES = ("must write", "may write", "must leave out")


def classify(item: BenchItem) -> list[tuple[str, str, bool]]:
    """``(parameter, class, named)`` for each optional parameter of the gold call's tool (a
    single-call item; others give nothing)."""
    if len(item.gold) != 1:
        return []
    ((name, answers),) = item.gold[0].items()
    named = mentioned_parameters(item.messages, item.tools).get(name, ())
    rows = []
    for tool in item.tools:
        function = tool["function"]
        if function["name"] != name:
            continue
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or ())
        for key in parameters.get("properties") or {}:
            if key in required:
                continue
            values = answers.get(key, [""])
            kind = CLASSES[0] if "" not in values else CLASSES[2] if values == [""] else CLASSES[1]
            rows.append((key, kind, key in named))
    return rows


def tally(items: list[BenchItem]) -> dict[str, Any]:
    """Counts of optional parameters per class, named and not, and items with any named."""
    counts: Counter[tuple[str, bool]] = Counter()
    items_named = 0
    for item in items:
        rows = classify(item)
        counts.update((kind, named) for _, kind, named in rows)
        items_named += any(named for _, _, named in rows)
    return {
        "items": len(items),
        "items_with_a_named_parameter": items_named,
        "classes": {
            kind: {"named": counts[(kind, True)], "not named": counts[(kind, False)]}
            for kind in CLASSES
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", required=True, help="comma-separated BFCL categories")
    parser.add_argument("--out", default=None, help="also write the counts as JSON")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    try:
        for category in args.categories.split(","):
            report[category.strip()] = tally(load_bfcl(category.strip()))
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for category, counts in report.items():
        print(
            f"{category}: {counts['items']} items, "
            f"{counts['items_with_a_named_parameter']} with a named optional parameter"
        )
        print(f"  {'optional parameters':24} {'named':>7} {'not named':>10}")
        for kind, row in counts["classes"].items():
            print(f"  {kind:24} {row['named']:7d} {row['not named']:10d}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
