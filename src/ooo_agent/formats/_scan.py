"""Low-level scanning for the drafting skeleton: JSON strings and brackets in partial text,
where bare-JSON calls start, and what the skeleton needs of each tool's schema."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ooo_agent.formats._common import dump_json, function_of
from ooo_agent.formats.base import ToolDict

__all__ = [
    "SCALAR",
    "WS",
    "ToolShape",
    "TopLevelScan",
    "decode_string",
    "nested_end",
    "string_end",
    "tool_shape",
]

# A JSON string body (escape aware); the closing quote is checked by the caller.
STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
# A JSON scalar (number, true, false, null) runs until one of these.
SCALAR = re.compile(r"[^,}\]\s]*")
WS = re.compile(r"\s*")


@dataclass(frozen=True)
class ToolShape:
    """What the skeleton needs of one tool, computed once."""

    name: str
    name_json: str
    keys: tuple[str, ...]
    key_json: Mapping[str, str]
    string_keys: frozenset[str]
    required: frozenset[str]
    value_drafts: Mapping[str, tuple[str, ...]]
    open_schema: bool


def _is_string_schema(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type") == "string":
        return True
    enum = schema.get("enum")
    if "type" not in schema and isinstance(enum, list) and enum:
        return all(isinstance(e, str) for e in enum)
    return "type" not in schema and isinstance(schema.get("const"), str)


def _value_drafts(schema: Any) -> tuple[str, ...]:
    """Whole values worth drafting for a parameter: its enum, its const, or a boolean."""
    if not isinstance(schema, Mapping):
        return ()
    if isinstance(schema.get("enum"), list):
        return tuple(dump_json(e) for e in schema["enum"])
    if "const" in schema:
        return (dump_json(schema["const"]),)
    if schema.get("type") == "boolean":
        return ("true", "false")
    return ()


def tool_shape(tool: ToolDict) -> ToolShape:
    fn = function_of(tool)
    params = fn.get("parameters") or {}
    props = params.get("properties") if isinstance(params, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    required = params.get("required", []) if isinstance(params, Mapping) else []
    keys = tuple(str(k) for k in props)
    return ToolShape(
        name=fn["name"],
        name_json=dump_json(fn["name"])[1:-1],
        keys=keys,
        key_json={k: dump_json(k) for k in keys},
        string_keys=frozenset(k for k in keys if _is_string_schema(props[k])),
        required=frozenset(str(r) for r in required if isinstance(r, str)),
        value_drafts={k: _value_drafts(props[k]) for k in keys},
        open_schema=not keys and not (isinstance(params, Mapping) and "properties" in params),
    )


def decode_string(body: str) -> str | None:
    if "\\" not in body:
        return body  # the common case: no escapes, the body is the value
    try:
        value = json.loads('"' + body + '"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def string_end(text: str, start: int) -> int:
    """Index after the closing quote of the string whose body starts at ``start``, or -1."""
    end = STRING_BODY.match(text, start).end()  # type: ignore[union-attr]
    return end + 1 if end < len(text) and text[end] == '"' else -1


def nested_end(text: str, start: int) -> int:
    """Index after the bracket closing the object/array opened at ``start``, or -1."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = string_end(text, i + 1)
            if i < 0:
                return -1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


INCOMPLETE = -1
"""``json_value_end``: the text ends inside the value (a valid beginning so far)."""
INVALID = -2
"""``json_value_end``: the text is not the beginning of a JSON value."""

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = ("true", "false", "null")


def _scalar_ok(token: str) -> bool:
    return token in _LITERALS or _NUMBER.fullmatch(token) is not None


def _scalar_begins(token: str) -> bool:
    """Whether ``token`` can still grow into a JSON number or literal."""
    if any(literal.startswith(token) for literal in _LITERALS):
        return True
    return _NUMBER.fullmatch(token) is not None or _NUMBER.fullmatch(token + "0") is not None


def json_value_end(text: str, start: int = 0) -> int:
    """Scan one JSON value starting at ``start`` (after optional whitespace).

    Returns the index just after the value when it is complete, :data:`INCOMPLETE` when the
    text ends inside it, :data:`INVALID` when the text cannot begin a JSON value. Strings are
    taken as the skeleton takes them (any escape); numbers and literals are checked strictly.
    """
    stack: list[str] = []
    expect = "value"  # value | first_item | first_key | key | colon | after
    i, n = start, len(text)
    while True:
        if expect == "after" and not stack:
            return i
        i = WS.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            return INCOMPLETE
        c = text[i]
        if expect in ("value", "first_item"):
            if expect == "first_item" and c == "]":
                stack.pop()
                i, expect = i + 1, "after"
            elif c in "{[":
                stack.append(c)
                i, expect = i + 1, ("first_key" if c == "{" else "first_item")
            elif c == '"':
                end = string_end(text, i + 1)
                if end < 0:
                    return INCOMPLETE
                i, expect = end, "after"
            else:
                j = SCALAR.match(text, i).end()  # type: ignore[union-attr]
                token = text[i:j]
                if j >= n:
                    return INCOMPLETE if _scalar_begins(token) else INVALID
                if not _scalar_ok(token):
                    return INVALID
                i, expect = j, "after"
        elif expect in ("first_key", "key"):
            if expect == "first_key" and c == "}":
                stack.pop()
                i, expect = i + 1, "after"
            elif c == '"':
                end = string_end(text, i + 1)
                if end < 0:
                    return INCOMPLETE
                i, expect = end, "colon"
            else:
                return INVALID
        elif expect == "colon":
            if c != ":":
                return INVALID
            i, expect = i + 1, "value"
        else:
            top = stack[-1]
            if c == ",":
                i, expect = i + 1, ("key" if top == "{" else "value")
            elif c == ("}" if top == "{" else "]"):
                stack.pop()
                i, expect = i + 1, "after"
            else:
                return INVALID


@dataclass
class TopLevelScan:
    """Resumable scan for where bare-JSON calls start (objects at depth 0, or inside a
    top-level list), so a ``{"name": ...`` nested in an argument is never taken for a call."""

    text: str = ""
    stack: list[str] = field(default_factory=list)
    in_string: bool = False
    escape: bool = False
    starts: list[int] = field(default_factory=list)

    def feed(self, text: str) -> None:
        begin = len(self.text)
        self.text = text
        stack = self.stack
        for i in range(begin, len(text)):
            c = text[i]
            if self.in_string:
                if self.escape:
                    self.escape = False
                elif c == "\\":
                    self.escape = True
                elif c == '"':
                    self.in_string = False
            elif c == '"':
                # Quotes in prose around the calls are not JSON strings.
                self.in_string = bool(stack)
            elif c in "{[":
                if c == "{" and (not stack or stack == ["["]):
                    self.starts.append(i)
                stack.append(c)
            elif c in "}]" and stack:
                stack.pop()
