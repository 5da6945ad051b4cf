"""One target forward over a draft tree, and the acceptance walk that keeps output lossless.

The forward passes a 4-D additive mask (each node sees the prefix, its ancestors and itself)
and ``position_ids = P + depth``, so each node's prediction equals what sequential greedy
decoding of its root-to-node path would give. The walk then follows, from the root, the
child whose token equals the target's own argmax, and ends with the target's choice at the
last accepted node (the "bonus" token): the output is greedy decoding, token for token.

The LM head is applied only where a prediction is needed: the internal nodes (batched), and
the walk's end node when it is a leaf. On a 49k-vocabulary model the head is a large share of
a wide tree's cost. Small trees get the head on every node in one matmul instead: there the
head is bound by reading its weights, and a second read for a leaf costs more than the rows
it saves (measured on SmolLM2-135M, 1 thread: chains of 2-4 nodes were ~20 % slower per step
with the extra leaf pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ooo_agent.decoding.tree import TokenTree, TreeMaskCache

__all__ = ["StepVerdict", "TreeVerifier", "accept_path", "split_head"]

# Config fields of architectures whose logits are not simply ``lm_head(hidden)``.
_LOGIT_TRANSFORMS = (
    "final_logit_softcapping",
    "logit_scale",
    "logits_scaling",
    "output_multiplier",
)


def split_head(model: Any) -> bool:
    """True when ``model`` is a plain ``decoder -> lm_head`` stack that can be run in two parts.

    Then the head can run on just the rows whose logits are needed, as a 2-D matmul.
    """
    config = getattr(model, "config", None)
    if config is None or any(getattr(config, name, None) for name in _LOGIT_TRANSFORMS):
        return False
    try:
        decoder = model.get_decoder()
        head = model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return False
    return isinstance(head, torch.nn.Linear) and decoder is not None and decoder is not model


def accept_path(tree: TokenTree, choice_of: Callable[[int], int]) -> tuple[list[int], int]:
    """Walk the tree along the target's choices.

    ``choice_of(node)`` is the target's greedy token after the path ending at ``node``.
    Returns ``(path, bonus)``: the accepted nodes from the root (root included) and the
    target's token after the last of them.
    """
    node = 0
    path = [0]
    while True:
        token = choice_of(node)
        child = tree.children[node].get(token)
        if child is None:
            return path, token
        path.append(child)
        node = child


@dataclass
class StepVerdict:
    """What one verification forward decided."""

    path: list[int]
    """Accepted node indices, root first."""
    bonus: int
    """The target's token after the accepted path: the next pending token."""
    path_top: list[list[int]] = field(default_factory=list)
    """Per accepted node, the target's top-k tokens (only when asked, for token recycling)."""


_split_head = split_head  # the name the constructor's argument shadows


