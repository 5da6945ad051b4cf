"""The offered tool: read from an OpenAI tool dict, given back as that very dict, and carried
by the requests after the caller without changing a rendered prompt."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from ooo_agent.formats import HermesDescriptionFirstFormat, HermesFormat, JsonFormat, Llama3Format
from ooo_agent.offered import OfferedTool, offer, openai_tools
from ooo_agent.rules import RuledTools, rules_named
from ooo_agent.sidecar.base import SidecarRequest
from ooo_agent.sidecar.rows import build_wave_rows
from ooo_agent.targets.base import TargetRequest, tools_named


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    parameters = {"type": "dict", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


# BFCL-like tools: dotted names, nested and enum schemas, defaults, non-ASCII text.
TOOLS: list[Any] = [
    _tool(
        "geometry.circle_area",
        "Calculate the area of a circle. Note that the provided function is in Python 3 syntax.",
        {
            "radius": {"type": "float", "description": "The radius of the circle."},
            "units": {"type": "string", "description": "The units, e.g. 'cm'.", "default": "cm"},
        },
        ["radius"],
    ),
    _tool(
        "weather.forecast",
        "Météo: the forecast for a city — «temperature» and wind.",
        {
            "location": {"type": "string", "description": "The city, e.g. 'Zürich, CH'."},
            "days": {"type": "integer", "description": "Days ahead (1-14)."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "fields": {"type": "array", "items": {"type": "string", "enum": ["wind", "rain"]}},
        },
        ["location", "days"],
    ),
    {
        "name": "bare_function",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
    MappingProxyType(
        {"type": "function", "function": {"name": "read_only", "description": "", "parameters": {}}}
    ),
]
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "What's the area of a circle of radius 5 cm, and the weather in Zürich?",
    },
]
FORMATS = [HermesFormat(), HermesDescriptionFirstFormat(), JsonFormat(), Llama3Format()]


def test_an_offered_tool_reads_its_dict_and_gives_it_back() -> None:
    circle, weather, bare, proxy = offer(TOOLS)
    assert circle.name == "geometry.circle_area" and circle.description.startswith("Calculate")
    assert circle.parameters is TOOLS[0]["function"]["parameters"]
    assert list(circle.properties) == ["radius", "units"] and circle.required == ("radius",)
    assert weather.required == ("location", "days")
    assert bare.name == "bare_function" and bare.description == "" and bare.required == ()
    assert proxy.name == "read_only" and proxy.parameters == {} and proxy.properties == {}
    assert [t.to_openai() for t in (circle, weather, bare, proxy)] == TOOLS
    assert all(
        t.to_openai() is d for t, d in zip((circle, weather, bare, proxy), TOOLS, strict=True)
    )
    # Whatever a dict lacks reads as empty; nothing raises.
    odd = OfferedTool.from_openai({"function": "not a mapping", "parameters": ["x"]})
    assert (odd.name, odd.description, odd.parameters, odd.required) == ("", "", {}, ())


def test_offer_converts_once_and_a_built_tool_has_a_dict() -> None:
    offered = offer(TOOLS)
    assert offer(offered) is offered  # a tuple of offered tools is taken as it is
    assert offer(list(offered)) == offered and offer(list(offered)) is not offered
    assert openai_tools([offered[0], TOOLS[1]]) == TOOLS[:2]
    built = OfferedTool("add", "Add two numbers.", {"type": "object", "properties": {}})
    assert built.to_openai() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert OfferedTool.from_openai(built.to_openai()) == built
    assert tools_named(TOOLS, "weather.forecast") == [offered[1]]


def test_requests_carry_offered_tools_made_once() -> None:
    offered = offer(TOOLS)
    assert TargetRequest(MESSAGES, offered).tools is offered
    assert SidecarRequest(MESSAGES, offered).tools is offered
    from_dicts = TargetRequest(MESSAGES, TOOLS, mode="vanilla")
    assert from_dicts.tools == offered and from_dicts.mode == "vanilla"
    assert SidecarRequest(MESSAGES, TOOLS, 1.5).tools == offered
    assert SidecarRequest(MESSAGES, TOOLS, 1.5).arrival == 1.5
    ruled = RuledTools(MESSAGES, offered, rules_named(["mentioned", "values"]))
    assert ruled.given is offered and ruled.reads(MESSAGES, offered, ruled.rules)
    assert [t.name for t in ruled.tools] == [t.name for t in offered]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_a_format_renders_offered_tools_as_their_dicts(fmt: Any) -> None:
    offered = offer(TOOLS)
    rendered = fmt.render_messages(MESSAGES, TOOLS)
    assert fmt.render_messages(MESSAGES, offered) == rendered
    assert fmt.render_messages(MESSAGES, openai_tools(offered)) == rendered
    assert "geometry.circle_area" in str(rendered)


def test_the_sidecar_rows_read_offered_tools_as_dicts() -> None:
    for layout in ("dialogue-first", "tools-first"):
        rows = build_wave_rows(MESSAGES, TOOLS, direct_call=True, layout=layout)
        assert build_wave_rows(MESSAGES, offer(TOOLS), direct_call=True, layout=layout) == rows


def test_the_target_prompt_is_the_same_token_for_token() -> None:
    pytest.importorskip("torch")
    from ooo_agent.decoding.codec import TokenizerCodec
    from ooo_agent.targets.hf import chat_prompt_ids
    from test_decoding_support import byte_tokenizer

    tokenizer = byte_tokenizer()
    codec = TokenizerCodec(tokenizer)
    for fmt in FORMATS:
        ids = chat_prompt_ids(fmt, tokenizer, codec, MESSAGES, TOOLS)
        assert chat_prompt_ids(fmt, tokenizer, codec, MESSAGES, offer(TOOLS)) == ids
        text = tokenizer.apply_chat_template(
            fmt.render_messages(MESSAGES, TOOLS), tokenize=False, add_generation_prompt=True
        )
        assert codec.decode(ids) == text
