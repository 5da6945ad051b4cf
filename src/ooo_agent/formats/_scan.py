"""Low-level scanning for the drafting skeleton: JSON strings and brackets in partial text,
where bare-JSON calls start, and what the skeleton needs of each tool's schema."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ooo_agent._json import json_type_of
from ooo_agent.formats._common import dump_json, function_of
from ooo_agent.formats.base import ToolDict
from ooo_agent.offered import OfferedTool

__all__ = [
    "INCOMPLETE",
    "INVALID",
    "SCALAR",
    "WS",
    "ArrayItems",
    "NumberBounds",
    "StringPattern",
    "ToolShape",
    "TopLevelScan",
    "ValueShape",
    "arguments_end",
    "decode_string",
    "json_value_end",
    "nested_end",
    "string_end",
    "tool_shape",
    "value_kinds",
]

# A JSON string body (escape aware); the closing quote is checked by the caller.
STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
# A JSON scalar (number, true, false, null) runs until one of these.
SCALAR = re.compile(r"[^,}\]\s]*")
WS = re.compile(r"\s*")
MAX_WS = 32
"""Longest run of whitespace between JSON tokens the schema-held scan accepts: more than any
pretty-printer writes, and what a model stuck emitting spaces reaches within a few tokens."""


@dataclass(frozen=True)
class ArrayItems:
    """What an array parameter's elements are held to."""

    kinds: frozenset[str] = frozenset()
    """JSON types of the elements (``items`` declare one); empty: any."""
    enum: tuple[Any, ...] | None = None
    """The values an element may take (``items`` have an ``enum`` or ``const``)."""
    distinct: bool = False
    """No element repeats an earlier one: ``uniqueItems``, or ``items`` with an ``enum`` (a
    choice among options, where naming one twice says nothing more)."""
    max_items: int | None = None
    """``maxItems``."""
    pattern: StringPattern | None = None
    """The ``pattern`` of string elements (``items`` set one)."""

    def __bool__(self) -> bool:
        return self != ArrayItems()  # says something of the elements


@dataclass(frozen=True)
class StringPattern:
    """A string's ``pattern`` (a regular expression the value must contain a match of, as JSON
    Schema reads it), matched with the ``regex`` package's partial matching: a prefix is refused
    once no continuation of it can match (``"2024/`` under ``^\\d{4}-``), the closing quote while
    the value does not match (``"New York"`` under ``,``). A pattern ``regex`` cannot compile
    holds nothing; without the package (it comes with ``transformers``) no pattern does."""

    source: str
    compiled: Any = field(compare=False)

    @classmethod
    def of(cls, schema: Any) -> StringPattern | None:
        """The pattern ``schema`` sets, ``None`` when it sets none (or none that compiles)."""
        source = schema.get("pattern") if isinstance(schema, Mapping) else None
        if not isinstance(source, str):
            return None
        try:
            import regex
        except ImportError:
            return None
        try:
            compiled = regex.compile(source)
        except (regex.error, TypeError, ValueError):
            return None
        return cls(source, compiled)

    def admits(self, text: str, complete: bool) -> bool:
        """Whether the string written so far (``text``, from its opening quote; the whole
        string when ``complete``) matches, or can still. Text that is no string is left to the
        kind check."""
        if not text.startswith('"'):
            return True
        body = text[1:-1] if complete else _whole_escapes(text[1:])
        value = decode_string(body)
        if value is None:
            return True  # the scan refuses a broken escape itself
        return self.compiled.search(value, partial=not complete) is not None


_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?$")


def _whole_escapes(body: str) -> str:
    """``body`` without an escape its last characters leave unfinished (``\\``, ``\\u00``)."""
    match = _PARTIAL_ESCAPE.search(body)
    if match is None:
        return body
    # an even run of backslashes before it is escaped backslashes, not an open escape
    run = len(body[: match.start()]) - len(body[: match.start()].rstrip("\\"))
    return body if run % 2 else body[: match.start()]