class TreeVerifier:
    """Runs prefill and tree forwards of one causal LM on a cache it is handed.

    ``split_head=None`` picks automatically: the decoder and LM head are called separately
    when the model is a plain ``decoder -> lm_head`` stack, else the full forward is used.
    Trees of at most ``full_head_below`` nodes get logits on every node in one matmul.
    """

    def __init__(
        self, model: Any, *, split_head: bool | None = None, full_head_below: int = 16
    ) -> None:
        self.model = model
        self.full_head_below = full_head_below
        parameter = next(model.parameters())
        self.device: torch.device = parameter.device
        self.dtype: torch.dtype = parameter.dtype
        # Eager attention adds the mask to the scores: it must be additive float, and in the
        # query dtype (or float32). sdpa accepts the same.
        mask_dtype = self.dtype if self.dtype.is_floating_point else torch.float32
        self.masks = TreeMaskCache(mask_dtype, self.device)
        self._decoder: Any = None
        self._head: Any = None
        if split_head is None:
            split_head = _split_head(model)
        if split_head:
            self._decoder = model.get_decoder()
            self._head = model.get_output_embeddings()

    @property
    def splits_head(self) -> bool:
        return self._head is not None

    # -- forwards ------------------------------------------------------------------
    def _run(
        self,
        input_ids: torch.Tensor,
        cache: Any,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Hidden states ``[T, H]`` (split head) or logits ``[T, V]`` (full forward)."""
        module = self._decoder if self._head is not None else self.model
        output = module(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            use_cache=True,
        )
        rows: torch.Tensor = output.last_hidden_state if self._head is not None else output.logits
        return rows[0]

    def logits(self, rows: torch.Tensor) -> torch.Tensor:
        """Logits for rows returned by a forward (identity when the head already ran)."""
        if self._head is None:
            return rows
        logits: torch.Tensor = self._head(rows)
        return logits

    @torch.no_grad()
    def prefill(
        self, cache: Any, token_ids: Sequence[int], past_length: int
    ) -> tuple[int, torch.Tensor | None, torch.Tensor]:
        """Run ``token_ids`` after ``past_length`` cached tokens (causal).

        Returns ``(next_token, last_hidden, last_logits)``; ``last_hidden`` is the final
        hidden state of the last token (``None`` without a split head).
        """
        if not token_ids:
            raise ValueError("prefill needs at least one token")
        input_ids = torch.tensor([list(token_ids)], dtype=torch.long, device=self.device)
        positions = torch.arange(
            past_length, past_length + len(token_ids), device=self.device
        ).unsqueeze(0)
        rows = self._run(input_ids, cache, positions, None)
        last = rows[-1:]
        logits = self.logits(last)[0]
        hidden = last[0].detach().clone() if self._head is not None else None
        return int(torch.argmax(logits).item()), hidden, logits

    @torch.no_grad()
    def verify(
        self,
        tree: TokenTree,
        cache: Any,
        past_length: int,
        *,
        top_k: int = 0,
        constrain: Callable[[int, torch.Tensor, int], int] | None = None,
    ) -> StepVerdict:
        """One forward over ``tree`` after ``past_length`` cached tokens, then the walk.

        ``constrain(node, logits, argmax)`` (optional) gives the token the target writes after
        ``node`` in place of the plain argmax (constrained decoding); it is asked only for the
        nodes the walk reaches. The cache then holds ``past_length + len(tree)`` entries;
        compacting it to the accepted path is the caller's next stage
        (:func:`~ooo_agent.decoding.kv.compact_cache`).
        """
        mask, positions = self.masks.attention_inputs(tree.parents, past_length)
        input_ids = torch.tensor([tree.tokens], dtype=torch.long, device=self.device)
        rows = self._run(input_ids, cache, positions, mask)

        internal = (
            list(range(len(tree))) if len(tree) <= self.full_head_below else tree.internal_nodes
        )
        row_of: dict[int, int] = {node: i for i, node in enumerate(internal)}
        choices: list[int] = []
        internal_logits: torch.Tensor | None = None
        if internal:
            index = torch.tensor(internal, dtype=torch.long, device=self.device)
            internal_logits = self.logits(rows.index_select(0, index))
            choices = internal_logits.argmax(dim=-1).tolist()  # the step's one sync
        leaf_logits: dict[int, torch.Tensor] = {}

        def choice_of(node: int) -> int:
            if node in row_of:
                greedy = int(choices[row_of[node]])
                if constrain is None:
                    return greedy
                assert internal_logits is not None
                return constrain(node, internal_logits[row_of[node]], greedy)
            logits = self.logits(rows[node : node + 1])[0]
            leaf_logits[node] = logits
            greedy = int(torch.argmax(logits).item())
            return greedy if constrain is None else constrain(node, logits, greedy)

        path, bonus = accept_path(tree, choice_of)
        verdict = StepVerdict(path=path, bonus=bonus)
        if top_k > 0:
            for node in path:
                if node in row_of:
                    assert internal_logits is not None
                    logits = internal_logits[row_of[node]]
                else:
                    logits = leaf_logits[node]
                verdict.path_top.append(torch.topk(logits, top_k).indices.tolist())
        return verdict
