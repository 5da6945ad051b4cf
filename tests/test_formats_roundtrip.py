"""Every format: render → parse gives the same calls; parse never raises on any text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ooo_agent.formats import FORMATS, ChatFormat, get_format

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
NAMES = st.text(min_size=1, max_size=16)
ARGS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)
CALLS = st.lists(st.tuples(NAMES, ARGS), min_size=1, max_size=3)

FORMAT_NAMES = sorted(FORMATS)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", FORMAT_NAMES)
@FAST
@given(calls=CALLS, before=st.sampled_from(["", "Okay.\n", "  "]), strict=st.booleans())
def test_render_then_parse_round_trips(
    name: str, calls: list[tuple[str, dict[str, Any]]], before: str, strict: bool
) -> None:
    fmt: ChatFormat = get_format(name)
    text = before + fmt.render_calls(calls)
    result = fmt.parse(text, strict=strict)
    if fmt.call_opening or not before.strip():
        assert result.errors == []
        assert [(c.name, c.arguments) for c in result.calls] == calls
        assert result.text == before.strip()
    else:  # bare JSON after prose is text, never a call
        assert result.calls == [] and result.errors == [] and result.text == text.strip()


@pytest.mark.parametrize("name", FORMAT_NAMES)
@FAST
@given(
    text=st.text(max_size=200)
    | st.lists(
        st.sampled_from(
            [
                "<tool_call>",
                "</tool_call>",
                "{",
                "}",
                "[",
                "]",
                '"name"',
                ":",
                ",",
                '"',
                "```",
                "\\",
                "<|python_tag|>",
                '"arguments"',
                '"x"',
                "1",
                " ",
                "\n",
            ]
        ),
        max_size=40,
    ).map("".join)
)
def test_parse_never_raises(name: str, text: str) -> None:
    result = get_format(name).parse(text, strict=len(text) % 2 == 1)
    for call in result.calls:
        assert isinstance(call.name, str) and call.name
    for error in result.errors:
        assert error.message


@pytest.mark.parametrize("name", FORMAT_NAMES)
def test_parse_survives_deep_nesting(name: str) -> None:
    fmt = get_format(name)
    deep = fmt.call_opening + '{"name": "a", "parameters": ' + "[" * 50_000
    for strict in (False, True):
        result = fmt.parse(deep, strict=strict)
        assert result.calls == [] and result.errors
