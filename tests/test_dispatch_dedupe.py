"""Identical calls of one turn run once and share the result, unless the tool opts out."""

from __future__ import annotations

import json

import pytest

from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import ToolCall
from ooo_agent.formats import HermesFormat
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.tools import tool
from ooo_agent.tools.dispatch import dispatch

pytestmark = pytest.mark.anyio


def _booking_tools() -> tuple[list[str], object, object]:
    """Async tools (no worker threads): each records its run and answers in one step."""
    booked: list[str] = []

    @tool
    async def book_table(restaurant: str, people: int) -> str:
        """Book a table."""
        booked.append(restaurant)
        return f"booking #{len(booked)} at {restaurant} for {people}"

    @tool(dedupe=False)
    async def roll_die(sides: int) -> str:
        """Roll a die (each call is a new roll)."""
        booked.append(f"roll {sides}")
        return f"roll #{len(booked)}"

    return booked, book_table, roll_die


def _call(name: str, call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))


async def test_identical_calls_run_once_and_share_the_result() -> None:
    booked, book_table, roll_die = _booking_tools()
    calls = [
        _call("book_table", "c1", restaurant="Chez Nous", people=2),
        _call("book_table", "c2", people=2.0, restaurant="Chez Nous"),  # same, canonically
        _call("book_table", "c3", restaurant="Chez Nous", people=3),  # different
    ]
    results = await dispatch(calls, [book_table, roll_die])
    assert booked == ["Chez Nous", "Chez Nous"]  # c1 (shared with c2) and c3
    assert [r.call_id for r in results] == ["c1", "c2", "c3"]
    assert results[0].value == results[1].value == "booking #1 at Chez Nous for 2"
    assert results[2].value.startswith("booking #2")


async def test_a_tool_can_opt_out() -> None:
    booked, book_table, roll_die = _booking_tools()
    calls = [_call("roll_die", "r1", sides=6), _call("roll_die", "r2", sides=6)]
    results = await dispatch(calls, [book_table, roll_die])
    assert booked == ["roll 6", "roll 6"]
    assert sorted(r.value for r in results) == ["roll #1", "roll #2"]
    assert not roll_die.dedupe and book_table.dedupe  # type: ignore[attr-defined]


async def test_through_the_caller_a_booking_written_twice_books_once() -> None:
    booked, book_table, roll_die = _booking_tools()
    fmt = HermesFormat()
    text = fmt.render_calls(
        [
            ("book_table", {"restaurant": "Chez Nous", "people": 2}),
            ("book_table", {"people": 2, "restaurant": "Chez Nous"}),
            ("roll_die", {"sides": 6}),
            ("roll_die", {"sides": 6}),
        ]
    )
    caller = FastToolCaller(ReplayTarget([text], format=fmt))
    messages = [{"role": "user", "content": "Book Chez Nous for two, and roll twice"}]
    result = await caller.call(messages, [book_table, roll_die])
    assert booked == ["Chez Nous", "roll 6", "roll 6"]
    assert len(result.calls) == 4 and len({c.id for c in result.calls}) == 4
    assert [r.call_id for r in result.results] == [c.id for c in result.calls]
    assert result.results[0].value == result.results[1].value
    assert json.dumps([r.value for r in result.results])
