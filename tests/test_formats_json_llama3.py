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


def test_json_parse_whole_answer_fences_lists_and_nested_names() -> None:
    fmt = JsonFormat()
    calls = (
        '[{"name": "a", "parameters": {"user": {"name": "Bob"}}}, {"name": "b", "arguments": {}}]'
    )
    for text, strict in ((calls, True), (f"  {calls}\n", True), (f"```json\n{calls}\n```", False)):
        result = fmt.parse(text, strict=strict)
        assert [(c.name, c.arguments) for c in result.calls] == [
            ("a", {"user": {"name": "Bob"}}),
            ("b", {}),
        ]
        assert result.text == "" and result.errors == []
    assert fmt.parse('{"city": "Paris"} is not a call').calls == []
    # Lenient takes several calls one after another; strict one JSON value only.
    two = '{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {}}'
    assert [c.name for c in fmt.parse(two).calls] == ["a", "b"]
    assert fmt.parse(two, strict=True).calls == []
    # A fence is lenient only.
    fenced = '```json\n{"name": "a", "parameters": {}}\n```'
    assert fmt.parse(fenced, strict=True).calls == []


def test_json_inside_prose_is_never_a_call() -> None:
    """Changed behaviour: a call used to be read out of text around it (``Sure: ```json
    {...}``` thanks``); JSON inside prose is now text in every format and mode."""
    for fmt in (JsonFormat(), Llama3Format(), HermesFormat()):
        for text in (
            'Sure:\n```json\n{"name": "a", "parameters": {}}\n```\nthanks',
            'I will not do that. ```json {"name": "delete_account", "parameters": {}}```',
            'Example: {"name": "delete_account", "arguments": {"user": "me"}}',
            '{"name": "a", "parameters": {}} -- that is how you would call it',
        ):
            for strict in (False, True):
                result = fmt.parse(text, strict=strict)
                assert result.calls == [] and result.errors == [], (fmt.name, text)
                assert result.text == text.strip()


def test_json_parse_truncated_call_is_malformed_json() -> None:
    for strict in (False, True):
        result = JsonFormat().parse('{"name": "a", "parameters": {"x": ', strict=strict)
        assert result.calls == []
        [err] = result.errors
        assert err.kind is CallErrorKind.MALFORMED_JSON
        assert '"parameters"' in err.message and err.raw == '{"name": "a", "parameters": {"x":'
        assert result.text == ""
    # After prose it is text (changed: it used to be an error found inside the text).
    assert JsonFormat().parse('ok {"name": "a", "parameters": {"x": ').errors == []


def test_duplicate_keys_and_non_finite_numbers_are_errors() -> None:
    for fmt in (JsonFormat(), Llama3Format()):
        for text in (
            '{"name": "a", "name": "delete_account", "parameters": {}}',
            '{"name": "a", "parameters": {"x": 1, "x": 2}}',
            '{"name": "a", "parameters": {"x": NaN}}',
            '{"name": "a", "parameters": {"x": 1e999}}',
        ):
            for strict in (False, True):
                result = fmt.parse(text, strict=strict)
                assert result.calls == [], text
                assert [e.kind for e in result.errors] == [CallErrorKind.MALFORMED_JSON]


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
    for strict in (False, True):
        parsed = fmt.parse(
            '<|python_tag|>{"name": "get_time", "parameters": {"tz": "UTC"}}; ', strict=strict
        )
        assert [(c.name, c.arguments) for c in parsed.calls] == [("get_time", {"tz": "UTC"})]
        assert parsed.text == "" and parsed.errors == []
        two = '{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {}}'
        assert [c.name for c in fmt.parse(two, strict=strict).calls] == ["a", "b"]
    history = fmt.render_messages([{"role": "tool", "tool_call_id": "1", "content": "x"}], [])
    assert history == [{"role": "tool", "content": "x"}]
