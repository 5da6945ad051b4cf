"""Call formats: how a model is prompted with tools and how it writes calls.

``get_format("hermes")`` returns a :class:`ChatFormat`; :data:`FORMATS` lists the names.
"""

from __future__ import annotations

from ooo_agent.errors import FormatError
from ooo_agent.formats.base import CallSkeleton, ChatFormat, ParseResult, TextDraft
from ooo_agent.formats.hermes import HermesDescriptionFirstFormat, HermesFormat
from ooo_agent.formats.json_format import JsonFormat
from ooo_agent.formats.llama3 import Llama3Format

__all__ = [
    "FORMATS",
    "CallSkeleton",
    "ChatFormat",
    "FormatError",
    "HermesDescriptionFirstFormat",
    "HermesFormat",
    "JsonFormat",
    "Llama3Format",
    "ParseResult",
    "TextDraft",
    "get_format",
]

FORMATS: dict[str, type[ChatFormat]] = {
    "hermes": HermesFormat,
    "hermes-description-first": HermesDescriptionFirstFormat,
    "json": JsonFormat,
    "llama3": Llama3Format,
}
"""Format classes by name."""

_ALIASES = {
    "qwen": "hermes",
    "qwen2.5": "hermes",
    "qwen3": "hermes",
    "toolspec": "json",
    "llama3.1": "llama3",
    "llama": "llama3",
}


def get_format(name: str | ChatFormat) -> ChatFormat:
    """A format by name (``hermes``, ``json``, ``llama3``); a :class:`ChatFormat` passes through.

    Raises :class:`~ooo_agent.errors.FormatError` for an unknown name.
    """
    if isinstance(name, ChatFormat):
        return name
    if not isinstance(name, str):
        raise FormatError(f"a format is a name or a ChatFormat, got {type(name).__name__}")
    key = name.strip().lower()
    cls = FORMATS.get(_ALIASES.get(key, key))
    if cls is None:
        raise FormatError(f"unknown call format {name!r}; known: {', '.join(sorted(FORMATS))}")
    return cls()
