"""Constrained greedy decoding: a call may only name a tool that was offered.

A small model sometimes writes a function name that is close to an offered one but not it
(``math.roots.quadratic`` for ``math_roots.quadratic``); the call then fails validation
however right its arguments are. :class:`ToolNameConstraint` restricts the target's choice,
token by token, to continuations that keep the current call's name a prefix of an offered
name (and, once the closing quote is written, exactly one).

The constraint is a function of the tokens generated so far and the logits at that position:
the target's argmax when that token is allowed (the common case, at the cost of two text
decodes and two scans), else the highest-scoring allowed token. Every mode applies it at every
position the same way — the plain one-token-per-forward loop and the tree walk alike — so the
speculative modes stay token-identical to *constrained* greedy decoding.

Example::

    target = HFTarget.from_preset(constrain_names=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch

from ooo_agent.formats.base import CallSkeleton

__all__ = ["TokenConstraint", "ToolNameConstraint"]


class TokenConstraint(Protocol):
    """Picks the token to write after ``generated`` given the target's logits there."""

    overrides: int
    """Positions where the choice differed from the plain argmax."""

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        """The token after ``generated`` (output tokens so far); ``greedy`` is the argmax."""
        ...


class ToolNameConstraint:
    """Only offered tool names in calls (see the module docstring).

    Args:
        skeleton: the call format's skeleton for the offered tools (it finds the name being
            written).
        decode: token ids → text, as the target's tokenizer decodes them.
        max_candidates: how far down the ranking to look for an allowed token when the
            argmax is not one; past it the argmax is kept (the call then fails validation,
            as it would unconstrained).
    """

    def __init__(
        self,
        skeleton: CallSkeleton,
        decode: Callable[[Sequence[int]], str],
        *,
        max_candidates: int = 512,
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
        self.skeleton = skeleton
        self.decode = decode
        self.names = skeleton.name_texts
        self.max_candidates = max_candidates
        self.overrides = 0

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        if not self.names:
            return greedy
        before = self.skeleton.open_name(self.decode(generated))
        if self._allowed(generated, greedy, before):
            return greedy
        # Stable: among equal scores the lower id first, as argmax breaks ties.
        ranked = torch.argsort(logits, descending=True, stable=True)[: self.max_candidates]
        for token in ranked.tolist():
            if token != greedy and self._allowed(generated, token, before):
                self.overrides += 1
                return int(token)
        return greedy

    def _allowed(
        self, generated: Sequence[int], token: int, before: tuple[str, bool] | None
    ) -> bool:
        state = self.skeleton.open_name(self.decode([*generated, token]))
        if state is None:
            return True
        typed, closed = state
        if not closed:
            return any(name.startswith(typed) for name in self.names)
        if before is not None and before == state:
            return True  # this call's name was complete before this token
        return typed in self.names
