"""Methods as tools, the other constructors (model, OpenAI dict), invoke, and Toolset."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ValidationError

from ooo_agent.errors import ToolDefinitionError, ToolsetError
from ooo_agent.tools import Tool, Toolset, tool
from ooo_agent.tools.context import ToolContext


class Counter:
    """A service whose methods are tools."""

    def __init__(self, start: int) -> None:
        self.value = start

    @tool
    def add(self, amount: int) -> int:
        """Add to the counter.

        Args:
            amount: How much.
        """
        self.value += amount
        return self.value

    @tool(read_only=True)
    async def peek(self, ctx: ToolContext) -> str:
        """Read the counter."""
        return f"{ctx.tool_name}={self.value}"

    @tool
    @classmethod
    def kind(cls, suffix: str) -> str:
        return cls.__name__ + suffix

    @tool
    @staticmethod
    def double(x: int) -> int:
        return 2 * x


def test_methods_are_bound_tools() -> None:
    counter = Counter(10)
    bound = counter.add
    assert isinstance(bound, Tool) and bound.name == "add"
    assert set(bound.parameters["properties"]) == {"amount"}  # no self
    assert bound(5) == 15  # still callable like the method
    assert Counter.add(counter, 1) == 16  # and through the class
    assert anyio.run(bound.invoke, {"amount": "4"}) == 20
    assert counter.value == 20
    assert counter.peek.is_async and counter.peek.read_only and not counter.add.is_async
    context = ToolContext(call_id="c", tool_name="peek")
    assert anyio.run(counter.peek.invoke, {}, context) == "peek=20"


def test_two_instances_keep_their_own_state() -> None:
    a, b = Counter(0), Counter(100)
    toolset_a, toolset_b = Toolset([a.add]), Toolset([b.add])
    anyio.run(toolset_a["add"].invoke, {"amount": 1})
    anyio.run(toolset_b["add"].invoke, {"amount": 1})
    assert (a.value, b.value) == (1, 101)


def test_classmethod_and_staticmethod_tools() -> None:
    assert Counter.kind("!") == "Counter!"
    assert anyio.run(Counter.kind.invoke, {"suffix": "?"}) == "Counter?"
    assert anyio.run(Counter(0).kind.invoke, {"suffix": "."}) == "Counter."
    assert Counter.double(4) == 8
    assert anyio.run(Counter.double.invoke, {"x": 3}) == 6


def test_unbound_method_tool_cannot_be_invoked() -> None:
    with pytest.raises(ToolDefinitionError, match="from an instance"):
        anyio.run(Counter.add.invoke, {"amount": 1})


def test_invoke_validates_and_runs_sync_in_a_thread() -> None:
    import threading

    main = threading.get_ident()

    @tool
    def where(x: int) -> tuple[int, bool]:
        return x, threading.get_ident() != main

    assert anyio.run(where.invoke, {"x": "7"}) == (7, True)
    with pytest.raises(ValidationError):
        anyio.run(where.invoke, {"x": "seven"})


class Weather(BaseModel):
    """Current weather for a city."""

    city: str
    unit: str = "c"


def test_from_model() -> None:
    got: list[Any] = []

    def handle(args: Weather, ctx: ToolContext) -> str:
        got.append((args, ctx.call_id))
        return args.city

    t = Tool.from_model(Weather, handle, read_only=True)
    assert (t.name, t.description) == ("Weather", "Current weather for a city.")
    assert t.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "default": "c"}},
        "required": ["city"],
    }
    context = ToolContext(call_id="c9", tool_name="Weather")
    assert anyio.run(t.invoke, {"city": "Oslo"}, context) == "Oslo"
    assert got == [(Weather(city="Oslo"), "c9")]
    schema_only = Tool.from_model(Weather, name="weather")
    assert not schema_only.has_handler and schema_only.name == "weather"
    with pytest.raises(ToolDefinitionError):
        Tool.from_model(dict)  # type: ignore[arg-type]


BFCL_SPEC = {
    "name": "math.hypot",
    "description": "Euclidean norm.",
    "parameters": {
        "type": "dict",
        "properties": {
            "x": {"type": "float", "description": "first"},
            "point": {"type": "tuple", "items": {"type": "integer"}},
            "opts": {
                "type": "dict",
                "properties": {"exact": {"type": "boolean"}, "extra": {"type": "any"}},
            },
        },
        "required": ["x"],
    },
}


def test_from_openai_normalises_bfcl_types() -> None:
    t = Tool.from_openai(BFCL_SPEC)
    props = t.parameters["properties"]
    assert t.parameters["type"] == "object"
    assert props["x"] == {"type": "number", "description": "first"}
    assert props["point"]["type"] == "array"
    assert props["opts"]["type"] == "object"
    assert props["opts"]["properties"]["extra"] == {}
    assert not t.has_handler
    with pytest.raises(TypeError, match="schema-only"):
        t()
    wrapped = Tool.from_openai({"type": "function", "function": BFCL_SPEC})
    assert wrapped.to_openai() == t.to_openai()


def test_from_openai_with_a_handler_and_bad_specs() -> None:
    async def hypot(**arguments: Any) -> dict[str, Any]:
        return arguments

    t = Tool.from_openai(BFCL_SPEC, hypot)
    assert t.is_async and anyio.run(t.invoke, {"x": 3}) == {"x": 3}
    with pytest.raises(ValueError, match="invalid arguments"):
        anyio.run(t.invoke, {"x": "three"})
    with pytest.raises(ToolDefinitionError):
        Tool.from_openai({"parameters": {}})  # no name
    with pytest.raises(ToolDefinitionError, match="invalid parameters schema"):
        Tool.from_openai({"name": "f", "parameters": {"properties": {"a": {"minimum": "x"}}}})


def plain(a: int) -> int:
    """A plain function."""
    return a


def test_toolset_lookup_names_and_duplicates() -> None:
    ts = Toolset([plain, Tool.from_openai(BFCL_SPEC), Weather])
    assert ts.names == ("plain", "math.hypot", "Weather") and len(ts) == 3
    assert "plain" in ts and ts.get("nope") is None
    assert [t.name for t in ts] == list(ts.names)
    with pytest.raises(ToolsetError, match="Did you mean 'plain'"):
        ts["plian"]
    with pytest.raises(ToolsetError, match="duplicate tool name 'plain'"):
        Toolset([plain, tool(plain)])


def test_toolset_to_openai_and_strict_mode() -> None:
    exported = Toolset([plain]).to_openai()
    assert exported == [
        {
            "type": "function",
            "function": {
                "name": "plain",
                "description": "A plain function.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}},
                    "required": ["a"],
                },
            },
        }
    ]
    strict = Toolset([plain, Tool.from_openai(BFCL_SPEC)], strict=True).to_openai()
    assert strict[0]["function"]["parameters"]["additionalProperties"] is False
    opts = strict[1]["function"]["parameters"]["properties"]["opts"]
    assert opts["additionalProperties"] is False  # nested objects too


def test_coerce_accepts_every_tool_like() -> None:
    ts = Toolset([plain])
    assert Toolset.coerce(ts) is ts
    assert Toolset.coerce(plain).names == ("plain",)
    assert Toolset.coerce(BFCL_SPEC).names == ("math.hypot",)
    mixed = Toolset.coerce([plain, {"type": "function", "function": BFCL_SPEC}, Counter(0).add])
    assert mixed.names == ("plain", "math.hypot", "add")
    assert Toolset.coerce(None).names == ()
    with pytest.raises(ToolDefinitionError):
        Toolset.coerce("plain")
    with pytest.raises(ToolDefinitionError):
        Toolset.coerce([3])


def scale(x: int, factor: int) -> int:
    """Scale a number.

    Args:
        x: The number.
        factor: The multiplier.
    """
    return x * factor


class Adder:
    """Add two numbers."""

    async def __call__(self, a: int, b: int = 1) -> int:
        return a + b


def test_partials_and_callable_objects() -> None:
    import functools

    scaled = Tool.from_function(functools.partial(scale, factor=3))
    assert (scaled.name, scaled.description) == ("scale", "Scale a number.")
    assert scaled.parameters["properties"]["factor"]["default"] == 3
    assert scaled.parameters["required"] == ["x"]
    assert anyio.run(scaled.invoke, {"x": 2}) == 6

    adder = Tool.from_function(Adder())
    assert (adder.name, adder.description, adder.is_async) == ("Adder", "Add two numbers.", True)
    assert anyio.run(adder.invoke, {"a": 2}) == 3
