"""Lenient repair of decoded arguments, guided by the tool's JSON schema.

Models get the *shape* of arguments right far more often than the exact JSON types. In
lenient mode, before validation, each value is looked at against the schema position it
sits in, and only these unambiguous fixes are made (the policy of ``docs/tools.md``):

* ``"true"`` / ``"false"`` (exactly) where a boolean is wanted → the boolean;
* a string whose whole text is a JSON number where a number is wanted → that number, finite
  (``"2.5"`` → ``2.5``; an integer parameter takes only integer text, ``"3"`` → ``3``);
* ``"null"`` where null is wanted and a string is not;
* a string holding JSON where an object or array is wanted → the decoded object or array
  (decoded as strictly as the arguments themselves: no duplicate keys, no NaN);
* an integer where a string is wanted → its decimal text (ids written without quotes);
* an integral float where an integer is wanted → the integer (``2.0`` → ``2``);
* keys an object schema does not declare are dropped where the schema says nothing of other
  keys; where it forbids them (``additionalProperties: false``) they are kept, for the
  validator to reject.

Nothing else is converted: not ``"1"`` / ``"yes"`` / ``1`` to a boolean, not ``True`` to a
number, not ``"1_000"``, ``"+3"``, ``" 3"`` or non-ASCII digits. A subschema marked
``"x-destructive": true`` is left exactly as written, with everything inside it. Nothing
here raises on odd input; a value that cannot be fixed is left for the validator to report.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ooo_agent._json import finite_float, json_type_of, reject_constant, reject_duplicate_keys
from ooo_agent.tools.schema import resolve_ref

__all__ = ["DESTRUCTIVE", "loosen"]

DESTRUCTIVE = "x-destructive"
"""Schema keyword: ``"x-destructive": true`` on a (sub)schema turns every lenient fix off
inside it; ``@tool(destructive=True)`` does the same for a whole tool."""

_MAX_DEPTH = 64
# JSON's own number grammar, ASCII digits only (``re.ASCII``: ``\d`` would take any digit).
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,29})", re.ASCII)
_NUMBER_RE = re.compile(
    r"-?(?:0|[1-9][0-9]{0,29})(?:\.[0-9]{1,30})?(?:[eE][+-]?[0-9]{1,3})?", re.ASCII
)


def _declared_types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    if "properties" in schema or "additionalProperties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    if "enum" in schema and isinstance(schema["enum"], list):
        return {json_type_of(v) for v in schema["enum"]}
    if "const" in schema:
        return {json_type_of(schema["const"])}
    return set()


def _admits(types: set[str], value: Any) -> bool:
    """Whether a value of this JSON type is acceptable to a schema declaring ``types``."""
    kind = json_type_of(value)
    return not types or kind in types or (kind == "integer" and "number" in types)


def _convert(value: Any, types: set[str]) -> tuple[bool, Any]:
    """An unambiguous conversion of ``value`` to one of ``types``: ``(converted, new)``."""
    if isinstance(value, str):
        text = value.strip()
        if types & {"object", "array"} and text[:1] in ("{", "["):
            try:
                decoded = json.loads(
                    text,
                    parse_constant=reject_constant,
                    parse_float=finite_float,
                    object_pairs_hook=reject_duplicate_keys,
                )
            except (ValueError, RecursionError):
                decoded = None
            if json_type_of(decoded) in types:
                return True, decoded
        if "integer" in types and _INT_RE.fullmatch(value):
            return True, int(value)
        if "number" in types and _NUMBER_RE.fullmatch(value):
            number = float(value)
            if math.isfinite(number):
                return True, int(number) if number.is_integer() and abs(number) < 2**53 else number
        if "boolean" in types and value in ("true", "false"):
            return True, value == "true"
        if "null" in types and value == "null":
            return True, None
    elif isinstance(value, float) and "integer" in types and value.is_integer():
        return True, int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and "string" in types:
        return True, str(value)
    return False, value


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            found.extend(b for b in (resolve_ref(root, o) for o in options) if isinstance(b, dict))
    return found


def _loosen_object(value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any],
                   depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties")
    # Keys the schema forbids (``additionalProperties: false``) stay, for the validator to
    # reject: dropping them would run the call without what the model asked for.
    keeps_extra = extra is not None or "patternProperties" in schema
    # A free-form object (no declared keys, no policy) keeps everything it was given.
    free_form = not properties and extra is None
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in properties:
            out[key] = loosen(item, properties[key], root, depth + 1)
        elif isinstance(extra, dict):
            out[key] = loosen(item, extra, root, depth + 1)
        elif keeps_extra or free_form:
            out[key] = item
    return out


def loosen(value: Any, schema: Any, root: dict[str, Any], depth: int = 0) -> Any:
    """``value`` with the unambiguous fixes listed in the module docstring applied."""
    schema = resolve_ref(root, schema)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or schema.get(DESTRUCTIVE) is True:
        return value
    for key in ("allOf",):  # merge simple allOf wrappers (pydantic emits them for refs)
        parts = schema.get(key)
        if isinstance(parts, list) and len(parts) == 1:
            schema = {**{k: v for k, v in schema.items() if k != key},
                      **(resolve_ref(root, parts[0]) or {})}
    branches = _branches(schema, root)
    if branches:
        matching = [b for b in branches if _admits(_declared_types(b), value)]
        if len(matching) == 1:
            return loosen(value, matching[0], root, depth + 1)
        if not matching:
            for branch in branches:
                converted, new = _convert(value, _declared_types(branch))
                if converted:
                    return loosen(new, branch, root, depth + 1)
        return value  # ambiguous between branches: leave it to the validator
    types = _declared_types(schema)
    if not _admits(types, value):
        converted, value = _convert(value, types)
        if not converted:
            return value
    elif isinstance(value, float) and types == {"integer"} and value.is_integer():
        value = int(value)
    if isinstance(value, dict):
        return _loosen_object(value, schema, root, depth)
    if isinstance(value, list):
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        out = []
        for index, item in enumerate(value):
            if isinstance(prefix, list) and index < len(prefix):
                out.append(loosen(item, prefix[index], root, depth + 1))
            elif isinstance(items, dict):
                out.append(loosen(item, items, root, depth + 1))
            else:
                out.append(item)
        return out
    return value
