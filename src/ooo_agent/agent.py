"""`Agent`: the tool-calling loop — call, validate, dispatch, feed results back, repeat.

One :meth:`Agent.run` is a conversation driven to its end::

    turn 1: caller.call(messages, tools)  → calls validated and dispatched
            messages += assistant message (tool_calls) + one tool message per result
    turn 2: caller.call(messages, tools)  → a rejected call? the model gets a retry message
    ...
    turn n: the model answers in plain text → AgentResult(final_text=...)

Rejected calls (unknown tool, malformed JSON, schema violation) go back to the model as a
retry message. Each tool has a retry budget: when a tool's calls are rejected more than
``max_retries`` times in a row, the run ends with :class:`~ooo_agent.errors.RetryBudgetExceeded`
(``on_retry_budget="raise"``, the default: a model that keeps writing broken calls is a bug to
see) or with a result whose ``stop_reason`` is ``"retry_budget"`` (``on_retry_budget="stop"``).
A tool that raises is not a rejected call: its error is an ordinary tool result.
A reply that holds the format's markup (an echoed ``<tool_response>``) is never taken as the
answer: the model gets one corrective message, and a second such reply ends the run with
``stop_reason="model_error"``.

:meth:`Agent.stream` yields the same run as events for UIs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ooo_agent.caller import FastToolCaller, ToolsLike, run_sync
from ooo_agent.calls import CallError, CallErrorKind, CallResult, CallStats, ToolCall, ToolResult
from ooo_agent.errors import RetryBudgetExceeded
from ooo_agent.targets.base import Target, ToolChoice
from ooo_agent.tools import Toolset

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentResult",
    "AgentStats",
    "FinalAnswer",
    "StopReason",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnStart",
    "ValidationErrorEvent",
]

StopReason = Literal["answer", "max_turns", "retry_budget", "model_error"]
"""Why a run ended: the model answered in text, the turn budget ran out, a tool's retry
budget ran out (only with ``on_retry_budget="stop"``), or the model wrote the format's own
markup instead of an answer twice (``model_error``)."""

UNKNOWN_TOOL_KEY = "<unknown>"
"""Retry-budget key for rejected calls that name no tool at all."""


@dataclass
class AgentStats:
    """Per-turn statistics of one run, and their totals."""

    turns: list[CallStats] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return sum(s.total_s for s in self.turns)

    @property
    def forward_passes(self) -> int:
        """Target forward passes over the whole run (hardware-independent cost)."""
        return sum(s.decode.forward_passes for s in self.turns)

    @property
    def new_tokens(self) -> int:
        return sum(s.decode.new_tokens for s in self.turns)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.decode.prompt_tokens for s in self.turns)


@dataclass
class AgentResult:
    """The outcome of :meth:`Agent.run`."""

    messages: list[dict[str, Any]]
    """The whole conversation, the input messages included, in OpenAI message shapes."""
    final_text: str
    """The model's last plain-text answer ("" when the run ended another way)."""
    turns: int
    """Model calls made."""
    calls: list[ToolCall] = field(default_factory=list)
    """Every validated call, in order."""
    results: list[ToolResult] = field(default_factory=list)
    errors: list[CallError] = field(default_factory=list)
    """Every rejected call, in order (each was sent back to the model as a retry)."""
    stats: AgentStats = field(default_factory=AgentStats)
    stop_reason: StopReason = "answer"


@dataclass(frozen=True)
class TurnStart:
    """A model call is about to start (``turn`` counts from 1)."""

    turn: int
    type: Literal["turn_start"] = "turn_start"


@dataclass(frozen=True)
class ToolCallEvent:
    """The model made a valid call; it is about to be dispatched."""

    turn: int
    call: ToolCall
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultEvent:
    """A dispatched call finished (``result.ok`` is False when the tool raised or timed out)."""

    turn: int
    result: ToolResult
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class ValidationErrorEvent:
    """The model wrote a call that was rejected; ``retries_left`` for that tool."""

    turn: int
    error: CallError
    retries_left: int
    type: Literal["validation_error"] = "validation_error"


