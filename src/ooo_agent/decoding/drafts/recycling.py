"""Token recycling: reuse the target's own recent top-k predictions as drafts.

After each step the target's top-k next tokens at every accepted position are stored in an
adjacency table (token -> its k most likely successors, last seen). When the other drafters
have nothing, the table is expanded from the pending token into a small tree template (e.g.
4 candidates, 2 successors each, then 1): cheap guesses that often catch formulaic text.

On a CPU each extra tree node costs a few percent of a step, so the template is small and
the planner cuts it further by expected gain.
"""

from __future__ import annotations

from collections.abc import Sequence

from ooo_agent.decoding.drafts.base import DraftContext, TokenDraft

__all__ = ["TokenRecycler"]


class TokenRecycler:
    """A ``token -> top-k successors`` table and its expansion into chain drafts."""

    def __init__(
        self,
        *,
        top_k: int = 8,
        template: Sequence[int] = (4, 2, 1),
        max_tokens: int = 65536 * 4,
        only_when_idle: bool = True,
    ) -> None:
        if top_k < 1 or not template or any(b < 1 for b in template):
            raise ValueError("top_k and every template branching must be >= 1")
        self.top_k = top_k
        self.template = tuple(template)
        self.max_tokens = max_tokens
        self.only_when_idle = only_when_idle
        self._successors: dict[int, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self._successors)

    def record(self, tokens: Sequence[int], tops: Sequence[Sequence[int]]) -> None:
        """``tops[i]``: the target's top-k tokens after ``tokens[i]`` in the current context."""
        for token, top in zip(tokens, tops, strict=False):
            if len(self._successors) >= self.max_tokens and token not in self._successors:
                continue
            self._successors[int(token)] = tuple(int(t) for t in top[: self.top_k])

    def successors(self, token: int) -> tuple[int, ...]:
        return self._successors.get(token, ())

    def expand(self, root_token: int) -> list[TokenDraft]:
        """Chains through the template, best-ranked first (confidence falls with rank)."""
        chains: list[tuple[tuple[int, ...], float]] = [((), 1.0)]
        for branching in self.template:
            grown: list[tuple[tuple[int, ...], float]] = []
            for chain, confidence in chains:
                last = chain[-1] if chain else root_token
                following = self.successors(last)[:branching]
                if not following:
                    grown.append((chain, confidence))
                    continue
                for rank, token in enumerate(following):
                    grown.append(((*chain, token), confidence / (1 + rank)))
            chains = grown
        drafts = [TokenDraft(chain, "recycling", conf) for chain, conf in chains if chain]
        drafts.sort(key=lambda d: -d.confidence)
        return drafts

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        if not context.generated_ids:
            return []
        return self.expand(int(context.generated_ids[-1]))

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None
