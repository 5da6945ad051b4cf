"""Generated whole agent turns: well-formed conversations, next moves that validate, answers
that state the results, and no BFCL multi-turn question or toolset among them."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ooo_agent.bench.datasets import load_multi_turn, multi_turn_function_names
from ooo_agent.formats.hermes import HermesDescriptionFirstFormat
from ooo_agent.tools import Toolset
from ooo_agent.tools.validation import validate_calls
from ooo_agent.train.data import END_OF_TURN, build_target_data, target_row
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_agent import AGENT_KINDS, describe, generate_agent_requests
from test_train_data import FakeTokenizer


def _called(request: TrainRequest) -> list[str]:
    return [
        c["function"]["name"]
        for m in request.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or ()
    ]


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    return [value]


def test_agent_requests_are_deterministic_and_cover_every_kind() -> None:
    first = generate_agent_requests(300, seed=5)
    assert [r.to_dict() for r in first] == [
        r.to_dict() for r in generate_agent_requests(300, seed=5)
    ]
    kinds = Counter(r.source.split("+")[1] for r in first)
    assert set(kinds) == set(AGENT_KINDS)
    assert all(kinds[k] > 300 * share / 2 for k, share in AGENT_KINDS.items())


def test_every_conversation_is_well_formed_and_its_next_calls_validate() -> None:
    for request in generate_agent_requests(400, seed=9):
        offered = set(request.tool_names)
        assert set(_called(request)) <= offered
        # Every tool message answers a call id the assistant announced just before it.
        announced: set[str] = set()
        for message in request.messages:
            if message["role"] == "assistant":
                announced = {c["id"] for c in message.get("tool_calls") or ()}
            if message["role"] == "tool":
                assert message["tool_call_id"] in announced
        assert bool(request.calls) != bool(request.answer)
        calls, errors = validate_calls(
            [_raw(n, a) for n, a in request.calls], Toolset.coerce(request.tools), strict=True
        )
        assert not errors and len(calls) == len(request.calls), (request.id, errors)


def _raw(name: str, arguments: dict[str, Any]) -> Any:
    from ooo_agent.calls import RawCall

    return RawCall(name, json.dumps(arguments))


def test_answers_after_a_result_state_its_values() -> None:
    for request in generate_agent_requests(400, seed=2):
        if request.source != "agent+answer":
            continue
        result = request.messages[-1]["content"]
        value = json.loads(result) if result[:1] in "[{" else result
        for scalar in _scalars(value):
            shown = (
                {True: "yes", False: "no"}.get(scalar, scalar)
                if isinstance(scalar, bool)
                else scalar
            )
            text = f"{shown:g}" if isinstance(shown, float) else str(shown)
            assert text in request.answer, (request.id, text, request.answer)


def test_describe_states_nested_values() -> None:
    import random

    text = describe(random.Random(0), {"order": "A-1", "items": ["lamp", "mug"], "paid": True})
    assert "A-1" in text and "lamp and mug" in text and "yes" in text


def test_error_rows_answer_with_a_fix_or_an_apology() -> None:
    rows = [r for r in generate_agent_requests(400, seed=4) if r.source == "agent+error"]
    assert rows
    for request in rows:
        assert request.messages[-1]["content"].startswith("Error: ")
        if request.calls:  # the error named the fix: the call is made again with it
            assert request.calls[0][1]["city"] in request.messages[-1]["content"]
        else:
            assert request.messages[-1]["content"][len("Error: ") :] in request.answer


def test_rendered_rows_end_on_the_next_move_and_never_echo_markup() -> None:
    fmt = HermesDescriptionFirstFormat()
    for request in generate_agent_requests(200, seed=1):
        row = target_row(request, fmt, FakeTokenizer())
        assert row["prompt"].endswith("<|im_start|>assistant\n")
        assert row["completion"].endswith(END_OF_TURN)
        assert "<tool_response>" not in row["completion"]
        if not (request.source == "agent+compare" and request.calls):  # all but a first turn
            assert "<tool_response>" in row["prompt"]


def test_agent_rows_never_hold_a_bfcl_multi_turn_question_or_function(tmp_path: Any) -> None:
    stats = build_target_data(
        tmp_path, examples=200, eval_examples=10, generated=100, agent=300,
        max_prompt_tokens=900, seed=3, tokenizer=FakeTokenizer(),
        mix={"agent": 0.6, "generated": 0.2, "live_multiple": 0.2},
    )  # fmt: skip
    assert sum(v for k, v in stats.by_source.items() if k.startswith("agent+")) > 60
    requests = [
        TrainRequest.from_dict(json.loads(line))
        for line in (tmp_path / "requests.jsonl").read_text().splitlines()
    ]
    banned = multi_turn_function_names()
    assert len(banned) > 100
    offered = {n for r in requests for n in r.tool_names} | {
        n for r in requests for n in _called(r)
    }
    assert offered and not offered & banned
    entries, _, _ = load_multi_turn("multi_turn_base")
    questions = {m["content"] for e in entries for turn in e["question"] for m in turn}
    said = {m.get("content") for r in requests for m in r.messages if m["role"] == "user"}
    assert questions and not said & questions
