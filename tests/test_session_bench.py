"""``ooo-agent bench session``: the workload (gold history, executed results), its run on tiny
random models in every mode, and the report's fields (never its timings)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch")
from rich.console import Console  # noqa: E402

from ooo_agent.bench.agent_tasks import NeededCall  # noqa: E402
from ooo_agent.bench.oracle import OracleSidecar  # noqa: E402
from ooo_agent.bench.runner import build_runners  # noqa: E402
from ooo_agent.bench.session import (  # noqa: E402
    SESSION_GOALS,
    SessionRecord,
    conversation_requests,
    interleave_conversations,
    run_sessions,
    session_summary,
    session_table,
    wave_table,
)
from ooo_agent.calls import RawCall  # noqa: E402
from ooo_agent.tools import tool  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402


@tool(read_only=True)
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Weather in a city.

    Args:
        city: The city.
        unit: The unit.
    """
    return {"city": city, "temperature": len(city) * 3}


@tool(read_only=True)
def get_time(city: str) -> str:
    """Local time in a city.

    Args:
        city: The city.
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"{len(city)}:00"


TOOLS = [get_weather, get_time]
TURNS = [
    ("Weather in Paris, then the time there?",
     [NeededCall("get_weather", {"city": "Paris"}), NeededCall("get_time", {"city": "Paris"})]),
    ("And the time in Atlantis?", [NeededCall("get_time", {"city": "Atlantis"})]),
]  # fmt: skip


def test_a_conversation_holds_the_gold_calls_and_their_executed_results() -> None:
    requests = conversation_requests("c1", "mine", TOOLS, TURNS)
    assert [r.place for r in requests] == [0, 1, 2]
    assert [r.item.id for r in requests] == ["c1#0", "c1#1", "c1#2"]
    first, second, third = (r.item for r in requests)
    assert first.messages == [{"role": "user", "content": TURNS[0][0]}]
    # The gold call, all as given; an optional parameter left out may be absent or default.
    assert first.gold == [{"get_weather": {"city": ["Paris"], "unit": ["", "celsius"]}}]
    assert second.gold == [{"get_time": {"city": ["Paris"]}}]
    assistant, result = second.messages[1:]
    call = assistant["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
    assert json.loads(result["content"]) == {"city": "Paris", "temperature": 15}
    # The next user turn follows the closing words; a tool's error is its executed result.
    roles = [m["role"] for m in third.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    assert third.messages[4]["content"] == "5:00"
    assert third.gold == [{"get_time": {"city": ["Atlantis"]}}]
    # The items are copies: a later turn never changes an earlier request's history.
    assert len(first.messages) == 1


def test_conversations_interleave_a_few_at_a_time() -> None:
    a = conversation_requests("a", "s", TOOLS, TURNS)
    b = conversation_requests("b", "s", TOOLS, TURNS[:1])
    c = conversation_requests("c", "s", TOOLS, TURNS[1:])
    order = [r.item.id for r in interleave_conversations([a, b, c], 2)]
    assert order == ["a#0", "b#0", "a#1", "b#1", "a#2", "c#0"]
    with pytest.raises(ValueError, match="width"):
        interleave_conversations([a], 0)


@pytest.fixture(scope="module")
def byte_model() -> Any:
    return tiny_model("llama", "sdpa", vocab_size=len(byte_tokenizer()), seed=23)


def _run(byte_model: Any, oracle: OracleSidecar) -> list[SessionRecord]:
    requests = interleave_conversations(
        [
            conversation_requests("c1", "mine", TOOLS, TURNS),
            conversation_requests("c2", "mine", TOOLS, list(reversed(TURNS))),
        ],
        2,
    )
    for r in requests:  # the oracle hints each request's gold call (wrong or right for the model)
        name, answer = next(iter(r.item.gold[0].items()))
        oracle.remember(
            r.item.messages,
            r.item.tools,
            RawCall(name, {k: v[0] for k, v in answer.items() if v[0] != ""}),
        )
    runners = build_runners(
        byte_model, byte_tokenizer(), modes=("vanilla", "toolspec", "ooo"), sidecar=oracle,
        max_new_tokens=12, node_budget=16,
    )  # fmt: skip
    schedule = [(requests[0], True)] + [(r, False) for r in requests]

    async def main() -> list[SessionRecord]:
        return await run_sessions(schedule, runners)

    return anyio.run(main)


def test_every_mode_runs_every_request_and_the_report_says_what_the_caches_did(
    byte_model: Any,
) -> None:
    records = _run(byte_model, OracleSidecar(delay_s=0.0))
    measured = [r for r in records if not r.warmup]
    assert len(measured) == 6 * 3 and all(not r.failure for r in measured)
    by_mode: dict[str, list[SessionRecord]] = {}
    for r in measured:
        by_mode.setdefault(r.mode, []).append(r)
    for mode, rows in by_mode.items():
        assert [r.item_id for r in rows] == ["c1#0", "c2#0", "c1#1", "c2#1", "c1#2", "c2#2"]
        for r in rows:
            assert r.prefill_tokens + r.cached_tokens == r.prompt_tokens
            assert r.forward_passes >= 1 and r.latency_s > 0
            assert (r.sidecar_status != "off") == (mode == "ooo")
            assert bool(r.wave) == (mode == "ooo") and r.late_wave == (r.sidecar_status == "late")
            assert r.identical is (None if mode == "vanilla" else True)
            assert r.first_call_ok or not r.ast_ok  # a whole right answer has a right first call
            assert not r.first_call_ok or r.calls
        # A follow-up request is served up to its history (at least the first call's prompt).
        first = {r.conversation: r for r in rows if r.place == 0}
        for r in rows:
            if r.place > 0:
                assert r.cached_tokens >= first[r.conversation].prompt_tokens - 1
    summary = session_summary(records)
    for mode in ("vanilla", "toolspec", "ooo"):
        figures = summary["modes"][mode]
        assert figures["requests"] == 6 and figures["failed"] == 0
        rows = by_mode[mode]
        assert figures["target_prefill_tokens"] == pytest.approx(
            sum(r.prefill_tokens for r in rows) / 6, abs=1e-3
        )
        assert figures["target_cached_tokens"] > 0
        assert figures["speedup_vs_vanilla"] is not None
    assert summary["modes"]["ooo"]["identity_percent"] == 100.0
    assert summary["modes"]["ooo"]["waves"] == 6
    assert "latency_s" in summary["modes"]["ooo"]["wave_means"]
    assert summary["by_place"]["follow_up"]["ooo"]["requests"] == 4
    assert summary["by_source"]["mine"]["toolspec"]["requests"] == 6
    console = Console(record=True, width=250)
    console.print(session_table(summary))
    shown = console.export_text()
    assert "ooo (follow-ups)" in shown and "AST 1st call" in shown and "wave cached" in shown
    goals = summary["goals"]
    assert goals["identity_percent"] == 100.0 and goals["identity_met"] is True
    assert {k: goals[k] for k in SESSION_GOALS} == SESSION_GOALS


def test_waves_still_running_when_the_call_is_done_count_as_late(byte_model: Any) -> None:
    records = _run(byte_model, OracleSidecar(delay_s=30.0))
    ooo = [r for r in records if r.mode == "ooo" and not r.warmup]
    assert all(r.late_wave and r.sidecar_status == "late" for r in ooo)
    summary = session_summary(records)
    assert summary["modes"]["ooo"]["late_waves_percent"] == 100.0
    assert summary["goals"]["late_waves_met"] is False
    assert all(r.identical for r in ooo)


def test_bfcl_conversations_execute_the_gold_calls_on_the_wheels_classes() -> None:
    from ooo_agent.bench.session import bfcl_conversations
    from ooo_agent.errors import DatasetError

    try:
        conversations = bfcl_conversations(5)
    except DatasetError as exc:
        pytest.skip(f"BFCL data not available: {exc}")
    requests = [r for c in conversations for r in c]
    assert len(requests) == 5 and requests[0].source == "multi_turn_base"
    later = requests[-1].item
    results = [m for m in later.messages if m["role"] == "tool"]
    assert len(results) == requests[-1].place and all(m["content"] for m in results)
    calls = [m["tool_calls"][0]["function"]["name"] for m in later.messages if m.get("tool_calls")]
    gold = [next(iter(r.item.gold[0])) for r in requests[: len(calls) + 1]]
    assert calls == gold[:-1] and set(gold) <= set(later.tool_names)


def test_the_wave_table_splits_each_waves_time_and_says_what_is_left() -> None:
    def record(source: str, place: int, **wave: float) -> SessionRecord:
        return SessionRecord(
            item_id=f"{source}#{place}", category=source, mode="ooo", position=place,
            warmup=False, latency_s=1.0, generate_s=1.0, forward_passes=3, new_tokens=9,
            prompt_tokens=50, prefill_tokens=10, prefill_s=0.1, decode_steps=3,
            accepted_tokens=6, conversation=source, source=source, place=place,
            sidecar_status="done", wave=dict(wave),
        )  # fmt: skip

    records = [
        record("mine", 0, latency_s=0.9, prefill_s=0.5, choice_s=0.1, rows_s=0.2,
               cached_tokens=0, prefill_tokens=400, row_tokens=30, hint_tokens_accepted=8),
        record("mine", 1, latency_s=0.5, prefill_s=0.1, choice_s=0.1, rows_s=0.2,
               cached_tokens=400, prefill_tokens=40, row_tokens=30, hint_tokens_accepted=6),
    ]  # fmt: skip
    console = Console(record=True, width=250)
    console.print(wave_table(session_summary(records)))
    cells = [[c.strip() for c in line.strip("│ ").split("│")]
             for line in console.export_text().splitlines()]  # fmt: skip
    lines = {c[0]: c[1:] for c in cells if c[0] in ("all", "mine", "follow-ups")}
    # waves, wave s, prefill, choice, rows, other, cached, prefilled, row tok, accepted, late %
    assert lines["all"] == ["2", "0.700", "0.300", "0.100", "0.200", "0.100", "200", "220.0",
                            "30.0", "7.0", "0"]  # fmt: skip
    assert lines["mine"] == lines["all"]
    assert lines["follow-ups"] == ["1", "0.500", "0.100", "0.100", "0.200", "0.100", "400",
                                   "40.0", "30.0", "6.0", "0"]  # fmt: skip
