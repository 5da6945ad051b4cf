"""The sidecar's semantic-row prompts, byte for byte, and hint assembly from raw answers."""

from __future__ import annotations

from typing import Any

import pytest

from ooo_agent.sidecar.base import Hint
from ooo_agent.sidecar.rows import (
    SIDECAR_SYSTEM,
    assemble_hint,
    build_wave_rows,
    label_rows,
    render_dialogue,
)
from ooo_agent.sidecar.slots import normalize_schema, slot_checker


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    params = {"type": "object", "properties": properties, "required": required or []}
    return {"type": "function", "function": {"name": name, "description": "", "parameters": params}}


TOOLS = [
    _tool("name0", {"p1": {"type": "string"}, "p2": {"type": "integer"}}),
    _tool("name1", {"q1": {"type": "array", "items": {"type": "string"}}}),
]
MESSAGES = [{"role": "user", "content": "Book it for 5 people in Paris."}]

# Written by hand from the method notes (the adapter's training format).
DIALOGUE = "**Dialogue Records History**\n<user>Book it for 5 people in Paris.</user>"
FUNCTION_INDEX_USER = (
    DIALOGUE + "\n\nAvailable tools:\n[0] name0(p1, p2)\n[1] name1(q1)\n\n"
    "Which tool should be called? Respond with only the index number."
)
ARGUMENT_P2_USER = (
    DIALOGUE + "\n\nAvailable tool parameters:\n[0] name0 param: p1\n[0] name0 param: p2\n"
    "[1] name1 param: q1\n\nWhat is the value for parameter 'p2' of tool [0] name0? "
    "Respond with a compact JSON value, or the literal string null if not applicable."
)
DIRECT_CALL_USER = (
    DIALOGUE + "\n\nAvailable tools:\n[0] name0(p1, p2)\n[1] name1(q1)\n\n"
    "What is the complete tool call? Respond with a JSON object."
)


def test_system_message() -> None:
    assert SIDECAR_SYSTEM == (
        "You are a helpful assistant. Answer the user's request using the available tools."
    )


def test_three_prompts_byte_for_byte() -> None:
    rows = build_wave_rows(MESSAGES, TOOLS, direct_call=True)
    assert [r.key for r in rows] == ["function", "0.p1", "0.p2", "1.q1", "direct_call"]
    for row in rows:
        assert row.messages[0] == {"role": "system", "content": SIDECAR_SYSTEM}
        assert row.messages[1]["role"] == "user"
        assert len(row.messages) == 2
    by_key = {r.key: r.messages[1]["content"] for r in rows}
    assert by_key["function"] == FUNCTION_INDEX_USER
    assert by_key["0.p2"] == ARGUMENT_P2_USER
    assert by_key["direct_call"] == DIRECT_CALL_USER
    assert by_key["1.q1"].endswith(
        "What is the value for parameter 'q1' of tool [1] name1? Respond with a compact JSON "
        "value, or the literal string null if not applicable."
    )


def test_rows_share_the_dialogue_prefix() -> None:
    rows = build_wave_rows(MESSAGES, TOOLS)
    prefix = DIALOGUE + "\n\nAvailable tool"
    assert all(r.messages[1]["content"].startswith(prefix) for r in rows)


def test_dialogue_multi_turn_and_tool_without_parameters() -> None:
    messages = [
        {"role": "system", "content": "ignored"},
        {"role": "user", "content": "  hi  "},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "content": "42"},
    ]
    assert render_dialogue(messages) == (
        '**Dialogue Records History**\n<user>hi</user>\n\n<response>{"name": "f", '
        '"parameters": {"a": 1}}</response>\n\n<obs>42</obs>'
    )
    rows = build_wave_rows(MESSAGES, [_tool("ping", {})])
    assert [r.key for r in rows] == ["function"]
    assert "[0] ping()\n" in rows[0].messages[1]["content"]