@dataclass(frozen=True)
class FinalAnswer:
    """The run ended; always the last event. ``result.stop_reason`` says why."""

    result: AgentResult
    type: Literal["final_answer"] = "final_answer"

    @property
    def text(self) -> str:
        return self.result.final_text


AgentEvent = TurnStart | ToolCallEvent | ToolResultEvent | ValidationErrorEvent | FinalAnswer


class Agent:
    """Runs the tool-calling loop over a :class:`FastToolCaller` (or a bare target).

    Example::

        agent = Agent(FastToolCaller(target))
        result = await agent.run([{"role": "user", "content": "What is 2 + 3, times 4?"}],
                                 [add, multiply])
        print(result.final_text)

        async for event in agent.stream(messages, tools):   # for UIs
            print(event.type)

    Args:
        caller: the caller (or a target, wrapped in a default caller).
        max_turns: model calls per run, at most.
        max_retries: rejected calls allowed per tool in a row before the retry budget ends
            the run (a valid call of that tool resets its count).
        on_retry_budget: ``"raise"`` :class:`RetryBudgetExceeded`, or ``"stop"`` and return
            the result so far with ``stop_reason="retry_budget"``.
        system_prompt: prepended as a system message when the messages have none.
    """

    def __init__(
        self,
        caller: FastToolCaller | Target,
        *,
        max_turns: int = 10,
        max_retries: int = 2,
        on_retry_budget: Literal["raise", "stop"] = "raise",
        system_prompt: str | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, not {max_turns}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, not {max_retries}")
        if on_retry_budget not in ("raise", "stop"):
            raise ValueError(f"on_retry_budget must be 'raise' or 'stop', not {on_retry_budget!r}")
        self.caller = caller if isinstance(caller, FastToolCaller) else FastToolCaller(caller)
        self.max_turns = max_turns
        self.max_retries = max_retries
        self.on_retry_budget = on_retry_budget
        self.system_prompt = system_prompt

    async def run(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        tools: ToolsLike,
        *,
        max_turns: int | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AgentResult:
        """Drive the conversation until the model answers in text or a budget ends it.

        ``messages`` may be a plain string (one user message). ``tool_choice`` applies to the
        first turn only (``"required"`` or a named tool there makes the run start with a call);
        later turns are ``"auto"``, so the model can answer. Raises
        :class:`RetryBudgetExceeded` when a tool's retry budget runs out (unless
        ``on_retry_budget="stop"``); a failing target raises ``TargetError``.
        """
        async for event in self.stream(
            messages, tools, max_turns=max_turns, tool_choice=tool_choice
        ):
            if isinstance(event, FinalAnswer):
                return event.result
        raise AssertionError("Agent.stream ended without a FinalAnswer")  # pragma: no cover

    def run_sync(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        tools: ToolsLike,
        *,
        max_turns: int | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AgentResult:
        """:meth:`run` for scripts: runs it in an event loop of its own and returns its result.

        Raises ``RuntimeError`` inside a running event loop (a notebook cell, an async
        function): ``await agent.run(...)`` there.
        """
        return run_sync(
            "Agent.run_sync",
            "await agent.run(...)",
            self.run,
            messages,
            tools,
            max_turns=max_turns,
            tool_choice=tool_choice,
        )

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        tools: ToolsLike,
        *,
        max_turns: int | None = None,
        tool_choice: ToolChoice = "auto",
    ) -> AsyncIterator[AgentEvent]:
        """The run as events: ``TurnStart``, ``ToolCallEvent``, ``ToolResultEvent``,
        ``ValidationErrorEvent`` and, last, ``FinalAnswer`` (``tool_choice``: :meth:`run`)."""
        budget = self.max_turns if max_turns is None else max_turns
        if budget < 1:
            raise ValueError(f"max_turns must be at least 1, not {budget}")
        toolset = tools if isinstance(tools, Toolset) else Toolset.coerce(tools)
        history = self._initial_messages(messages)
        run = AgentResult(messages=history, final_text="", turns=0)
        failures: dict[str, int] = {}
        markup_replies = 0

        for turn in range(1, budget + 1):
            yield TurnStart(turn)
            run.turns = turn
            choice = tool_choice if turn == 1 else "auto"
            result = await self.caller.call(history, toolset, dispatch=True, tool_choice=choice)
            run.stats.turns.append(result.stats)
            run.calls.extend(result.calls)
            run.results.extend(result.results)
            run.errors.extend(result.errors)

            for call in result.calls:
                failures.pop(call.name, None)  # a valid call resets that tool's budget
                yield ToolCallEvent(turn, call)
            for tool_result in result.results:
                yield ToolResultEvent(turn, tool_result)

            exhausted: CallError | None = None
            markup = any(e.kind is CallErrorKind.MARKUP for e in result.errors)
            markup_replies += markup
            for error in result.errors:
                if error.kind is CallErrorKind.MARKUP:
                    yield ValidationErrorEvent(turn, error, max(1 - markup_replies, 0))
                    continue
                key = error.name or UNKNOWN_TOOL_KEY
                failures[key] = failures.get(key, 0) + 1
                left = self.max_retries - failures[key]
                yield ValidationErrorEvent(turn, error, max(left, 0))
                if left < 0 and exhausted is None:
                    exhausted = error

            history.extend(turn_messages(result))
            if markup and markup_replies > 1:
                run.stop_reason = "model_error"
                yield FinalAnswer(run)
                return
            if exhausted is not None:
                if self.on_retry_budget == "raise":
                    raise RetryBudgetExceeded(
                        f"tool {exhausted.name or UNKNOWN_TOOL_KEY!r}: {self.max_retries + 1} "
                        f"rejected calls in a row; last: {exhausted.message}"
                    )
                run.stop_reason = "retry_budget"
                yield FinalAnswer(run)
                return
            if not result.calls and not result.errors:
                run.final_text = result.text
                run.stop_reason = "answer"
                yield FinalAnswer(run)
                return

        run.stop_reason = "max_turns"
        yield FinalAnswer(run)

    def _initial_messages(self, messages: Sequence[Mapping[str, Any]] | str) -> list[dict[str, Any]]:
        if isinstance(messages, str):
            history: list[dict[str, Any]] = [{"role": "user", "content": messages}]
        else:
            history = [dict(m) for m in messages]
            for i, message in enumerate(history):
                if "role" not in message:
                    raise ValueError(f"message {i} has no 'role': {message!r}")
        if not history:
            raise ValueError("an agent run needs at least one message")
        if self.system_prompt and history[0].get("role") != "system":
            history.insert(0, {"role": "system", "content": self.system_prompt})
        return history


def turn_messages(result: CallResult) -> list[dict[str, Any]]:
    """The messages one turn adds to the conversation, in OpenAI shapes.

    Valid calls become the assistant message's ``tool_calls``, each answered by a tool message.
    Rejected calls have no entry in ``tool_calls`` (so no tool message may answer them): the
    assistant message then carries the model's own text, so it sees what it wrote, and one
    user message lists what was wrong.
    """
    if not result.errors:
        return [result.assistant_message(), *(r.to_message() for r in result.results)]
    assistant = result.assistant_message()
    if not result.calls:
        # Nothing valid: show the model its own output verbatim, broken call included.
        assistant["content"] = result.raw_text or assistant["content"]
    messages = [assistant, *(r.to_message() for r in result.results)]
    messages.append({"role": "user", "content": retry_prompt(result.errors)})
    return messages


def retry_prompt(errors: Sequence[CallError]) -> str:
    """One retry message for the model listing every rejected call."""
    if len(errors) == 1:
        return errors[0].message  # already says what was wrong and what to do
    lines = [f"{len(errors)} tool calls were rejected:"]
    lines += [f"{i}. {e.message}" for i, e in enumerate(errors, 1)]
    lines.append("Fix the calls and try again.")
    return "\n".join(lines)
