"""The target contract: the model whose output is the answer.

A white-box target (``HFTarget``) decodes text in a :class:`~ooo_agent.formats.base.ChatFormat`
and may speculate; a black-box target (``OpenAITarget``) returns structured calls from a
remote API. Either way the caller validates and dispatches what comes back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ooo_agent.calls import DecodeStats, RawCall

if TYPE_CHECKING:
    from ooo_agent.formats.base import ChatFormat
    from ooo_agent.sidecar.base import HintBox

__all__ = ["MODES", "Generation", "Mode", "Target", "TargetRequest"]

Mode = Literal["vanilla", "toolspec", "ooo"]
MODES: tuple[Mode, ...] = ("vanilla", "toolspec", "ooo")

ToolChoice = str | Mapping[str, Any]
"""``"auto"`` | ``"none"`` | ``"required"`` | ``{"type": "function", "function": {"name": ...}}``."""


@dataclass
class TargetRequest:
    """One model turn to produce."""

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    """OpenAI tool dicts (``Toolset.to_openai()``)."""
    mode: Mode = "toolspec"
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    max_new_tokens: int = 256
    hint_box: HintBox | None = None
    """Filled by the sidecar while the target decodes (mode ``ooo``); never awaited."""
    arrival: float = field(default_factory=time.perf_counter)


@dataclass
class Generation:
    """What the target produced for one turn."""

    text: str
    raw_calls: list[RawCall] | None = None
    """Structured calls from a black-box API; ``None`` means "parse ``text`` with the format"."""
    token_ids: list[int] = field(default_factory=list)
    stats: DecodeStats = field(default_factory=DecodeStats)


@runtime_checkable
class Target(Protocol):
    """Anything that turns a :class:`TargetRequest` into a :class:`Generation`."""

    @property
    def format(self) -> ChatFormat | None:
        """The call format the target writes (``None`` for black-box targets)."""
        ...

    @property
    def modes(self) -> tuple[Mode, ...]:
        """Decoding modes the target supports."""
        ...

    async def generate(self, request: TargetRequest) -> Generation:
        """Produce one assistant turn. Must be cancellable."""
        ...
