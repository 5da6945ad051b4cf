"""The agent loop over a ReplayTarget: real parsing, validation and dispatch; recorded text."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller, RetryBudgetExceeded, tool
from ooo_agent.agent import (
    Agent,
    AgentEvent,
    FinalAnswer,
    ToolCallEvent,
    ToolResultEvent,
    TurnStart,
    ValidationErrorEvent,
    retry_prompt,
)
from ooo_agent.targets.replay import ReplayTarget


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def run(coro: Any) -> Any:
    return anyio.run(lambda: coro)


def test_two_tool_task_feeds_results_back_and_ends_on_text() -> None:
    target = ReplayTarget([call("add", a=2, b=3), call("multiply", a=5, b=4), "The answer is 20."])
    agent = Agent(FastToolCaller(target))
    result = run(agent.run("What is (2 + 3) * 4?", [add, multiply]))

    assert result.stop_reason == "answer"
    assert result.final_text == "The answer is 20."
    assert result.turns == 3
    assert [c.name for c in result.calls] == ["add", "multiply"]
    assert [r.value for r in result.results] == [5, 20]
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    # Each tool message answers the call id the assistant message announced.
    first_call = result.messages[1]["tool_calls"][0]
    assert first_call["function"]["name"] == "add"
    assert json.loads(first_call["function"]["arguments"]) == {"a": 2, "b": 3}
    assert result.messages[2] == {"role": "tool", "tool_call_id": first_call["id"], "content": "5"}
    # The second model call saw the first turn's result.
    second_request = target.requests[1]
    assert second_request.messages[-1]["content"] == "5"
    assert len(result.stats.turns) == 3


def test_plain_text_answer_ends_after_one_turn() -> None:
    agent = Agent(ReplayTarget(["No tool fits; Paris is in France."]))
    result = run(agent.run([{"role": "user", "content": "Where is Paris?"}], [add]))
    assert (result.turns, result.stop_reason, result.calls) == (1, "answer", [])
    assert result.final_text == "No tool fits; Paris is in France."


def test_validation_error_is_sent_back_as_retry_then_succeeds() -> None:
    target = ReplayTarget([call("add", a="two", b=3), call("add", a=2, b=3), "5"])
    result = run(Agent(FastToolCaller(target)).run("2+3?", [add]))
    assert result.stop_reason == "answer"
    assert len(result.errors) == 1 and result.errors[0].name == "add"
    # The model saw its own broken call and a user message saying what was wrong.
    retry_turn = target.requests[1].messages
    assert retry_turn[-2]["role"] == "assistant" and '"two"' in retry_turn[-2]["content"]
    assert retry_turn[-1]["role"] == "user"
    assert result.errors[0].message in retry_turn[-1]["content"]
    # No tool message answers a call id the assistant never announced.
    announced = {c["id"] for m in result.messages for c in m.get("tool_calls", [])}
    answered = {m["tool_call_id"] for m in result.messages if m["role"] == "tool"}
    assert answered <= announced


def test_retry_budget_raises_after_max_retries_plus_one_failures() -> None:
    target = ReplayTarget([call("add", a="x", b=1)] * 3)
    agent = Agent(FastToolCaller(target), max_retries=2)
    with pytest.raises(RetryBudgetExceeded, match="add"):
        run(agent.run("1+1", [add]))
    assert len(target.requests) == 3


def test_retry_budget_stop_policy_returns_result() -> None:
    target = ReplayTarget([call("nope", a=1), call("nope", a=1)])
    agent = Agent(FastToolCaller(target), max_retries=1, on_retry_budget="stop")
    result = run(agent.run("1+1", [add]))
    assert result.stop_reason == "retry_budget"
    assert result.turns == 2 and len(result.errors) == 2
    assert result.final_text == ""


def test_valid_call_resets_the_tools_retry_count() -> None:
    bad, good = call("add", a="x", b=1), call("add", a=1, b=1)
    target = ReplayTarget([bad, good, bad, good, "done"])
    result = run(Agent(FastToolCaller(target), max_retries=1).run("go", [add]))
    assert result.stop_reason == "answer" and len(result.errors) == 2


def test_turn_budget_ends_the_run() -> None:
    target = ReplayTarget([call("add", a=1, b=1)], cycle=True)
    result = run(Agent(FastToolCaller(target)).run("loop", [add], max_turns=3))
    assert result.stop_reason == "max_turns"
    assert result.turns == 3 and len(result.results) == 3
    assert result.messages[-1]["role"] == "tool"  # the last results are in the history


def test_tool_exception_is_a_result_not_a_retry() -> None:
    @tool
    def explode(x: int) -> int:
        """Always fails."""
        raise RuntimeError("boom")

    target = ReplayTarget([call("explode", x=1), "it failed"])
    result = run(Agent(FastToolCaller(target), max_retries=0).run("go", [explode]))
    assert result.stop_reason == "answer" and not result.errors
    assert not result.results[0].ok and "boom" in result.messages[2]["content"]


def test_stream_yields_events_in_order() -> None:
    target = ReplayTarget([call("add", a="x", b=1), call("add", a=1, b=2), "3"])
    agent = Agent(FastToolCaller(target))

    async def collect() -> list[AgentEvent]:
        return [event async for event in agent.stream("1+2", [add])]

    events = run(collect())
    kinds = [e.type for e in events]
    assert kinds == [
        "turn_start", "validation_error",
        "turn_start", "tool_call", "tool_result",
        "turn_start", "final_answer",
    ]  # fmt: skip
    assert isinstance(events[0], TurnStart) and events[0].turn == 1
    assert isinstance(events[1], ValidationErrorEvent) and events[1].retries_left == 1
    assert isinstance(events[3], ToolCallEvent) and events[3].call.arguments == {"a": 1, "b": 2}
    assert isinstance(events[4], ToolResultEvent) and events[4].result.value == 3
    assert isinstance(events[-1], FinalAnswer) and events[-1].text == "3"


def test_system_prompt_is_prepended_once() -> None:
    target = ReplayTarget(["hi"])
    result = run(Agent(target, system_prompt="Be brief.").run("hello", [add]))
    assert result.messages[0] == {"role": "system", "content": "Be brief."}
    assert target.requests[0].messages[0]["role"] == "system"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"max_turns": 0}, "max_turns"), ({"max_retries": -1}, "max_retries"),
     ({"on_retry_budget": "ignore"}, "on_retry_budget")],
)  # fmt: skip
def test_bad_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Agent(ReplayTarget([]), **kwargs)


def test_bad_messages_are_refused() -> None:
    agent = Agent(ReplayTarget(["x"]))
    with pytest.raises(ValueError, match="at least one message"):
        run(agent.run([], [add]))
    with pytest.raises(ValueError, match="role"):
        run(agent.run([{"content": "no role"}], [add]))


def test_retry_prompt_lists_every_error() -> None:
    from ooo_agent.calls import CallError, CallErrorKind

    errors = [CallError(CallErrorKind.UNKNOWN_TOOL, "unknown tool 'x'", name="x"),
              CallError(CallErrorKind.MALFORMED_JSON, "bad JSON", name="add")]  # fmt: skip
    text = retry_prompt(errors)
    assert "2 tool calls were rejected" in text and "unknown tool 'x'" in text and "bad JSON" in text


def test_agent_is_part_of_the_public_api() -> None:
    import ooo_agent

    assert ooo_agent.Agent is Agent
    assert "Agent" in ooo_agent.__all__ and "AgentResult" in ooo_agent.__all__


def test_tool_choice_applies_to_the_first_turn_only() -> None:
    target = ReplayTarget(["Let me think.", call("add", a=2, b=3), "It is 5."])
    agent = Agent(FastToolCaller(target))
    result = run(agent.run("What is 2 + 3?", [add, multiply], tool_choice="required"))
    # The first turn broke "required" (no call): sent back as a retry, then the model called.
    assert result.errors[0].kind.value == "tool_choice"
    assert [c.name for c in result.calls] == ["add"] and result.final_text == "It is 5."
    assert [r.tool_choice for r in target.requests] == ["required", "auto", "auto"]


ECHO = '<tool_response>\n{"result": 5}\n</tool_response>'


def test_a_tool_response_echo_is_never_the_answer() -> None:
    # The model echoes the result once, is told so, then answers: the answer is the second text.
    target = ReplayTarget([call("add", a=2, b=3), ECHO, "2 + 3 is 5."])
    result = run(Agent(FastToolCaller(target)).run("What is 2 + 3?", [add]))

    assert result.stop_reason == "answer"
    assert result.final_text == "2 + 3 is 5."
    assert [e.kind.value for e in result.errors] == ["markup"]
    # The corrective message went to the model before its third turn.
    third_prompt = target.requests[2].messages
    assert third_prompt[-1]["role"] == "user"
    assert "<tool_response>" in third_prompt[-1]["content"]
    assert "plain text" in third_prompt[-1]["content"]


def test_a_second_markup_reply_ends_the_run_as_a_model_error() -> None:
    target = ReplayTarget([call("add", a=2, b=3), ECHO, ECHO, "never read"])
    result = run(Agent(FastToolCaller(target), max_retries=0).run("What is 2 + 3?", [add]))

    assert result.stop_reason == "model_error"
    assert result.final_text == ""
    assert result.turns == 3
    assert [r.value for r in result.results] == [5]  # the call that was made stands


def test_markup_reply_is_an_invalid_call_for_callers_and_the_server() -> None:
    from ooo_agent.integrations._protocol import completion_response

    target = ReplayTarget([ECHO])
    result = run(FastToolCaller(target).call([{"role": "user", "content": "hi"}], [add]))

    assert result.text == ""
    assert result.calls == []
    assert [e.kind.value for e in result.errors] == ["markup"]
    assert result.errors[0].raw == ECHO
    body = completion_response(result, completion_id="x", model="m")
    assert body["choices"][0]["message"]["content"] is None


def test_plain_text_mentioning_a_tag_name_without_brackets_is_an_answer() -> None:
    target = ReplayTarget(["The tool_response says 5."])
    result = run(FastToolCaller(target).call([{"role": "user", "content": "hi"}], [add]))
    assert result.text == "The tool_response says 5."
    assert result.errors == []
