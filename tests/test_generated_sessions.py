"""Generated long multi-turn sessions: every move validates and acts on ids the results gave,
later turns refer to entities earlier turns found, a mistaken call is never taught and never
repeated, prompts are long on the embedded tokenizer, and no held-out agent-task tool, BFCL
multi-turn function or BFCL multi-turn question is among them."""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections import Counter, defaultdict
from typing import Any

import pytest

from ooo_agent.bench.agent_tasks import held_out_tools
from ooo_agent.bench.datasets import load_multi_turn, multi_turn_function_names
from ooo_agent.calls import RawCall
from ooo_agent.tools import Toolset
from ooo_agent.tools.validation import validate_calls
from ooo_agent.train.data import build_target_data, evaluation_function_names, target_row
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_domains import load_domains
from ooo_agent.train.generated_sessions import (
    REF_TURNS,
    SESSION_TURNS,
    generate_session_requests,
    load_sessions,
    session_tools,
)
from test_train_data import FakeTokenizer

_ID = re.compile(r"[A-Z]+-\d{4}")


def _all_tools() -> list[dict[str, Any]]:
    """Every tool a session may offer: six of each domain the session table lists."""
    listed = load_sessions()["domains"]
    return [
        t
        for domain in load_domains()["domains"]
        if domain["noun"] in listed
        for t in session_tools(domain).values()
    ]


def _sessions(rows: list[TrainRequest]) -> dict[str, list[TrainRequest]]:
    by_session: dict[str, list[TrainRequest]] = defaultdict(list)
    for row in rows:
        by_session[row.id.rsplit("_", 1)[0]].append(row)
    return by_session


def _calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in messages
        for c in m.get("tool_calls") or ()
    ]


