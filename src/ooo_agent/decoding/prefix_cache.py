"""A bounded cache of prompt prefixes' KV, shared by every call on one model.

:class:`PrefixCache` keeps several entries — token ids and the KV cache that holds exactly
those tokens — in least-recently-used order, within a byte budget. A call asks
:meth:`PrefixCache.take` for the longest cached prefix of its prompt and gets a cache of its
own holding that prefix, extends it, and hands the grown cache back with
:meth:`PrefixCache.insert`. Interleaved sessions and toolsets each keep their entry; a
conversation's next turn finds its previous turn (prompt and the call the model wrote) and
prefills only what follows.

Served KV is exactly what a cold prefill computes: a causal model's state at a position
depends only on the tokens before it, and only positions before the first differing token are
served. The class knows nothing of the model: it works for any engine whose caches are
:func:`~ooo_agent.decoding.kv.new_cache` caches (a sidecar can keep its own instance).
Thread-safe: one lock guards the entries; a taken cache belongs to its caller.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ooo_agent.decoding.kv import cache_length, new_cache, truncate_cache

__all__ = ["DEFAULT_PREFIX_CACHE_BYTES", "PrefixCache", "PrefixHit", "PrefixMatch", "cache_bytes"]

DEFAULT_PREFIX_CACHE_BYTES = 2 * 2**30
"""The default budget: 2 GiB, about 45k tokens of SmolLM2-135M in float32 (45 KiB each): a
few long agent conversations (a 5k-token BFCL multi-turn prompt with its growth room holds
about 300 MB) beside dozens of ~900-token toolset prompts."""


@dataclass(frozen=True)
class PrefixMatch:
    """How much of a token sequence the cache holds (:meth:`PrefixCache.lookup`)."""

    length: int
    """Leading tokens of the sequence whose KV is cached (0: none)."""
    diverged_at: int | None
    """Where the best entry's tokens first differ from the sequence's (``== length``); None
    when the entry ran out or the sequence ended first (nothing differed), or no entry."""
    entry_tokens: int
    """Tokens held by that entry (0: no entry)."""


@dataclass
class PrefixHit:
    """A cache handed to one caller (:meth:`PrefixCache.take`): it holds the KV of the first
    ``length`` tokens asked for and belongs to the caller until given back with
    :meth:`PrefixCache.insert`."""

    length: int
    cache: Any
    diverged_at: int | None
    """As :attr:`PrefixMatch.diverged_at`."""
    copied: bool
    """The KV was copied out of an entry that stays cached (the entry went on past the point
    served); False when the entry itself was handed over (it is wholly a prefix of the
    sequence, so the caller's longer entry replaces it) or nothing matched."""


@dataclass
class _Entry:
    ids: tuple[int, ...]
    cache: Any
    nbytes: int


def cache_bytes(cache: Any) -> int:
    """Memory the cache's key/value storage holds (allocated buffers, not just the filled part)."""
    total = 0
    for layer in list(getattr(cache, "layers", ())):
        for name in ("_key_buffer", "_value_buffer"):
            buffer = getattr(layer, name, None)
            if buffer is not None:
                total += buffer.numel() * buffer.element_size()
        if getattr(layer, "_key_buffer", None) is None:
            for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
                if tensor is not None and hasattr(tensor, "numel"):
                    total += tensor.numel() * tensor.element_size()
    return total


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _copy_prefix(cache: Any, length: int) -> Any:
    """A new cache holding a copy of ``cache``'s first ``length`` tokens."""
    copy = new_cache()
    if length <= 0:
        return copy
    for index, layer in enumerate(list(cache.layers)):
        keys, values = layer.keys, layer.values
        if keys is None or values is None:
            continue
        copy.update(keys[..., :length, :], values[..., :length, :], index)
    return copy


class PrefixCache:
    """Several prompt prefixes' KV, least recently used evicted first, within ``max_bytes``
    (and ``max_entries`` entries, when given).

    :meth:`lookup` peeks; :meth:`take` gives the caller a cache holding the longest cached
    prefix of its tokens (the entry itself when it is wholly such a prefix, else a copy of the
    shared part); :meth:`insert` stores a caller's cache and evicts down to the budget (an
    entry larger than the whole budget is not kept). ``max_bytes=0`` keeps nothing.
    """

    def __init__(
        self, max_bytes: int = DEFAULT_PREFIX_CACHE_BYTES, *, max_entries: int | None = None
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        if max_entries is not None and (
            isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0
        ):
            raise ValueError(f"max_entries must be an int >= 0 or None, got {max_entries!r}")
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next_key = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self.evictions = 0
        """Entries evicted to keep the budget, since creation."""

    # -- reading -------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes held by the entries (never above ``max_bytes``)."""
        with self._lock:
            return self._bytes

    @property
    def tokens(self) -> int:
        """Tokens held by the entries, all together."""
        with self._lock:
            return sum(len(entry.ids) for entry in self._entries.values())

    def entries(self) -> list[tuple[int, ...]]:
        """Every entry's token ids, least recently used first."""
        with self._lock:
            return [entry.ids for entry in self._entries.values()]

    def _best(self, ids: Sequence[int]) -> tuple[int | None, int]:
        """The key and shared length of the entry sharing the longest prefix with ``ids``
        (the most recently used on a tie); ``(None, 0)`` when none shares a token."""
        best_key: int | None = None
        best = 0
        for key, entry in self._entries.items():  # oldest first: a later tie wins
            shared = _common_prefix(entry.ids, ids)
            if shared >= best and shared > 0:
                best_key, best = key, shared
        return best_key, best

    @staticmethod
    def _diverged(entry: _Entry, ids: Sequence[int], shared: int) -> int | None:
        return shared if shared < len(entry.ids) and shared < len(ids) else None

    def lookup(self, ids: Sequence[int]) -> PrefixMatch:
        """How many leading tokens of ``ids`` are cached, and where the best entry diverged."""
        with self._lock:
            key, shared = self._best(ids)
            if key is None:
                return PrefixMatch(0, None, 0)
            entry = self._entries[key]
            return PrefixMatch(shared, self._diverged(entry, ids, shared), len(entry.ids))

    # -- handing out and taking back ------------------------------------------------------
    def take(self, ids: Sequence[int], *, limit: int | None = None) -> PrefixHit:
        """A cache of the caller's own holding the longest cached prefix of ``ids``, at most
        ``limit`` tokens (an empty cache when nothing is shared).

        An entry wholly a prefix of ``ids`` is removed and handed over (the caller's grown
        cache, inserted back, holds all it held); any other is copied up to the shared length
        and stays cached, so a prompt sharing only part of an entry never costs the entry.
        """
        with self._lock:
            key, shared = self._best(ids)
            if key is None:
                return PrefixHit(0, new_cache(), None, copied=False)
            entry = self._entries[key]
            diverged = self._diverged(entry, ids, shared)
            length = shared if limit is None else max(0, min(shared, limit))
            if shared == len(entry.ids):  # wholly a prefix of ids: hand it over
                del self._entries[key]
                self._bytes -= entry.nbytes
                cache = entry.cache
                if length < cache_length(cache):
                    truncate_cache(cache, length)
                return PrefixHit(length, cache, diverged, copied=False)
            self._entries.move_to_end(key)
            # Copied under the lock: another caller could otherwise take this entry and
            # overwrite its buffer past a shorter prefix while the copy reads it.
            return PrefixHit(length, _copy_prefix(entry.cache, length), diverged, copied=True)

    def insert(self, ids: Sequence[int], cache: Any) -> None:
        """Store ``cache`` as the KV of ``ids`` (it must hold exactly those tokens) and evict
        the least recently used entries down to the budget. Entries that are a prefix of
        ``ids`` are dropped (the new one serves all they served); ``ids`` already a prefix of
        an entry is not stored twice (that entry is marked used)."""
        ids = tuple(ids)
        if not ids:
            return
        held = cache_length(cache)
        if held != len(ids):
            raise ValueError(f"the cache holds {held} tokens, not the {len(ids)} given")
        nbytes = cache_bytes(cache)
        with self._lock:
            for key, entry in list(self._entries.items()):
                shared = _common_prefix(entry.ids, ids)
                if shared == len(entry.ids):
                    del self._entries[key]
                    self._bytes -= entry.nbytes
                elif shared == len(ids):
                    self._entries.move_to_end(key)
                    return
            if nbytes > self.max_bytes or self.max_entries == 0:
                self.evictions += 1
                return
            self._entries[self._next_key] = _Entry(ids, cache, nbytes)
            self._next_key += 1
            self._bytes += nbytes
            self._evict_to(self.max_bytes)

    # -- eviction ------------------------------------------------------------------------
    def _evict_to(self, budget: int) -> None:
        entries = len(self._entries) if self.max_entries is None else self.max_entries
        while (self._bytes > budget or len(self._entries) > entries) and self._entries:
            _, entry = self._entries.popitem(last=False)
            self._bytes -= entry.nbytes
            self.evictions += 1

    def evict(self, max_bytes: int | None = None) -> None:
        """Evict least recently used entries until at most ``max_bytes`` (default: the budget)
        are held."""
        with self._lock:
            self._evict_to(self.max_bytes if max_bytes is None else max(0, max_bytes))

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
