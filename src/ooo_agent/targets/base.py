"""The target contract: the model whose output is the answer.

A white-box target (``HFTarget``) decodes text in a :class:`~ooo_agent.formats.base.ChatFormat`
and may speculate; a black-box target (``OpenAITarget``) returns structured calls from a
remote API. Either way the caller validates and dispatches what comes back.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ooo_agent.calls import DecodeStats, RawCall
from ooo_agent.offered import OfferedTool, ToolLike, offer

if TYPE_CHECKING:
    from ooo_agent.formats.base import ChatFormat
    from ooo_agent.hints import HintBox
    from ooo_agent.rules.base import RuledTools

__all__ = [
    "MODES",
    "Generation",
    "Mode",
    "Target",
    "TargetRequest",
    "check_tool_choice",
    "chosen_tool",
    "normalize_tool_choice",
    "tools_named",
]

Mode = Literal["vanilla", "toolspec", "ooo"]
MODES: tuple[Mode, ...] = ("vanilla", "toolspec", "ooo")

ToolChoice = str | Mapping[str, Any]
"""``"auto"`` | ``"none"`` | ``"required"`` | ``{"type": "function", "function": {"name": ...}}``."""


def normalize_tool_choice(choice: Any) -> str | dict[str, Any]:
    """Any common spelling of ``tool_choice`` → ``auto`` | ``none`` | ``required`` | named.

    Accepts OpenAI's values and dicts, LangChain's ``"any"`` and ``True`` (= required), and a
    bare tool name. Raises ``ValueError`` for anything else.
    """
    if choice is None:
        return "auto"
    if choice is True or choice == "any":
        return "required"
    if choice is False:
        return "none"
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return choice
        if choice:
            return {"type": "function", "function": {"name": choice}}
    if isinstance(choice, Mapping):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        if isinstance(name, str) and name:
            return {"type": "function", "function": {"name": name}}
    raise ValueError(
        "tool_choice must be 'auto', 'none', 'required' or "
        f"{{'type': 'function', 'function': {{'name': ...}}}}, not {choice!r}"
    )


def check_tool_choice(choice: Any, names: Collection[str]) -> str | dict[str, Any]:
    """``choice`` normalised (:func:`normalize_tool_choice`) and checked against the offered
    tool ``names``: ``ValueError`` for a named tool not among them, or ``"required"`` with no
    tools at all."""
    normal = normalize_tool_choice(choice)
    if isinstance(normal, dict) and normal["function"]["name"] not in names:
        raise ValueError(
            f"tool_choice names {normal['function']['name']!r}, which is not among the tools "
            f"{list(names)}"
        )
    if normal == "required" and not names:
        raise ValueError("tool_choice 'required' needs at least one tool")
    return normal


def tools_named(tools: Sequence[ToolLike], name: str) -> list[OfferedTool]:
    """The tools among ``tools`` (offered tools or OpenAI tool dicts) called ``name``."""
    return [t for t in offer(tools) if t.name == name]


def chosen_tool(choice: ToolChoice) -> str | None:
    """The tool a named ``tool_choice`` forces (None for ``auto``, ``none`` and ``required``)."""
    normal = normalize_tool_choice(choice)
    return None if isinstance(normal, str) else str(normal["function"]["name"])


@dataclass(init=False)
class TargetRequest:
    """One model turn to produce. ``tools`` may be given as OpenAI tool dicts; the request
    holds them as offered tools (:func:`~ooo_agent.offered.offer`)."""

    messages: Sequence[Mapping[str, Any]]
    tools: tuple[OfferedTool, ...]
    mode: Mode
    tool_choice: ToolChoice
    parallel_tool_calls: bool
    max_new_tokens: int
    hint_box: HintBox | None
    """Filled by the sidecar while the target decodes (mode ``ooo``); never awaited."""
    arrival: float
    """``time.perf_counter()`` at the request's arrival (by default, when it was made)."""
    ruled: RuledTools | None
    """The tools as the target's rules rewrite them (``FastToolCaller`` makes one per request,
    for the target and the sidecar); a target makes its own when this is ``None`` or another
    request's or rules' ruling."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolLike],
        mode: Mode = "toolspec",
        tool_choice: ToolChoice = "auto",
        parallel_tool_calls: bool = True,
        max_new_tokens: int = 256,
        hint_box: HintBox | None = None,
        arrival: float | None = None,
        ruled: RuledTools | None = None,
    ) -> None:
        self.messages = messages
        self.tools = offer(tools)
        self.mode = mode
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.max_new_tokens = max_new_tokens
        self.hint_box = hint_box
        self.arrival = time.perf_counter() if arrival is None else arrival
        self.ruled = ruled


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
