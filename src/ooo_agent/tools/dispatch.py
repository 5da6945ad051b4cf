"""Run validated calls: concurrently, with timeouts, errors turned into results.

::

    results = await dispatch(calls, toolset, default_timeout=30)

Calls of one turn run concurrently in an anyio task group: async tools are awaited, sync
tools run in worker threads so the event loop never blocks. A ``sequential=True`` tool is a
barrier: it starts after every earlier call finished and ends before any later call starts.
Every call ends as a :class:`ToolResult` (a value, or an error with its type); only the
cancellation of ``dispatch`` itself propagates, after every running tool was cancelled.
Identical calls of one turn (same tool, same canonical arguments) run once and share the
result, each under its own call id, unless the tool opts out (``@tool(dedupe=False)``): a
model that writes a booking twice books once.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio

from ooo_agent.calls import ToolCall, ToolResult
from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.decorator import Tool
from ooo_agent.tools.toolset import ToolLike, Toolset
from ooo_agent.tools.validation import canonical_arguments

__all__ = ["CallRunner", "ContextFactory", "dispatch", "run_call"]

_log = logging.getLogger("ooo_agent.dispatch")  # the name docs/observability.md gives

ContextFactory = Callable[[ToolCall], ToolContext]
"""Builds the :class:`ToolContext` of a call (only called for tools that take one)."""

CallRunner = Callable[[ToolCall], Awaitable["ToolResult | None"]]
"""Answers a call without running it (e.g. from a speculative execution), or returns None."""


def _batches(calls: Sequence[ToolCall], toolset: Toolset) -> list[list[int]]:
    """Indices of ``calls`` grouped so that each sequential call is alone in its batch."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index, call in enumerate(calls):
        found = toolset.get(call.name)
        if found is not None and found.sequential:
            if current:
                batches.append(current)
                current = []
            batches.append([index])
        else:
            current.append(index)
    if current:
        batches.append(current)
    return batches


def _timeout_for(found: Tool, default_timeout: float | None) -> float | None:
    timeout = found.timeout if found.timeout is not None else default_timeout
    if timeout is None or not math.isfinite(timeout):
        return None
    return max(float(timeout), 0.0)


async def run_call(
    call: ToolCall,
    toolset: Toolset,
    *,
    context_factory: ContextFactory | None = None,
    default_timeout: float | None = None,
) -> ToolResult:
    """Run one call to completion and describe how it ended; never raises, except when the
    surrounding scope is cancelled (then the cancellation propagates, as it must)."""
    started = time.perf_counter()

    def result(**fields: Any) -> ToolResult:
        return ToolResult(
            call_id=call.id, name=call.name, elapsed_s=time.perf_counter() - started, **fields
        )

    found = toolset.get(call.name)
    if found is None:
        return result(error=f"unknown tool {call.name!r}", error_type="ToolsetError")
    if not found.has_handler:
        return result(error="tool has no handler", error_type="NoHandler")
    timeout = _timeout_for(found, default_timeout)
    try:
        context = None
        if found.takes_context:
            context = (
                context_factory(call)
                if context_factory is not None
                else ToolContext(call_id=call.id, tool_name=call.name)
            )
        # A scope of our own, so that a TimeoutError the tool raises by itself is reported
        # as the tool's error, not as our timeout.
        with anyio.move_on_after(timeout) as scope:
            value = await found.invoke(call.arguments, context)
        if scope.cancelled_caught:
            _log.info("tool %s (call %s) timed out after %gs", call.name, call.id, timeout)
            return result(error=f"timed out after {timeout:g}s", error_type="TimeoutError")
    except Exception as exc:
        _log.info("tool %s (call %s) raised %s", call.name, call.id, type(exc).__name__, exc_info=exc)
        return result(error=str(exc) or type(exc).__name__, error_type=type(exc).__name__)
    _log.debug("tool %s (call %s) done in %.3fs", call.name, call.id, time.perf_counter() - started)
    return result(value=value)


async def dispatch(
    calls: Sequence[ToolCall],
    toolset: Toolset | Iterable[ToolLike],
    *,
    context_factory: ContextFactory | None = None,
    default_timeout: float | None = None,
    answer: CallRunner | None = None,
) -> list[ToolResult]:
    """Run ``calls`` and return one result per call, in call order, ids kept.

    Args:
        calls: Validated calls (see :func:`ooo_agent.tools.validation.validate_calls`).
        toolset: The tools to run them with (anything :meth:`Toolset.coerce` accepts).
        context_factory: Builds the :class:`ToolContext` for tools that take one; by
            default a context with the call id and tool name and no messages.
        default_timeout: Seconds allowed to a tool that has no timeout of its own.
        answer: Consulted first for each call, in its turn (barriers still hold); a result it
            returns is used instead of running the tool. Speculative pre-execution uses it.

    Cancelling the task that awaits ``dispatch`` cancels every running tool and waits for
    them; a sync tool's thread cannot be interrupted and finishes in the background.
    """
    toolset = Toolset.coerce(toolset)
    calls = list(calls)
    results: list[ToolResult | None] = [None] * len(calls)
    runs, copies = _identical(calls, toolset)

    async def run(index: int) -> None:
        if answer is not None:
            answered = await answer(calls[index])
            if answered is not None:
                results[index] = answered
                return
        results[index] = await run_call(
            calls[index],
            toolset,
            context_factory=context_factory,
            default_timeout=default_timeout,
        )

    for batch in _batches([calls[i] for i in runs], toolset):
        if len(batch) == 1:
            await run(runs[batch[0]])
            continue
        async with anyio.create_task_group() as group:
            for position in batch:
                group.start_soon(run, runs[position])
    for index, origin in copies.items():
        shared = results[origin]
        if shared is not None:
            results[index] = dataclasses.replace(shared, call_id=calls[index].id)
    return [r for r in results if r is not None]


def _identical(calls: Sequence[ToolCall], toolset: Toolset) -> tuple[list[int], dict[int, int]]:
    """The indices of the calls to run, and each repeated call's index → the index of the
    first identical call (same tool, same canonical arguments) whose result it shares.
    Calls of a tool with ``dedupe=False``, or of no known tool, always run."""
    runs: list[int] = []
    copies: dict[int, int] = {}
    first: dict[tuple[str, str], int] = {}
    for index, call in enumerate(calls):
        found = toolset.get(call.name)
        if found is not None and found.dedupe:
            try:
                key = (call.name, canonical_arguments(call))
            except (TypeError, ValueError):  # arguments no JSON can write: run it
                runs.append(index)
                continue
            if key in first:
                copies[index] = first[key]
                continue
            first[key] = index
        runs.append(index)
    return runs, copies

