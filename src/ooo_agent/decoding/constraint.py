"""Constrained greedy decoding: calls name offered tools, and their JSON is well-formed.

A small model sometimes writes a function name that is close to an offered one but not it
(``math.roots.quadratic`` for ``math_roots.quadratic``), or JSON that does not parse (a nested
object closed once too few times, ``"height": 5ft 10``); the call then fails however right the
rest is. :class:`CallConstraint` restricts the target's choice, token by token, to
continuations that keep the current call's name a prefix of an offered name (and, once the
closing quote is written, exactly one) and, with ``well_formed``, the call's text the
beginning of a well-formed call (the format's skeleton: the text up to the arguments, one
JSON object with strict numbers and literals, the closing text).

The constraint is a function of the tokens generated so far and the logits at that position:
the target's argmax when that token is allowed (the common case, at the cost of two text
decodes and two scans), else the highest-scoring allowed token. Every mode applies it at every
position the same way — the plain one-token-per-forward loop and the tree walk alike — so the
speculative modes stay token-identical to *constrained* greedy decoding.

Example::

    target = HFTarget.from_preset(constrain_names=True, constrain_json=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch

from ooo_agent.formats.base import CallSkeleton

__all__ = ["CallConstraint", "TokenConstraint"]


class TokenConstraint(Protocol):
    """Picks the token to write after ``generated`` given the target's logits there."""

    overrides: int
    """Positions where the choice differed from the plain argmax."""

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        """The token after ``generated`` (output tokens so far); ``greedy`` is the argmax."""
        ...


class CallConstraint:
    """Only offered tool names in calls, and optionally well-formed calls (module docstring).

    Args:
        skeleton: the call format's skeleton for the offered tools (it finds the call being
            written).
        decode: token ids → text, as the target's tokenizer decodes them.
        names: keep each call's function name among the offered tools.
        well_formed: keep each call's text the beginning of a well-formed call.
        max_candidates: how far down the ranking to look for an allowed token when the
            argmax is not one; past it the argmax is kept (the call then fails validation,
            as it would unconstrained).
    """

    def __init__(
        self,
        skeleton: CallSkeleton,
        decode: Callable[[Sequence[int]], str],
        *,
        names: bool = True,
        well_formed: bool = False,
        max_candidates: int = 512,
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
        self.skeleton = skeleton
        self.decode = decode
        self.names = skeleton.name_texts if names else frozenset()
        self.well_formed = well_formed
        self.max_candidates = max_candidates
        self.overrides = 0

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        if not self.names and not self.well_formed:
            return greedy
        text = self.decode(generated)
        before = self.skeleton.open_name(text) if self.names else None
        # A call already broken (by text the constraint did not choose) is left as it is.
        shaped = self.well_formed and self.skeleton.well_formed(text) is not False
        if self._allowed(generated, greedy, before, shaped):
            return greedy
        # Stable: among equal scores the lower id first, as argmax breaks ties.
        ranked = torch.argsort(logits, descending=True, stable=True)[: self.max_candidates]
        for token in ranked.tolist():
            if token != greedy and self._allowed(generated, token, before, shaped):
                self.overrides += 1
                return int(token)
        return greedy

    def _allowed(
        self,
        generated: Sequence[int],
        token: int,
        before: tuple[str, bool] | None,
        shaped: bool,
    ) -> bool:
        text = self.decode([*generated, token])
        if shaped and self.skeleton.well_formed(text) is False:
            return False
        if not self.names:
            return True
        state = self.skeleton.open_name(text)
        if state is None:
            return True
        typed, closed = state
        if not closed:
            return any(name.startswith(typed) for name in self.names)
        if before is not None and before == state:
            return True  # this call's name was complete before this token
        return typed in self.names
