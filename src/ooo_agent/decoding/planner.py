"""Merging every drafter's proposals into one token tree, spending nodes by expected gain.

A tree node is worth adding when the chance that the target accepts it (and so saves a
forward) outweighs what it costs to verify. On a CPU a node costs a few percent of a step
(the whole model, LM head included, runs per node), so wide low-confidence trees lose.

The planner estimates, per drafter, how often its first drafted token is accepted and how
often a token is accepted given its predecessor was (running counts, with priors). A node
``k`` tokens into a draft then has expected gain
``first_rate * draft.confidence * next_rate ** (k - 1)``; nodes are added best first across
all drafts until the budget is spent or the gain falls below ``min_gain``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ooo_agent.decoding.drafts.base import DraftContext, Drafter, TokenDraft
from ooo_agent.decoding.tree import TokenTree, TreeBuilder

__all__ = ["DEFAULT_PRIORS", "AcceptanceRates", "DraftPlanner"]

DEFAULT_PRIORS: Mapping[str, tuple[float, float]] = {
    # source: (first-token acceptance, next-token acceptance)
    "schema": (0.9, 0.95),
    # Near what the embedded target learns of the embedded sidecar's hints (`ooo-agent bench`
    # reports them as acceptance_rates): high enough that a whole 64-token call fits in the
    # tree from the first request, where (0.8, 0.9) cut a hint after 27 tokens.
    "hint": (0.85, 0.97),
    "memory": (0.5, 0.85),
    "ngram": (0.45, 0.8),
    "recycling": (0.3, 0.45),
}
_PRIOR_WEIGHT = 4.0


@dataclass
class _Rate:
    hits: float
    tries: float

    @property
    def value(self) -> float:
        return self.hits / self.tries


class AcceptanceRates:
    """Running acceptance estimates per drafter, starting from priors."""

    def __init__(self, priors: Mapping[str, tuple[float, float]] = DEFAULT_PRIORS) -> None:
        self._priors = dict(priors)
        self._first: dict[str, _Rate] = {}
        self._next: dict[str, _Rate] = {}

    def _get(self, table: dict[str, _Rate], source: str, which: int) -> _Rate:
        rate = table.get(source)
        if rate is None:
            prior = self._priors.get(source, (0.3, 0.6))[which]
            rate = table[source] = _Rate(prior * _PRIOR_WEIGHT, _PRIOR_WEIGHT)
        return rate

    def first(self, source: str) -> float:
        return self._get(self._first, source, 0).value

    def next(self, source: str) -> float:
        return self._get(self._next, source, 1).value

    def snapshot(self) -> dict[str, dict[str, dict[str, float]]]:
        """``{"first" | "next": {source: {"rate": r, "seen": n}}}``: each drafter's current
        estimate (its prior included) and how many drafted tokens it has been seen on."""
        return {
            which: {
                source: {"rate": round(rate.value, 4), "seen": round(rate.tries - _PRIOR_WEIGHT)}
                for source, rate in sorted(table.items())
            }
            for which, table in (("first", self._first), ("next", self._next))
        }

    def update(self, tree: TokenTree, path: Sequence[int]) -> None:
        """Count, for every drafted node whose parent was accepted, whether it was too."""
        on_path = set(path)
        for node in range(1, len(tree)):
            parent = tree.parents[node]
            if parent not in on_path:
                continue  # never had its chance
            table, which = (self._first, 0) if parent == 0 else (self._next, 1)
            rate = self._get(table, tree.sources[node], which)
            rate.tries += 1
            rate.hits += node in on_path


class DraftPlanner:
    """Asks each drafter for drafts and builds the step's tree under a node budget.

    Drafters listed in ``fallback`` (token recycling) are consulted only when the others
    proposed nothing.
    """

    def __init__(
        self,
        drafters: Sequence[Drafter],
        *,
        budget: int = 32,
        min_gain: float = 0.05,
        fallback: Sequence[Drafter] = (),
        rates: AcceptanceRates | None = None,
    ) -> None:
        self.drafters = list(drafters)
        self.fallback = list(fallback)
        self.budget = budget
        self.min_gain = min_gain
        self.rates = rates if rates is not None else AcceptanceRates()

    def collect(self, context: DraftContext) -> list[TokenDraft]:
        drafts = [d for drafter in self.drafters for d in drafter.draft(context)]
        if not drafts:
            drafts = [d for drafter in self.fallback for d in drafter.draft(context)]
        return drafts

    def build(self, root_token: int, drafts: Sequence[TokenDraft]) -> TokenTree:
        """The tree of the best nodes of ``drafts`` (see the module docstring)."""
        builder = TreeBuilder(root_token, self.budget)
        heap: list[tuple[float, int, int]] = []
        for i, draft in enumerate(drafts):
            if draft.tokens:
                gain = self.rates.first(draft.source) * draft.confidence
                heap.append((-gain, i, 0))
        heapq.heapify(heap)
        at_node = [0] * len(drafts)
        next_rates = [self.rates.next(d.source) for d in drafts]
        while heap and not builder.full:
            negative_gain, i, position = heapq.heappop(heap)
            if -negative_gain < self.min_gain:
                break
            draft = drafts[i]
            node = builder.extend(at_node[i], draft.tokens[position], draft.source)
            if node is None:
                break
            at_node[i] = node
            if position + 1 < len(draft.tokens):
                heapq.heappush(heap, (negative_gain * next_rates[i], i, position + 1))
        return builder.build()

    def plan(self, context: DraftContext) -> TokenTree:
        """Collect drafts and build the tree rooted at the pending token."""
        return self.build(int(context.generated_ids[-1]), self.collect(context))

    def observe(self, context: DraftContext, tree: TokenTree, path: Sequence[int]) -> None:
        self.rates.update(tree, path)
        accepted = [tree.tokens[n] for n in path[1:]]
        for drafter in (*self.drafters, *self.fallback):
            drafter.observe(context, accepted)
