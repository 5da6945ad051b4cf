"""How often BFCL's answers follow the value conventions ``constrain_values`` holds a call to.

For every item of the given BFCL categories and every argument of its gold calls that a rule of
:mod:`ooo_agent.rules.conventions` touches, one count: does an acceptable value keep the
rule?

- **rates**: a rate parameter of a request that states percentages
  (:func:`~ooo_agent.rules.percentages.fraction_rates`): ``kept`` when an acceptable value is
  among the values the rule offers (the stated percentages as fractions, the decimals between
  -1 and 1 the request writes);
- **places**: a parameter asked for as "City, State"
  (:func:`~ooo_agent.rules.conventions.place_parameters`): ``kept`` when an acceptable value
  holds a comma and something after it;
- **amounts**: a number argument of a request that writes an amount whole ("$2,000,000", "213
  million"): ``kept`` when no acceptable value is among the numbers the rule rules out
  (:func:`~ooo_agent.rules.conventions.truncated_amounts`), ``whole`` counting the answers
  that carry such an amount;
- **options**: a parameter whose ``enum`` (or array items' ``enum``) holds options the request
  names (:func:`~ooo_agent.rules.conventions.named_options`): ``kept`` when an acceptable
  value is one of the named options (an array: holds only named options).

An argument whose every acceptable value is ``""`` (left out) is not counted. No model runs:

    python benchmarks/conventions.py --categories live_simple,live_multiple,live_parallel,live_parallel_multiple
    python benchmarks/conventions.py --categories simple_python,multiple,parallel,parallel_multiple
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ooo_agent.bench.datasets import BenchItem, load_bfcl
from ooo_agent.errors import DatasetError
from ooo_agent.rules.conventions import (
    PLACE_PATTERN,
    named_options,
    place_parameters,
    truncated_amounts,
    with_value_conventions,
)
from ooo_agent.rules.percentages import fraction_rates, stated_percentages

RULES = ("rates", "options", "places", "amounts")


def _numbers(values: list[Any]) -> list[float]:
    return [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def _among(value: Any, named: list[str]) -> bool:
    if isinstance(value, list):
        return all(v in named for v in value)
    return value in named


def check(item: BenchItem) -> list[tuple[str, bool]]:
    """``(rule, kept)`` for each gold argument a rule touches (module docstring)."""
    stated = bool(stated_percentages(item.messages))
    rates = fraction_rates(item.tools) if stated else {}
    places = place_parameters(item.tools)
    ruled_out = set(truncated_amounts(item.messages))
    schemas = {
        tool["function"]["name"]: tool["function"]["parameters"].get("properties", {})
        for tool in item.tools
        if isinstance(tool.get("function"), dict) and "parameters" in tool["function"]
    }
    held = {
        tool["function"]["name"]: tool["function"]["parameters"]["properties"]
        for tool in with_value_conventions(item.messages, item.tools)
        if isinstance(tool.get("function"), dict) and "parameters" in tool["function"]
    }
    rows: list[tuple[str, bool]] = []
    for call in item.gold:
        for name, answers in call.items():
            for key, values in answers.items():
                given = [v for v in values if v != ""]
                if not given:
                    continue
                if key in rates.get(name, ()):
                    offered = held[name][key].get("enum", [])
                    rows.append(("rates", any(v in offered for v in _numbers(given))))
                named = named_options(item.messages, schemas.get(name, {}).get(key))
                if named:
                    rows.append(("options", any(_among(v, named) for v in given)))
                if key in places.get(name, ()):
                    rows.append(
                        (
                            "places",
                            any(isinstance(v, str) and re.search(PLACE_PATTERN, v) for v in given),
                        )
                    )
                numbers = _numbers(given)
                if ruled_out and numbers:
                    rows.append(("amounts", not any(v in ruled_out for v in numbers)))
    return rows


def tally(items: list[BenchItem]) -> dict[str, Any]:
    """Per rule, the gold arguments it touches that keep it and that do not."""
    counts: Counter[tuple[str, bool]] = Counter()
    for item in items:
        counts.update(check(item))
    return {
        "items": len(items),
        "rules": {
            rule: {"kept": counts[(rule, True)], "broken": counts[(rule, False)]} for rule in RULES
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
        print(f"{category}: {counts['items']} items")
        print(f"  {'rule':10} {'kept':>6} {'broken':>7}")
        for rule, row in counts["rules"].items():
            print(f"  {rule:10} {row['kept']:6d} {row['broken']:7d}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