@dataclass(frozen=True)
class NumberBounds:
    """A number's ``minimum`` / ``maximum`` (``exclusiveMinimum`` / ``exclusiveMaximum``, as a
    number or, draft 4, as a flag on the other).

    A bounded value is held to plain decimal notation while it is written (an exponent would
    let any prefix reach any value): a prefix is refused once no completion of it is within
    the bounds — ``5`` under ``maximum: 1`` (``5``, ``5.2``, ``50`` are all too big), not ``0``
    or ``1``."""

    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False

    @classmethod
    def of(cls, schema: Any) -> NumberBounds | None:
        """The bounds ``schema`` sets, ``None`` when it sets none."""
        if not isinstance(schema, Mapping):
            return None

        def number(key: str) -> float | None:
            value = schema.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            return None

        low, high = number("minimum"), number("maximum")
        low_open = high_open = False
        if (ex := number("exclusiveMinimum")) is not None:
            if low is None or ex >= low:
                low, low_open = ex, True
        elif schema.get("exclusiveMinimum") is True and low is not None:
            low_open = True
        if (ex := number("exclusiveMaximum")) is not None:
            if high is None or ex <= high:
                high, high_open = ex, True
        elif schema.get("exclusiveMaximum") is True and high is not None:
            high_open = True
        if low is None and high is None:
            return None
        return cls(low, high, low_open, high_open)

    def admits(self, text: str, complete: bool, *, integer: bool = False) -> bool:
        """Whether the number written so far (``text``; the whole number when ``complete``)
        is, or can still become, one within the bounds (an ``integer`` one: ``0`` is then
        zero, not the start of ``0.5``). Text that is not a number is left to the kind
        check."""
        if not text or (text[0] != "-" and not text[0].isdigit()):
            return True
        if complete:
            try:
                value = float(text)
            except ValueError:
                return True
            return self._fits(value, value, True, True)
        if "e" in text or "E" in text:
            return False
        negative = text.startswith("-")
        body = text[1:] if negative else text
        if not body:
            return self._fits(-math.inf, 0.0, False, True)
        whole, dot, fraction = body.partition(".")
        if dot:
            low = float(f"{whole}.{fraction}" if fraction else whole)
            high = low + 10.0 ** -len(fraction)
        elif whole == "0" and integer:
            return self._fits(0.0, 0.0, True, True)  # no digit may follow a leading zero
        elif whole == "0":
            low, high = 0.0, 1.0  # 0 itself or 0.…
        else:
            low, high = float(whole), math.inf  # itself, itself.…, or more digits
        if negative:
            return self._fits(-high, -low, False, True)
        return self._fits(low, high, True, False)

    def _fits(self, low: float, high: float, low_closed: bool, high_closed: bool) -> bool:
        """Whether the interval from ``low`` to ``high`` meets the bounds."""
        if self.maximum is not None:
            closed = low_closed and not self.exclusive_maximum
            if low > self.maximum or (low == self.maximum and not closed):
                return False
        if self.minimum is not None:
            closed = high_closed and not self.exclusive_minimum
            if high < self.minimum or (high == self.minimum and not closed):
                return False
        return True


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
    kinds: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """JSON types each parameter's value may take (``integer`` apart from ``number``); a key
    absent or an empty set: any value."""
    enums: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """The values a parameter with an ``enum`` (or ``const``) may take."""
    items: Mapping[str, ArrayItems] = field(default_factory=dict)
    """For an array parameter whose schema says something of its elements: what it says."""
    bounds: Mapping[str, NumberBounds] = field(default_factory=dict)
    """For a number parameter with a ``minimum`` / ``maximum``: its bounds."""
    patterns: Mapping[str, StringPattern] = field(default_factory=dict)
    """For a string parameter with a ``pattern``: the pattern."""
    excluded: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """For a parameter whose schema says ``not: {"enum": [...]}``: the values ruled out."""


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


_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})


