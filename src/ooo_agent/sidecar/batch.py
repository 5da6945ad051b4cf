"""Batched greedy generation that computes the batch's shared token prefix once.

The shared prefix runs once at batch size 1 and its KV cache is repeated across the batch; each
row's suffix is left-padded into the gap between prefix and suffix, with a 4-D attention mask
over the pad columns and per-row position ids, so each row's greedy answer equals running it
alone. Finished rows leave the batch and are reported through ``on_row``. ``first`` / ``then``
run some rows before choosing the rest; :class:`KeptPrefix` keeps a single row's KV for a
prompt that extends it; a :class:`~ooo_agent.decoding.prefix_cache.PrefixCache` serves the
longest cached prefix. How the wave uses it: docs/sidecar.md.

Example::

    gen = SharedPrefixGenerator(model, tokenizer, num_threads=1)
    results = gen.generate([ids_a, ids_b], max_new_tokens=32)
    print([r.text for r in results])
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ooo_agent.decoding.verify import split_head
from ooo_agent.sidecar.base import WaveUsage

if TYPE_CHECKING:
    from ooo_agent.decoding.constraint import TokenConstraint
    from ooo_agent.decoding.prefix_cache import PrefixCache

__all__ = [
    "GenerationCancelled",
    "KeptPrefix",
    "RowResult",
    "SharedPrefixGenerator",
    "common_prefix_length",
]

FinishReason = Literal["stop", "length", "skipped"]


class GenerationCancelled(Exception):
    """Raised inside the generating thread when its cancel event was set between two steps."""


@dataclass(frozen=True)
class RowResult:
    """One row's answer: generated token ids (end-of-turn excluded), text, why it stopped.

    ``skipped``: the row was never run (``then`` left it out); its text is empty.
    """

    index: int
    token_ids: list[int]
    text: str
    finish_reason: FinishReason


@dataclass
class KeptPrefix:
    """One row's KV cache kept from one single-row generation for the next
    (``SharedPrefixGenerator.generate(..., kept=...)``): ``ids`` are the tokens the cache holds
    (the prompt and the answer tokens fed back). The next prompt reuses the tokens it shares
    with ``ids`` from the start and computes the rest; its answer is the same as without it.
    Empty until its first generation; one per sequence of related prompts, one thread."""

    ids: list[int] = field(default_factory=list)
    cache: Any = None


def common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix shared by every sequence (0 for an empty batch)."""
    if not sequences:
        return 0
    first, length = sequences[0], min(len(s) for s in sequences)
    for other in sequences[1:]:
        i = 0
        while i < length and other[i] == first[i]:
            i += 1
        length = i
    return length


