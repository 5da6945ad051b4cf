"""An oracle sidecar: it "predicts" exactly the call the target writes. An upper bound, not a result.

Before the timed runs, the benchmark decodes every request once with plain greedy decoding
(untimed) and hands the first call of that output to :class:`OracleSidecar`. In mode ``ooo``
the oracle then fills the hint box with that call, instantly or after ``delay_s`` (to ask "what
if a real sidecar answered in X seconds?"). It measures the *mechanism* (how fast the target
goes when the hint is right), never OoO-Spec: every output of the benchmark carries
:data:`ORACLE_LABEL` next to its numbers.

Example::

    oracle = OracleSidecar(delay_s=0.0)
    oracle.remember(messages, tools, RawCall("get_weather", '{"city": "Paris"}'))
    caller = FastToolCaller(target, oracle, mode="ooo")
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from ooo_agent.calls import RawCall
from ooo_agent.offered import ToolLike, offer
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest

__all__ = ["ORACLE_LABEL", "OracleSidecar", "request_key"]

ORACLE_LABEL = "oracle (upper bound, not a result)"
"""How every output names numbers measured with the oracle sidecar."""


def request_key(messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]) -> str:
    """A stable key for a request: its conversation and its tool names (``tools``: offered
    tools or OpenAI tool dicts)."""
    names = [t.name for t in offer(tools)]
    return json.dumps([list(messages), names], sort_keys=True, default=str, ensure_ascii=False)


class OracleSidecar:
    """A :class:`~ooo_agent.sidecar.base.Sidecar` that answers with remembered calls.

    A request it has no answer for gets an empty hint (the target then runs as ``toolspec``).
    ``delay_s`` holds every answer back until that long after the request's arrival.
    """

    label = ORACLE_LABEL

    def __init__(self, *, delay_s: float = 0.0) -> None:
        if delay_s < 0:
            raise ValueError("delay_s must be >= 0")
        self.delay_s = delay_s
        self._answers: dict[str, tuple[str, dict[str, Any]] | None] = {}

    @property
    def remembered(self) -> int:
        """How many requests have an answer (or a remembered "no call")."""
        return len(self._answers)

    def remember(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        call: RawCall | None,
    ) -> None:
        """Store the call to hint for this request (``None``: the target wrote no call).

        Arguments that are not a JSON object are dropped: a hint holds named slot values.
        """
        answer: tuple[str, dict[str, Any]] | None = None
        if call is not None:
            arguments: Any = call.arguments
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError:
                    arguments = {}
            slots = dict(arguments) if isinstance(arguments, Mapping) else {}
            answer = (call.name, slots)
        self._answers[request_key(messages, tools)] = answer

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        """Publish the remembered call (function first, then each slot in the target's order)."""
        answer = self._answers.get(request_key(request.messages, request.tools))
        wait = request.arrival + self.delay_s - time.perf_counter()
        if wait > 0:
            await anyio.sleep(wait)
        if answer is not None:
            name, slots = answer
            box.set_function(name)
            for key, value in slots.items():
                box.set_slot(key, value)
        box.finish()
        return box.snapshot()