def value_kinds(schema: Any) -> frozenset[str]:
    """The JSON types a value of ``schema`` may take (``number`` admits ``integer``); the
    empty set when the schema does not say or says something this reading does not know
    (``$ref``, a type name outside JSON Schema's): such values are left free."""
    if not isinstance(schema, Mapping):
        return frozenset()
    declared = schema.get("type")
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(declared, str):
        kinds = {declared}
    elif isinstance(declared, list) and declared and all(isinstance(t, str) for t in declared):
        kinds = set(declared)
    elif isinstance(branches, list):
        kinds = set()
        for sub in branches:
            sub_kinds = value_kinds(sub)
            if not sub_kinds:
                return frozenset()
            kinds |= sub_kinds
    elif isinstance(schema.get("enum"), list) and schema["enum"]:
        kinds = {json_type_of(e) for e in schema["enum"]}
    elif "const" in schema:
        kinds = {json_type_of(schema["const"])}
    else:
        return frozenset()
    if not kinds or not kinds <= _JSON_TYPES:
        return frozenset()
    if "number" in kinds:
        kinds.add("integer")
    if schema.get("nullable") is True:
        kinds.add("null")
    return frozenset(kinds)


def _enum(schema: Any) -> tuple[Any, ...] | None:
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return tuple(schema["enum"])
    if "const" in schema:
        return (schema["const"],)
    return None


def _excluded(schema: Any) -> tuple[Any, ...] | None:
    """The values ``not: {"enum": [...]}`` (or ``not: {"const": ...}``) rules out."""
    negated = schema.get("not") if isinstance(schema, Mapping) else None
    return _enum(negated) if isinstance(negated, Mapping) and len(negated) == 1 else None


def _array_items(schema: Any) -> ArrayItems:
    if not isinstance(schema, Mapping) or schema.get("type") != "array":
        return ArrayItems()
    enum = _enum(schema.get("items"))
    bound = schema.get("maxItems")
    return ArrayItems(
        kinds=value_kinds(schema.get("items")),
        enum=enum,
        distinct=schema.get("uniqueItems") is True or enum is not None,
        max_items=bound if isinstance(bound, int) and not isinstance(bound, bool) else None,
        pattern=StringPattern.of(schema.get("items")),
    )


def tool_shape(tool: ToolDict) -> ToolShape:
    fn = function_of(tool.to_openai() if isinstance(tool, OfferedTool) else tool)
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
        kinds={k: value_kinds(props[k]) for k in keys},
        enums={k: e for k in keys if (e := _enum(props[k])) is not None},
        items={k: a for k in keys if (a := _array_items(props[k]))},
        bounds={k: b for k in keys if (b := NumberBounds.of(props[k])) is not None},
        patterns={k: s for k in keys if (s := StringPattern.of(props[k])) is not None},
        excluded={k: x for k in keys if (x := _excluded(props[k])) is not None},
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


def json_value_end(text: str, start: int = 0, *, strict: bool = False) -> int:
    """Scan one JSON value starting at ``start`` (after optional whitespace).

    Returns the index just after the value when it is complete, :data:`INCOMPLETE` when the
    text ends inside it, :data:`INVALID` when the text cannot begin a JSON value. Strings are
    taken as the skeleton takes them (any escape); numbers and literals are checked strictly.
    With ``strict``, as the schema-held scan wants it: no object names a key twice, and no
    run of whitespace between tokens is longer than :data:`MAX_WS`.
    """
    stack: list[str] = []
    keys: list[set[str]] = []  # strict: the keys of each open object
    expect = "value"  # value | first_item | first_key | key | colon | after
    i, n = start, len(text)
    while True:
        if expect == "after" and not stack:
            return i
        j = WS.match(text, i).end()  # type: ignore[union-attr]
        if strict and j - i > MAX_WS:
            return INVALID
        i = j
        if i >= n:
            return INCOMPLETE
        c = text[i]
        if expect in ("value", "first_item"):
            if expect == "first_item" and c == "]":
                stack.pop()
                i, expect = i + 1, "after"
            elif c in "{[":
                stack.append(c)
                if strict and c == "{":
                    keys.append(set())
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
                if strict:
                    keys.pop()
                i, expect = i + 1, "after"
            elif c == '"':
                end = string_end(text, i + 1)
                if end < 0:
                    return INCOMPLETE
                if strict:
                    name = decode_string(text[i + 1 : end - 1])
                    if name is None or name in keys[-1]:
                        return INVALID
                    keys[-1].add(name)
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
                if strict and top == "{":
                    keys.pop()
                i, expect = i + 1, "after"
            else:
                return INVALID


