"""Agent-task bench: tasks are consistent with their tools, scoring sees what was done."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller
from ooo_agent.bench.agent_run import run_task, summarize_agent
from ooo_agent.bench.agent_tasks import bfcl_multi_turn_tasks, held_out_tasks, held_out_tools
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.train.generated import GENERATED_TOOLS


def _call(*calls: tuple[str, dict[str, Any]]) -> str:
    return "\n".join(
        "<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>" for n, a in calls
    )


def _run_tools(task: Any) -> list[Any]:
    by_name = {t.name: t for t in task.make_tools()}
    return [by_name[c.name](**c.arguments) for c in task.needed[0]]


def test_held_out_toolsets_are_never_trained_on() -> None:
    assert not {t.name for t in held_out_tools()} & set(GENERATED_TOOLS)


def test_held_out_tasks_mix_steps_and_their_answers_follow_from_the_tools() -> None:
    tasks = held_out_tasks(40, seed=0)
    assert {t.steps for t in tasks} == {1, 2}
    assert sum(t.steps == 2 for t in tasks) >= 16
    for task in tasks:
        offered = {t.name for t in task.make_tools()}
        assert {c.name for c in task.needed[0]} <= offered
        results = json.dumps(_run_tools(task))
        # Every value the answer must state comes out of the tools (or names a compared item).
        for value in task.answer_values:
            assert value in results or value in task.turns[0], (task.id, value)


def _scripted(task: Any, answer: str) -> list[str]:
    """The right calls (one per model call when steps depend on each other), then ``answer``."""
    needed = task.needed[0]
    if len(needed) == 2 and needed[0].name == needed[1].name:
        outputs = [_call(*[(c.name, dict(c.arguments)) for c in needed])]
    else:
        outputs = [_call((c.name, dict(c.arguments))) for c in needed]
    return [*outputs, answer]


def test_a_run_that_makes_the_calls_and_states_the_values_is_done() -> None:
    task = next(t for t in held_out_tasks(40, seed=0) if t.steps == 2)
    target = ReplayTarget(_scripted(task, "It is " + " and ".join(task.answer_values) + "."))
    record = anyio.run(lambda: run_task(task, "vanilla", FastToolCaller(target), max_turns=6))
    assert record.done, record
    assert record.turns_ok == [True] and record.model_calls == 3


def test_an_answer_without_the_values_or_an_echo_is_not_done() -> None:
    task = next(t for t in held_out_tasks(40, seed=0) if t.steps == 1)
    wrong = ReplayTarget(_scripted(task, "Done."))
    record = anyio.run(lambda: run_task(task, "vanilla", FastToolCaller(wrong), max_turns=6))
    assert not record.done and record.turns_ok == [True] and not record.answer_ok

    echo = "<tool_response>\n{}\n</tool_response>"
    echoing = ReplayTarget([*_scripted(task, echo)[:-1], echo, echo])
    record = anyio.run(lambda: run_task(task, "vanilla", FastToolCaller(echoing), max_turns=6))
    assert not record.done and record.stop_reasons == ["model_error"]


def test_summary_counts_done_by_steps_and_identity() -> None:
    tasks = held_out_tasks(5, seed=1)
    records = []
    for task in tasks:
        for mode in ("vanilla", "toolspec"):
            answer = "It is " + " and ".join(task.answer_values) + "."
            target = ReplayTarget(_scripted(task, answer))
            records.append(
                anyio.run(lambda t=task, m=mode, tg=target: run_task(t, m, FastToolCaller(tg), max_turns=6))
            )
    summary = summarize_agent(records)
    assert summary["vanilla"]["done_percent"] == 100.0
    assert summary["toolspec"]["identical_to_vanilla"] == 5
    assert set(summary["vanilla"]["done_percent_by_steps"]) == {str(t.steps) for t in tasks}
    assert summary["vanilla"]["tokens_by_model_call"]["1"]["n"] == 5


def test_bfcl_multi_turn_gold_calls_reach_the_gold_state() -> None:
    tasks = bfcl_multi_turn_tasks(3)
    assert len(tasks) == 3
    for task in tasks:
        assert len(task.turns) == len(task.needed)
        tools = task.make_tools()
        by_name = {t.name: t for t in tools}
        assert task.check_turn is not None
        if task.id == "multi_turn_base_0":  # its first turn moves a file: state differs
            assert not task.check_turn(0, tools)
        for index, needed in enumerate(task.needed):
            for call in needed:
                by_name[call.name](**call.arguments)
            assert task.check_turn(index, tools)


@pytest.mark.parametrize("source", ["multi_turn_base"])
def test_bfcl_tasks_score_a_scripted_right_first_turn(source: str) -> None:
    task = bfcl_multi_turn_tasks(1)[0]
    first = [_call((c.name, dict(c.arguments))) for c in task.needed[0]]
    target = ReplayTarget([*first, "Done: the file is moved.", "I can't.", "I can't.", "I can't."])
    record = anyio.run(lambda: run_task(task, "vanilla", FastToolCaller(target), max_turns=6))
    assert record.turns_ok[0] is True
    assert record.gold_calls_made[0] is True
    assert not record.done  # later turns were not done
