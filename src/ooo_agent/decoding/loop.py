"""The decode loop: prefill, then draft -> build tree -> verify -> accept -> compact.

:class:`DecodeEngine` owns one model and a :class:`~ooo_agent.decoding.prefix_cache.PrefixCache`.
Each call's prompt and output stay cached after it, so a call that starts with the same
tokens as any kept entry (same system prompt and tools; the same conversation one turn on)
only prefills what is new (``prefix_reuse``); the kept entries are exactly what a cold prefill
computes, since a causal model's state at a position depends only on the tokens before it.

Without a planner every step verifies a one-node tree: plain greedy decoding, the reference
the speculative modes must equal token for token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ooo_agent.calls import DecodeStats
from ooo_agent.decoding.constraint import TokenConstraint
from ooo_agent.decoding.drafts.base import DraftContext
from ooo_agent.decoding.kv import cache_length, compact_cache, new_cache
from ooo_agent.decoding.planner import DraftPlanner
from ooo_agent.decoding.prefix_cache import PrefixCache
from ooo_agent.decoding.stopping import StopCondition
from ooo_agent.decoding.tree import TokenTree, TreeBuilder
from ooo_agent.decoding.verify import StepVerdict, TreeVerifier

__all__ = ["DecodeCancelled", "DecodeEngine", "DecodeResult", "common_prefix_length"]


class DecodeCancelled(Exception):
    """Raised inside the decode thread when its cancel flag is set."""


@dataclass
class DecodeResult:
    """The generated tokens (stop token included) and what it took."""

    token_ids: list[int]
    stats: DecodeStats
    prompt_hidden: torch.Tensor | None = None
    """Final hidden state of the prompt's last token (the retrieval-memory key)."""
    extras: dict[str, Any] = field(default_factory=dict)


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class DecodeEngine:
    """Greedy decoding with tree speculation for one causal LM (batch 1).

    Not re-entrant: calls are serialised by an internal lock (one model, one working
    cache). With ``prefix_reuse`` every call starts from the longest prefix of its prompt that
    ``prefix_cache`` holds (a new :class:`PrefixCache` with its default budget when None) and
    gives its prompt and output back to it when it ends; without, every call prefills cold.
    """

    def __init__(
        self,
        model: Any,
        *,
        prefix_reuse: bool = True,
        split_head: bool | None = None,
        prefix_cache: PrefixCache | None = None,
    ) -> None:
        self.verifier = TreeVerifier(model, split_head=split_head)
        self.prefix_reuse = prefix_reuse
        self.prefix_cache: PrefixCache | None = None
        if prefix_reuse:
            self.prefix_cache = prefix_cache if prefix_cache is not None else PrefixCache()
        self._cache: Any = new_cache()
        self._cached_ids: list[int] = []
        """The working cache's tokens during a call ([] when its state is unknown)."""
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Drop every kept prefix (the next call prefills its whole prompt)."""
        with self._lock:
            self._cache = new_cache()
            self._cached_ids = []
            if self.prefix_cache is not None:
                self.prefix_cache.clear()

    def _give_back(self) -> None:
        """Hand the working cache to the prefix cache (when its state is known) and drop it."""
        if self.prefix_cache is not None and self._cached_ids:
            self.prefix_cache.insert(self._cached_ids, self._cache)
        self._cache = new_cache()
        self._cached_ids = []

    def prefill_prefix(
        self, token_ids: Sequence[int], *, cancel: threading.Event | None = None
    ) -> int:
        """Compute and keep the KV of ``token_ids`` (the known start of a later prompt) in the
        prefix cache, from the longest prefix it already holds; returns how many tokens ran
        (0 without ``prefix_reuse``, or when all were cached or ``cancel`` was set first)."""
        if self.prefix_cache is None or not token_ids:
            return 0
        with self._lock:
            if cancel is not None and cancel.is_set():
                return 0
            hit = self.prefix_cache.take(token_ids)
            self._cache, self._cached_ids = hit.cache, list(token_ids[: hit.length])
            try:
                if hit.length < len(token_ids):
                    self.verifier.prefill(self._cache, token_ids[hit.length :], hit.length)
                    self._cached_ids = list(token_ids)
            except BaseException:
                self._cache, self._cached_ids = new_cache(), []  # unknown state: start over
                raise
            finally:
                self._give_back()
            return len(token_ids) - hit.length

    # -- stages --------------------------------------------------------------------------
    def _prefill(
        self,
        prompt_ids: Sequence[int],
        stats: DecodeStats,
        constraint: TokenConstraint | None = None,
    ) -> tuple[int, Any]:
        keep = 0
        if self.prefix_cache is not None:
            # At least one prompt token must run to give the first prediction.
            hit = self.prefix_cache.take(prompt_ids, limit=len(prompt_ids) - 1)
            self._cache, keep = hit.cache, hit.length
            stats.cache_diverged_at = hit.diverged_at
        else:
            self._cache = new_cache()
        self._cached_ids = list(prompt_ids[:keep])
        started = time.perf_counter()
        try:
            token, hidden, logits = self.verifier.prefill(self._cache, prompt_ids[keep:], keep)
        except BaseException:
            self._cache, self._cached_ids = new_cache(), []  # unknown state: start over
            raise
        if constraint is not None:
            token = constraint.choose([], logits, token)
        self._cached_ids = list(prompt_ids)
        stats.prefill_s = time.perf_counter() - started
        stats.prefill_tokens = len(prompt_ids) - keep
        stats.cached_tokens = keep
        stats.forward_passes += 1
        return token, hidden

    def _verify(
        self,
        tree: TokenTree,
        top_k: int,
        constraint: TokenConstraint | None = None,
        generated: Sequence[int] = (),
    ) -> StepVerdict:
        past = cache_length(self._cache)
        constrain = None
        if constraint is not None:
            # ``generated`` ends with the tree's root token; a node's output so far is it
            # plus the tokens on the path below the root.
            def constrain(node: int, logits: torch.Tensor, greedy: int) -> int:
                below: list[int] = []
                while node > 0:
                    below.append(tree.tokens[node])
                    node = tree.parents[node]
                return constraint.choose([*generated, *reversed(below)], logits, greedy)

        try:
            verdict = self.verifier.verify(
                tree, self._cache, past, top_k=top_k, constrain=constrain
            )
            compact_cache(self._cache, past, verdict.path)
        except BaseException:
            self._cache, self._cached_ids = new_cache(), []
            raise
        self._cached_ids.extend(tree.tokens[n] for n in verdict.path)
        return verdict

    # -- the loop ------------------------------------------------------------------------
    def decode(
        self,
        prompt_ids: Sequence[int],
        *,
        max_new_tokens: int,
        stop: StopCondition,
        planner: DraftPlanner | None = None,
        recycler_top_k: int = 0,
        on_verdict: Callable[[Sequence[int], StepVerdict], None] | None = None,
        decode_text: Callable[[Sequence[int]], str] | None = None,
        before_step: Callable[[int], None] | None = None,
        on_prefill: Callable[[torch.Tensor | None], None] | None = None,
        cancel: threading.Event | None = None,
        mode: str = "vanilla",
        constraint: TokenConstraint | None = None,
    ) -> DecodeResult:
        """Generate up to ``max_new_tokens`` tokens after ``prompt_ids``.

        ``planner`` (None: plain greedy) builds each step's tree; ``on_verdict`` receives the
        accepted tokens with the verdict (token recycling learns from it); ``before_step``
        runs before drafting (the hint poll); ``on_prefill`` receives the prompt's last hidden
        state (the retrieval-memory key); ``cancel`` is checked before every forward;
        ``constraint`` (optional) picks each token in place of the plain argmax, the same way
        in every mode (:mod:`ooo_agent.decoding.constraint`).
        """
        if not prompt_ids:
            raise ValueError("the prompt has no tokens")
        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        stats = DecodeStats(mode=mode, prompt_tokens=len(prompt_ids))
        with self._lock:
            if cancel is not None and cancel.is_set():
                raise DecodeCancelled
            try:
                return self._decode(
                    prompt_ids, stats, max_new_tokens, stop, planner, recycler_top_k,
                    on_verdict, decode_text, before_step, on_prefill, cancel, constraint,
                )
            finally:  # a cancelled call's cache is consistent too: it stays cached
                self._give_back()

    def _decode(
        self,
        prompt_ids: Sequence[int],
        stats: DecodeStats,
        max_new_tokens: int,
        stop: StopCondition,
        planner: DraftPlanner | None,
        recycler_top_k: int,
        on_verdict: Callable[[Sequence[int], StepVerdict], None] | None,
        decode_text: Callable[[Sequence[int]], str] | None,
        before_step: Callable[[int], None] | None,
        on_prefill: Callable[[torch.Tensor | None], None] | None,
        cancel: threading.Event | None,
        constraint: TokenConstraint | None,
    ) -> DecodeResult:
        """The body of :meth:`decode`, under its lock."""
        pending, hidden = self._prefill(prompt_ids, stats, constraint)
        if on_prefill is not None:
            on_prefill(hidden)
        generated = [pending]
        finish = self._finished(stop, generated, 0, max_new_tokens)
        decode_started = time.perf_counter()
        step = 0
        while finish is None:
            if cancel is not None and cancel.is_set():
                raise DecodeCancelled
            if before_step is not None:
                before_step(step)
            drafting = time.perf_counter()
            if planner is not None:
                context = DraftContext(prompt_ids, generated, step, decode_text)
                tree = planner.plan(context)
            else:
                tree = TreeBuilder(pending, 0).build()
            stats.draft_s += time.perf_counter() - drafting
            verdict = self._verify(tree, recycler_top_k, constraint, generated)
            accepted = [tree.tokens[n] for n in verdict.path[1:]] + [verdict.bonus]
            stats.forward_passes += 1
            stats.tree_nodes.append(len(tree))
            stats.accepted_lengths.append(len(accepted))
            for node in verdict.path[1:]:
                source = tree.sources[node]
                stats.accepted_by_drafter[source] = stats.accepted_by_drafter.get(source, 0) + 1
            if planner is not None:
                drafting = time.perf_counter()
                planner.observe(context, tree, verdict.path)
                if on_verdict is not None:
                    on_verdict([tree.tokens[n] for n in verdict.path], verdict)
                stats.draft_s += time.perf_counter() - drafting
            first_new = len(generated)
            generated.extend(accepted)
            pending = verdict.bonus
            step += 1
            finish = self._finished(stop, generated, first_new, max_new_tokens)
        length, reason = finish
        del generated[length:]
        stats.decode_s = time.perf_counter() - decode_started
        stats.new_tokens = len(generated)
        stats.finish_reason = reason
        if constraint is not None:
            stats.constrained_tokens = constraint.overrides
        return DecodeResult(generated, stats, hidden)

    @staticmethod
    def _finished(
        stop: StopCondition, generated: list[int], first_new: int, max_new_tokens: int
    ) -> tuple[int, str] | None:
        ended = stop.check(generated[:max_new_tokens], first_new)
        if ended is not None:
            return ended
        if len(generated) >= max_new_tokens:
            return max_new_tokens, "length"
        return None
