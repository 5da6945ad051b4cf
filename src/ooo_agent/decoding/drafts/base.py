"""What every drafter shares: token drafts, the per-step context, and the text codec."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["DraftContext", "Drafter", "TextCodec", "TokenDraft"]


@runtime_checkable
class TextCodec(Protocol):
    """Text <-> token ids, as the target's tokenizer does it (no special tokens added)."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, token_ids: Sequence[int]) -> str: ...


@dataclass(frozen=True)
class TokenDraft:
    """A candidate continuation after the pending token.

    ``confidence`` ranks drafts of one drafter (1.0 = as sure as this drafter gets); the
    planner multiplies it with the drafter's measured acceptance rates.
    """

    tokens: tuple[int, ...]
    source: str
    confidence: float = 1.0


@dataclass
class DraftContext:
    """What drafters see at one decode step.

    ``generated_ids`` ends with the pending token (chosen by the target, not yet in the
    cache): drafts continue after it.
    """

    prompt_ids: Sequence[int]
    generated_ids: Sequence[int]
    step: int
    decode_text: Callable[[Sequence[int]], str] | None = None
    _text: str | None = field(default=None, repr=False)

    @property
    def generated_text(self) -> str:
        """The generated tokens as text (decoded once per step, on first use)."""
        if self._text is None:
            if self.decode_text is None:
                raise ValueError("this context has no text codec")
            self._text = self.decode_text(self.generated_ids)
        return self._text


@runtime_checkable
class Drafter(Protocol):
    """Proposes token drafts at each step; sees what the target accepted afterwards."""

    def draft(self, context: DraftContext) -> list[TokenDraft]: ...

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        """``accepted``: the tokens committed this step (accepted drafts + the bonus)."""
        ...