def _cache_kwarg(model: Any) -> str:
    """``cache`` on transformers versions that renamed ``past_key_values``, else the old name."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        parameters = inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


@contextlib.contextmanager
def _torch_threads(count: int | None) -> Iterator[None]:
    """Run with ``count`` intra-op threads in this thread, restoring the previous count after.

    On a small machine the target and the sidecar must not both ask for every core.
    """
    import torch

    if count is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


class SharedPrefixGenerator:
    """Greedy generation for a batch of token-id prompts with one shared-prefix prefill.

    Args:
        model: any ``transformers`` causal LM (a PEFT-wrapped one included), in eval mode.
        tokenizer: its tokenizer (used for stop tokens and decoding answers).
        num_threads: torch intra-op threads while generating; ``None`` leaves them alone.
        stop_token_ids: tokens ending a row besides the tokenizer's and the generation
            config's end-of-sequence ids and ``<|im_end|>`` / ``<|eot_id|>`` if present.
        prefix_cache: where batches' shared prefixes are kept for later batches (None: every
            batch runs its whole prefix).

    One generator runs one batch at a time (a lock serialises concurrent callers).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        num_threads: int | None = 1,
        stop_token_ids: Iterable[int] = (),
        prefix_cache: PrefixCache | None = None,
    ) -> None:
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be at least 1 (or None), not {num_threads}")
        self.model = model
        self.tokenizer = tokenizer
        self.num_threads = num_threads
        self.stop_token_ids = frozenset(self._default_stop_ids(model, tokenizer)) | set(
            stop_token_ids
        )
        self.cache_kwarg = _cache_kwarg(model)
        self.prefix_cache = prefix_cache
        # The decoder and the LM head apart, when the model is a plain stack: the head then
        # runs on a 2-D [rows, hidden] matrix. Through the full forward, bf16 batches with one
        # kept position go through a batched matmul that first copies the head's weight once
        # per row (about half of a bf16 suffix prefill in a one-off profile on a CPU).
        self.decoder: Any = None
        self.head: Any = None
        if split_head(model):
            self.decoder, self.head = model.get_decoder(), model.get_output_embeddings()
        self._lock = threading.Lock()

    @staticmethod
    def _default_stop_ids(model: Any, tokenizer: Any) -> set[int]:
        ids: set[int] = set()
        candidates: list[Any] = [getattr(tokenizer, "eos_token_id", None)]
        config = getattr(model, "generation_config", None)
        candidates.append(getattr(config, "eos_token_id", None))
        for value in candidates:
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(v for v in value if isinstance(v, int))
        vocab = tokenizer.get_vocab() if hasattr(tokenizer, "get_vocab") else {}
        for token in ("<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>"):
            if token in vocab:
                ids.add(int(vocab[token]))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """The text of generated token ids, as a row's answer is read (special tokens dropped)."""
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text`` (a chat template's output already holds its special tokens)."""
        return list(self.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"])

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int = 32,
        stop_strings: Sequence[str] = (),
        on_row: Callable[[RowResult], None] | None = None,
        cancel: threading.Event | None = None,
        first: Sequence[int] = (),
        then: Callable[[list[RowResult]], Iterable[int]] | None = None,
        first_token_bans: Mapping[int, Collection[int]] | None = None,
        constraints: Mapping[int, TokenConstraint] | None = None,
        kept: KeptPrefix | None = None,
        usage: WaveUsage | None = None,
    ) -> list[RowResult]:
        """Greedy answers for ``prompts`` (token ids), in prompt order.

        ``on_row`` is called from this thread as each row finishes; ``cancel`` is checked
        before every forward pass (:class:`GenerationCancelled` when set). Rows listed in
        ``first`` run to completion before the others; ``then`` (given their results) returns
        which other rows to run next, and is asked again after each such phase until it names
        no row that has not run — rows never named come back ``skipped``. Every row's answer
        is what it would be alone: phases only change when rows run.

        ``first_token_bans`` maps a row to token ids its answer may not start with (the
        greedy first token is then the likeliest of the others; later tokens are free).
        ``constraints`` maps a row to a :class:`~ooo_agent.decoding.constraint.TokenConstraint`
        that picks each of its tokens from the logits (after the bans), given the row's
        tokens so far — the row's answer is then its constrained greedy answer.

        ``kept`` (one prompt, no ``first``): the prompt's tokens shared with ``kept.ids`` from
        the start are not computed again, and ``kept`` then holds this row's cache.
        ``usage`` (optional) is added the prompt tokens served from the prefix cache and run.
        """
        if kept is not None and (len(prompts) != 1 or first):
            raise ValueError("'kept' needs exactly one prompt and no 'first' rows")
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, not {max_new_tokens}")
        if any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        if not prompts:
            return []
        first = list(dict.fromkeys(first))
        if any(not 0 <= i < len(prompts) for i in first):
            raise ValueError(f"'first' names rows outside 0..{len(prompts) - 1}: {first}")
        import torch

        with self._lock, _torch_threads(self.num_threads), torch.inference_mode():
            run = _Run(self, prompts, max_new_tokens, stop_strings, on_row, cancel)
            bans = {i: list(b) for i, b in (first_token_bans or {}).items() if b}
            if any(not 0 <= i < len(prompts) for i in bans):
                raise ValueError(f"'first_token_bans' names rows outside 0..{len(prompts) - 1}")
            run.first_bans = bans
            steer = dict(constraints or {})
            if any(not 0 <= i < len(prompts) for i in steer):
                raise ValueError(f"'constraints' names rows outside 0..{len(prompts) - 1}")
            run.constraints = steer
            run.kept = kept
            run.usage = usage
            return run.run(first, then)

    def score(
        self,
        sequences: Sequence[Sequence[int]],
        counts: Sequence[int],
        *,
        cancel: threading.Event | None = None,
        usage: WaveUsage | None = None,
    ) -> list[float]:
        """Log-probability of the last ``counts[i]`` tokens of ``sequences[i]`` given the
        tokens before them (summed over those tokens), for every row in one forward.

        The rows' shared prefix runs once, as in :meth:`generate`; each row's own suffix runs
        after it (left-padded into holes), with the same positions as when it runs alone.
        """
        if len(counts) != len(sequences):
            raise ValueError("one count per sequence")
        if any(not 0 < c < len(s) for s, c in zip(sequences, counts, strict=True)):
            raise ValueError("each count must leave at least one token before the scored ones")
        if not sequences:
            return []
        import torch

        with self._lock, _torch_threads(self.num_threads), torch.inference_mode():
            run = _Run(self, sequences, 0, (), None, cancel)
            run.usage = usage
            return run.score(counts)

    def prefill(
        self,
        ids: Sequence[int],
        *,
        cancel: threading.Event | None = None,
        usage: WaveUsage | None = None,
    ) -> int:
        """Compute and keep the KV of ``ids`` (the known start of a later prompt) in the
        prefix cache, from the longest prefix it already holds; returns how many tokens ran
        (0 without a prefix cache, or when all were cached). ``cancel`` is checked before
        the forward (:class:`GenerationCancelled`); ``usage`` is added the tokens served and run.
        """
        if self.prefix_cache is None or not ids:
            return 0
        import torch

        counted = usage if usage is not None else WaveUsage()
        before = counted.prefill_tokens
        with self._lock, _torch_threads(self.num_threads), torch.inference_mode():
            run = _Run(self, [ids], 0, (), None, cancel)
            run.usage = counted
            run._keep(len(ids), run._prefix(len(ids)))
        return counted.prefill_tokens - before


def _repeated(cache: Any, rows: int, config: Any) -> Any:
    """A new ``DynamicCache`` holding a batch-1 cache's KV once per row (one copy; the
    original, of any layer kind, is left as it is)."""
    from transformers import DynamicCache

    clone = DynamicCache(config=config)
    for index, layer in enumerate(list(cache.layers)):
        keys, values = layer.keys, layer.values
        if keys is None or values is None or keys.shape[-2] == 0:
            continue
        clone.update(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1), index)
    return clone


