"""Retrieval memory: verified outputs of earlier, similar requests, reused as n-gram sources.

Requests on the same tools tend to produce calls that share names, keys and often values.
Each finished call stores its output tokens under a key: the prompt's last hidden state,
which the prefill computes anyway. A new request retrieves the outputs whose keys are most
similar (cosine), and the n-gram drafter matches against them. Bounded (oldest out first),
one per target instance, never shared between instances.

Example::

    memory = RetrievalMemory(capacity=128, top_k=4)
    memory.add(prompt_vector, output_ids)
    memory.query(next_prompt_vector)   ->  [output_ids, ...]   (most similar first)
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

import torch

__all__ = ["RetrievalMemory"]


class RetrievalMemory:
    """A bounded store of ``(key vector, output tokens)`` queried by cosine similarity.

    Without keys (a model whose hidden state is not exposed) it falls back to recency.
    """

    def __init__(
        self, capacity: int = 256, *, top_k: int = 10, min_similarity: float = 0.0
    ) -> None:
        if capacity < 1 or top_k < 1:
            raise ValueError("capacity and top_k must be >= 1")
        self.capacity = capacity
        self.top_k = top_k
        self.min_similarity = min_similarity
        self._entries: deque[tuple[torch.Tensor | None, tuple[int, ...]]] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def add(self, key: torch.Tensor | None, tokens: Sequence[int]) -> None:
        """Remember a verified output (empty outputs are ignored)."""
        if not tokens:
            return
        unit = None
        if key is not None:
            flat = key.detach().reshape(-1).to(torch.float32)
            norm = torch.linalg.vector_norm(flat)
            unit = flat / norm if float(norm) > 0 else None
        with self._lock:
            self._entries.append((unit, tuple(int(t) for t in tokens)))

    def query(self, key: torch.Tensor | None) -> list[tuple[int, ...]]:
        """Up to ``top_k`` stored outputs, most similar (or most recent) first."""
        with self._lock:
            entries = list(self._entries)
        if not entries:
            return []
        keyed = [(k, tokens) for k, tokens in entries if k is not None]
        if key is None or not keyed:
            return [tokens for _, tokens in reversed(entries[-self.top_k :])]
        query = key.detach().reshape(-1).to(torch.float32)
        norm = torch.linalg.vector_norm(query)
        if float(norm) == 0:
            return [tokens for _, tokens in reversed(entries[-self.top_k :])]
        same_size = [(k, tokens) for k, tokens in keyed if k.shape == query.shape]
        if not same_size:
            return [tokens for _, tokens in reversed(entries[-self.top_k :])]
        matrix = torch.stack([k for k, _ in same_size])
        candidates = [tokens for _, tokens in same_size]
        similarity = matrix @ (query / norm)
        count = min(self.top_k, len(candidates))
        values, order = torch.topk(similarity, count)
        return [
            candidates[i]
            for value, i in zip(values.tolist(), order.tolist(), strict=True)
            if value >= self.min_similarity
        ]
