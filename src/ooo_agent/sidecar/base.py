"""The sidecar contract: a :class:`SidecarRequest` goes in, a :class:`~ooo_agent.hints.Hint`
fills a :class:`~ooo_agent.hints.HintBox`.

The hint, its box and their checks live in :mod:`ooo_agent.hints` (the target's drafter reads
them too); they are re-exported here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ooo_agent.hints import Hint, HintBox, WaveUsage, clean_hint, clean_hint_value
from ooo_agent.offered import OfferedTool, ToolLike, offer

if TYPE_CHECKING:
    from ooo_agent.rules.base import RuledTools

__all__ = [
    "Hint",
    "HintBox",
    "Sidecar",
    "SidecarRequest",
    "WaveUsage",
    "clean_hint",
    "clean_hint_value",
]


@dataclass(frozen=True, init=False)
class SidecarRequest:
    """What a sidecar sees of a call: the conversation and the offered tools (given as offered
    tools or OpenAI tool dicts: :func:`~ooo_agent.offered.offer`)."""

    messages: Sequence[Mapping[str, Any]]
    tools: tuple[OfferedTool, ...]
    arrival: float
    """``time.perf_counter()`` at the request's arrival (by default, when it was made);
    latencies are measured from it."""
    ruled: RuledTools | None
    """The tools as the target's rules rewrite them for this request (aligned with ``tools``;
    ``FastToolCaller`` hands the target and the sidecar the same one, so the rules run once):
    ``None`` where the target's rules are not known."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolLike],
        arrival: float | None = None,
        ruled: RuledTools | None = None,
    ) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "tools", offer(tools))
        object.__setattr__(self, "arrival", time.perf_counter() if arrival is None else arrival)
        object.__setattr__(self, "ruled", ruled)

    @property
    def named_optionals(self) -> bool | None:
        """Whether the target writes every optional parameter the request names (its rules
        include ``mentioned``): ``False`` turns ``WaveOptions.mentioned_values`` off for this
        request; ``None`` (rules not known) leaves it to the option."""
        return None if self.ruled is None else self.ruled.has("mentioned")

    @property
    def value_conventions(self) -> bool:
        """Whether the target holds values to the ``values`` rule
        (:mod:`ooo_agent.rules.conventions`): a sidecar with ``WaveOptions.typed_values`` then
        holds its argument rows to the same (a rate stated in percent as a fraction, …), so its
        hint is the target's value."""
        return self.ruled is not None and self.ruled.has("values")


@runtime_checkable
class Sidecar(Protocol):
    """A model that predicts a call's function and argument slots in one parallel wave."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        """Run one wave for ``request``, filling ``box`` as answers land; return the final hint.

        Must be cancellable: the caller cancels a wave still running when the call ends.
        """
        ...