class _Run:
    """The state of one batched generation; one method per phase."""

    def __init__(
        self,
        owner: SharedPrefixGenerator,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: int,
        stop_strings: Sequence[str],
        on_row: Callable[[RowResult], None] | None,
        cancel: threading.Event | None,
    ) -> None:
        import torch

        self.model = owner.model
        self.decoder = owner.decoder
        self.head = owner.head
        self.cache_kwarg = owner.cache_kwarg
        self.tokenizer = owner.tokenizer
        self.stop_ids = owner.stop_token_ids
        self.prompts = [list(p) for p in prompts]
        self.max_new_tokens = max_new_tokens
        self.stop_strings = tuple(s for s in stop_strings if s)
        self.on_row = on_row
        self.cancel = cancel
        first = next(iter(self.model.parameters()))
        self.device: Any = first.device
        # The additive mask must be float32 or the query's dtype (see hf-tree-attention notes).
        self.mask_dtype: Any = first.dtype if first.dtype.is_floating_point else torch.float32
        self.results: dict[int, RowResult] = {}
        self.generated: list[list[int]] = [[] for _ in self.prompts]
        self.active: list[int] = []
        self.keep: Any = None
        self.next_pos: Any = None
        self.first_bans: dict[int, list[int]] = {}
        self.constraints: dict[int, TokenConstraint] = {}
        self.kept: KeptPrefix | None = None
        self.usage: WaveUsage | None = None
        self.prefix_cache = owner.prefix_cache

    def run(
        self,
        first: Sequence[int] = (),
        then: Callable[[list[RowResult]], Iterable[int]] | None = None,
    ) -> list[RowResult]:
        every = list(range(len(self.prompts)))
        if self.max_new_tokens == 0:
            for i in every:
                self._finish(i, "length")
            return self._ordered()
        # Leave every row at least one suffix token, so each row has its own last position.
        prefix_len = min(common_prefix_length(self.prompts), min(len(p) for p in self.prompts) - 1)
        if self.kept is not None:
            cache = self._kept_prefix(self.kept, prefix_len)
            self._decode(cache, prefix_len, every)
            fed = cache.get_seq_length()  # the prompt, then each answer token fed back
            self.kept.ids, self.kept.cache = (self.prompts[0] + self.generated[0])[:fed], cache
            return self._ordered()
        if self.prefix_cache is None and (not first or len(first) == len(every)):
            self._decode(self._prefill_prefix(prefix_len, len(every)), prefix_len, every)
            return self._ordered()
        prefix = self._prefix(prefix_len)
        try:
            if not first or len(first) == len(every):
                self._decode(self._copies(prefix, prefix_len, len(every)), prefix_len, every)
                return self._ordered()
            self._decode(self._copies(prefix, prefix_len, len(first)), prefix_len, list(first))
            heads = [self.results[i] for i in first]
            while True:
                rest = [i for i in every if i not in self.results]
                chosen = set(then(heads)) if then is not None else set(rest)
                later = [i for i in rest if i in chosen]
                if not later:
                    break
                self._decode(self._copies(prefix, prefix_len, len(later)), prefix_len, later)
                if then is None:
                    break
        finally:
            self._keep(prefix_len, prefix)
        for i in every:
            if i not in self.results:
                self.results[i] = RowResult(i, [], "", "skipped")
        return self._ordered()

    def score(self, counts: Sequence[int]) -> list[float]:
        """Summed log-probabilities of each row's last ``counts[i]`` tokens (one forward).

        The rows' suffixes run as one trie after one copy of the shared prefix (batch one),
        each token seeing the prefix and its own earlier tokens at the position it has alone:
        the prefix is read once, not once per row, and a start the rows share runs once.
        """
        import torch

        # The position before a row's first scored token must run in its suffix.
        prefix_len = min(
            common_prefix_length(self.prompts),
            min(len(p) - c for p, c in zip(self.prompts, counts, strict=True)) - 1,
        )
        if self.prefix_cache is None:
            cache = self._prefill_prefix(prefix_len, 1)
        else:
            prefix = self._prefix(prefix_len)
            cache = _repeated(prefix, 1, self.model.config)  # the kept prefix stays as it is
            self._keep(prefix_len, prefix)
        suffixes = [p[prefix_len:] for p in self.prompts]
        ids, allowed, positions, paths = self._trie(prefix_len, suffixes)
        self._count(rows_run=ids.shape[1])
        hidden = self._forward(ids, None, positions, cache, every_position=True, allowed=allowed)
        scores: list[float] = []
        for row, count in enumerate(counts):
            suffix, path = suffixes[row], paths[row]
            targets = torch.tensor(suffix[-count:], device=self.device)
            # The node of suffix[:k] predicts suffix[k]: the scored tokens' predictors.
            predictors = path[len(suffix) - count - 1 : len(suffix) - 1]
            logits = hidden[0, predictors]
            if self.head is not None:
                logits = self.head(logits)
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            scores.append(float(logprobs.gather(1, targets[:, None]).sum()))
        return scores

    def _trie(
        self, prefix_len: int, suffixes: Sequence[Sequence[int]]
    ) -> tuple[Any, Any, Any, list[list[int]]]:
        """``suffixes`` as one trie after the prefix: input ids ``[1, N]`` (a token shared by
        several suffixes' starts runs once), allowed keys ``[1, N, prefix_len + N]`` (the
        prefix, the node's ancestors and itself), positions (``prefix_len`` + depth), and
        each suffix's node indices."""
        import torch

        from ooo_agent.decoding.tree import tree_visibility

        nodes: list[int] = []
        parents: list[int] = []
        children: dict[tuple[int, int], int] = {}
        paths: list[list[int]] = []
        for suffix in suffixes:
            parent, path = -1, []
            for token in suffix:
                node = children.get((parent, token))
                if node is None:
                    node = children[(parent, token)] = len(nodes)
                    nodes.append(token)
                    parents.append(parent)
                path.append(node)
                parent = node
            paths.append(path)
        visible, depths = tree_visibility(parents)
        total = len(nodes)
        allowed = torch.ones(1, total, prefix_len + total, dtype=torch.bool, device=self.device)
        allowed[0, :, prefix_len:] = visible.to(self.device)
        ids = torch.tensor([nodes], device=self.device)
        positions = torch.tensor([[prefix_len + d for d in depths]], device=self.device)
        return ids, allowed, positions, paths

    def _decode(self, cache: Any, prefix_len: int, rows: list[int]) -> None:
        """Run ``rows`` (global indices) to completion on ``cache`` (the prefix, one per row)."""
        tokens = self._prefill_suffixes(cache, prefix_len, rows)
        while True:
            tokens = self._commit(tokens, cache)
            if not self.active:
                return
            tokens = self._step(tokens, cache)

    # -- phases ------------------------------------------------------------------------
    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise GenerationCancelled

    def _forward(
        self,
        input_ids: Any,
        keep: Any,
        position_ids: Any,
        cache: Any,
        *,
        every_position: bool = False,
        bans: Sequence[Sequence[int]] | None = None,
        rows: Sequence[int] = (),
        allowed: Any = None,
    ) -> Any:
        """One forward; ``keep`` ``[B, K]`` marks the key columns each row may see (causally),
        unless ``allowed`` ``[B, T, K]`` gives each query's visible keys itself.

        Returns each row's greedy next token (never one of ``bans[b]`` for row ``b``; where
        the row's global index ``rows[b]`` has a constraint, the constraint's pick); with
        ``every_position``, the ``[B, T, ...]`` outputs of every position instead (hidden
        states before the head when the head runs apart, else logits).
        """
        import torch

        self._check_cancel()
        if allowed is None:
            query_len = input_ids.shape[1]
            key_len = keep.shape[1]
            past = key_len - query_len
            causal = torch.ones(query_len, key_len, dtype=torch.bool, device=self.device)
            allowed = keep[:, None, :] & causal.tril(past)[None]
            # Each query always sees itself: a pad query that saw nothing would give NaN rows.
            diagonal = torch.arange(query_len, device=self.device)
            allowed[:, diagonal, past + diagonal] = True
        mask = torch.zeros(allowed.shape, dtype=self.mask_dtype, device=self.device)
        mask.masked_fill_(~allowed, torch.finfo(self.mask_dtype).min)
        inputs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": mask[:, None],
            "position_ids": position_ids,
            "use_cache": True,
            self.cache_kwarg: cache,
        }
        if every_position:
            if self.head is not None:
                return self.decoder(**inputs).last_hidden_state
            return self.model(**inputs).logits
        if self.head is not None:
            hidden = self.decoder(**inputs).last_hidden_state[:, -1, :]
            logits = self.head(hidden)
        else:
            logits = self.model(**inputs, logits_to_keep=1).logits[:, -1, :]
        if bans is not None and any(bans):
            logits = logits.clone()
            for row, banned in enumerate(bans):
                if banned:
                    logits[row, list(banned)] = float("-inf")
        tokens = logits.argmax(dim=-1)
        if not self.constraints:
            return tokens
        steered = [
            (b, self.constraints[row]) for b, row in enumerate(rows) if row in self.constraints
        ]
        if steered:
            greedy = tokens.tolist()  # one copy off the device, not one per row
            for b, constraint in steered:
                chosen = constraint.choose(self.generated[rows[b]], logits[b], greedy[b])
                if chosen != greedy[b]:
                    tokens[b] = chosen
        return tokens

    def _prefill_prefix(self, prefix_len: int, rows: int) -> Any:
        """The shared prefix's KV cache, repeated for ``rows`` rows."""
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        if prefix_len > 0:
            self._extend(cache, 0, prefix_len)
            if rows > 1:
                cache.batch_repeat_interleave(rows)
        return cache

    def _prefix(self, prefix_len: int) -> Any:
        """The shared prefix's KV cache at batch one: the longest part of it the prefix cache
        holds (the cache's own entry or a copy, now this run's), extended by the rest."""
        if self.prefix_cache is None or prefix_len == 0:
            return self._prefill_prefix(prefix_len, 1)
        ids = self.prompts[0][:prefix_len]
        hit = self.prefix_cache.take(ids)
        self._count(cached=hit.length)
        if hit.length < prefix_len:
            try:
                self._extend(hit.cache, hit.length, prefix_len)
            except GenerationCancelled:  # raised before the forward: the hit is as taken
                if hit.length:
                    self.prefix_cache.insert(ids[: hit.length], hit.cache)
                raise
        return hit.cache

    def _copies(self, prefix: Any, prefix_len: int, rows: int) -> Any:
        """A cache for ``rows`` rows, each holding ``prefix`` (which stays as it is)."""
        if prefix_len == 0:
            return self._prefill_prefix(0, 0)
        return _repeated(prefix, rows, self.model.config)

    def _keep(self, prefix_len: int, prefix: Any) -> None:
        """Give a whole prefix to the prefix cache (one cut short by a fault is dropped)."""
        whole = prefix_len > 0 and prefix.get_seq_length() == prefix_len
        if self.prefix_cache is not None and whole:
            self.prefix_cache.insert(self.prompts[0][:prefix_len], prefix)

    def _count(self, *, cached: int = 0, run: int = 0, rows_run: int = 0, s: float = 0.0) -> None:
        if self.usage is not None:
            self.usage.cached_tokens += cached
            self.usage.prefill_tokens += run
            self.usage.row_tokens += rows_run
            self.usage.prefill_s += s

    def _extend(self, cache: Any, start: int, end: int) -> None:
        """Run the first prompt's tokens ``start:end`` into ``cache`` (batch one, which holds
        its tokens before ``start``)."""
        import torch

        started = time.perf_counter()
        ids = torch.tensor([self.prompts[0][start:end]], device=self.device)
        keep = torch.ones(1, end, dtype=torch.bool, device=self.device)
        positions = torch.arange(start, end, device=self.device)[None]
        self._forward(ids, keep, positions, cache)
        self._count(run=end - start, s=time.perf_counter() - started)

    def _kept_prefix(self, kept: KeptPrefix, prefix_len: int) -> Any:
        """The one row's prefix cache: ``kept``'s, cut back to the tokens this prompt shares
        with it and extended by the rest of the prefix (a new one when it shares none)."""
        prefix = self.prompts[0][:prefix_len]
        common = common_prefix_length([kept.ids, prefix]) if kept.cache is not None else 0
        if common == 0:
            return self._prefix(prefix_len)
        cache = kept.cache
        surplus = cache.get_seq_length() - common
        if surplus > 0:
            cache.crop(-surplus)  # transformers 5: a negative count of tokens to drop
        kept.ids = kept.ids[:common]  # what the cache holds, should this run stop half-way
        if prefix_len > common:
            self._extend(cache, common, prefix_len)
        return cache

    def _prefill_suffixes(self, cache: Any, prefix_len: int, rows: list[int]) -> Any:
        """Run the rows' suffixes, left-padded after the shared prefix; first tokens out."""
        import torch

        ids, keep, positions = self._suffix_batch(prefix_len, rows)
        self._count(rows_run=sum(len(self.prompts[i]) - prefix_len for i in rows))
        self.active = list(rows)
        self.keep = keep
        self.next_pos = torch.tensor([len(self.prompts[i]) for i in rows], device=self.device)
        bans = [self.first_bans.get(i, []) for i in rows]
        return self._forward(ids, keep, positions, cache, bans=bans, rows=rows)

    def _suffix_batch(self, prefix_len: int, rows: list[int]) -> tuple[Any, Any, Any]:
        """Input ids, key mask and positions of the rows' suffixes, left-padded into holes
        between the shared prefix and each suffix."""
        import torch

        suffixes = [self.prompts[i][prefix_len:] for i in rows]
        width = max(len(s) for s in suffixes)
        batch = len(suffixes)
        ids = torch.zeros(batch, width, dtype=torch.long, device=self.device)
        keep = torch.ones(batch, prefix_len + width, dtype=torch.bool, device=self.device)
        positions = torch.full((batch, width), prefix_len, dtype=torch.long, device=self.device)
        for row, suffix in enumerate(suffixes):
            pad = width - len(suffix)
            ids[row, pad:] = torch.tensor(suffix, device=self.device)
            keep[row, prefix_len : prefix_len + pad] = False  # the holes
            positions[row, pad:] = torch.arange(prefix_len, prefix_len + len(suffix))
        return ids, keep, positions

    def _step(self, tokens: Any, cache: Any) -> Any:
        """One token for every active row."""
        import torch

        column = torch.ones(self.keep.shape[0], 1, dtype=torch.bool, device=self.device)
        self.keep = torch.cat([self.keep, column], 1)
        next_tokens = self._forward(
            tokens[:, None], self.keep, self.next_pos[:, None], cache, rows=self.active
        )
        self.next_pos = self.next_pos + 1
        return next_tokens

    def _commit(self, tokens: Any, cache: Any) -> Any:
        """Append each active row's new token; finished rows report and leave the batch."""
        import torch

        still: list[int] = []
        for local, row in enumerate(self.active):
            token = int(tokens[local])
            if token in self.stop_ids:
                self._finish(row, "stop")
                continue
            self.generated[row].append(token)
            if self.stop_strings and self._hit_stop_string(row):
                continue
            if len(self.generated[row]) >= self.max_new_tokens:
                self._finish(row, "length")
                continue
            still.append(local)
        if len(still) == len(self.active):
            return tokens
        self.active = [self.active[i] for i in still]
        if not still:
            return tokens[:0]
        index = torch.tensor(still, dtype=torch.long, device=self.device)
        cache.batch_select_indices(index)
        self.keep = self.keep[index]
        self.next_pos = self.next_pos[index]
        return tokens[index]

    def _hit_stop_string(self, row: int) -> bool:
        text = self._text(self.generated[row])
        cut = min((i for i in (text.find(s) for s in self.stop_strings) if i >= 0), default=-1)
        if cut < 0:
            return False
        self._finish(row, "stop", text[:cut])
        return True

    # -- results -----------------------------------------------------------------------
    def _text(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    def _finish(self, row: int, reason: FinishReason, text: str | None = None) -> None:
        ids = self.generated[row]
        result = RowResult(row, list(ids), self._text(ids) if text is None else text, reason)
        self.results[row] = result
        if self.on_row is not None:
            self.on_row(result)

    def _ordered(self) -> list[RowResult]:
        return [self.results[i] for i in range(len(self.prompts))]
