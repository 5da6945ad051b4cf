"""Speculative pre-execution of read-only tools on the sidecar's predicted call.

The sidecar usually knows the call long before the target has written it. For tools declared
``@tool(read_only=True)`` (no side effects, idempotent) the caller starts the predicted call at
once; the target stays the only commit authority:

* a verified call whose name and canonical, validated arguments equal a speculation's takes
  that speculation's result (awaiting it if it is still running) — each speculation answers at
  most one call;
* every other speculation is cancelled and its result dropped: it never reaches the caller,
  the model or the message history (an exception it raised included);
* speculation ends the moment the target shows where it is going: when it declines to call a
  tool (:meth:`Speculator.close` and :meth:`Speculator.discard`), names a tool in its first
  call (:meth:`Speculator.keep_only`: the other tools' runs are cancelled), or answers
  (:meth:`Speculator.close`). A run queued but not started by then never starts.

Nothing that is not ``read_only`` is ever started early.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from ooo_agent.calls import CallError, RawCall, SpeculationStats, ToolCall, ToolResult
from ooo_agent.hints import Hint
from ooo_agent.tools.dispatch import ContextFactory, run_call
from ooo_agent.tools.toolset import Toolset
from ooo_agent.tools.validation import canonical_arguments, validate_call

__all__ = ["Speculator"]


@dataclass
class _Speculation:
    call: ToolCall
    started: float
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    result: ToolResult | None = None


class Speculator:
    """Starts read-only tools on predicted calls and hands their results to matching calls.

    One instance serves one :meth:`FastToolCaller.call`; its tasks live in ``task_group``,
    which must outlive the dispatch of the verified calls.
    """

    def __init__(
        self,
        toolset: Toolset,
        task_group: TaskGroup,
        *,
        max_concurrent: int = 4,
        context_factory: ContextFactory | None = None,
        default_timeout: float | None = None,
        stats: SpeculationStats | None = None,
    ) -> None:
        self.toolset = toolset
        self.stats = stats if stats is not None else SpeculationStats()
        self._task_group = task_group
        self._max_concurrent = max_concurrent
        self._context_factory = context_factory
        self._default_timeout = default_timeout
        self._pending: dict[tuple[str, str], _Speculation] = {}
        self._closed = False
        self._only: str | None = None

    @property
    def enabled(self) -> bool:
        """Whether any tool of the set may be pre-executed at all."""
        return any(t.read_only and t.has_handler and not t.sequential for t in self.toolset)

    def offer(self, hint: Hint) -> bool:
        """Start the hint's call if it is complete, valid and read-only; True if started."""
        if hint.function is None or self._closed:
            return False
        if self._only is not None and hint.function != self._only:
            return False  # the target is writing another tool's call
        found = self.toolset.get(hint.function)
        if found is None or not found.read_only or not found.has_handler or found.sequential:
            return False
        outcome = validate_call(RawCall(hint.function, dict(hint.slots)), self.toolset, strict=True)
        if isinstance(outcome, CallError):  # incomplete (a required slot missing) or invalid
            return False
        key = (outcome.name, canonical_arguments(outcome))
        if key in self._pending or len(self._pending) >= self._max_concurrent:
            return False
        speculation = _Speculation(outcome, time.perf_counter())
        self._pending[key] = speculation
        self.stats.started += 1
        self._task_group.start_soon(self._run, speculation)
        return True

    async def _run(self, speculation: _Speculation) -> None:
        if speculation.scope.cancel_called or self._closed:  # not started in time: never starts
            speculation.done.set()
            return
        with speculation.scope:
            speculation.result = await run_call(
                speculation.call,
                self.toolset,
                context_factory=self._context_factory,
                default_timeout=self._default_timeout,
            )
        speculation.done.set()

    async def answer(self, call: ToolCall) -> ToolResult | None:
        """The speculative result for a verified ``call``, or None when none matches."""
        speculation = self._pending.pop((call.name, canonical_arguments(call)), None)
        if speculation is None:
            return None
        asked = time.perf_counter()
        await speculation.done.wait()
        result = speculation.result
        if result is None:  # cancelled from outside: run it for real
            return None
        self.stats.used += 1
        # Saved: the part of the tool's run that had already happened when the call was known.
        self.stats.saved_s += max(0.0, min(asked - speculation.started, result.elapsed_s))
        return dataclasses.replace(result, call_id=call.id, speculative=True)

    async def claim(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """The speculative results of the ``calls`` a speculation answers, in call order.

        Runs nothing: a call no speculation matches gets no result. Waits (concurrently) for
        matched speculations still running.
        """
        answers: list[ToolResult | None] = [None] * len(calls)

        async def take(index: int) -> None:
            answers[index] = await self.answer(calls[index])

        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(take, index)
        return [a for a in answers if a is not None]

    def retain(self, calls: Sequence[ToolCall]) -> None:
        """Cancel at once every speculation that none of the verified ``calls`` can claim."""
        wanted = {(call.name, canonical_arguments(call)) for call in calls}
        for key in [k for k in self._pending if k not in wanted]:
            self._cancel(self._pending.pop(key))

    def close(self) -> None:
        """The target has declined or answered: nothing starts any more (offers are refused
        and a run queued but not yet started never starts); running ones go on until
        :meth:`retain` or :meth:`discard`."""
        self._closed = True

    def keep_only(self, name: str) -> None:
        """The target's call names ``name``: cancel at once every speculation of another tool,
        and refuse offers of one from now on."""
        self._only = name
        for key in [k for k in self._pending if k[0] != name]:
            self._cancel(self._pending.pop(key))

    def discard(self) -> None:
        """Cancel every speculation no verified call claimed; their results are dropped."""
        for speculation in self._pending.values():
            self._cancel(speculation)
        self._pending.clear()

    def _cancel(self, speculation: _Speculation) -> None:
        speculation.scope.cancel()
        self.stats.discarded += 1
