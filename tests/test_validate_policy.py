"""The written validation policy (docs/tools.md): what lenient and strict mode accept.

Lenient repairs only what is unambiguous and listed; duplicate keys, non-finite numbers and
lone surrogates are errors in both modes; a destructive tool's arguments get no repairs; a
tool name is matched exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from ooo_agent.calls import CallError, CallErrorKind, ToolCall
from ooo_agent.tools import Tool, tool
from ooo_agent.tools.validation import validate_call


@tool
def book(seats: int, price: float, confirm: bool, note: str = "") -> str:
    """Book seats."""
    return "ok"


@tool(destructive=True)
def delete_account(user_id: str, confirm: bool) -> str:
    """Delete an account for good."""
    return "deleted"


class Closed(BaseModel):
    """Arguments that forbid undeclared keys."""

    model_config = ConfigDict(extra="forbid")
    city: str


closed = Tool.from_model(Closed, lambda args: args.city, name="closed")

RAW_SCHEMA = Tool.from_openai(
    {
        "name": "raw",
        "parameters": {
            "type": "object",
            "properties": {
                "n": {"type": "number"},
                "flag": {"type": "boolean"},
                "guarded": {"type": "boolean", "x-destructive": True},
            },
            "additionalProperties": False,
        },
    },
    lambda **kw: kw,
)
TOOLS = [book, delete_account, closed, RAW_SCHEMA]


def _check(name: str, arguments: str | dict[str, Any], *, strict: bool) -> ToolCall | CallError:
    return validate_call({"name": name, "arguments": arguments}, TOOLS, strict=strict)


def _args(name: str, arguments: str | dict[str, Any], *, strict: bool = False) -> dict[str, Any]:
    outcome = _check(name, arguments, strict=strict)
    assert isinstance(outcome, ToolCall), getattr(outcome, "message", outcome)
    return outcome.arguments


def _error(name: str, arguments: str | dict[str, Any], *, strict: bool) -> CallError:
    outcome = _check(name, arguments, strict=strict)
    assert isinstance(outcome, CallError), f"accepted: {outcome}"
    return outcome


BASE = {"seats": 2, "price": 9.5, "confirm": True}


def _with(**changes: Any) -> str:
    return json.dumps({**BASE, **changes})


def test_lenient_repairs_exactly_the_listed_cases() -> None:
    assert _args("book", _with(confirm="true"))["confirm"] is True
    assert _args("book", _with(confirm="false"))["confirm"] is False
    assert _args("book", _with(seats="3"))["seats"] == 3
    assert _args("book", _with(price="2.5"))["price"] == 2.5
    assert _args("book", _with(price="-1e2"))["price"] == -100
    assert _args("book", _with(seats=3.0))["seats"] == 3
    assert _args("book", _with(note=123))["note"] == "123"


@pytest.mark.parametrize(
    "change",
    [
        {"confirm": "1"},
        {"confirm": "yes"},
        {"confirm": "on"},
        {"confirm": "y"},
        {"confirm": "True"},
        {"confirm": 1},
        {"confirm": 1.0},
        {"seats": True},
        {"seats": "1_000"},
        {"seats": "１２"},  # full-width digits
        {"seats": "٣"},  # an Arabic-Indic digit
        {"seats": " 3"},
        {"seats": "+3"},
        {"seats": "2.5"},
        {"price": True},
        {"price": "1_000.5"},
        {"price": "nan"},
        {"price": "NaN"},
        {"price": "inf"},
        {"price": "-Infinity"},
        {"price": "1e400"},
        {"price": "0x10"},
    ],
)
def test_lenient_does_not_guess(change: dict[str, Any]) -> None:
    error = _error("book", _with(**change), strict=False)
    assert error.kind in (CallErrorKind.COERCION, CallErrorKind.SCHEMA_VIOLATION)
    [key] = change
    assert f"$.{key}" in error.message
    assert _error("book", _with(**change), strict=True).kind is CallErrorKind.SCHEMA_VIOLATION


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    "arguments",
    [
        '{"seats": 2, "price": NaN, "confirm": true}',
        '{"seats": 2, "price": Infinity, "confirm": true}',
        '{"seats": 2, "price": -Infinity, "confirm": true}',
        '{"seats": 2, "price": 1e400, "confirm": true}',
        {"seats": 2, "price": float("nan"), "confirm": True},
        {"seats": 2, "price": float("inf"), "confirm": True},
    ],
)
def test_non_finite_numbers_never_pass(arguments: Any, strict: bool) -> None:
    error = _error("book", arguments, strict=strict)
    assert error.kind in (CallErrorKind.MALFORMED_JSON, CallErrorKind.MALFORMED_CALL)


@pytest.mark.parametrize("strict", [False, True])
def test_a_lone_surrogate_is_a_clear_error(strict: bool) -> None:
    for arguments in (
        _with(note="\ud800"),  # json.dumps escapes it: "\\ud800"
        '{"seats": 2, "price": 1, "confirm": true, "note": "a\\udc00b"}',
        {**BASE, "note": "x\udfff"},
    ):
        error = _error("book", arguments, strict=strict)
        assert error.kind is CallErrorKind.MALFORMED_JSON
        assert "surrogate" in error.message and "$.note" in error.message
        assert error.details[0].path == "$.note"
        error.message.encode("utf-8")  # the message itself is valid text
    # A surrogate key is refused too; a proper pair is one character and passes.
    assert "surrogate" in _error("book", {**BASE, "\ud83d": 1}, strict=strict).message
    assert _args("book", _with(note="\U0001f600"), strict=strict)["note"] == "\U0001f600"


@pytest.mark.parametrize("strict", [False, True])
def test_duplicate_keys_are_an_error(strict: bool) -> None:
    error = _error("book", '{"seats": 2, "seats": 3, "price": 1, "confirm": true}', strict=strict)
    assert error.kind is CallErrorKind.MALFORMED_JSON and '"seats" appears twice' in error.message
    # Inside a JSON-in-a-string object too (a lenient repair decodes it as strictly).
    schema_only = Tool.from_openai(
        {
            "name": "obj",
            "parameters": {"type": "object", "properties": {"o": {"type": "object"}}},
        }
    )
    twice = validate_call(
        {"name": "obj", "arguments": {"o": '{"a": 1, "a": 2}'}}, [schema_only], strict=False
    )
    assert isinstance(twice, CallError)


def test_forbidden_keys_are_rejected_not_dropped_in_both_modes() -> None:
    for strict in (False, True):
        error = _error("closed", {"city": "Paris", "country": "FR"}, strict=strict)
        assert "country" in error.message
        error = _error("raw", {"n": 1, "extra": 2}, strict=strict)
        assert "extra" in error.message
    # A schema that says nothing of other keys: lenient drops them, strict rejects them.
    assert _args("book", _with(extra=1)) == BASE
    assert "extra" in _error("book", _with(extra=1), strict=True).message


def test_a_destructive_tool_gets_no_repairs() -> None:
    assert _args("delete_account", {"user_id": "u1", "confirm": True}) == {
        "user_id": "u1",
        "confirm": True,
    }
    for arguments in (
        {"user_id": "u1", "confirm": "true"},
        {"user_id": "u1", "confirm": "1"},
        {"user_id": 17, "confirm": True},
        {"user_id": "u1", "confirm": True, "reason": "x"},  # undeclared: rejected, not dropped
    ):
        assert isinstance(_check("delete_account", arguments, strict=False), CallError)
    assert delete_account.destructive and not book.destructive


def test_a_schema_marked_destructive_parameter_gets_no_repairs() -> None:
    assert _args("raw", {"flag": "true"}) == {"flag": True}
    error = _error("raw", {"guarded": "true"}, strict=False)
    assert "$.guarded" in error.message


def test_tool_names_match_exactly() -> None:
    for name in ("delete_account\n", " delete_account", "delete_account ", "Delete_account"):
        for strict in (False, True):
            error = _error(name, {"user_id": "u1", "confirm": True}, strict=strict)
            assert error.kind is CallErrorKind.UNKNOWN_TOOL
            assert "Did you mean `delete_account`?" in error.message
    shown = _error("delete_account\n", {}, strict=True).message
    assert "`delete_account\\n`" in shown


def test_read_only_and_destructive_exclude_each_other() -> None:
    from ooo_agent.errors import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="both read_only and destructive"):

        @tool(read_only=True, destructive=True)
        def both() -> None:
            """Nothing."""


def test_json_in_a_string_cannot_smuggle_a_surrogate_or_nan() -> None:
    schema_only = Tool.from_openai(
        {"name": "obj", "parameters": {"type": "object", "properties": {"o": {"type": "object"}}}}
    )
    for inner in ('{"a": "\\ud800"}', '{"a": NaN}', '{"a": 1e999}'):
        outcome = validate_call({"name": "obj", "arguments": {"o": inner}}, [schema_only])
        assert isinstance(outcome, CallError), inner
    fine = validate_call({"name": "obj", "arguments": {"o": '{"a": "\\u00e9"}'}}, [schema_only])
    assert isinstance(fine, ToolCall) and fine.arguments == {"o": {"a": "é"}}
