"""Reading the sidecar's hint without ever waiting for it.

Each step the drafter reports its step to the box and checks the box's version (a plain
int read). Only when it changed does it take a snapshot (a short lock) and re-render the
hint text (and, given an ``encode``, its tokens), which then serve as an n-gram source and
are passed to the skeleton.

A hint is data: any failure while reading, rendering or encoding it drops the hint for the
rest of the call (:meth:`HintReader.drop`, recorded in the box for the call's stats), never
the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ooo_agent.hints import Hint, HintBox

__all__ = ["HintReader"]


class HintReader:
    """Polls a :class:`~ooo_agent.hints.HintBox` once per step."""

    def __init__(
        self,
        box: HintBox,
        render: Callable[[Hint], str | None] | None = None,
        encode: Callable[[str], Sequence[int]] | None = None,
    ) -> None:
        self.box = box
        self.render = render
        self.encode = encode
        self.hint: Hint | None = None
        self.text: str | None = None
        self.tokens: list[int] | None = None
        """``encode(text)``, when an ``encode`` was given and there is a text."""
        self._version = -1

    def poll(self, step: int) -> bool:
        """Report ``step``; refresh the hint if the box changed. True when it changed."""
        self.box.mark_step(step)
        version = self.box.version
        if version == self._version:
            return False
        self._version = version
        try:
            hint = self.box.snapshot()
            self.hint = None if hint.empty else hint
            self.text = None
            self.tokens = None
            if self.hint is not None and self.render is not None:
                self.text = self.render(self.hint)
                if self.text is not None and self.encode is not None:
                    self.tokens = list(self.encode(self.text))
        except Exception as exc:  # a hint is never worth a failed call
            self.drop(f"the hint could not be read: {type(exc).__name__}: {exc}")
        return True

    def drop(self, reason: str) -> None:
        """Give the hint up for the rest of the call, telling the box why."""
        self.hint = None
        self.text = None
        self.tokens = None
        try:
            self.box.drop(reason)
        finally:
            self._version = self.box.version
