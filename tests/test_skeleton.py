"""The drafting skeleton: schema drafts at every position of rendered calls, hint alignment."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ooo_agent.formats import FORMATS, get_format
from ooo_agent.formats.base import TextDraft
from ooo_agent.sidecar.base import Hint


def _tool(name: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    params = {"type": "object", "properties": props, "required": required or list(props)}
    return {"type": "function", "function": {"name": name, "description": "", "parameters": params}}


WEATHER = _tool(
    "get_weather",
    {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "detail": {"type": "boolean"},
    },
    ["city"],
)
TIME = _tool("get_time", {"tz": {"type": "string"}})
NOARGS = _tool("ping", {})
TOOLS = [WEATHER, TIME, NOARGS]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": 'São Paulo "x"', "days": 14, "unit": "celsius", "detail": True}),
    ("get_weather", {"unit": "fahrenheit", "city": "Oslo"}),  # not schema order
    ("get_time", {"tz": "Europe/Paris"}),
    ("ping", {}),
]
FORMAT_NAMES = sorted(FORMATS)


def _value_spans(text: str, args: dict[str, Any]) -> set[int]:
    """Positions strictly inside an argument value, where only a hint can predict text."""
    inside: set[int] = set()
    for key, value in args.items():
        rendered = (
            json.dumps(key, ensure_ascii=False) + ": " + json.dumps(value, ensure_ascii=False)
        )
        start = text.index(rendered) + len(json.dumps(key, ensure_ascii=False)) + 2
        inside.update(range(start + 1, start + len(json.dumps(value, ensure_ascii=False))))
    return inside


def _compatible(draft: TextDraft, truth: str) -> bool:
    return truth.startswith(draft.text) or draft.text.startswith(truth)


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0]}-{len(c[1])}")
def test_schema_drafts_consistent_at_every_position(
    fmt_name: str, call: tuple[str, dict[str, Any]]
) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    text = fmt.render_calls([call])
    inside = _value_spans(text, call[1])
    offered = 0
    for i in range(len(text)):
        drafts = skeleton.continuations(text[:i])
        assert all(d.source == "schema" and d.text for d in drafts)
        if i in inside:
            continue
        if drafts:
            offered += 1
            assert any(_compatible(d, text[i:]) for d in drafts), (i, text[:i], drafts)
    # Outside the values the skeleton nearly always has something to say.
    assert offered >= len(text) - len(inside) - 3


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
def test_schema_drafts_at_key_points(fmt_name: str) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    text = fmt.render_calls([("get_weather", {"city": "Oslo", "days": 3})])
    start = text.index('"get_weather"') + 1
    before_name = skeleton.continuations(text[:start])
    assert [d.text.split('"')[0] for d in before_name] == ["get_weather", "get_time", "ping"]
    after_name = skeleton.continuations(text[: start + len("get_weather") + 1])
    # args opening + first keys of THAT tool, required first, `"` for strings.
    assert after_name[0].text.endswith('{"city": "')
    assert any(d.text.endswith('{"days": ') for d in after_name)
    assert not any("tz" in d.text for d in after_name)
    after_city = skeleton.continuations(text[: text.index('"Oslo"') + 6])
    closing = text[text.index('"Oslo"') + 6 :].replace(', "days": 3', "")
    assert after_city[0].text == closing
    assert ', "days": ' in [d.text for d in after_city]
    assert ', "unit": "' in [d.text for d in after_city]
    assert not any("city" in d.text for d in after_city)  # already used
    enum = skeleton.continuations(text[: text.index('"Oslo"') + 6] + ', "unit"')
    assert ': "celsius"' in [d.text for d in enum]


def test_partial_name_completes_only_matching_tools() -> None:
    skeleton = get_format("hermes").skeleton(TOOLS)
    drafts = skeleton.continuations('<tool_call>\n{"name": "get_')
    assert {d.text.split('"')[0] for d in drafts} == {"weather", "time"}
    assert skeleton.continuations('<tool_call>\n{"name": "zzz') == []


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
def test_written_function_is_the_first_calls_complete_name(fmt_name: str) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    text = fmt.render_calls([("get_time", {"tz": "UTC"}), ("get_weather", {"city": "Oslo"})])
    name_end = text.index("get_time") + len("get_time")
    assert skeleton.written_function(text[: name_end - 2]) is None  # name not finished
    # Complete once its closing quote is written; a later call never changes the answer.
    assert skeleton.written_function(text[: name_end + 1]) == "get_time"
    assert skeleton.written_function(text) == "get_time"
    assert skeleton.written_function("") is None
    unknown = fmt.render_calls([("zzz", {})])
    assert skeleton.written_function(unknown) is None


def test_after_a_call_drafts_the_next_call_and_prose_gets_nothing() -> None:
    fmt = get_format("hermes")
    skeleton = fmt.skeleton(TOOLS)
    done = fmt.render_calls([("ping", {})])
    nxt = skeleton.continuations(done)
    assert nxt and nxt[0].text.startswith('\n<tool_call>\n{"name": "')
    assert skeleton.continuations("The answer is") == []
    assert skeleton.continuations("")[0].text.startswith('<tool_call>\n{"name": "')


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
def test_hint_gives_whole_call_before_name(fmt_name: str) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    hint = Hint("get_weather", {"days": 2, "city": "Rome", "bogus": 1})
    [first, *rest] = skeleton.continuations("", hint)
    assert first.source == "hint"
    # schema key order, keys outside the schema dropped
    assert first.text == fmt.render_calls([("get_weather", {"city": "Rome", "days": 2})])
    assert all(d.source == "schema" for d in rest)


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
@pytest.mark.parametrize("order", [["city", "days", "unit"], ["unit", "days", "city"]])
def test_hint_aligned_to_target_key_order(fmt_name: str, order: list[str]) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    slots = {"city": "Rome", "days": 2, "unit": "celsius"}
    hint = Hint("get_weather", slots)
    truth = fmt.render_calls([("get_weather", {k: slots[k] for k in order})])
    used: list[str] = []
    for key in order:
        at = truth.index(json.dumps(key) + ":") + len(json.dumps(key))
        used.append(key)
        best = skeleton.continuations(truth[:at], hint)[0]
        assert best.source == "hint"
        value = json.dumps(slots[key])
        assert best.text.startswith(": " + value)
        # then the keys not yet written, in schema order, then the closing text
        remaining = {k: slots[k] for k in ["city", "days", "unit"] if k not in used}
        closing = truth[truth.rindex("}") :]
        rest = json.dumps(remaining)[1:] if remaining else "}"
        assert best.text == ": " + value + (", " if remaining else "") + rest + closing


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
def test_hint_for_another_function_is_ignored(fmt_name: str) -> None:
    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton(TOOLS)
    hint = Hint("get_time", {"tz": "UTC"})
    truth = fmt.render_calls([("get_weather", {"city": "Rome"})])
    committed = truth.index('"get_weather"') + len('"get_weather"')
    for i in range(committed, len(truth)):
        assert all(d.source == "schema" for d in skeleton.continuations(truth[:i], hint))
    unknown = Hint("not_a_tool", {"x": 1})
    assert all(d.source == "schema" for d in skeleton.continuations("", unknown))


@pytest.mark.parametrize("fmt_name", FORMAT_NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    args=st.dictionaries(
        st.text(min_size=1, max_size=6),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=2),
            max_leaves=5,
        ),
        max_size=4,
    )
)
def test_exact_hint_drafts_the_exact_rest_everywhere(fmt_name: str, args: dict[str, Any]) -> None:
    fmt = get_format(fmt_name)
    tool = _tool("f", {k: {} for k in args})
    skeleton = fmt.skeleton([tool, TIME])
    hint = Hint("f", args)
    truth = fmt.render_calls([("f", args)])
    for i in range(len(truth)):
        drafts = skeleton.continuations(truth[:i], hint)
        assert drafts and drafts[0].text == truth[i:], (truth[:i], drafts)
        if i <= truth.index('"f"'):
            assert drafts[0].source == "hint"


def test_nested_name_key_is_not_a_new_call_in_json() -> None:
    fmt = get_format("json")
    tool = _tool("add_user", {"user": {"type": "object"}, "note": {"type": "string"}})
    skeleton = fmt.skeleton([tool])
    text = '{"name": "add_user", "parameters": {"user": {"name": "Bob"}'
    drafts = [d.text for d in skeleton.continuations(text)]
    assert ', "note": "' in drafts and "}}" in drafts