def test_label_rows_answers() -> None:
    labelled = dict((r.key, a) for r, a in label_rows(MESSAGES, TOOLS, ("name0", {"p2": 5})))
    assert labelled["function"] == "0"
    assert labelled["0.p2"] == "5"
    assert labelled["0.p1"] == "null"
    assert labelled["1.q1"] == "null"
    assert label_rows(MESSAGES, TOOLS, ("nope", {})) == []


# -- assemble_hint ----------------------------------------------------------------------


def test_assemble_keeps_only_the_predicted_functions_slots() -> None:
    hint, dropped = assemble_hint(
        TOOLS, "0", {"0.p1": '"Paris"', "0.p2": "5", "1.q1": '["x"]'}, check=slot_checker(TOOLS)
    )
    assert hint == Hint("name0", {"p1": "Paris", "p2": 5}, True)
    assert dropped == {}


@pytest.mark.parametrize("answer", ["7", "-1", "zero", "", "0.5"])
def test_assemble_invalid_index_gives_an_empty_hint(answer: str) -> None:
    hint, dropped = assemble_hint(TOOLS, answer, {"0.p1": '"Paris"'})
    assert hint.empty
    assert "function" in dropped


def test_assemble_tolerates_whitespace_and_brackets_in_the_index() -> None:
    hint, _ = assemble_hint(TOOLS, " [1]\n", {"1.q1": '["a","b"]'})
    assert hint.function == "name1"
    assert hint.slots == {"q1": ["a", "b"]}


def test_assemble_drops_garbage_json_and_skips_null() -> None:
    hint, dropped = assemble_hint(TOOLS, "0", {"0.p1": "Paris, France", "0.p2": "null"})
    assert hint.slots == {}
    assert set(dropped) == {"p1"}
    assert dropped["p1"].startswith("not JSON")


def test_assemble_checks_values_against_the_schema() -> None:
    hint, dropped = assemble_hint(
        TOOLS, "0", {"0.p1": "5", "0.p2": '"five"'}, check=slot_checker(TOOLS)
    )
    assert hint.slots == {}
    assert set(dropped) == {"p1", "p2"}
    assert "string" in dropped["p1"] and "integer" in dropped["p2"]


def test_assemble_without_function_answer_is_not_an_error() -> None:
    hint, dropped = assemble_hint(TOOLS, None, {"0.p1": '"x"'}, complete=False)
    assert hint == Hint(None, {}, False)
    assert dropped == {}


# -- slot_checker ------------------------------------------------------------------------

BFCL_TOOLS = [
    _tool(
        "calc",
        {
            "ratio": {"type": "float"},
            "opts": {"type": "dict", "properties": {"k": {"type": "integer"}}},
            "pair": {"type": "tuple", "items": {"type": "integer"}},
            "whatever": {"type": "any"},
            "unit": {"type": "string", "enum": ["m", "km"]},
            "broken": {"type": 12},
        },
    )
]


@pytest.mark.parametrize(
    ("param", "value", "ok"),
    [
        ("ratio", 0.5, True),
        ("ratio", 2, True),
        ("ratio", "0.5", False),
        ("opts", {"k": 1}, True),
        ("opts", {"k": "1"}, False),
        ("opts", [1], False),
        ("pair", [1, 2], True),
        ("pair", [1, "2"], False),
        ("whatever", {"x": [1]}, True),
        ("whatever", None, True),
        ("unit", "km", True),
        ("unit", "mile", False),
        ("broken", "anything", True),
    ],
)
def test_slot_checker_bfcl_types(param: str, value: Any, ok: bool) -> None:
    check = slot_checker(BFCL_TOOLS)
    problem = check(0, param, value)
    assert (problem is None) is ok, problem


def test_slot_checker_unknown_slots() -> None:
    check = slot_checker(BFCL_TOOLS)
    assert check(3, "ratio", 1.0) == "no tool with index 3"
    assert check(0, "nope", 1) == "tool 0 has no parameter 'nope'"


def test_normalize_schema_is_recursive_and_pure() -> None:
    schema = {"type": "dict", "properties": {"a": {"type": ["float", "null"]}}}
    assert normalize_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": ["number", "null"]}},
    }
    assert schema["type"] == "dict"
    assert normalize_schema({"type": ["any", "int"]}) == {}
