"""The sidecar contract: a request goes in, a :class:`Hint` fills a :class:`HintBox`.

The box is written by the sidecar (from its own task or thread) and read by the target's
drafter at every decode step, without ever blocking the target: reading is a version check
and, when something new landed, a snapshot under a short lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Hint", "HintBox", "Sidecar", "SidecarRequest"]


@dataclass(frozen=True)
class SidecarRequest:
    """What a sidecar sees of a call: the conversation and the offered tools (OpenAI dicts)."""

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    arrival: float = field(default_factory=time.perf_counter)
    """``time.perf_counter()`` at the request's arrival; latencies are measured from it."""


@dataclass(frozen=True)
class Hint:
    """The sidecar's prediction so far: a function and the values of some of its slots.

    ``slots`` holds only validated, non-null values (JSON-compatible Python objects).
    ``complete`` is True once every row of the wave has answered.
    """

    function: str | None = None
    slots: Mapping[str, Any] = field(default_factory=dict)
    complete: bool = False

    @property
    def empty(self) -> bool:
        return self.function is None and not self.slots


class HintBox:
    """Thread-safe mailbox between a sidecar and the target's drafter.

    Writers call :meth:`set_function`, :meth:`set_slot` and :meth:`finish`; the reader polls
    :attr:`version` (a plain int read, no lock) and calls :meth:`snapshot` when it changed.
    The box also records, per part of the hint, the first target step whose drafts could use
    it (the reader reports each step through :meth:`mark_step` just before drafting it, so a
    part that lands while step ``k`` is being verified counts as step ``k + 1``; 0 means it
    landed before the first draft).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._function: str | None = None
        self._slots: dict[str, Any] = {}
        self._complete = False
        self._step = -1  # the last step the reader drafted (-1: none yet)
        self.version = 0
        self.function_step: int | None = None
        self.slot_steps: dict[str, int] = {}
        self.finished_at: float | None = None

    # -- writer side ---------------------------------------------------------------
    def set_function(self, name: str | None) -> None:
        with self._lock:
            self._function = name
            self.function_step = self._step + 1
            self.version += 1

    def set_slot(self, name: str, value: Any) -> None:
        with self._lock:
            self._slots[name] = value
            self.slot_steps[name] = self._step + 1
            self.version += 1

    def finish(self) -> None:
        with self._lock:
            self._complete = True
            self.finished_at = time.perf_counter()
            self.version += 1

    # -- reader side ---------------------------------------------------------------
    def mark_step(self, step: int) -> None:
        """Called by the target just before building step ``step``'s drafts."""
        self._step = step

    @property
    def step(self) -> int:
        """The target's current decode step, as last reported by :meth:`mark_step` (0 before)."""
        return max(self._step, 0)

    def snapshot(self) -> Hint:
        with self._lock:
            return Hint(self._function, dict(self._slots), self._complete)


@runtime_checkable
class Sidecar(Protocol):
    """A model that predicts a call's function and argument slots in one parallel wave."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        """Run one wave for ``request``, filling ``box`` as answers land; return the final hint.

        Must be cancellable: the caller cancels a wave still running when the call ends.
        """
        ...