_OPENER_KIND = {'"': "string", "{": "object", "[": "array", "t": "boolean", "f": "boolean"}


def _kind_fits(text: str, kinds: frozenset[str]) -> bool:
    """Whether the JSON value beginning ``text`` can be of one of ``kinds`` (empty: any)."""
    if not kinds:
        return True
    kind = "null" if text[0] == "n" else _OPENER_KIND.get(text[0], "number")
    if kind == "number":
        fractional = any(c in text for c in ".eE")
        return "number" in kinds or ("integer" in kinds and not fractional)
    return kind in kinds


def _items_fit(text: str, items: ArrayItems) -> bool:
    """Whether the elements written so far of the array beginning ``text`` can be of the
    item kinds, among the item enum, matching the item pattern (a string's), none repeating an
    earlier one when they are distinct, no more of them than ``maxItems`` (a distinct enum
    array: than the enum has values) — a comma after the last element allowed is refused.
    (The array's own well-formedness is :func:`json_value_end`'s business.)"""
    limit = items.max_items
    if items.distinct and items.enum is not None:
        limit = len(items.enum) if limit is None else min(limit, len(items.enum))
    seen: list[Any] = []
    i, n = 1, len(text)
    while True:
        i = WS.match(text, i).end()  # type: ignore[union-attr]
        if i >= n or text[i] == "]":
            return True
        if limit is not None and len(seen) >= limit:
            return False  # an element past the last one allowed
        end = json_value_end(text, i, strict=True)
        if end == INVALID:
            return True
        complete = end != INCOMPLETE
        written = text[i:end] if complete else text[i:]
        if not _kind_fits(written, items.kinds):
            return False
        enum = items.enum
        if enum is not None and items.distinct:
            enum = tuple(e for e in enum if not any(_same(e, s) for s in seen))
        if enum is not None and not _among(written, complete, enum):
            return False
        if items.pattern is not None and not items.pattern.admits(written, complete):
            return False
        if not complete:
            return True
        if items.distinct:
            try:
                value = json.loads(written)
            except ValueError:
                return True
            if any(_same(value, s) for s in seen):
                return False
            seen.append(value)
        else:
            seen.append(None)
        i = WS.match(text, end).end()  # type: ignore[union-attr]
        if i >= n or text[i] != ",":
            return True
        if limit is not None and len(seen) >= limit:
            return False  # no element may follow
        i += 1


def _same(a: Any, b: Any) -> bool:
    """JSON's equality: 1 and 1.0 are one number, true is not 1 (containers by ``==``)."""
    return bool(a == b) and json_type_of(a) == json_type_of(b)


def _among(text: str, complete: bool, enum: tuple[Any, ...]) -> bool:
    """Whether the value written so far (the whole value when ``complete``) is, or can still
    become, one of ``enum``."""
    if complete:
        try:
            value = json.loads(text)
        except ValueError:
            return False
        return any(_same(value, e) for e in enum)
    return any(dump_json(e).startswith(text) for e in enum)


_ANY_ITEMS = ArrayItems()


def _value_fits(
    text: str,
    complete: bool,
    kinds: frozenset[str],
    enum: tuple[Any, ...] | None,
    items: ArrayItems = _ANY_ITEMS,
    bounds: NumberBounds | None = None,
    pattern: StringPattern | None = None,
    excluded: tuple[Any, ...] | None = None,
) -> bool:
    """Whether the value written so far (``text``, from its first character; the whole value
    when ``complete``) can still be of one of ``kinds``, among ``enum``, within ``bounds``,
    matching ``pattern``, none of ``excluded`` (once whole) and, an array, hold elements as
    ``items`` says (:func:`_items_fit`)."""
    if not _kind_fits(text, kinds):
        return False
    if items and text[0] == "[" and not _items_fit(text, items):
        return False
    integer = "integer" in kinds and "number" not in kinds
    if bounds is not None and not bounds.admits(text, complete, integer=integer):
        return False
    if pattern is not None and not pattern.admits(text, complete):
        return False
    if excluded is not None and complete and _among(text, complete, excluded):
        return False
    return enum is None or _among(text, complete, enum)


