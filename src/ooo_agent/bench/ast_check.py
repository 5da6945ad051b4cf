"""BFCL-style AST checking: are a model's calls among the acceptable ones?

The rules, as BFCL applies them:

- the number of calls equals the number of expected calls (``irrelevance``: no call);
- parallel calls are matched to the expected ones in any order (one-to-one);
- each call names the expected function, has every *required* parameter, and no parameter
  that the schema or the gold answer does not know;
- each value is among the acceptable ones, after BFCL's leniency: an int where a float is
  declared, strings compared without case, spaces and ``, . / - _ * ^``, and ``'`` read as
  ``"``; lists element by element (same length, same order); dicts key by key;
- an optional parameter is either absent (allowed when ``""`` is among its acceptable
  values) or acceptable;
- Java / JavaScript values are strings holding a literal of the language, read as the
  declared type first (see ``_literals.py``).

Example::

    item = load_bfcl("simple_python", limit=1)[0]
    check([("calculate_triangle_area", {"base": 10, "height": 5})], item).ok  # True
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ooo_agent.bench._literals import parse_literal, render_literal
from ooo_agent.bench.datasets import BenchItem
from ooo_agent.calls import RawCall, ToolCall

__all__ = [
    "AstResult",
    "CallLike",
    "argument_ok",
    "check",
    "gold_calls",
    "gold_defects",
    "names_match",
    "standardize",
]

CallLike = tuple[str, Any] | RawCall | ToolCall | Mapping[str, Any]
"""``(name, arguments)``, a :class:`RawCall` / :class:`ToolCall`, or ``{"name", "arguments"}``;
arguments may be a dict or its JSON text."""

# Declared type → the Python type the value must have (BFCL's tables, plus JSON Schema names).
_PY_TYPES: dict[str, type] = {
    "string": str, "String": str, "char": str, "any": str, "Any": str,
    "integer": int, "byte": int, "short": int, "long": int, "Bigint": int,
    "float": float, "double": float, "number": float,
    "boolean": bool, "Boolean": bool, "bool": bool,
    "array": list, "tuple": list, "list": list, "Array": list, "ArrayList": list,
    "Queue": list, "Stack": list,
    "dict": dict, "object": dict, "HashMap": dict, "Hashtable": dict,
}  # fmt: skip

_STANDARDIZE = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class AstResult:
    """Whether the calls are acceptable; ``reason`` says what failed (empty when ``ok``)."""

    ok: bool
    reason: str = ""
    kind: str = ""
    """Failure class: ``count``, ``name``, ``arguments_json``, ``missing_required``,
    ``unexpected_param``, ``type``, ``value``, ``missing_optional`` (empty when ``ok``)."""

    def __bool__(self) -> bool:
        return self.ok


_OK = AstResult(True)


def standardize(text: str) -> str:
    """BFCL's string normal form: lower case, no ``space , . / - _ * ^``, ``'`` → ``"``."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


# -- calls in ---------------------------------------------------------------------------


def _normalize(call: CallLike) -> tuple[str, Any]:
    """``(name, arguments)`` with JSON-text arguments decoded (left as text when invalid)."""
    if isinstance(call, (RawCall, ToolCall)):
        name, arguments = call.name, call.arguments
    elif isinstance(call, Mapping):
        name, arguments = str(call.get("name", "")), call.get("arguments", call.get("parameters"))
    else:
        name, arguments = call[0], call[1]
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError):  # invalid JSON fails the check later
            arguments = json.loads(arguments) if arguments.strip() else {}
    if arguments is None:
        arguments = {}
    return str(name), arguments


def names_match(calls: Sequence[CallLike], item: BenchItem) -> bool:
    """True when the called function names equal the expected ones (as a multiset)."""
    called = sorted(_normalize(c)[0] for c in calls)
    expected = sorted(next(iter(g)) for g in item.gold)
    return called == expected


# -- checking ----------------------------------------------------------------------------


def check(calls: Sequence[CallLike], item: BenchItem) -> AstResult:
    """Check a model's calls for ``item`` against its gold answers (BFCL's AST rules)."""
    normalized = [_normalize(c) for c in calls]
    if len(normalized) != len(item.gold):
        if not item.gold:
            return AstResult(False, f"expected no call, got {len(normalized)}", "count")
        return AstResult(
            False, f"expected {len(item.gold)} call(s), got {len(normalized)}", "count"
        )
    schemas = {str(s.get("name")): s for s in item.schemas()}
    # results[i][j]: gold call i against model call j (all pairs: the sets are tiny).
    results = [
        [_check_call(name, args, gold, schemas, item.language) for name, args in normalized]
        for gold in item.gold
    ]
    if _perfect_matching(results):
        return _OK
    for i, row in enumerate(results):
        if not any(r.ok for r in row):
            expected = next(iter(item.gold[i]))
            # Prefer the error of a call to the right function: it says what is wrong in it.
            same_name = [r for r in row if r.kind != "name"]
            reason = (same_name or row)[0]
            prefix = f"call for {expected!r}: " if len(item.gold) > 1 else ""
            return AstResult(False, prefix + reason.reason, reason.kind)
    return AstResult(False, "no one-to-one match between calls and expected calls", "count")


