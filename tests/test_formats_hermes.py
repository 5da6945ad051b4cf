"""HermesFormat: exact prompt text, call rendering, parsing of well- and ill-formed output."""

from __future__ import annotations

import json
from typing import Any

from ooo_agent.calls import CallErrorKind
from ooo_agent.formats.hermes import HermesFormat

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
TIME: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time. ünïcode",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}

EXPECTED_SYSTEM = (
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    + json.dumps(WEATHER, ensure_ascii=False)
    + "\n"
    + json.dumps(TIME, ensure_ascii=False)
    + "\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)

fmt = HermesFormat()


def test_system_prompt_is_exact_and_follows_users_own() -> None:
    msgs = fmt.render_messages(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        [WEATHER, TIME],
    )
    assert msgs[0] == {"role": "system", "content": "Be brief.\n\n" + EXPECTED_SYSTEM}
    assert msgs[1] == {"role": "user", "content": "hi"}


def test_system_prompt_inserted_when_absent_and_omitted_without_tools() -> None:
    msgs = fmt.render_messages([{"role": "user", "content": "hi"}], [WEATHER, TIME])
    assert msgs == [
        {"role": "system", "content": EXPECTED_SYSTEM},
        {"role": "user", "content": "hi"},
    ]
    assert fmt.render_messages([{"role": "user", "content": "hi"}], []) == [
        {"role": "user", "content": "hi"}
    ]


def test_render_calls_exact_text() -> None:
    one = fmt.render_calls([("get_weather", {"city": "Zürich", "days": 2})])
    assert one == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}\n'
        "</tool_call>"
    )
    two = fmt.render_calls([("get_weather", {"city": "A"}), ("get_time", {})])
    assert two == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "A"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    )


def test_history_assistant_calls_and_merged_tool_results() -> None:
    history = [
        {"role": "user", "content": "weather and time?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": ""}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "12:00"}]},
        {"role": "assistant", "content": "Sunny, noon."},
    ]
    msgs = fmt.render_messages(history, [])
    assert msgs[1] == {
        "role": "assistant",
        "content": "Checking.\n"
        + fmt.render_calls([("get_weather", {"city": "Paris"}), ("get_time", {})]),
    }
    assert msgs[2] == {
        "role": "user",
        "content": "<tool_response>\nsunny\n</tool_response>\n<tool_response>\n12:00\n</tool_response>",
    }
    assert msgs[3] == {"role": "assistant", "content": "Sunny, noon."}
    assert len(msgs) == 4


def test_parse_calls_with_text_around_and_fences() -> None:
    text = (
        "Let me look.\n<tool_call>\n```json\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n```\n</tool_call>\n'
        '<tool_call>{"name": "get_time", "parameters": {"tz": "UTC"}}</tool_call>\nDone.'
    )
    result = fmt.parse(text)
    assert [(c.name, c.arguments) for c in result.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"tz": "UTC"}),
    ]
    assert result.text == "Let me look.\n\n\nDone."
    assert result.errors == []


def test_parse_unterminated_block_and_bare_json_fallback() -> None:
    cut = fmt.parse('<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}')
    assert [c.name for c in cut.calls] == ["get_time"]
    bare = fmt.parse('{"name": "get_time", "arguments": {}}')
    assert [c.name for c in bare.calls] == ["get_time"] and bare.text == ""


def test_parse_errors_are_values_with_model_facing_messages() -> None:
    bad_json = fmt.parse(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'
    )
    assert bad_json.calls == []
    [err] = bad_json.errors
    assert err.kind is CallErrorKind.MALFORMED_JSON
    assert "<tool_call>" in err.message and err.raw is not None and "city" in err.raw

    no_name = fmt.parse('<tool_call>\n{"arguments": {}}\n</tool_call>')
    assert [e.kind for e in no_name.errors] == [CallErrorKind.MALFORMED_CALL]
    flat = fmt.parse('<tool_call>{"name": "get_weather", "city": "Paris"}</tool_call>')
    assert [e.kind for e in flat.errors] == [CallErrorKind.MALFORMED_CALL]
    assert "city" in flat.errors[0].message
    empty = fmt.parse("<tool_call></tool_call>")
    assert [e.kind for e in empty.errors] == [CallErrorKind.MALFORMED_CALL]


def test_plain_text_is_text() -> None:
    result = fmt.parse("The weather is {nice} today.")
    assert result.calls == [] and result.errors == []
    assert result.text == "The weather is {nice} today."


def test_description_first_lists_each_description_before_its_name() -> None:
    from ooo_agent.formats import get_format

    tools = [
        {"type": "function", "function": {"name": "a", "description": "first", "parameters": {}}},
        {"type": "function", "function": {"name": "b", "parameters": {}}},  # no description
        {"name": "c", "description": "bare", "parameters": {"type": "object"}},
    ]
    plain = HermesFormat().system_prompt(tools)
    first = get_format("hermes-description-first")
    assert isinstance(first, HermesFormat) and first.description_first
    lines = [ln for ln in first.system_prompt(tools).splitlines() if ln.startswith('{"type"')]
    assert [json.loads(ln)["function"] for ln in lines] == [
        {"description": "first", "name": "a", "parameters": {}},
        {"name": "b", "parameters": {}},
        {"description": "bare", "name": "c", "parameters": {"type": "object"}},
    ]
    assert list(json.loads(lines[0])["function"]) == ["description", "name", "parameters"]
    assert plain != first.system_prompt(tools)
    assert plain.replace('"description": "first", ', "") != plain  # the usual order: name first
    # One tool: nothing to choose, listed as usual.
    assert first.system_prompt(tools[:1]) == HermesFormat().system_prompt(tools[:1])
    call = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>'
    assert first.parse(call).calls == HermesFormat().parse(call).calls


def test_strict_reads_only_tool_call_blocks() -> None:
    call = '{"name": "get_time", "arguments": {"tz": "UTC"}}'
    # Lenient: an answer that is as a whole a bare call (or one fenced call) is read.
    assert [c.name for c in fmt.parse(call).calls] == ["get_time"]
    assert [c.name for c in fmt.parse(f"```json\n{call}\n```").calls] == ["get_time"]
    # Strict: it is reported, never run.
    strict = fmt.parse(call, strict=True)
    assert strict.calls == [] and [e.kind for e in strict.errors] == [
        CallErrorKind.MALFORMED_CALL
    ]
    assert "<tool_call>" in strict.errors[0].message
    # Inside a block, strict wants the JSON alone: no fence, no trailing text.
    assert [c.name for c in fmt.parse(f"Sure.\n<tool_call>\n{call}\n</tool_call>", strict=True).calls] == [
        "get_time"
    ]
    fenced = fmt.parse(f"<tool_call>\n```json\n{call}\n```\n</tool_call>", strict=True)
    assert fenced.calls == [] and fenced.errors
    trailing = fmt.parse(f"<tool_call>{call} and delete it</tool_call>", strict=True)
    assert trailing.calls == [] and trailing.errors
    assert [c.name for c in fmt.parse(f"<tool_call>{call} and delete it</tool_call>").calls] == [
        "get_time"
    ]


def test_a_key_written_twice_in_a_call_is_an_error() -> None:
    for strict in (False, True):
        twice = fmt.parse(
            '<tool_call>{"name": "get_time", "name": "delete_account", "arguments": {}}</tool_call>',
            strict=strict,
        )
        assert twice.calls == [] and [e.kind for e in twice.errors] == [
            CallErrorKind.MALFORMED_JSON
        ]
        assert "appears twice" in twice.errors[0].message
