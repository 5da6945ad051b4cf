"""The draft token tree of one decode step: a trie rooted at the pending token.

Node 0 is the *pending* token: already chosen by the target, not yet in the KV cache.
Every other node is a drafted token whose parent is the token before it. Drafts from every
drafter are merged here, so a prefix shared by several drafts is verified once. Nodes are
numbered in insertion order, so the first draft inserted occupies ``1..L`` and, when it is
accepted, compacting the cache is a plain truncation.

Example::

    builder = TreeBuilder(root_token=5, budget=8)
    builder.add([7, 8, 9], source="schema")
    builder.add([7, 8, 4], source="ngram")     # shares 7, 8: costs one node
    tree = builder.build()
    tree.parents == (-1, 0, 1, 2, 2)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["TokenTree", "TreeBuilder", "TreeMaskCache", "tree_visibility"]


@dataclass(frozen=True)
class TokenTree:
    """An immutable draft tree (see the module docstring)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    """Parent node of each node; ``-1`` for the root."""
    depths: tuple[int, ...]
    sources: tuple[str, ...]
    """The drafter that first proposed each node (``""`` for the root)."""
    children: tuple[dict[int, int], ...]
    """Per node: child token -> child node index."""

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def internal_nodes(self) -> list[int]:
        """Nodes with at least one child: the only ones whose prediction can be checked."""
        return [i for i, kids in enumerate(self.children) if kids]

    def path_to(self, node: int) -> list[int]:
        """Node indices from the root to ``node``, both included."""
        path = [node]
        while self.parents[path[-1]] >= 0:
            path.append(self.parents[path[-1]])
        return path[::-1]


class TreeBuilder:
    """Merges token drafts into one trie under a node budget (the root is not counted)."""

    def __init__(self, root_token: int, budget: int) -> None:
        if budget < 0:
            raise ValueError("node budget must be >= 0")
        self.budget = budget
        self._tokens = [root_token]
        self._parents = [-1]
        self._depths = [0]
        self._sources = [""]
        self._children: list[dict[int, int]] = [{}]

    @property
    def drafted(self) -> int:
        """Draft nodes in the tree so far (root excluded)."""
        return len(self._tokens) - 1

    @property
    def full(self) -> bool:
        return self.drafted >= self.budget

    def child(self, node: int, token: int) -> int | None:
        return self._children[node].get(token)

    def extend(self, node: int, token: int, source: str) -> int | None:
        """The child of ``node`` for ``token``, created if needed; ``None`` when over budget."""
        existing = self._children[node].get(token)
        if existing is not None:
            return existing
        if self.full:
            return None
        index = len(self._tokens)
        self._tokens.append(token)
        self._parents.append(node)
        self._depths.append(self._depths[node] + 1)
        self._sources.append(source)
        self._children.append({})
        self._children[node][token] = index
        return index

    def add(self, tokens: Sequence[int], source: str, node: int = 0) -> int:
        """Insert a draft below ``node`` (the root by default); returns the nodes it created.

        A draft that does not fit is cut where the budget ends.
        """
        created = 0
        for token in tokens:
            before = len(self._tokens)
            child = self.extend(node, int(token), source)
            if child is None:
                break
            created += len(self._tokens) - before
            node = child
        return created

    def build(self) -> TokenTree:
        return TokenTree(
            tokens=tuple(self._tokens),
            parents=tuple(self._parents),
            depths=tuple(self._depths),
            sources=tuple(self._sources),
            children=tuple(dict(c) for c in self._children),
        )


def tree_visibility(parents: Sequence[int]) -> tuple[torch.Tensor, list[int]]:
    """``(visible [T, T] bool, depths)`` of a tree given each node's parent (``-1``: a root;
    parents precede children): node i sees node j when j is i or one of its ancestors."""
    size = len(parents)
    visible = torch.zeros((size, size), dtype=torch.bool)
    depths = [0] * size
    for node, parent in enumerate(parents):
        # Parents precede children, so the parent's row is already complete.
        if parent >= 0:
            visible[node] = visible[parent]
            depths[node] = depths[parent] + 1
        visible[node, node] = True
    return visible, depths


class TreeMaskCache:
    """Additive tree masks and depth offsets, computed once per tree shape (its parents).

    The tree part of the mask (``[T, T]``: 0 where node i may see node j — j is i or an
    ancestor — and the dtype's minimum elsewhere) depends only on the shape, which repeats a
    lot from step to step (a single chain of length L, the recycling template...).
    """

    def __init__(self, dtype: torch.dtype, device: torch.device, max_entries: int = 256) -> None:
        self.dtype = dtype
        self.device = device
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, ...], tuple[torch.Tensor, torch.Tensor]] = (
            OrderedDict()
        )

    def tree_part(self, parents: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tree_mask [T, T], node_depths [T])`` for this shape."""
        entry = self._entries.get(parents)
        if entry is not None:
            self._entries.move_to_end(parents)
            return entry
        visible, depths = tree_visibility(parents)
        tree_mask = torch.zeros(visible.shape, dtype=self.dtype)
        tree_mask.masked_fill_(~visible, torch.finfo(self.dtype).min)
        entry = (
            tree_mask.to(self.device),
            torch.tensor(depths, dtype=torch.long, device=self.device),
        )
        self._entries[parents] = entry
        if len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
        return entry

    def attention_inputs(
        self, parents: tuple[int, ...], past_length: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(attention_mask [1, 1, T, P+T], position_ids [1, T])`` for a tree after ``P`` tokens."""
        tree_mask, depths = self.tree_part(parents)
        size = len(parents)
        mask = torch.zeros((1, 1, size, past_length + size), dtype=self.dtype, device=self.device)
        mask[0, 0, :, past_length:] = tree_mask
        position_ids = (depths + past_length).unsqueeze(0)
        return mask, position_ids
