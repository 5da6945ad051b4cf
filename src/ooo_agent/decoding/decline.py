"""Declining when no offered tool fits: the target answers in words when it is not sure it
should call.

A small target trained mostly on requests a tool serves calls a tool for almost every
request, the ones no offered tool fits included (the embedded target on BFCL
``irrelevance``: a call on 229 of 240). Its first token says how sure it is: the probability
it gives the token a call starts with (``<`` of ``<tool_call>`` in the Hermes format) is
above 0.99 on nearly every request a tool serves and lower on a third of the ones none does
(docs/tools.md, "Declining when no tool fits"). :class:`DeclinePolicy` reads that probability at the first position
and, below a threshold, refuses the call: the first token is the highest-ranked one that does
not start a call, and no call opens later in the answer (the token that would complete the
format's call marker is refused too). Above it, nothing changes. ``HFTarget`` asks it only on a turn that answers the user's
message with tools offered (after a tool's result, calling again is the model's own choice).

It is a :class:`~ooo_agent.decoding.constraint.TokenConstraint` (wrapping the call
constraint, if any), so every mode applies it at every position the same way and the
speculative modes stay token-identical to greedy decoding under the same policy.

Example::

    target = HFTarget.from_preset("smollm2-135m-toolcall", decline_below=0.99)
    result = await FastToolCaller(target).call(messages, tools)
    result.stats.decode.declined, result.stats.decode.call_probability
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import torch

from ooo_agent.decoding.constraint import TokenConstraint, runner_up

__all__ = ["DeclinePolicy", "call_start_ids"]

_MARKER_WINDOW = 12
"""Tokens of the output's end decoded to look for the call marker (it is shorter than this)."""


def call_start_ids(encode: Callable[[str], Sequence[int]], call_text: str) -> frozenset[int]:
    """The token a call in this format starts with: the first token of ``call_text`` (a call
    as the format renders it). One id; a set so that a format with several openings can
    name them all."""
    ids = list(encode(call_text))
    if not ids:
        raise ValueError("the call text encodes to no tokens")
    return frozenset({int(ids[0])})


class DeclinePolicy:
    """Refuse every call when the first token's probability of starting one is below
    ``threshold`` (module docstring); otherwise defer to ``inner``.

    Args:
        start_ids: the token(s) a call starts with (:func:`call_start_ids`).
        threshold: decline when the probability of a call start is below it (0 never
            declines, above 1 always does).
        decode: token ids → text, as the target's tokenizer decodes them.
        marker: the text that opens a call in this format (``<tool_call>``); once declined,
            the token that would complete it is refused. Empty: only the first token is
            steered.
        inner: the call constraint to apply otherwise (and to the tokens this policy keeps).
        max_candidates: how far down the ranking to look for an allowed token.
        on_decline: called once with the call probability when the policy declines, at the
            first position (``HFTarget`` tells the sidecar's hint box, so the wave stops).
    """

    def __init__(
        self,
        start_ids: Collection[int],
        threshold: float,
        decode: Callable[[Sequence[int]], str],
        *,
        marker: str = "",
        inner: TokenConstraint | None = None,
        max_candidates: int = 64,
        on_decline: Callable[[float], None] | None = None,
    ) -> None:
        if not start_ids:
            raise ValueError("start_ids must name at least one token")
        if threshold < 0:
            raise ValueError("threshold must be >= 0")
        self.start_ids = frozenset(int(i) for i in start_ids)
        self.threshold = float(threshold)
        self.decode = decode
        # A tag's name is refused, attributes or not (``<tool_call language="en">``).
        self.marker = marker[:-1] if marker.startswith("<") and marker.endswith(">") else marker
        self.inner = inner
        self.max_candidates = max_candidates
        self.on_decline = on_decline
        self.call_probability: float | None = None
        """The probability the first position gave a call's first token (None before it)."""
        self.declined = False
        self.overrides = 0
        """Positions where the choice differed from the plain argmax (this policy's and the
        inner constraint's)."""
        self._own_overrides = 0

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        """The token after ``generated`` given the target's ``logits`` there."""
        if not generated:
            probabilities = torch.softmax(logits.float(), dim=-1)
            index = torch.tensor(sorted(self.start_ids), device=probabilities.device)
            self.call_probability = float(probabilities.index_select(-1, index).sum())
            self.declined = self.call_probability < self.threshold
            if self.declined and self.on_decline is not None:
                self.on_decline(self.call_probability)
        if self.declined:
            token = self._refusing(generated, logits, greedy)
        elif self.inner is not None:
            token = self.inner.choose(generated, logits, greedy)
        else:
            token = greedy
        inner = self.inner.overrides if self.inner is not None else 0
        self.overrides = self._own_overrides + inner
        return token

    def _refusing(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        def allowed(token: int) -> bool:
            if not generated:
                return token not in self.start_ids
            if not self.marker:
                return True
            tail = self.decode([*generated[-_MARKER_WINDOW:], token])
            return self.marker not in tail

        if allowed(greedy):
            return greedy
        choice = runner_up(logits, greedy, allowed, lambda token: False, self.max_candidates)
        if choice is None:
            return greedy
        self._own_overrides += 1
        return choice
