"""Rows that share a prompt prefix, trained in one forward pass.

The sidecar's rows come in families: every argument row of one request repeats the same
system prompt, dialogue and parameter listing and differs only in its last question and
answer. Run one at a time, each row pays for that shared prefix again. Packed, the rows form a
token trie — a shared prefix once, then one branch per row — and one forward over the trie
with a tree attention mask (each token sees its ancestors, nothing else) and tree positions
(a token's depth) gives every row's logits exactly as its own forward would: the technique of
tree verification, used for training. The loss is the same sum over the same completion
tokens, so the gradient is the same (up to float rounding; LoRA dropout then draws one mask
for a shared token instead of one per row).

Example::

    packs = pack_pieces(examples, max_nodes=1024)
    for packed in packs:
        mask = tree_mask(packed.parents, torch.float32)  # [1, 1, T, T], 0 / finfo.min
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ooo_agent.train._batches import Example

__all__ = [
    "Packed",
    "pack_pieces",
    "plan_families",
    "prefix_families",
    "tree_mask",
]


@dataclass(frozen=True)
class Packed:
    """Several examples as one token trie.

    ``input_ids[i]`` is node ``i``'s token, ``parents[i]`` its parent node (``-1``: a root),
    ``depths[i]`` its position id. ``targets`` are ``(node, token, weight)``: the logits at
    ``node`` must predict ``token`` — one per completion token of every packed example, so a
    node two rows share carries both rows' targets.
    """

    input_ids: tuple[int, ...]
    parents: tuple[int, ...]
    depths: tuple[int, ...]
    targets: tuple[tuple[int, int, float], ...]
    rows: int

    @property
    def weight_sum(self) -> float:
        return float(sum(weight for _, _, weight in self.targets))


class _Trie:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.parents: list[int] = []
        self.depths: list[int] = []
        self.children: dict[tuple[int, int], int] = {}
        self.targets: list[tuple[int, int, float]] = []
        self.rows = 0

    def new_nodes(self, ids: Sequence[int]) -> int:
        """How many nodes inserting ``ids`` would add."""
        node = -1
        for shared, token in enumerate(ids):
            child = self.children.get((node, token))
            if child is None:
                return len(ids) - shared
            node = child
        return 0

    def insert(self, example: Example) -> None:
        node, path = -1, []
        for token in example.input_ids:
            child = self.children.get((node, token))
            if child is None:
                child = len(self.ids)
                self.ids.append(token)
                self.parents.append(node)
                self.depths.append(0 if node < 0 else self.depths[node] + 1)
                self.children[(node, token)] = child
            path.append(child)
            node = child
        weights = example.weights or (1.0,) * example.completion_len
        completion = range(example.prompt_len, len(example.input_ids))
        for k, weight in zip(completion, weights, strict=True):
            self.targets.append((path[k - 1], example.input_ids[k], float(weight)))
        self.rows += 1

    def packed(self) -> Packed:
        return Packed(
            tuple(self.ids),
            tuple(self.parents),
            tuple(self.depths),
            tuple(self.targets),
            self.rows,
        )


def pack_pieces(examples: Sequence[Example], max_nodes: int) -> list[Packed]:
    """``examples`` in order, packed greedily into tries of at most ``max_nodes`` tokens (an
    example longer than that alone gets a trie of its own). Consecutive examples that share
    a prefix share its tokens."""
    pieces: list[Packed] = []
    trie = _Trie()
    for example in examples:
        _check_prompt(example)
        if trie.rows and len(trie.ids) + trie.new_nodes(example.input_ids) > max_nodes:
            pieces.append(trie.packed())
            trie = _Trie()
        trie.insert(example)
    if trie.rows:
        pieces.append(trie.packed())
    return pieces


def _check_prompt(example: Example) -> None:
    if example.prompt_len < 1:
        raise ValueError("a packed example needs at least one prompt token")


def tree_mask(parents: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """The additive ``[1, 1, T, T]`` attention mask of a trie: 0 where node ``i`` may see node
    ``j`` (``j`` is ``i`` or one of its ancestors), ``finfo(dtype).min`` elsewhere."""
    from ooo_agent.decoding.tree import tree_visibility

    allowed, _ = tree_visibility(parents)
    count = len(parents)
    mask = torch.zeros((count, count), dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def _shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def prefix_families(examples: Sequence[Example], share: float = 0.5) -> list[list[int]]:
    """Example indices grouped into families of rows that share a long prompt prefix.

    Sorted by their tokens, neighbours whose common prefix covers at least ``share`` of the
    shorter prompt belong to one family (a request's rows do; two requests sharing only the
    system prompt do not). Families come in token order, each in token order.
    """
    if not examples:
        return []
    order = sorted(range(len(examples)), key=lambda i: examples[i].input_ids)
    families = [[order[0]]]
    for previous, current in itertools.pairwise(order):
        a, b = examples[previous], examples[current]
        common = _shared_prefix(a.input_ids, b.input_ids)
        if common >= share * min(a.prompt_len, b.prompt_len):
            families[-1].append(current)
        else:
            families.append([current])
    return families


def plan_families(
    families: Sequence[Sequence[int]], batch_size: int, seed: int, epoch: int
) -> list[list[int]]:
    """One epoch's micro-batches with each family's rows kept next to each other: the
    families in a random order, each family's rows shuffled, cut every ``batch_size`` rows.
    Deterministic in its inputs."""
    rng = random.Random(seed * 1_000_003 + epoch)
    order = [list(family) for family in families]
    rng.shuffle(order)
    flat: list[int] = []
    for family in order:
        rng.shuffle(family)
        flat.extend(family)
    return [flat[i : i + batch_size] for i in range(0, len(flat), batch_size)]
