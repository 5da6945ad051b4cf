"""The words of a request that the rules read: the user's text (:func:`user_text`) and the
words of it that count (:func:`relevance_terms`)."""

from __future__ import annotations

import re

from ooo_agent.messages import user_text

__all__ = ["STOPWORDS", "relevance_terms", "user_text"]

STOPWORDS = frozenset(
    {
        # English function words and question words
        *("the", "and", "for", "with", "from", "that", "this", "are", "was", "what"),
        *("which", "who", "how", "can", "you", "will", "into", "about"),
        # verbs and nouns every tool list is full of
        *("find", "get", "given", "number", "value", "list", "name", "type", "default"),
        "function",
        # the boilerplate of benchmark tool descriptions
        *("python", "syntax", "note", "provided"),
    }
)
"""Words that never count (beside every word of two letters or fewer)."""

_CAMEL = re.compile(r"([a-z])([A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ing", "es", "s", "ed")


def _stem(word: str) -> str:
    """A light suffix strip (``-ing``, ``-es``, ``-s``, ``-ed``) that keeps four letters or more:
    ``orders`` and ``order`` meet, ``booking`` and ``book`` too."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def relevance_terms(text: str) -> set[str]:
    """The words of ``text`` that count: camelCase, dots and underscores split, lower-cased,
    :data:`STOPWORDS` and words of two letters or fewer dropped, suffixes stripped."""
    spaced = _CAMEL.sub(r"\1 \2", text).replace("_", " ").replace(".", " ")
    return {_stem(w) for w in _WORD.findall(spaced.lower()) if len(w) > 2 and w not in STOPWORDS}