def argument_ok(
    item: BenchItem, name: str, param: str, arguments: Mapping[str, Any]
) -> bool | None:
    """Whether one argument of a call to ``name`` passes ``item``'s gold answer on its own:
    its value in ``arguments`` is acceptable, or its absence is allowed (not required, ``""``
    acceptable or unknown to the answer). ``None`` when no expected call names ``name``; with
    several (parallel items), the first that does.

    Example::

        argument_ok(item, "calculate_triangle_area", "base", {"base": 10})  # True
    """
    for gold in item.gold:
        expected, acceptable = next(iter(gold.items()))
        if expected != name:
            continue
        schema = {str(s.get("name")): s for s in item.schemas()}.get(name, {})
        parameters = schema.get("parameters") or {}
        if param not in arguments:
            if param in parameters.get("required", []):
                return False
            return param not in acceptable or "" in acceptable[param]
        if param not in acceptable:
            return False
        properties = parameters.get("properties") or {}
        value_schema = properties.get(param) or {}
        result = _check_value(
            param, arguments[param], acceptable[param], value_schema, item.language
        )
        return result.ok
    return None


def _perfect_matching(results: list[list[AstResult]]) -> bool:
    """Is there a one-to-one assignment of gold calls to model calls that all pass?"""
    matched: dict[int, int] = {}  # model call -> gold call

    def assign(i: int, seen: set[int]) -> bool:
        for j, result in enumerate(results[i]):
            if result.ok and j not in seen:
                seen.add(j)
                if j not in matched or assign(matched[j], seen):
                    matched[j] = i
                    return True
        return False

    return all(assign(i, set()) for i in range(len(results)))


