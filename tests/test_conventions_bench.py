"""benchmarks/conventions.py: how often BFCL's answers keep each value convention."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ooo_agent.bench.datasets import BenchItem
from repo_scripts import load_script

TOOL = {
    "type": "function",
    "function": {
        "name": "invest",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "integer"},
                "rate": {"type": "number", "description": "The annual rate."},
                "city": {"type": "string", "description": "The city and state, e.g. Austin, TX"},
            },
            "required": ["amount", "rate"],
        },
    },
}


def _item(text: str, answers: dict[str, list[Any]]) -> BenchItem:
    return BenchItem(
        id="x",
        category="simple_python",
        messages=[{"role": "user", "content": text}],
        tools=[TOOL],
        gold=[{"invest": answers}],
    )


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("benchmarks", "conventions")


def test_each_rule_counts_the_answers_that_keep_it_and_break_it(script: ModuleType) -> None:
    kept = _item(
        "Put $2,000,000 at 5% in Austin",
        {"amount": [2000000], "rate": [0.05], "city": ["Austin, TX", "Austin"]},
    )
    assert sorted(script.check(kept)) == [
        ("amounts", True),
        ("amounts", True),  # the rate is a number argument of the request too
        ("places", True),
        ("rates", True),
    ]
    broken = _item(
        "Put 2 million at 5% in Austin", {"amount": [2], "rate": [5.0], "city": ["Austin", ""]}
    )
    assert sorted(script.check(broken)) == [
        ("amounts", False),
        ("amounts", True),
        ("places", False),
        ("rates", False),
    ]
    # no percentage, no amount, a left-out city: nothing to count
    assert (
        script.check(_item("Put 300 at 0.05", {"amount": [300], "rate": [0.05], "city": [""]}))
        == []
    )


def test_an_enum_the_request_names_counts_under_options(script: ModuleType) -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "sort",
            "parameters": {
                "type": "object",
                "properties": {
                    "order": {"type": "string", "enum": ["ascending", "descending"]},
                    "keys": {"type": "array", "items": {"type": "string", "enum": ["id", "name"]}},
                },
            },
        },
    }

    def item(answers: dict[str, list[Any]]) -> BenchItem:
        text = "Sort by name in ascending order"
        return BenchItem(
            "x", "simple_python", [{"role": "user", "content": text}], [tool], [{"sort": answers}]
        )

    assert sorted(script.check(item({"order": ["ascending"], "keys": [["name"]]}))) == [
        ("options", True),
        ("options", True),
    ]
    assert sorted(script.check(item({"order": ["descending", ""], "keys": [["name", "id"]]}))) == [
        ("options", False),
        ("options", False),
    ]


def test_tally_and_the_command_line(
    script: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    items = [_item("Put $2,000,000 at 5% in Austin", {"amount": [2], "rate": [0.05]})]
    assert script.tally(items)["rules"] == {
        "rates": {"kept": 1, "broken": 0},
        "options": {"kept": 0, "broken": 0},
        "places": {"kept": 0, "broken": 0},
        "amounts": {"kept": 1, "broken": 1},
    }
    monkeypatch.setattr(script, "load_bfcl", lambda category: items)
    out = tmp_path / "counts.json"
    assert script.main(["--categories", "simple_python", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["simple_python"]["items"] == 1
