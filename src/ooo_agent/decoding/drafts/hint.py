"""Reading the sidecar's hint without ever waiting for it.

Each step the drafter reports its step to the box and checks the box's version (a plain
int read). Only when it changed does it take a snapshot (a short lock) and re-render the
hint text, which then serves as an n-gram source and is passed to the skeleton.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ooo_agent.sidecar.base import Hint, HintBox

__all__ = ["HintReader"]


class HintReader:
    """Polls a :class:`~ooo_agent.sidecar.base.HintBox` once per step."""

    def __init__(self, box: HintBox, render: Callable[[Hint], str | None] | None = None) -> None:
        self.box = box
        self.render = render
        self.hint: Hint | None = None
        self.text: str | None = None
        self._version = -1

    def poll(self, step: int) -> bool:
        """Report ``step``; refresh the hint if the box changed. True when it changed."""
        self.box.mark_step(step)
        version = self.box.version
        if version == self._version:
            return False
        self._version = version
        hint = self.box.snapshot()
        self.hint = None if hint.empty else hint
        self.text = None
        if self.hint is not None and self.render is not None:
            try:
                self.text = self.render(self.hint)
            except Exception:  # a hint that cannot be rendered is just not used
                self.text = None
        return True
