"""Call formats: how a model is prompted with tools and how it writes calls.

``get_format("hermes")`` returns a :class:`ChatFormat`; :data:`FORMATS` lists the names.
"""

from __future__ import annotations

from ooo_agent.errors import FormatError
from ooo_agent.formats.base import CallSkeleton, ChatFormat, ParseResult, TextDraft
from ooo_agent.formats.hermes import HermesFormat

__all__ = [
    "FORMATS",
    "CallSkeleton",
    "ChatFormat",
    "FormatError",
    "HermesFormat",
    "ParseResult",
    "TextDraft",
    "get_format",
]

FORMATS: dict[str, type[ChatFormat]] = {
    "hermes": HermesFormat,
}
"""Format classes by name."""

_ALIASES = {"qwen": "hermes", "qwen2.5": "hermes", "qwen3": "hermes"}


def get_format(name: str | ChatFormat) -> ChatFormat:
    """A format by name (``hermes``, ``json``, ``llama3``); a :class:`ChatFormat` passes through.

    Raises :class:`~ooo_agent.errors.FormatError` for an unknown name.
    """
    if isinstance(name, ChatFormat):
        return name
    key = _ALIASES.get(name.lower(), name.lower()) if isinstance(name, str) else name
    cls = FORMATS.get(key)
    if cls is None:
        raise FormatError(f"unknown call format {name!r}; known: {', '.join(sorted(FORMATS))}")
    return cls()
