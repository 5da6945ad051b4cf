"""Plain JSON data: strict decoding hooks, checks and copies shared by the tool layer, the
chat formats and the sidecars.

:func:`reject_duplicate_keys` is ``json.loads``'s ``object_pairs_hook`` for a key written twice;
:func:`not_json_data` and :func:`plain_json` catch what ``json`` lets through (NaN, lone UTF-16
surrogates, non-string keys); :func:`json_type_of` names a value's JSON Schema type.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "finite_float",
    "json_path",
    "json_type_of",
    "not_json_data",
    "plain_json",
    "reject_constant",
    "reject_duplicate_keys",
]

MAX_DEPTH = 64
"""Deepest nesting accepted in arguments; deeper input is refused before it is walked."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A UTF-16 surrogate code point in a Python str is always a lone one: JSON's escaped pairs
# ("\\ud83d\\ude00") decode to the one character they stand for.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def json_path(parts: Iterable[Any]) -> str:
    """``$``-rooted JSON path: ``("items", 2, "qty")`` → ``$.items[2].qty``."""
    path = "$"
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            path += f"[{part}]"
        elif isinstance(part, str) and _IDENTIFIER.fullmatch(part):
            path += f".{part}"
        else:
            path += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return path


def reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's ``object_pairs_hook``: the object, or ``ValueError`` for a key written
    twice (which of the two values was meant cannot be known)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f'the key "{_shown(key)}" appears twice in one object')
        out[key] = value
    return out


def reject_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: ``NaN`` and ``±Infinity`` are not JSON values."""
    raise ValueError(f"{name} is not a JSON value")


def finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: a number out of float range is an error, not ``inf``."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


def _shown(text: str, limit: int = 40) -> str:
    """``text`` clipped, with lone surrogates written as ``\\udXXX`` escapes."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def not_json_data(value: Any) -> tuple[str, str] | None:
    """Where and why ``value`` is not plain, finite, valid-Unicode JSON data: ``(path,
    reason)`` for the first problem found, or None. Catches what ``json`` lets through: lone
    UTF-16 surrogates (in strings and keys) and NaN / ±Infinity."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            found = _SURROGATE.search(item)
            if found:
                return json_path(path), (
                    f"holds a lone UTF-16 surrogate (\\u{ord(found.group()):04x}), "
                    "which is not text; write the character itself"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                return json_path(path), f"{item} is not a JSON number"
        elif isinstance(item, dict):
            if len(path) > MAX_DEPTH:
                return json_path(path), "nested too deeply"
            for key, child in item.items():
                if not isinstance(key, str):
                    return json_path(path), f"object key {key!r} is not a string"
                found = _SURROGATE.search(key)
                if found:
                    return json_path(path), (
                        f'the key "{_shown(key)}" holds a lone UTF-16 surrogate '
                        f"(\\u{ord(found.group()):04x}), which is not text"
                    )
                stack.append((child, (*path, key)))
        elif isinstance(item, list | tuple):
            if len(path) > MAX_DEPTH:
                return json_path(path), "nested too deeply"
            stack.extend((child, (*path, i)) for i, child in enumerate(item))
        elif not (item is None or isinstance(item, bool | int)):
            return json_path(path), f"a {type(item).__name__} is not JSON data"
    return None


def plain_json(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` as plain JSON data (tuples → lists); raises ValueError otherwise."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object key {key!r} is not a string")
            out[key] = plain_json(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [plain_json(v, depth + 1) for v in value]
    raise ValueError(f"a {type(value).__name__} is not JSON data")


def json_type_of(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (``integer`` before ``number``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"
