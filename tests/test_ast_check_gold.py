"""Every BFCL gold answer, turned into calls, passes the checker (and wrong ones do not)."""

from __future__ import annotations

import pytest

from ooo_agent.bench.ast_check import check, gold_calls, gold_defects, names_match
from ooo_agent.bench.datasets import BFCL_CATEGORIES, BFCL_EVAL_CATEGORIES, load_bfcl

# BFCL entries no call can pass (an argument with no acceptable value, a gold argument the
# schema lacks, a required argument the gold leaves out). All in live (training) categories.
KNOWN_DEFECTIVE = {
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_862-181-3",
    "live_multiple_964-207-0",
}


@pytest.mark.parametrize("category", BFCL_CATEGORIES)
def test_gold_calls_score_100_percent(category: str) -> None:
    items = load_bfcl(category)
    defective = {i.id for i in items if gold_defects(i)}
    assert defective <= KNOWN_DEFECTIVE
    if category in BFCL_EVAL_CATEGORIES:
        assert not defective
    failures = {}
    for item in items:
        if item.id in defective:
            continue
        calls = gold_calls(item)
        assert names_match(calls, item)
        result = check(calls, item)
        if not result.ok:
            failures[item.id] = result.reason
    assert failures == {}


def test_defective_entries_are_reported() -> None:
    items = {i.id: i for c in ("live_simple", "live_multiple") for i in load_bfcl(c)}
    for item_id in KNOWN_DEFECTIVE:
        assert gold_defects(items[item_id])
        assert not check(gold_calls(items[item_id]), items[item_id]).ok


@pytest.mark.parametrize("category", ["simple_python", "multiple", "parallel", "simple_java"])
def test_perturbed_gold_fails(category: str) -> None:
    """The checker is not a rubber stamp: renaming or dropping a call always fails."""
    for item in load_bfcl(category, limit=40):
        calls = gold_calls(item)
        renamed = [(name + "_x", args) for name, args in calls]
        assert not check(renamed, item).ok
        assert not check(calls[:-1], item).ok
        name, args = calls[0]
        matching = next(s for s in item.schemas() if s["name"] == name)
        required = matching["parameters"].get("required", [])
        if required:
            missing = {k: v for k, v in args.items() if k != required[0]}
            assert not check([(name, missing), *calls[1:]], item).ok