def _check_call(
    name: str,
    args: Any,
    gold: Mapping[str, Mapping[str, list[Any]]],
    schemas: Mapping[str, Mapping[str, Any]],
    language: str,
) -> AstResult:
    expected_name, acceptable = next(iter(gold.items()))
    if name != expected_name:
        return AstResult(False, f"expected function {expected_name!r}, got {name!r}", "name")
    if not isinstance(args, Mapping):
        return AstResult(False, f"arguments of {name!r} are not a JSON object", "arguments_json")
    parameters = schemas.get(name, {}).get("parameters") or {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    for param in parameters.get("required", []):
        if param not in args:
            return AstResult(False, f"missing required parameter {param!r}", "missing_required")
    for param, value in args.items():
        if param not in acceptable or (properties and param not in properties):
            return AstResult(False, f"unexpected parameter {param!r}", "unexpected_param")
        result = _check_value(
            param, value, acceptable[param], properties.get(param) or {}, language
        )
        if not result.ok:
            return result
    for param, options in acceptable.items():
        if param not in args and "" not in options:
            return AstResult(False, f"parameter {param!r} is missing", "missing_optional")
    return _OK


def _check_value(
    param: str, value: Any, options: list[Any], schema: Mapping[str, Any], language: str
) -> AstResult:
    kind = str(schema.get("type", "")) or None
    items_schema = schema.get("items")
    items = str(items_schema.get("type")) if isinstance(items_schema, Mapping) else None
    if language in ("java", "javascript") and kind is not None:
        if not isinstance(value, str):
            return AstResult(
                False,
                f"parameter {param!r} must be a {language} literal in a string, got {value!r}",
                "type",
            )
        value = parse_literal(value, language, kind, items)
    if isinstance(value, tuple):
        value = list(value)
    expected = _PY_TYPES.get(kind or "")
    if expected is float and _is_int(value):
        value = float(value)  # BFCL lets an int stand for a float
    if expected is list and isinstance(value, list) and _PY_TYPES.get(items or "") is float:
        value = [float(v) if _is_int(v) else v for v in value]
    # A value of the gold's own type is accepted too: BFCL's gold sometimes holds a
    # variable name (a string) where the schema declares another type.
    gold_types = {type(o) for o in options if o != ""}
    if (
        expected is not None
        and not _has_type(value, expected, items)
        and type(value) not in gold_types
    ):
        return AstResult(
            False,
            f"parameter {param!r} should be {kind}, got {type(value).__name__} {value!r}",
            "type",
        )
    if any(_equal(value, option) for option in options):
        return _OK
    shown = [o for o in options if o != ""]
    return AstResult(
        False, f"parameter {param!r} = {value!r} is not among the acceptable {shown!r}", "value"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _has_type(value: Any, expected: type, items: str | None) -> bool:
    if expected is int:
        return _is_int(value)
    if expected is float:
        return isinstance(value, float)
    if not isinstance(value, expected):
        return False
    item_type = _PY_TYPES.get(items or "")
    if isinstance(value, list) and item_type is not None:
        return all(_has_type(v, item_type, None) for v in value)
    return True


def _equal(value: Any, gold: Any) -> bool:
    """Does ``value`` equal one gold literal, with BFCL's leniency applied recursively?"""
    if isinstance(gold, str):
        return isinstance(value, str) and standardize(value) == standardize(gold)
    if isinstance(gold, bool) or isinstance(value, bool):
        return type(value) is type(gold) and value == gold
    if isinstance(gold, (int, float)):
        return isinstance(value, (int, float)) and value == gold
    if isinstance(gold, list):
        return (
            isinstance(value, (list, tuple))
            and len(value) == len(gold)
            and all(_equal(v, g) for v, g in zip(value, gold, strict=True))
        )
    if isinstance(gold, dict):
        return isinstance(value, Mapping) and _dict_equal(value, gold)
    return bool(value == gold)


def _dict_equal(value: Mapping[str, Any], gold: Mapping[str, Any]) -> bool:
    # Inside gold dicts BFCL lists acceptable values per key ({"k": ["a", "b", ""]}); a few
    # entries hold the bare value instead, so a non-list is a single acceptable value.
    if any(k not in gold for k in value):
        return False
    for key, options in gold.items():
        if not isinstance(options, list):
            options = [options]
        if key not in value:
            if "" not in options:
                return False
            continue
        if not (any(_equal(value[key], o) for o in options) or _equal(value[key], options)):
            return False
    return True


def gold_defects(item: BenchItem) -> list[str]:
    """Why no call can pass ``item`` (empty list = satisfiable).

    A handful of BFCL entries cannot be passed by any model: a parameter with no acceptable
    value at all, a gold parameter the schema does not have, a required parameter the gold
    answer leaves out. Benchmarks count them as failures; training data skips them.
    """
    schemas = {str(s.get("name")): s for s in item.schemas()}
    defects = []
    for gold in item.gold:
        name, acceptable = next(iter(gold.items()))
        if name not in schemas:
            defects.append(f"{name}: not among the offered functions")
            continue
        parameters = schemas[name].get("parameters") or {}
        properties = parameters.get("properties") or {}
        for param, options in acceptable.items():
            if not options:
                defects.append(f"{name}.{param}: no acceptable value")
            elif properties and param not in properties and "" not in options:
                defects.append(f"{name}.{param}: required by the answer, unknown to the schema")
        for param in parameters.get("required", []):
            if param not in acceptable:
                defects.append(f"{name}.{param}: required by the schema, absent from the answer")
    return defects


# -- gold → calls --------------------------------------------------------------------------


def gold_calls(
    item: BenchItem, *, mentioned_in: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The gold answer as calls: the first acceptable value of each argument, arguments that
    may be absent (``""`` acceptable, not required) left out, Java / JavaScript values written
    as literal strings. They pass :func:`check` whenever :func:`gold_defects` finds nothing.

    ``mentioned_in``: a text (the user's words); an argument that may be absent is kept when
    its first acceptable value is a string or number that appears in that text — the user
    asked for it, so a model trained on these calls should not learn to drop it."""
    schemas = {str(s.get("name")): s for s in item.schemas()}
    calls = []
    for gold in item.gold:
        name, acceptable = next(iter(gold.items()))
        parameters = schemas.get(name, {}).get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = set(parameters.get("required", []))
        args: dict[str, Any] = {}
        for param, options in acceptable.items():
            present = [o for o in options if o != ""]
            if (
                "" in options
                and (param not in required or (properties and param not in properties))
                and not (present and mentioned_in and _mentioned(present[0], mentioned_in))
            ):
                continue  # may be absent and the user did not ask for it: leave it out
            value = _first_acceptable(present[0]) if present else ""
            schema = properties.get(param) or {}
            items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
            args[param] = render_literal(
                value, item.language, schema.get("type"), items.get("type") if items else None
            )
        calls.append((name, args))
    return calls


def _mentioned(value: Any, text: str) -> bool:
    """Whether a scalar gold value appears in ``text`` (case-insensitive, whole words)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    needle = str(value).strip()
    if len(needle) < 2 and not isinstance(value, int | float):
        return False
    pattern = r"(?<![\w.])" + re.escape(needle) + r"(?![\w])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def _first_acceptable(value: Any) -> Any:
    """Resolve gold dicts (``{"k": [acceptable...]}``) to plain values, recursively."""
    if isinstance(value, list):
        return [_first_acceptable(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, options in value.items():
            if isinstance(options, list):
                if not options or options[0] == "":
                    continue
                out[key] = _first_acceptable(options[0])
            else:
                out[key] = _first_acceptable(options)
        return out
    return value
