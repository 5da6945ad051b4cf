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

``--optionals`` also splits the rows of the target's tool's *optional* parameters by whether
the request names them (:func:`~ooo_agent.rules.mentions.mentioned_parameters`) and
whether the target wrote them, counting the sidecar's null, the target's value and another
value (docs/lab-notes/2026-12-04-sidecar-tool-choice-and-rows.md §2.0zzzzzzzzzzz). ``--against OTHER`` counts the rows this report
gets right and ``OTHER`` (another ``eval-sidecar`` report on the same labels) does not, and
the reverse, and the requests whose answers differ at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ooo_agent.bench.ast_check import argument_ok
from ooo_agent.bench.datasets import BenchItem
from ooo_agent.rules.mentions import mentioned_parameters
from ooo_agent.sidecar.rows import tool_signatures
from ooo_agent.train.eval_sidecar import parse_answer, same_answer_value

GROUPS = ("target right", "target wrong", "target's tool not gold")
_value, _same_value = parse_answer, same_answer_value  # eval-sidecar's own comparison


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


def optionals(
    predictions: Iterable[Mapping[str, Any]], labels: Mapping[str, Mapping[str, Any]]
) -> Counter[tuple[str, str, str]]:
    """``(named or not named, target writes or leaves out, sidecar)`` counts over the asked (or
    implied) rows of the target's tool's optional parameters; ``sidecar`` is ``null``, ``same``
    (the target's value) or ``other``."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for prediction in predictions:
        label = labels.get(prediction["id"])
        if label is None or not label.get("target_call"):
            continue
        name, arguments = label["target_call"]["name"], label["target_call"]["arguments"]
        tools = label["tools"]
        signatures = tool_signatures(tools)
        index = next((i for i, (n, _) in enumerate(signatures) if n == name), None)
        if index is None:
            continue
        parameters = tools[index].get("function", tools[index]).get("parameters") or {}
        required = set(parameters.get("required") or ())
        named = mentioned_parameters(label["messages"], tools).get(name, ())
        for param in signatures[index][1]:
            answer = prediction["answers"].get(f"{index}.{param}")
            if param in required or answer is None:
                continue
            value = _value(answer)
            written = param in arguments
            sidecar = (
                "null" if value is None
                else "same" if written and _same_value(value, arguments[param])
                else "other"
            )  # fmt: skip
            counts[
                ("named" if param in named else "not named",
                 "target writes" if written else "target leaves out", sidecar)
            ] += 1  # fmt: skip
    return counts


def paired(
    found: Iterable[tuple[str, str, str, bool]], other: Iterable[tuple[str, str, str, bool]]
) -> tuple[int, int]:
    """Rows (by request and parameter, asked in both) that ``found`` gets right and ``other``
    does not, and the reverse."""
    mine = {(i, p): hit for i, p, _, hit in found}
    theirs = {(i, p): hit for i, p, _, hit in other}
    both = mine.keys() & theirs.keys()
    return (
        sum(mine[k] and not theirs[k] for k in both),
        sum(theirs[k] and not mine[k] for k in both),
    )


def changed(
    predictions: Iterable[Mapping[str, Any]], other: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Ids of the requests (in both reports) whose rows' answers differ between them."""
    theirs = {p["id"]: p["answers"] for p in other}
    return [p["id"] for p in predictions if p["id"] in theirs and p["answers"] != theirs[p["id"]]]


def summary(
    found: Iterable[tuple[str, str, str, bool]], groups: Sequence[str] = GROUPS
) -> dict[str, dict[str, int]]:
    """Hits and rows per group (reported in the order of ``groups``), and over all rows."""
    hits: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for _, _, group, hit in found:
        for key in (group, "all"):
            totals[key] += 1
            hits[key] += hit
    return {key: {"hits": hits[key], "n": totals[key]} for key in (*groups, "all") if totals[key]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, required=True, help="eval-sidecar JSON report")
    parser.add_argument("--labels", type=Path, required=True, help="eval_target label file")
    parser.add_argument("--category", required=True, help="the labels' BFCL category")
    parser.add_argument(
        "--optionals", action="store_true", help="split the optional parameters' rows too"
    )
    parser.add_argument(
        "--against", type=Path, default=None, help="another eval-sidecar report: rows gained / lost"
    )
    args = parser.parse_args(argv)

    from ooo_agent.bench.datasets import load_bfcl

    report = json.loads(args.report.read_text(encoding="utf-8"))
    with args.labels.open(encoding="utf-8") as handle:
        labels = {row["id"]: row for row in map(json.loads, handle)}
    items = {item.id: item for item in load_bfcl(args.category)}
    found = rows(report["predictions"], labels, items)
    table = summary(found)
    for key, counts in table.items():
        share = counts["hits"] / counts["n"]
        print(f"{key:24s} {counts['hits']:5d}/{counts['n']:<5d} {share:6.1%}")
    if args.optionals:
        print("optional parameters (named by the request?, the target, the sidecar): rows")
        for key, count in sorted(optionals(report["predictions"], labels).items()):
            print(f"  {', '.join(key):44s} {count:5d}")
    if args.against is not None:
        other = json.loads(args.against.read_text(encoding="utf-8"))
        gained, lost = paired(found, rows(other["predictions"], labels, items))
        print(f"rows right here and not in {args.against.name}: {gained}; the reverse: {lost}")
        moved = changed(report["predictions"], other["predictions"])
        print(f"requests whose answers differ: {len(moved)} of {len(report['predictions'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