@dataclass(frozen=True)
class ValueShape:
    """What one parameter's value is held to, read once from its schema: the JSON types it
    may take, its enum, its array elements — the same reading :func:`arguments_end` gives
    each top-level value of a call."""

    kinds: frozenset[str] = frozenset()
    enum: tuple[Any, ...] | None = None
    items: ArrayItems = _ANY_ITEMS
    bounds: NumberBounds | None = None
    pattern: StringPattern | None = None
    excluded: tuple[Any, ...] | None = None

    @classmethod
    def of(cls, schema: Any) -> ValueShape:
        return cls(
            value_kinds(schema),
            _enum(schema),
            _array_items(schema),
            NumberBounds.of(schema),
            StringPattern.of(schema),
            _excluded(schema),
        )

    def admits(self, text: str, complete: bool) -> bool:
        """Whether the value written so far (``text``, from its first character; the whole
        value when ``complete``) can still be one this schema accepts."""
        return _value_fits(
            text,
            complete,
            self.kinds,
            self.enum,
            self.items,
            self.bounds,
            self.pattern,
            self.excluded,
        )


def arguments_end(text: str, start: int, shape: ToolShape) -> int:
    """Scan the arguments object of a call to ``shape`` starting at ``start`` (its ``{``,
    after optional whitespace), as :func:`json_value_end` does, and hold it to the tool's
    schema too: every key one of the tool's parameters (any key when the schema lists none),
    none twice (nor in any nested object); a top-level value of its declared JSON type and,
    with an ``enum``, among it, with a ``minimum`` / ``maximum``, within them
    (:class:`NumberBounds`), with a ``pattern``, matching it (:class:`StringPattern`), with
    ``not: {"enum": [...]}``, none of those; an array's elements as its schema says (:class:`ArrayItems`);
    no closing brace before every required parameter is written, no comma after the last
    parameter, no run of whitespace longer than :data:`MAX_WS`. Returns the index after the
    object, :data:`INCOMPLETE` or :data:`INVALID`."""
    n = len(text)
    i = WS.match(text, start).end()  # type: ignore[union-attr]
    if i >= n:
        return INCOMPLETE
    if text[i] != "{":
        return INVALID
    free = shape.open_schema
    # A required name the schema does not define could never be written: not waited for.
    required = shape.required if free else shape.required & frozenset(shape.keys)
    used: set[str] = set()
    key = ""
    expect = "first_key"  # first_key | key | colon | value | after
    i += 1
    while True:
        j = WS.match(text, i).end()  # type: ignore[union-attr]
        if j - i > MAX_WS:
            return INVALID
        i = j
        if i >= n:
            return INCOMPLETE
        c = text[i]
        if expect in ("first_key", "key"):
            if expect == "first_key" and c == "}":
                return i + 1 if required <= used else INVALID
            if c != '"':
                return INVALID
            end = string_end(text, i + 1)
            if end < 0:
                typed = text[i + 1 :]
                if free or any(
                    shape.key_json[k][1:].startswith(typed) for k in shape.keys if k not in used
                ):
                    return INCOMPLETE
                return INVALID
            decoded = decode_string(text[i + 1 : end - 1])
            if decoded is None or decoded in used or not (free or decoded in shape.key_json):
                return INVALID
            key = decoded
            used.add(key)
            i, expect = end, "colon"
        elif expect == "colon":
            if c != ":":
                return INVALID
            i, expect = i + 1, "value"
        elif expect == "value":
            end = json_value_end(text, i, strict=True)
            if end == INVALID:
                return INVALID
            complete = end >= 0
            written = text[i:end] if complete else text[i:]
            if not _value_fits(
                written.rstrip() if complete else written,
                complete,
                shape.kinds.get(key, frozenset()),
                shape.enums.get(key),
                shape.items.get(key, _ANY_ITEMS),
                shape.bounds.get(key),
                shape.patterns.get(key),
                shape.excluded.get(key),
            ):
                return INVALID
            if not complete:
                return INCOMPLETE
            i, expect = end, "after"
        elif c == ",":
            if not free and len(used) >= len(shape.keys):
                return INVALID  # no parameter left to write
            i, expect = i + 1, "key"
        elif c == "}":
            return i + 1 if required <= used else INVALID
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
