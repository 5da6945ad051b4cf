"""A hint and its box: what a sidecar predicts, and the mailbox the target's drafter reads it
from.

The box is written by the sidecar (from its own task or thread) and read by the target's
drafter at every decode step, without ever blocking the target: reading is a version check
and, when something new landed, a snapshot under a short lock.

A hint is data, not code: every value a sidecar puts in the box is checked and copied
(:func:`clean_hint_value`: plain, finite JSON of valid Unicode text) and one that is not is
refused, recorded in :attr:`HintBox.refused`; a reader that fails on a hint drops it
(:meth:`HintBox.drop`), and the call goes on without it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ooo_agent._json import not_json_data, plain_json

__all__ = [
    "Hint",
    "HintBox",
    "WaveUsage",
    "clean_hint",
    "clean_hint_value",
]


def clean_hint_value(value: Any) -> Any:
    """A copy of ``value`` as plain JSON data (tuples → lists, mappings → dicts); raises
    ``ValueError`` for what no call could hold: NaN / ±Infinity, a lone UTF-16 surrogate (which
    no tokenizer can encode), a non-string key, a Python object, nesting past 64 levels."""
    copied = plain_json(value)
    problem = not_json_data(copied)
    if problem is not None:
        path, reason = problem
        raise ValueError(f"{path} {reason}")
    return copied


def clean_hint(hint: Hint) -> tuple[Hint, dict[str, str]]:
    """``hint`` with every value :func:`clean_hint_value` refuses left out, and the refused
    parts with the reason (``function`` for a function name that is not clean text)."""
    refused: dict[str, str] = {}
    function = hint.function
    if function is not None and (not isinstance(function, str) or not_json_data(function)):
        refused["function"] = f"not a tool name: {function!r:.60}"
        return Hint(None, {}, hint.complete), refused
    slots: dict[str, Any] = {}
    for name, value in dict(hint.slots).items():
        try:
            if not isinstance(name, str) or not_json_data(name):
                raise ValueError(f"the slot name {name!r:.60} is not text")
            slots[name] = clean_hint_value(value)
        except ValueError as exc:
            refused[str(name).encode("utf-8", "backslashreplace").decode()] = str(exc)
    return Hint(function, slots, hint.complete), refused


class _Report:
    """A fact one side of the box tells the other once (the target's function, or why no call
    will come): the first report counts, listeners hear it once, outside any lock, and one
    that raises is ignored (a hint is never worth a failed call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value: str | None = None
        self.known = threading.Event()
        self._listeners: list[Callable[[str], None]] = []

    def tell(self, value: str) -> None:
        with self._lock:
            if self.value is not None:
                return
            self.value = value
            listeners, self._listeners = self._listeners, []
        self.known.set()
        for listener in listeners:
            try:
                listener(value)
            except Exception:  # a listener's fault only costs the hint
                continue

    def listen(self, listener: Callable[[str], None]) -> None:
        with self._lock:
            value = self.value
            if value is None:
                self._listeners.append(listener)
        if value is not None:
            listener(value)


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


@dataclass
class WaveUsage:
    """What one wave's prompts cost an in-process sidecar's model, added to as the wave runs
    (``HintBox.usage``; an HTTP sidecar leaves it at zero)."""

    cached_tokens: int = 0
    """Shared-prompt tokens (listing, conversation) whose KV came from the sidecar's prefix
    cache."""
    prefill_tokens: int = 0
    """Shared-prompt tokens run through the model (once per batch of rows, not per row)."""
    row_tokens: int = 0
    """Each row's own prompt tokens run after the shared part (its question), all rows."""
    prefill_s: float = 0.0
    """Time running the shared prompt's tokens."""
    choice_s: float = 0.0
    """Time choosing the tool (name scores or the function-index row), prefill aside."""
    rows_s: float = 0.0
    """Time answering the argument rows (values written again included), prefill aside."""


class HintBox:
    """Thread-safe mailbox between a sidecar and the target's drafter.

    Writers call :meth:`set_function`, :meth:`set_slot` and :meth:`finish`; the reader polls
    :attr:`version` (a plain int read, no lock) and calls :meth:`snapshot` when it changed.
    The box also records, per part of the hint, the first target step whose drafts could use
    it (the reader reports each step through :meth:`mark_step` just before drafting it, so a
    part that lands while step ``k`` is being verified counts as step ``k + 1``; 0 means it
    landed before the first draft).

    The box also carries one fact the other way: the function the target itself wrote
    (:meth:`report_target_function`, from the drafter, once the first call's name is complete).
    A sidecar that listens (:meth:`on_target_function`) can then hint that tool's slots instead
    of its own guess: a hint for another tool than the one being written is worth nothing.
    And one more: that no call will come (:meth:`report_no_call`, from a target that declined
    to call a tool); ``FastToolCaller`` then stops the wave, whose answers nothing would read.
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
        self.function_from_target = False
        """True when the published function is the one the target wrote, not the sidecar's."""
        self._target_function = _Report()
        self.target_reports = False
        """True once a reader has said it will report the target's function
        (:meth:`expect_target_function`); a sidecar waits for it only then."""
        self._no_call = _Report()
        self.refused: dict[str, str] = {}
        """Values a writer offered that were not clean JSON data (:func:`clean_hint_value`),
        by slot (``function`` for the function name), with the reason; never published."""
        self.dropped: str | None = None
        """Why a reader gave the hint up (:meth:`drop`); None while it is in use."""
        self.usage = WaveUsage()
        """What the wave's prompts cost the sidecar's model, filled by the sidecar."""

    # -- writer side ---------------------------------------------------------------
    def set_function(self, name: str | None, *, from_target: bool = False) -> None:
        """Publish the hint's function; slots published for another function are dropped.
        A name that is not clean text is refused (recorded in :attr:`refused`)."""
        if name is not None and (not isinstance(name, str) or not_json_data(name)):
            with self._lock:
                self.refused["function"] = f"not a tool name: {name!r:.60}"
            return
        with self._lock:
            if self.dropped is not None:
                return
            if self._function is not None and name != self._function:
                self._slots.clear()
            self._function = name
            self.function_step = self._step + 1
            self.function_from_target = from_target
            self.version += 1

    def set_slot(self, name: str, value: Any) -> None:
        """Publish a slot's value: a clean copy (:func:`clean_hint_value`), or nothing, the
        refusal recorded in :attr:`refused`."""
        try:
            if not isinstance(name, str) or not_json_data(name):
                raise ValueError(f"the slot name {name!r:.60} is not text")
            value = clean_hint_value(value)
        except ValueError as exc:
            with self._lock:
                self.refused[str(name).encode("utf-8", "backslashreplace").decode()] = str(exc)
            return
        with self._lock:
            if self.dropped is not None:
                return
            self._slots[name] = value
            self.slot_steps[name] = self._step + 1
            self.version += 1

    def finish(self) -> None:
        with self._lock:
            self._complete = True
            self.finished_at = time.perf_counter()
            self.version += 1

    def on_target_function(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(name)`` once the target's function is known (at once if it is)."""
        self._target_function.listen(listener)

    def wait_target_function(
        self, timeout: float, cancel: threading.Event | None = None
    ) -> str | None:
        """The target's function, waiting up to ``timeout`` s for it (None if still unknown
        or ``cancel`` was set meanwhile). Returns at once when no reader reports it
        (:attr:`target_reports`). For a sidecar's own thread, never the target's."""
        deadline = time.perf_counter() + timeout
        known = self._target_function.known
        while self.target_reports and not known.is_set():
            left = deadline - time.perf_counter()
            if left <= 0 or (cancel is not None and cancel.is_set()):
                break
            known.wait(min(left, 0.02))
        return self._target_function.value

    @property
    def target_function(self) -> str | None:
        """The function the target wrote in its first call, once reported."""
        return self._target_function.value

    # -- reader side ---------------------------------------------------------------
    def expect_target_function(self) -> None:
        """Say that :meth:`report_target_function` will be called (a sidecar may wait for
        it)."""
        self.target_reports = True

    def report_target_function(self, name: str) -> None:
        """Called by the target's drafter once its first call's function name is written.

        Only the first report counts. Listeners run in the caller's thread, outside the box's
        lock; one that raises is ignored (a hint is never worth a failed call)."""
        self._target_function.tell(name)

    def report_no_call(self, reason: str) -> None:
        """Called by the target once it knows its answer holds no call (it declined to call
        a tool); ``reason`` says why, for the call's stats. Only the first report counts;
        listeners (:meth:`on_no_call`) run in the caller's thread, one that raises is ignored."""
        self._no_call.tell(reason)

    def on_no_call(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(reason)`` once the target says no call will come (at once if it
        has)."""
        self._no_call.listen(listener)

    @property
    def no_call(self) -> str | None:
        """Why the target said its answer holds no call (None: it has not said so)."""
        return self._no_call.value

    def mark_step(self, step: int) -> None:
        """Called by the target just before building step ``step``'s drafts."""
        self._step = step

    @property
    def step(self) -> int:
        """The target's current decode step, as last reported by :meth:`mark_step` (0 before)."""
        return max(self._step, 0)

    def snapshot(self) -> Hint:
        """The hint as it stands (empty once a reader dropped it)."""
        with self._lock:
            if self.dropped is not None:
                return Hint(None, {}, self._complete)
            return Hint(self._function, dict(self._slots), self._complete)

    def drop(self, reason: str) -> None:
        """Give the hint up for the rest of the call: a reader failed on it (``reason`` says
        how, for the call's stats). Later writes are ignored; :meth:`snapshot` is empty. Only
        the first reason is kept."""
        reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
        with self._lock:
            if self.dropped is None:
                self.dropped = reason
                self._function = None
                self._slots.clear()
                self.version += 1
