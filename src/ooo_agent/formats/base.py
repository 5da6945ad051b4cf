"""The contract every call format implements (see ``hermes.py`` for the reference one)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ooo_agent.calls import CallError, RawCall
from ooo_agent.hints import Hint
from ooo_agent.offered import ToolLike

__all__ = ["CallSkeleton", "ChatFormat", "ParseResult", "TextDraft"]

ToolDict = ToolLike
"""An OpenAI tool dict, ``{"type": "function", "function": {"name", "description", "parameters"}}``,
or an :class:`~ooo_agent.offered.OfferedTool` (rendered as the dict it came from)."""


@dataclass(frozen=True)
class ParseResult:
    """Calls found in a model's text, the text around them, and what could not be parsed."""

    calls: list[RawCall] = field(default_factory=list)
    text: str = ""
    errors: list[CallError] = field(default_factory=list)


@dataclass(frozen=True)
class TextDraft:
    """A candidate continuation of the model's output, and where it came from."""

    text: str
    source: str
    """``schema`` (deterministic skeleton) or ``hint`` (sidecar values)."""


class CallSkeleton(ABC):
    """The deterministic text around a call's slots, for one format and one set of tools."""

    @abstractmethod
    def continuations(self, generated: str, hint: Hint | None = None) -> list[TextDraft]:
        """Likely continuations of ``generated`` (the model's output so far), best first."""

    def written_function(self, generated: str) -> str | None:
        """The offered tool named by the first call in ``generated``, once its name is
        complete (None before, or when the skeleton cannot tell)."""
        return None

    def open_name(self, generated: str) -> tuple[str, bool] | None:
        """The last call's function name as written so far (JSON string body) and whether its
        closing quote is written; None outside any call, or when the skeleton cannot tell."""
        return None

    def well_formed(self, generated: str) -> bool | None:
        """Whether the last call in ``generated`` is so far the beginning of a well-formed call;
        None outside any call, or when the skeleton cannot tell."""
        return None

    def conforms(self, generated: str) -> bool | None:
        """:meth:`well_formed`, with the arguments of a call to an offered tool held to that
        tool's schema too; None outside any call, or when the skeleton cannot tell."""
        return self.well_formed(generated)

    @property
    def name_texts(self) -> frozenset[str]:
        """The offered tools' names as a call writes them (JSON string bodies)."""
        return frozenset()


class ChatFormat(ABC):
    """How a model is prompted with tools and how it writes calls."""

    name: str

    markup_tags: tuple[str, ...] = ()
    """Tags only the runtime writes into a conversation (tool-result blocks, call tags):
    a reply that holds one outside a parsed call is a model error, not an answer."""

    @abstractmethod
    def render_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolDict]
    ) -> list[dict[str, Any]]:
        """Chat messages ready for the tokenizer's chat template: tool schemas in the system
        prompt, earlier assistant calls rendered as text, tool results as this format shows them."""

    @abstractmethod
    def render_calls(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """The exact text the model writes for these ``(name, arguments)`` calls."""

    @abstractmethod
    def parse(self, text: str, *, strict: bool = False) -> ParseResult:
        """Every call ``text`` writes in this format's own call syntax. ``strict`` takes that
        syntax only; lenient (the default) also tolerates what is unambiguous (a code fence,
        an answer that is bare JSON calls as a whole). JSON inside prose is never a call."""

    @abstractmethod
    def skeleton(self, tools: Sequence[ToolDict]) -> CallSkeleton:
        """The drafting skeleton for these tools."""

    @property
    def call_opening(self) -> str:
        """The text a call opens with before its JSON (``<tool_call>`` in the Hermes format),
        read off :meth:`render_calls`; empty where a call is bare JSON."""
        text = self.render_calls([("f", {})])
        cuts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
        return text[: min(cuts)].strip() if cuts else ""

    @property
    @abstractmethod
    def stop_strings(self) -> tuple[str, ...]:
        """Text after which the model has finished its turn (besides EOS / end of turn)."""
