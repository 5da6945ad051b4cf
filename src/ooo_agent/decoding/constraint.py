"""Constrained greedy decoding: calls name offered tools, their JSON is well-formed, and their
arguments follow the tool's schema.

:class:`CallConstraint` restricts the target's choice, token by token, to continuations that
keep the current call valid: its name a prefix of an offered one, with ``well_formed`` its text
the beginning of a well-formed call, with ``arguments`` only the tool's parameters, each once,
the required ones, declared types, enums and array elements. It keeps the argmax when that
token is allowed, else takes the highest-scoring allowed token (never a whitespace token in
place of a refused one). Every mode applies it at every position alike, so the speculative
modes stay token-identical to *constrained* greedy decoding. Guide: docs/tools.md.

Example::

    target = HFTarget.from_preset(constrain_names=True, constrain_arguments=True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import torch

from ooo_agent.formats.base import CallSkeleton

__all__ = ["CallConstraint", "TokenConstraint", "runner_up"]

_Facts = tuple[str, "bool | None", "tuple[str, bool] | None"]
"""An output's text, whether its last call is well-formed (or conforms), its open name."""


class TokenConstraint(Protocol):
    """Picks the token to write after ``generated`` given the target's logits there."""

    overrides: int
    """Positions where the choice differed from the plain argmax."""

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        """The token after ``generated`` (output tokens so far); ``greedy`` is the argmax."""
        ...


def runner_up(
    logits: torch.Tensor,
    greedy: int,
    allowed: Callable[[int], bool],
    blank: Callable[[int], bool],
    max_candidates: int,
) -> int | None:
    """The highest-scoring token other than ``greedy`` that ``allowed`` accepts, among the
    ``max_candidates`` best; one that only adds whitespace (``blank``) is taken only when no
    other is — in place of a refused token it would merely put the choice off (a model kept
    from closing a call pads before the comma). ``None`` when none is allowed."""
    # Stable: among equal scores the lower id first, as argmax breaks ties.
    ranked = torch.argsort(logits, descending=True, stable=True)[:max_candidates]
    padding: int | None = None
    for token in ranked.tolist():
        if token == greedy or not allowed(token):
            continue
        if blank(token):
            padding = int(token) if padding is None else padding
            continue
        return int(token)
    return padding


class CallConstraint:
    """Only offered tool names in calls, and optionally well-formed calls (module docstring).

    Args:
        skeleton: the call format's skeleton for the offered tools (it finds the call being
            written).
        decode: token ids → text, as the target's tokenizer decodes them.
        names: keep each call's function name among the offered tools.
        well_formed: keep each call's text the beginning of a well-formed call.
        arguments: keep each call's arguments to its tool's schema as well (implies
            ``well_formed``): only the tool's parameters as keys, each once, every required
            one before the closing brace, top-level values of the declared JSON type and
            enum, array elements as the schema says (:meth:`SchemaSkeleton.conforms`).
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
        arguments: bool = False,
        max_candidates: int = 512,
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
        self.skeleton = skeleton
        self.decode = decode
        self.names = skeleton.name_texts if names else frozenset()
        self.well_formed = well_formed or arguments
        self.arguments = arguments
        self._shape: Callable[[str], bool | None] = (
            skeleton.conforms if arguments else skeleton.well_formed
        )
        self.max_candidates = max_candidates
        self.overrides = 0
        self._memo: tuple[tuple[int, ...], _Facts] | None = None

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        if not self.names and not self.well_formed:
            return greedy
        text, shape, before = self._facts(generated)
        # A call already broken (by text the constraint did not choose) is left as it is.
        shaped = self.well_formed and shape is not False
        if self._allowed(self._facts([*generated, greedy]), before, shaped):
            return greedy

        def allowed(token: int) -> bool:
            return self._allowed(self._facts([*generated, token]), before, shaped)

        def blank(token: int) -> bool:
            # Whitespace is allowed almost anywhere (the facts of this token are kept).
            extended = self._facts([*generated, token])[0]
            return extended.startswith(text) and not extended[len(text) :].strip()

        token = runner_up(logits, greedy, allowed, blank, self.max_candidates)
        if token is None:
            return greedy
        self.overrides += 1
        return token

    def _facts(self, ids: Sequence[int]) -> _Facts:
        """The text of ``ids``, its shape and its open name; the last answer is kept, since
        the text checked for the token written is the next position's prefix."""
        key = tuple(ids)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        text = self.decode(ids)
        facts = (
            text,
            self._shape(text) if self.well_formed else None,
            self.skeleton.open_name(text) if self.names else None,
        )
        self._memo = (key, facts)
        return facts

    def _allowed(self, facts: _Facts, before: tuple[str, bool] | None, shaped: bool) -> bool:
        """Whether the output with the candidate token (``facts``) keeps the call allowed."""
        _, shape, state = facts
        if shaped and shape is False:
            return False
        if not self.names or state is None:
            return True
        typed, closed = state
        if not closed:
            return any(name.startswith(typed) for name in self.names)
        if before is not None and before == state:
            return True  # this call's name was complete before this token
        return typed in self.names
