"""The six-business-tools check set (benchmarks/business_tools.py) is well formed."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from ooo_agent.bench.ast_check import check, gold_calls, gold_defects
from ooo_agent.bench.datasets import load_jsonl
from ooo_agent.train.generated import GENERATED_TOOLS
from repo_scripts import load_script


def _module() -> ModuleType:
    return load_script("benchmarks", "business_tools")


def test_business_set_round_trips_and_gold_passes(tmp_path: Path) -> None:
    module = _module()
    assert module.main(["--out", str(tmp_path / "b.jsonl")]) == 0
    items = load_jsonl(tmp_path / "b.jsonl")
    assert len(items) == 16
    names = {t["function"]["name"] for t in items[0].tools}
    assert len(names) == 6 and all(item.tool_names == items[0].tool_names for item in items)
    # Our own tools, not the generated training data's.
    assert not names & set(GENERATED_TOOLS)
    for item in items:
        assert not gold_defects(item), item.id
        assert check(gold_calls(item), item).ok, item.id
    # Every tool is asked for at least twice.
    asked = [next(iter(item.gold[0])) for item in items]
    assert all(asked.count(name) >= 2 for name in names)
    # Wrong tool or a wrong value fails.
    first = items[0]
    assert not check([("refund_payment", {"order_number": "A-1042", "amount": 1})], first).ok
    assert not check([("find_order", {"order_number": "A-1043"})], first).ok
    assert json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])["category"] == "business"
