"""JsonFormat (ToolSpec) and Llama3Format: prompts, call text, parsing, the registry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ooo_agent.calls import CallErrorKind
from ooo_agent.errors import FormatError
from ooo_agent.formats import FORMATS, HermesFormat, JsonFormat, Llama3Format, get_format

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}


def test_registry_names_aliases_and_errors() -> None:
    assert set(FORMATS) == {"hermes", "hermes-description-first", "json", "llama3"}
    assert isinstance(get_format("hermes"), HermesFormat)
    assert isinstance(get_format("JSON"), JsonFormat)
    assert isinstance(get_format("qwen3"), HermesFormat)
    assert isinstance(get_format("llama3"), Llama3Format)
    fmt = JsonFormat()
    assert get_format(fmt) is fmt
    with pytest.raises(FormatError, match="hermes, hermes-description-first, json, llama3"):
        get_format("nope")


def test_json_render_one_and_many() -> None:
    fmt = JsonFormat()
    assert fmt.render_calls([("get_time", {"tz": "UTC"})]) == (
        '{"name": "get_time", "parameters": {"tz": "UTC"}}'
    )
    many = fmt.render_calls([("a", {}), ("b", {"x": [1, 2]})])
    assert many == '[{"name": "a", "parameters": {}}, {"name": "b", "parameters": {"x": [1, 2]}}]'
    assert json.loads(many)[1]["parameters"] == {"x": [1, 2]}


def test_json_prompt_lists_tools_and_merges_tool_results() -> None:
    fmt = JsonFormat()
    msgs = fmt.render_messages(
        [
            {"role": "user", "content": "time?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "12:00"},
            {"role": "tool", "tool_call_id": "zz", "content": "?"},
        ],
        [TOOL],
    )
    assert msgs[0]["role"] == "system"
    assert json.dumps(TOOL, ensure_ascii=False) in msgs[0]["content"]
    assert '"parameters"' in msgs[0]["content"]
    assert msgs[2] == {
        "role": "assistant",
        "content": '{"name": "get_time", "parameters": {"tz": "UTC"}}',
    }
    assert msgs[3] == {
        "role": "user",
        "content": "Result of get_time: 12:00\nResult of the tool: ?",
    }


def test_json_parse_fences_lists_text_and_nested_names() -> None:
    fmt = JsonFormat()
    text = (
        "Sure:\n```json\n"
        '[{"name": "a", "parameters": {"user": {"name": "Bob"}}}, {"name": "b", "arguments": {}}]'
        "\n```\nthanks"
    )
    result = fmt.parse(text)
    assert [(c.name, c.arguments) for c in result.calls] == [
        ("a", {"user": {"name": "Bob"}}),
        ("b", {}),
    ]
    assert result.text == "Sure:\n\nthanks"
    assert fmt.parse('{"city": "Paris"} is not a call').calls == []


def test_json_parse_truncated_call_is_malformed_json() -> None:
    result = JsonFormat().parse('ok {"name": "a", "parameters": {"x": ')
    assert result.calls == []
    [err] = result.errors
    assert err.kind is CallErrorKind.MALFORMED_JSON
    assert '"parameters"' in err.message and err.raw == '{"name": "a", "parameters": {"x": '
    assert result.text == "ok"


def test_llama3_tools_go_to_first_user_message() -> None:
    fmt = Llama3Format()
    msgs = fmt.render_messages(
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "What time?"}],
        [TOOL],
    )
    assert msgs[0] == {"role": "system", "content": "sys"}
    content = msgs[1]["content"]
    assert content.startswith("Given the following functions")
    assert json.dumps(TOOL, indent=4) in content
    assert content.endswith("\n\nWhat time?")
    only_system = fmt.render_messages([{"role": "system", "content": "s"}], [TOOL])
    assert [m["role"] for m in only_system] == ["system", "user"]


def test_llama3_calls_python_tag_and_results() -> None:
    fmt = Llama3Format()
    assert fmt.render_calls([("a", {}), ("b", {"k": 1})]) == (
        '{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {"k": 1}}'
    )
    parsed = fmt.parse('<|python_tag|>{"name": "get_time", "parameters": {"tz": "UTC"}}; ')
    assert [(c.name, c.arguments) for c in parsed.calls] == [("get_time", {"tz": "UTC"})]
    assert parsed.text == "" and parsed.errors == []
    history = fmt.render_messages([{"role": "tool", "tool_call_id": "1", "content": "x"}], [])
    assert history == [{"role": "tool", "content": "x"}]
