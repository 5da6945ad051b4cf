"""benchmarks/sidecar_reading.py: argument rows split by whether the target read them right."""

from __future__ import annotations

from typing import Any

from ooo_agent.bench.datasets import BenchItem, functions_to_tools
from repo_scripts import load_script

FUNCTIONS: list[dict[str, Any]] = [
    {
        "name": "book",
        "description": "Book a table.",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string", "description": "City."},
                "people": {"type": "integer", "description": "Guests."},
                "note": {"type": "string", "description": "A note."},
            },
            "required": ["city", "people"],
        },
    },
    {
        "name": "cancel",
        "description": "Cancel a booking.",
        "parameters": {
            "type": "dict",
            "properties": {"code": {"type": "string", "description": "Booking code."}},
            "required": ["code"],
        },
    },
]
TOOLS = functions_to_tools(FUNCTIONS, "python")


def _item(item_id: str) -> BenchItem:
    return BenchItem(
        id=item_id,
        category="multiple",
        messages=[{"role": "user", "content": "A table for 4 in Lima"}],
        tools=TOOLS,
        gold=[{"book": {"city": ["Lima"], "people": [4], "note": [""]}}],
        functions=FUNCTIONS,
    )


def test_rows_are_split_by_the_targets_own_reading() -> None:
    module = load_script("benchmarks", "sidecar_reading")
    labels = {
        # the target wrote 5 guests (wrong) and a note BFCL does not ask for (allowed: "" ok)
        "a": {
            "tools": TOOLS,
            "target_call": {"name": "book", "arguments": {"city": "lima", "people": 5}},
        },
        "b": {"tools": TOOLS, "target_call": {"name": "cancel", "arguments": {"code": "X1"}}},
        "c": {"tools": TOOLS, "target_call": None},
    }
    predictions = [
        # city and people as the target wrote them; note: a value where the target wrote none
        {"id": "a", "answers": {"0.city": '"lima"', "0.people": "5.0", "0.note": '"x"'}},
        {"id": "b", "answers": {"1.code": "X1"}},  # not JSON: a miss
        {"id": "c", "answers": {"0.city": '"Lima"'}},  # no target call: not scored
    ]
    items = {key: _item(key) for key in "abc"}
    found = module.rows(predictions, labels, items)
    assert found == [
        ("a", "city", "target right", True),
        ("a", "people", "target wrong", True),  # matched the target's mistake
        ("a", "note", "target right", False),  # left out, as BFCL allows; the sidecar wrote one
        ("b", "code", "target's tool not gold", False),
    ]
    table = module.summary(found)
    assert table["target right"] == {"hits": 1, "n": 2}
    assert table["target wrong"] == {"hits": 1, "n": 1}
    assert table["all"] == {"hits": 2, "n": 4}


def test_optional_rows_are_split_by_mention_and_by_the_target() -> None:
    module = load_script("benchmarks", "sidecar_reading")
    book = {**FUNCTIONS[0], "parameters": {**FUNCTIONS[0]["parameters"], "properties": {
        "city": {"type": "string"}, "people": {"type": "integer"}, "remark": {"type": "string"}}}}
    tools = functions_to_tools([book, FUNCTIONS[1]], "python")
    plain = [{"role": "user", "content": "A table for 4 in Lima"}]
    remarked = [{"role": "user", "content": "A table for 4 in Lima, remark: window"}]
    city = {"city": "Lima", "people": 4}
    labels = {
        "a": {"tools": tools, "messages": plain,
              "target_call": {"name": "book", "arguments": city}},
        "b": {"tools": tools, "messages": remarked,
              "target_call": {"name": "book", "arguments": {**city, "remark": "window"}}},
        "c": {"tools": tools, "messages": plain,
              "target_call": {"name": "book", "arguments": {**city, "remark": "quiet"}}},
    }  # fmt: skip
    predictions = [
        {"id": "a", "answers": {"0.city": '"Lima"', "0.people": "4", "0.remark": "null"}},
        {"id": "b", "answers": {"0.remark": '"window"'}},
        {"id": "c", "answers": {"0.remark": '"loud"', "1.code": '"X"'}},
    ]
    assert module.optionals(predictions, labels) == {
        ("not named", "target leaves out", "null"): 1,  # required city / people not counted
        ("named", "target writes", "same"): 1,
        ("not named", "target writes", "other"): 1,  # another tool's row not counted
    }


def test_paired_counts_the_rows_each_report_alone_gets_right() -> None:
    module = load_script("benchmarks", "sidecar_reading")
    labels = {
        key: {"tools": TOOLS, "target_call": {"name": "book", "arguments": {"city": "Lima",
              "people": 4, **({"note": "quiet"} if key == "c" else {})}}}
        for key in "ac"
    }  # fmt: skip
    items = {key: _item(key) for key in "ac"}
    mine = [{"id": "a", "answers": {"0.note": "null", "0.city": '"Lima"'}},
            {"id": "c", "answers": {"0.note": "null"}}]  # fmt: skip
    other = [{"id": "a", "answers": {"0.note": '"x"'}}, {"id": "c", "answers": {"0.note": '"quiet"'}}]
    found = module.rows(mine, labels, items)
    # a's note: null now right; c's note: "quiet" was right; a's city not asked in other
    assert module.paired(found, module.rows(other, labels, items)) == (1, 1)


def test_changed_lists_the_requests_whose_answers_differ() -> None:
    module = load_script("benchmarks", "sidecar_reading")
    mine = [
        {"id": "a", "answers": {"0.city": '"Lima"'}},
        {"id": "b", "answers": {"0.city": '"Lima"'}},
        {"id": "c", "answers": {}},
    ]
    theirs = [
        {"id": "a", "answers": {"0.city": '"Lima, PE"'}},
        {"id": "b", "answers": {"0.city": '"Lima"'}},
    ]
    assert module.changed(mine, theirs) == ["a"]  # "c" is not in both
