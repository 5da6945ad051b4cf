"""Property: arbitrary model output never crashes validation, and nothing invalid runs.

Random strings and JSON-ish objects (some near-valid, some truncated, some with junk keys)
are thrown at validate + dispatch. Instrumented tools re-check what they receive against
their own schema with jsonschema; every validated call must dispatch without error.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Literal

import anyio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from ooo_agent.calls import CallError, RawCall, ToolCall
from ooo_agent.tools import Tool, Toolset, tool
from ooo_agent.tools.dispatch import dispatch
from ooo_agent.tools.validation import canonical_arguments, validate_calls

VIOLATIONS: list[str] = []


def _plain(value: Any) -> Any:
    """What a typed argument looks like as JSON (the inverse of the tool's typing)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _check(name: str, arguments: dict[str, Any]) -> None:
    validator = Draft202012Validator(TOOLSET[name].parameters)
    problems = [e.message for e in validator.iter_errors(arguments)]
    if problems:
        VIOLATIONS.append(f"{name}({arguments!r}): {problems}")


class Mode(str, Enum):
    FAST = "fast"
    SAFE = "safe"


class Line(BaseModel):
    sku: str
    qty: int
    note: str | None = None


@tool
async def order(lines: list[Line], mode: Mode = Mode.FAST, rush: bool = False) -> str:
    _check("order", {"lines": _plain(lines), "mode": _plain(mode), "rush": rush})
    return "ok"


@tool
async def search(
    query: str, limit: int = 10, ratio: float = 0.5, kind: Literal["a", "b"] | None = None,
    tags: list[str] | None = None, meta: dict[str, int] | None = None,
) -> str:
    _check("search", {"query": query, "limit": limit, "ratio": ratio, "kind": kind,
                      "tags": tags, "meta": meta})
    return "ok"


async def _volume(**arguments: Any) -> str:
    _check("set_volume", arguments)
    return "ok"


VOLUME = Tool.from_openai(
    {
        "name": "set_volume",
        "parameters": {
            "type": "dict",
            "properties": {
                "level": {"type": "float", "minimum": 0},
                "channels": {"type": "array", "items": {"type": "integer"}},
                "opts": {"type": "dict", "properties": {"mute": {"type": "boolean"}}},
            },
            "required": ["level"],
        },
    },
    _volume,
)

TOOLSET = Toolset([order, search, VOLUME])
KEYS = ["lines", "sku", "qty", "note", "mode", "rush", "query", "limit", "ratio", "kind",
        "tags", "meta", "level", "channels", "opts", "mute"]

scalars = (
    st.none() | st.booleans() | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=5)
    | st.sampled_from(["1", "2.5", "true", "fast", "a", "[1, 2]", '{"sku": "x", "qty": 1}'])
)
keys = st.sampled_from(KEYS) | st.text(max_size=6)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(keys, inner, max_size=2),
    max_leaves=3,
)
objects = st.dictionaries(keys, values, max_size=3)
line = st.fixed_dictionaries(
    {"sku": st.text(max_size=4) | st.integers(), "qty": st.integers() | st.text(max_size=3)},
    optional={"note": st.none() | st.text(max_size=4), "extra": values},
)
near_valid = {
    "order": st.fixed_dictionaries(
        {"lines": st.lists(line, max_size=2)},
        optional={"mode": st.sampled_from(["fast", "safe", "slow", 1]), "rush": values},
    ),
    "search": st.fixed_dictionaries(
        {"query": st.text(max_size=8) | st.integers()},
        optional={
            "limit": st.integers() | values,
            "kind": st.sampled_from(["a", "b", None]) | values,
            "tags": st.lists(st.text(max_size=3), max_size=3) | values,
            "meta": st.dictionaries(st.text(max_size=3), st.integers(), max_size=3) | values,
        },
    ),
    "set_volume": st.fixed_dictionaries(
        {"level": st.floats() | st.text(max_size=4) | st.integers()},
        optional={"channels": st.lists(st.integers(), max_size=3) | values, "opts": values},
    ),
}


@st.composite
def raw_calls(draw: st.DrawFn) -> RawCall:
    """A call as a model might write it: mostly a known tool with near-valid arguments."""
    known = draw(st.sampled_from(list(near_valid)))
    name = draw(st.one_of(
        st.just(known), st.just(known), st.just(known),
        st.sampled_from([known + " ", "Order", "serch"]), st.text(max_size=12),
    ))
    obj = draw(st.one_of(near_valid[known], near_valid[known], near_valid[known], objects))
    form = draw(st.sampled_from(["dict", "json", "json", "truncated", "text", "double"]))
    arguments: Any = obj
    if form != "dict":
        try:
            text = json.dumps(obj, allow_nan=True)
        except (TypeError, ValueError):
            text = "{"
        if form == "json":
            arguments = text
        elif form == "truncated":
            arguments = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
        elif form == "double":
            arguments = json.dumps(text)
        else:
            arguments = draw(st.text(max_size=40))
    return RawCall(name, arguments, id=draw(st.none() | st.text(max_size=6)))


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(raws=st.lists(raw_calls(), min_size=1, max_size=2), strict=st.booleans())
def test_arbitrary_output_never_escapes_and_never_runs_invalid(
    raws: list[RawCall], strict: bool
) -> None:
    VIOLATIONS.clear()
    calls, errors = validate_calls(raws, TOOLSET, strict=strict)
    assert len(calls) + len(errors) == len(raws)
    for outcome in [*calls, *errors]:
        assert isinstance(outcome, ToolCall | CallError)
    for error in errors:
        assert isinstance(error.message, str) and error.message
    for call in calls:
        # What validation returns satisfies the schema the model was shown, as plain JSON.
        assert TOOLSET[call.name].validator(strict=strict).is_valid(call.arguments)
        json.dumps(call.arguments, allow_nan=False)
        canonical_arguments(call)
    event("dispatched" if calls else "nothing valid")
    if calls:
        results = anyio.run(dispatch, calls, TOOLSET)
        assert [r.call_id for r in results] == [c.id for c in calls]
        assert all(r.ok for r in results), [r.error for r in results]
    assert VIOLATIONS == []