def _results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def _said(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_sessions_are_deterministic_and_long_and_cover_every_kind_of_turn() -> None:
    rows = generate_session_requests(80, seed=4)
    assert [r.to_dict() for r in rows] == [
        r.to_dict() for r in generate_session_requests(80, seed=4)
    ]
    assert [r.to_dict() for r in rows] != [
        r.to_dict() for r in generate_session_requests(80, seed=5)
    ]
    kinds = Counter(r.source.removeprefix("sessions+") for r in rows)
    assert set(kinds) == set(SESSION_TURNS) | set(REF_TURNS)
    sessions = _sessions(rows)
    assert len(sessions) == 80
    for session in sessions.values():
        tools = session[0].tools
        assert 15 <= len(tools) <= 30
        assert len({t["function"]["name"] for t in tools}) == len(tools)
        assert all(r.tools == tools for r in session)  # one toolset, one order, every move
        last = session[-1]
        assert last.answer and not last.calls
        turns = len(_said(last.messages))
        assert 2 <= turns <= 4
        assert sum(bool(r.answer) for r in session) == turns  # each turn ends with an answer
    per_turn: list[int] = []
    for session in sessions.values():
        count = 0
        for row in session:
            if row.answer:
                per_turn.append(count)
                count = 0
            else:
                count += len(row.calls)
    mistaken = sum(
        m["role"] == "tool" and m["content"].startswith("Error:")
        for s in sessions.values()
        for m in s[-1].messages
    )
    assert mistaken and set(per_turn) == {1, 2, 3}


def test_every_move_validates_and_passes_only_ids_the_user_or_a_result_gave() -> None:
    every_tool = Toolset.coerce(_all_tools())  # once: checking schemas is slow; names unique
    for row in generate_session_requests(60, seed=7):
        assert bool(row.calls) != bool(row.answer)
        assert {name for name, _ in row.calls} <= set(row.tool_names)
        calls, errors = validate_calls(
            [RawCall(n, json.dumps(a)) for n, a in row.calls], every_tool, strict=True
        )
        assert not errors and len(calls) == len(row.calls), (row.id, errors)
        results = " ".join(_results(row.messages))
        said = " ".join(_said(row.messages))
        for name, arguments in row.calls:
            for key, value in arguments.items():
                if key.endswith("_id"):
                    assert _ID.fullmatch(value), (row.id, name, arguments)
                    assert value in said or f'"{value}"' in results, (row.id, arguments)


def test_later_turns_act_on_entities_that_earlier_turns_found() -> None:
    carried = 0
    for row in generate_session_requests(150, seed=2):
        if not row.source.startswith("sessions+ref_") or not row.calls:
            continue
        this_turn = _said(row.messages)[-1]
        earlier = row.messages[: max(i for i, m in enumerate(row.messages) if m["role"] == "user")]
        known = " ".join(_results(earlier) + _said(earlier))
        for _, arguments in row.calls:
            ids = [v for k, v in arguments.items() if k.endswith("_id") and v not in this_turn]
            assert ids and all(i in known for i in ids), (row.id, arguments)
            carried += 1
    assert carried > 50


def test_a_mistaken_call_is_never_taught_and_its_error_leads_to_the_look_up() -> None:
    finds = {d["find"] for d in load_domains()["domains"]}
    after_error = 0
    for row in generate_session_requests(200, seed=3):
        for _, arguments in row.calls:  # a taught call never passes a name as an id
            assert all(_ID.fullmatch(v) for k, v in arguments.items() if k.endswith("_id"))
        last = row.messages[-1]
        if last["role"] == "tool" and last["content"].startswith("Error:"):
            after_error += 1
            failed = _calls(row.messages)[-1]
            name = next(v for k, v in failed[1].items() if k.endswith("_id"))
            assert len(row.calls) == 1 and row.calls[0][0] in finds, row.id
            assert name in row.calls[0][1].values()  # the look-up of the name it passed
    assert after_error > 20


def test_no_two_consecutive_calls_of_a_session_are_identical() -> None:
    for session in _sessions(generate_session_requests(200, seed=9)).values():
        calls = [json.dumps(c, sort_keys=True) for c in _calls(session[-1].messages)]
        assert calls and all(a != b for a, b in itertools.pairwise(calls)), session[0].id


def test_each_answer_states_every_value_of_its_last_results() -> None:
    checked = 0
    for row in generate_session_requests(150, seed=5):
        if not row.answer:
            continue
        step = max(i for i, m in enumerate(row.messages) if m.get("tool_calls"))
        results = [json.loads(m["content"]) for m in row.messages[step + 1 :]]
        assert results and row.messages[-1]["role"] == "tool", row.id
        if row.source == "sessions+compare":
            a, b = results
            assert any(
                f"higher {k.split('_')[0]}" in row.answer
                and _shown(a[k]) in row.answer
                and _shown(b[k]) in row.answer
                for k in a
                if a[k] != b[k] and not k.endswith("_id")
            ), row.answer
            continue
        for value in _leaves(results):
            assert _shown(value) in row.answer, (row.id, value, row.answer)
        checked += 1
    assert checked > 100


def test_answers_name_only_what_the_conversation_said() -> None:
    table = load_domains()
    names = set(table["people"]) | {n for d in table["domains"] for n in d.get("names", ())}
    checked = 0
    for row in generate_session_requests(150, seed=6):
        if not row.answer:
            continue
        seen = " ".join(_said(row.messages) + _results(row.messages))
        named = {n for n in names if n in row.answer}
        named |= set(re.findall(r"[\w.]+@[\w.]+\w", row.answer))
        assert all(n in seen for n in named), (row.id, named, row.answer)
        checked += bool(named)
    assert checked > 50


def test_no_held_out_agent_tool_nor_bfcl_multi_turn_function_or_question_is_generated() -> None:
    names = {t["function"]["name"] for t in _all_tools()}
    assert len(names) == 6 * len(load_sessions()["domains"])  # every tool name is its own
    assert not names & {t.name for t in held_out_tools()}
    assert not names & multi_turn_function_names()
    assert not names & evaluation_function_names()  # nothing decontamination would drop
    entries, _, _ = load_multi_turn("multi_turn_base")
    questions = {m["content"] for e in entries for turn in e["question"] for m in turn}
    assert questions
    for row in generate_session_requests(200, seed=1):
        assert set(row.tool_names) <= names
        assert not set(_said(row.messages)) & questions


def test_sessions_reach_the_data_builder_as_their_own_source(tmp_path: Any) -> None:
    stats = build_target_data(
        tmp_path, examples=60, eval_examples=5, generated=20, sessions=12, seed=3,
        max_prompt_tokens=4000, tokenizer=FakeTokenizer(),
        mix={"sessions": 0.8, "generated": 0.2},
    )  # fmt: skip
    assert sum(v for k, v in stats.by_source.items() if k.startswith("sessions+")) > 20
    requests = [
        TrainRequest.from_dict(json.loads(line))
        for line in (tmp_path / "requests.jsonl").read_text().splitlines()
    ]
    sessions = [r for r in requests if r.source.startswith("sessions+")]
    assert sessions and all(len(r.tools) >= 15 for r in sessions)  # kept whole, not trimmed


@pytest.fixture(scope="module")
def smollm2_tokenizer() -> Any:
    transformers = pytest.importorskip("transformers")
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import ensure_smollm2

    try:
        return transformers.AutoTokenizer.from_pretrained(ensure_smollm2(download=False))
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded SmolLM2 not available: {exc}")


def test_prompts_are_long_in_the_embedded_targets_format(smollm2_tokenizer: Any) -> None:
    from ooo_agent.formats import get_format
    from ooo_agent.models import target_format

    fmt = get_format(target_format("smollm2-135m-toolcall"))
    lengths = []
    for row in generate_session_requests(15, seed=8):
        rendered = target_row(row, fmt, smollm2_tokenizer)
        text = rendered["prompt"] + rendered["completion"]
        lengths.append(len(smollm2_tokenizer(text, add_special_tokens=False)["input_ids"]))
    assert min(lengths) >= 1900
    assert statistics.median(lengths) >= 2800
    assert max(lengths) <= 4500
