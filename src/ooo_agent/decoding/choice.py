"""``tool_choice="required"`` (or a named tool) on a white-box target: the answer opens with a
call.

:class:`RequiredCall` is a :class:`~ooo_agent.decoding.constraint.TokenConstraint`: until the
format's call opening (``<tool_call>`` in the Hermes format; a call's first token where the
format has no opening, as bare JSON calls) is written, it keeps the likeliest token that goes
on spelling it; after that it defers to the call constraint it wraps (which, for a named
choice, holds every call's name to that tool). Like every constraint it applies at every
position in every mode, so the speculative modes stay token-identical to greedy decoding
under it. ``tool_choice="none"`` is the decline policy that always declines
(:class:`~ooo_agent.decoding.decline.DeclinePolicy` with an infinite threshold).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import torch

from ooo_agent.decoding.constraint import TokenConstraint, runner_up

__all__ = ["RequiredCall"]


class RequiredCall:
    """Open the answer with a call (module docstring), then defer to ``inner``.

    Args:
        start_ids: the token(s) a call starts with (``decline.call_start_ids``).
        opening: the text that opens a call in this format (``ChatFormat.call_opening``);
            empty: only the first token is held, to ``start_ids``.
        decode: token ids → text, as the target's tokenizer decodes them.
        inner: the call constraint to apply once the opening is written.
    """

    def __init__(
        self,
        start_ids: Collection[int],
        opening: str,
        decode: Callable[[Sequence[int]], str],
        *,
        inner: TokenConstraint | None = None,
    ) -> None:
        if not start_ids:
            raise ValueError("start_ids must name at least one token")
        self.start_ids = frozenset(int(i) for i in start_ids)
        self.opening = opening
        self.decode = decode
        self.inner = inner
        self.overrides = 0
        self._own_overrides = 0
        # A token writes at least a byte, so an opening that is written lies within the first
        # few tokens (a margin for tokens that write nothing): the check decodes that bounded
        # prefix, not the whole answer at every step.
        self._reach = 2 * len(opening.encode("utf-8")) + 8

    def _opened(self, generated: Sequence[int]) -> bool:
        if not generated:
            return False
        head = self.decode(generated[: self._reach])
        return not self.opening or head.startswith(self.opening)

    def _allowed(self, generated: Sequence[int], token: int) -> bool:
        if not generated and token not in self.start_ids:
            return False
        if not self.opening:
            return True
        text = self.decode([*generated, token])
        return self.opening.startswith(text) or text.startswith(self.opening)

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        """The token after ``generated`` given the target's ``logits`` there."""
        if self._opened(generated):
            token = self.inner.choose(generated, logits, greedy) if self.inner else greedy
        elif self._allowed(generated, greedy):
            token = greedy
        else:
            # The whole vocabulary is searched: a few positions only, and one always fits.
            found = runner_up(
                logits,
                greedy,
                lambda t: self._allowed(generated, t),
                lambda t: False,
                int(logits.shape[-1]),
            )
            if found is None:
                raise ValueError(f"no token continues the call opening {self.opening!r}")
            token = found
            self._own_overrides += 1
        inner = self.inner.overrides if self.inner is not None else 0
        self.overrides = self._own_overrides + inner
        return token
