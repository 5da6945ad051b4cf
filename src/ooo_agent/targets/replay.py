"""`ReplayTarget`: a target that answers with recorded model outputs.

For tests, demos and offline development: it plays back text a real model wrote (in any call
format), so everything after the model — parsing, validation, dispatch, agents — runs for real.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from ooo_agent.calls import DecodeStats
from ooo_agent.errors import TargetError
from ooo_agent.formats import get_format
from ooo_agent.formats.base import ChatFormat
from ooo_agent.targets.base import Generation, Mode, TargetRequest

__all__ = ["ReplayTarget"]

Responder = Callable[[TargetRequest], str]


class ReplayTarget:
    """Answers each request with the next recorded output (or with ``responder(request)``).

    A request after the last output raises :class:`~ooo_agent.errors.TargetError` (unless
    ``cycle=True``: then the outputs start again).

    Example::

        target = ReplayTarget(['<tool_call>\\n{"name": "add", "arguments": {"a": 1, "b": 2}}\\n</tool_call>'])
    """

    def __init__(
        self,
        outputs: Iterable[str] | Responder,
        *,
        format: str | ChatFormat = "hermes",
        cycle: bool = False,
    ) -> None:
        self._format = get_format(format) if isinstance(format, str) else format
        self._responder: Responder | None = outputs if callable(outputs) else None
        self._outputs: Sequence[str] = [] if callable(outputs) else list(outputs)
        self._cycle = cycle
        self._next = 0
        self.requests: list[TargetRequest] = []
        """Every request received, for assertions in tests."""

    @property
    def format(self) -> ChatFormat:
        return self._format

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla",)

    async def generate(self, request: TargetRequest) -> Generation:
        started = time.perf_counter()
        self.requests.append(request)
        if self._responder is not None:
            text = self._responder(request)
        else:
            if self._next >= len(self._outputs):
                if not self._cycle or not self._outputs:
                    raise TargetError(
                        f"ReplayTarget ran out of recorded outputs: all {len(self._outputs)} "
                        "were played (pass more, cycle=True, or a responder)"
                    )
                self._next = 0
            text = self._outputs[self._next]
            self._next += 1
        stats = DecodeStats(mode="vanilla", finish_reason="stop", decode_s=time.perf_counter() - started)
        return Generation(text=text, stats=stats)
