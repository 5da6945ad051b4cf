"""N-gram lookup drafting: continue the text the way it continued before.

The last ``n`` tokens (``n`` from ``max_n`` down to ``min_n``, longest first) are looked up
in token sequences the model is likely to copy from: the prompt and its own output so far,
extra context texts (the rendered sidecar hint), and earlier verified outputs of similar
requests (the retrieval memory). What followed each match is a draft.

Example::

    index = NgramIndex([1, 2, 3, 4, 5, 1, 2, 3])
    index.continuations([9, 1, 2, 3], max_len=2)  ->  [(3, (4, 5))]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ooo_agent.decoding.drafts.base import DraftContext, TokenDraft

__all__ = ["NgramDrafter", "NgramIndex"]


class NgramIndex:
    """Where every n-gram (``min_n <= n <= max_n``) of a growing token sequence ends."""

    def __init__(self, tokens: Iterable[int] = (), *, min_n: int = 3, max_n: int = 7) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError("need 1 <= min_n <= max_n")
        self.min_n = min_n
        self.max_n = max_n
        self.tokens: list[int] = []
        self._ends: dict[tuple[int, ...], list[int]] = {}
        self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        """Append tokens and index the n-grams that end at each of them."""
        for token in tokens:
            self.tokens.append(int(token))
            end = len(self.tokens)
            for n in range(self.min_n, min(self.max_n, end) + 1):
                self._ends.setdefault(tuple(self.tokens[end - n : end]), []).append(end)

    def continuations(
        self, suffix: Sequence[int], *, max_len: int, limit: int = 4
    ) -> list[tuple[int, tuple[int, ...]]]:
        """``(match_length, continuation)`` pairs for the longest matches of ``suffix``'s end.

        Longest match first, then most recent occurrence; continuations are distinct and
        non-empty (a match at the very end of the sequence has nothing after it).
        """
        found: list[tuple[int, tuple[int, ...]]] = []
        seen: set[tuple[int, ...]] = set()
        for n in range(min(self.max_n, len(suffix)), self.min_n - 1, -1):
            ends = self._ends.get(tuple(suffix[len(suffix) - n :]))
            if not ends:
                continue
            for end in reversed(ends):
                continuation = tuple(self.tokens[end : end + max_len])
                if not continuation or continuation in seen:
                    continue
                # A shorter continuation that prefixes a longer one adds nothing to a trie.
                if any(other[: len(continuation)] == continuation for other in seen):
                    continue
                seen.add(continuation)
                found.append((n, continuation))
                if len(found) >= limit:
                    return found
        return found


class NgramDrafter:
    """Drafts from n-gram matches over the request's context and extra sources.

    The context index (prompt + generated tokens) grows incrementally with the output.
    Extra sources are labelled (``hint``, ``memory``) and can be replaced mid-request,
    e.g. when a new sidecar hint lands.
    """

    def __init__(
        self,
        prompt_ids: Sequence[int],
        *,
        min_n: int = 3,
        max_n: int = 7,
        max_len: int = 32,
        limit: int = 4,
    ) -> None:
        self.min_n = min_n
        self.max_n = max_n
        self.max_len = max_len
        self.limit = limit
        self._context = NgramIndex(prompt_ids, min_n=min_n, max_n=max_n)
        self._prompt_length = len(prompt_ids)
        self._indexed_generated = 0
        self._sources: dict[str, list[NgramIndex]] = {}

    def set_source(self, label: str, sequences: Iterable[Sequence[int]]) -> None:
        """Replace the extra sequences drafted under ``label``."""
        self._sources[label] = [
            NgramIndex(seq, min_n=self.min_n, max_n=self.max_n) for seq in sequences if seq
        ]

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        generated = context.generated_ids
        if len(generated) > self._indexed_generated:
            self._context.extend(generated[self._indexed_generated :])
            self._indexed_generated = len(generated)
        suffix = self._context.tokens[-self.max_n :]
        drafts: list[TokenDraft] = []
        labelled = [("ngram", self._context)] + [
            (label, index) for label, indexes in self._sources.items() for index in indexes
        ]
        for label, index in labelled:
            for match_length, tokens in index.continuations(
                suffix, max_len=self.max_len, limit=self.limit
            ):
                # Longer matches predict better; 7 tokens of agreement is near-certain copying.
                confidence = min(1.0, 0.45 + 0.1 * (match_length - self.min_n))
                drafts.append(TokenDraft(tokens, label, confidence))
        return drafts

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None
