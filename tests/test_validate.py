"""validate_call / validate_calls / canonical_arguments."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, field_validator

from ooo_agent.calls import CallError, CallErrorKind, RawCall, ToolCall
from ooo_agent.tools import Tool, Toolset, tool
from ooo_agent.tools.validation import canonical_arguments, validate_call, validate_calls


class Size(str, Enum):
    S = "s"
    L = "l"


class Line(BaseModel):
    sku: str
    qty: int


@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
    """Weather forecast."""
    return city


@tool
def order(lines: list[Line], size: Size = Size.S, note: str | None = None) -> str:
    """Order things."""
    return "ok"


SCHEMA_ONLY = Tool.from_openai(
    {
        "name": "set_volume",
        "parameters": {
            "type": "dict",
            "properties": {"level": {"type": "float"}, "mute": {"type": "boolean"}},
            "required": ["level"],
        },
    }
)

TOOLS = Toolset([get_weather, order, SCHEMA_ONLY])


def ok(name: str, arguments: Any, *, strict: bool | None = None) -> ToolCall:
    outcome = validate_call(RawCall(name, arguments, id="call_x"), TOOLS, strict=strict)
    assert isinstance(outcome, ToolCall), getattr(outcome, "message", outcome)
    assert outcome.id == "call_x" and outcome.name == name
    return outcome


def bad(name: str, arguments: Any, *, strict: bool | None = None) -> CallError:
    outcome = validate_call(RawCall(name, arguments), TOOLS, strict=strict)
    assert isinstance(outcome, CallError), outcome
    return outcome


def test_valid_call_keeps_id_and_gives_plain_json() -> None:
    call = ok("order", '{"lines": [{"sku": "a", "qty": 2}], "size": "l"}')
    assert call.arguments == {"lines": [{"sku": "a", "qty": 2}], "size": "l"}
    json.dumps(call.arguments)  # plain JSON data, no enums or models
    fresh = validate_call(RawCall("get_weather", {"city": "Rome"}), TOOLS)
    assert isinstance(fresh, ToolCall) and fresh.id.startswith("call_")


def test_unknown_tool_lists_tools_and_suggests() -> None:
    error = bad("get_wether", "{}")
    assert error.kind is CallErrorKind.UNKNOWN_TOOL
    assert "Did you mean `get_weather`?" in error.message
    assert "get_weather, order, set_volume" in error.message
    unrelated = bad("zzzz", "{}")
    assert "Did you mean" not in unrelated.message


@pytest.mark.parametrize(
    ("text", "hint", "char"),
    [
        ('{"city": "Paris", "days": 3', "truncated", 27),
        ('{"city": "Par', "truncated", 9),
        ('{"city": "Paris",}', "trailing commas", 17),
        ('{"lines": [1, 2,]}', "trailing commas", 16),
        ("{'city': 'Paris'}", "double quotes", 1),
        ('{"city": "Paris", "x": True}', "write true", 23),
        ('{"city": "Paris"} and more', "text after", 18),
    ],
)
def test_malformed_json_has_position_and_hint(text: str, hint: str, char: int) -> None:
    error = bad("get_weather", text)
    assert error.kind is CallErrorKind.MALFORMED_JSON
    assert hint in error.message
    assert f"(char {char})" in error.message and f"(char {char})" in error.details[0].message
    assert error.raw == text and error.name == "get_weather"


def test_wrong_types_and_missing_required_every_error_with_path() -> None:
    error = bad("get_weather", '{"unit": "kelvin", "days": "many"}')
    assert error.kind is CallErrorKind.SCHEMA_VIOLATION
    paths = {d.path: d.message for d in error.details}
    assert set(paths) == {"$", "$.unit", "$.days"}
    assert "'city' is a required property" in paths["$"]
    assert "kelvin" in paths["$.unit"] and "integer" in paths["$.days"]
    for path in paths:
        assert f"- {path}:" in error.message
    assert "Expected parameters: city: string (required)" in error.message


def test_nested_errors_have_json_paths() -> None:
    text = '{"lines": [{"sku": "a", "qty": 1}, {"sku": "b"}, {"sku": "c", "qty": "x"}]}'
    error = bad("order", text)
    paths = [d.path for d in error.details]
    assert paths == ["$.lines[1]", "$.lines[2].qty"]
    assert "'qty' is a required property" in error.details[0].message


def test_type_coercion_failure_kind() -> None:
    error = bad("get_weather", '{"city": "Oslo", "days": "soon"}')
    assert error.kind is CallErrorKind.COERCION
    assert error.details[0].path == "$.days"


def test_lenient_coercions() -> None:
    assert ok("get_weather", '{"city": "Oslo", "days": "3"}').arguments["days"] == 3
    assert ok("get_weather", '{"city": "Oslo", "days": 2.0}').arguments["days"] == 2
    volume = ok("set_volume", '{"level": "0.5", "mute": "true"}')
    assert volume.arguments == {"level": 0.5, "mute": True}
    # A list or object sent as a JSON-encoded string is decoded where the schema wants it.
    nested = ok("order", {"lines": '[{"sku": "a", "qty": "1"}]'})
    assert nested.arguments["lines"] == [{"sku": "a", "qty": 1}]
    # The whole arguments object double-encoded.
    assert ok("get_weather", json.dumps('{"city": "Lima"}')).arguments == {"city": "Lima"}
    # Nothing is coerced in strict mode.
    assert bad("get_weather", '{"city": "Oslo", "days": "3"}', strict=True).kind is (
        CallErrorKind.SCHEMA_VIOLATION
    )


def test_extra_keys_lenient_drop_strict_reject() -> None:
    lenient = ok("get_weather", '{"city": "Oslo", "colour": "red"}')
    assert lenient.arguments == {"city": "Oslo"}
    nested = ok("order", '{"lines": [{"sku": "a", "qty": 1, "gift": true}]}')
    assert nested.arguments == {"lines": [{"sku": "a", "qty": 1}]}
    schema_only = ok("set_volume", '{"level": 1, "balance": 0}')
    assert schema_only.arguments == {"level": 1}

    error = bad("get_weather", '{"city": "Oslo", "colour": "red"}', strict=True)
    assert error.kind is CallErrorKind.SCHEMA_VIOLATION
    assert "'colour' was unexpected" in error.message
    deep = bad("order", '{"lines": [{"sku": "a", "qty": 1, "gift": true}]}', strict=True)
    assert deep.details[0].path == "$.lines[0]"
    # strict=None follows the toolset.
    strict_tools = Toolset([get_weather], strict=True)
    outcome = validate_call(RawCall("get_weather", '{"city": "O", "x": 1}'), strict_tools)
    assert isinstance(outcome, CallError)


def test_free_form_objects_keep_their_keys() -> None:
    free = Tool.from_openai({"name": "log", "parameters": {"properties": {"data": {"type": "dict"}}}})
    outcome = validate_call(RawCall("log", '{"data": {"a": 1, "b": [2]}}'), [free])
    assert isinstance(outcome, ToolCall) and outcome.arguments == {"data": {"a": 1, "b": [2]}}


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ("[1, 2]", CallErrorKind.SCHEMA_VIOLATION),
        ("42", CallErrorKind.SCHEMA_VIOLATION),
        ('{"city": NaN}', CallErrorKind.MALFORMED_JSON),
        ('{"city": 1e999}', CallErrorKind.MALFORMED_JSON),
        ("[" * 5000, CallErrorKind.MALFORMED_JSON),
        ({"city": {1, 2}}, CallErrorKind.MALFORMED_CALL),
        ({1: "a"}, CallErrorKind.MALFORMED_CALL),
    ],
)
def test_odd_arguments_are_errors_not_exceptions(arguments: Any, kind: CallErrorKind) -> None:
    assert bad("get_weather", arguments).kind is kind


def test_empty_arguments_mean_no_arguments() -> None:
    @tool
    def ping() -> str:
        return "pong"

    for empty in ("", "  ", None, "{}"):
        outcome = validate_call(RawCall("ping", empty), [ping])
        assert isinstance(outcome, ToolCall) and outcome.arguments == {}


def test_malformed_calls() -> None:
    nameless = validate_call(RawCall(None, "{}"), TOOLS)  # type: ignore[arg-type]
    assert isinstance(nameless, CallError) and nameless.kind is CallErrorKind.MALFORMED_CALL
    junk = validate_call(42, TOOLS)  # type: ignore[arg-type]
    assert isinstance(junk, CallError) and junk.kind is CallErrorKind.MALFORMED_CALL


def test_openai_shaped_dicts_are_accepted() -> None:
    outcome = validate_call(
        {"id": "call_7", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Bern"}'}},
        TOOLS,
    )
    assert isinstance(outcome, ToolCall) and outcome.id == "call_7"


def test_error_message_becomes_a_retry_message() -> None:
    with_id = validate_call(RawCall("get_weather", "{", id="call_1"), TOOLS)
    assert isinstance(with_id, CallError)
    assert with_id.to_message() == {
        "role": "tool", "tool_call_id": "call_1", "content": with_id.message
    }


def test_validate_calls_splits_and_makes_ids_unique() -> None:
    raws = [
        RawCall("get_weather", '{"city": "A"}', id="same"),
        RawCall("nope", "{}"),
        RawCall("get_weather", '{"city": "B"}', id="same"),
    ]
    calls, errors = validate_calls(raws, TOOLS)
    assert [c.arguments["city"] for c in calls] == ["A", "B"]
    assert calls[0].id == "same" and calls[1].id != "same"
    assert [e.kind for e in errors] == [CallErrorKind.UNKNOWN_TOOL]


def test_canonical_arguments() -> None:
    a = canonical_arguments({"b": 1.0, "a": [2, {"y": True, "x": None}]})
    assert a == '{"a":[2,{"x":null,"y":true}],"b":1}'
    assert canonical_arguments({"x": 1}) == canonical_arguments({"x": 1.0})
    assert canonical_arguments({"x": 1.5}) != canonical_arguments({"x": 1})
    assert canonical_arguments({"x": True}) != canonical_arguments({"x": 1})
    assert canonical_arguments({"s": "é"}) == '{"s":"é"}'
    one = ok("set_volume", '{"level": 1}')
    other = ok("set_volume", '{ "level" : 1.0 }')
    assert canonical_arguments(one) == canonical_arguments(other)


class Booking(BaseModel):
    nights: int

    @field_validator("nights")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("nights must be positive")
        return value


def test_pydantic_only_rules_are_reported_with_paths() -> None:
    @tool
    def book(booking: Booking) -> str:
        return "ok"

    outcome = validate_call(RawCall("book", '{"booking": {"nights": 0}}'), [book])
    assert isinstance(outcome, CallError) and outcome.kind is CallErrorKind.SCHEMA_VIOLATION
    assert outcome.details[0].path == "$.booking.nights"
    assert "nights must be positive" in outcome.message
