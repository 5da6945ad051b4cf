"""JSON-schema housekeeping for tool parameters: clean, normalise, make strict.

Everything here is a pure function from a schema dict to a new schema dict (inputs are
never mutated). Walking is structural: a key called ``title`` inside ``properties`` is a
property name, not pydantic's title noise, and is kept.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "clean_schema",
    "inline_defs",
    "map_schema",
    "normalize_schema",
    "resolve_ref",
    "strict_schema",
    "strip_titles",
]

Schema = dict[str, Any]

_ONE = ("additionalProperties", "items", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

# Type names seen in the wild (BFCL, Gorilla, Java/JS-flavoured specs) → JSON Schema types.
_TYPE_ALIASES = {
    "object": "object", "dict": "object", "map": "object", "hashmap": "object",
    "array": "array", "list": "array", "tuple": "array", "arraylist": "array", "set": "array",
    "string": "string", "str": "string", "char": "string", "character": "string",
    "integer": "integer", "int": "integer", "long": "integer", "short": "integer",
    "byte": "integer",
    "number": "number", "float": "number", "double": "number", "decimal": "number",
    "boolean": "boolean", "bool": "boolean",
    "null": "null", "none": "null",
}  # fmt: skip


def map_schema(schema: Any, fn: Callable[[Schema], Schema]) -> Any:
    """Apply ``fn`` to every subschema of ``schema``, children first; returns a new schema.

    Booleans and other non-dict values are returned unchanged.
    """
    if not isinstance(schema, dict):
        return schema
    out: Schema = dict(schema)
    for key in _ONE:
        if key in out:
            value = out[key]
            if isinstance(value, list):  # draft-4 style tuple ``items``
                out[key] = [map_schema(v, fn) for v in value]
            else:
                out[key] = map_schema(value, fn)
    for key in _MANY:
        if isinstance(out.get(key), list):
            out[key] = [map_schema(v, fn) for v in out[key]]
    for key in _NAMED:
        if isinstance(out.get(key), dict):
            out[key] = {k: map_schema(v, fn) for k, v in out[key].items()}
    return fn(out)


def strip_titles(schema: Schema) -> Schema:
    """Drop pydantic's ``title`` keywords, which only add noise to a model's prompt."""

    def drop(node: Schema) -> Schema:
        if isinstance(node.get("title"), str):
            node = {k: v for k, v in node.items() if k != "title"}
        return node

    result: Schema = map_schema(schema, drop)
    return result


def _local_ref_name(ref: Any) -> str | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if isinstance(ref, str) and ref.startswith(prefix):
            return ref[len(prefix) :]
    return None


def _refs_in(schema: Any) -> set[str]:
    names: set[str] = set()

    def visit(node: Schema) -> Schema:
        name = _local_ref_name(node.get("$ref"))
        if name is not None:
            names.add(name)
        return node

    map_schema(schema, visit)
    return names


def inline_defs(schema: Schema) -> Schema:
    """Replace local ``$ref``s by the definitions they point to, except recursive ones.

    Small models read an inlined schema far better than a pointer chase; recursive models
    (a tree of nodes) cannot be inlined, so their definitions stay under ``$defs``.
    """
    defs: dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    if not defs:
        return schema
    # A definition is recursive when it can reach itself through refs.
    graph = {name: _refs_in(body) for name, body in defs.items()}

    def reaches(start: str, target: str) -> bool:
        seen: set[str] = set()
        stack = list(graph.get(start, ()))
        while stack:
            name = stack.pop()
            if name == target:
                return True
            if name not in seen:
                seen.add(name)
                stack.extend(graph.get(name, ()))
        return False

    recursive = {name for name in defs if reaches(name, name)}
    resolved: dict[str, Any] = {}

    def substitute(node: Schema) -> Schema:
        name = _local_ref_name(node.get("$ref"))
        if name is None or name in recursive or name not in defs:
            return node
        if name not in resolved:
            resolved[name] = map_schema(copy.deepcopy(defs[name]), substitute)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**copy.deepcopy(resolved[name]), **siblings}

    body = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    out: Schema = map_schema(body, substitute)
    kept = {name: map_schema(defs[name], substitute) for name in sorted(recursive)}
    if kept:
        # Refs were written against ``$defs`` or ``definitions``; keep both spellings valid.
        out["$defs"] = kept
        if "definitions" in schema:
            out["definitions"] = kept
    return out


def clean_schema(schema: Schema) -> Schema:
    """A pydantic-generated object schema made model-friendly: no titles, defs inlined,
    and always an explicit ``"type": "object"`` with ``properties``."""
    out = strip_titles(inline_defs(schema))
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def _normalize_node(node: Schema) -> Schema:
    node = dict(node)
    declared = node.get("type")
    if isinstance(declared, str):
        mapped = _TYPE_ALIASES.get(declared.strip().lower())
        if mapped is None:  # "any" or a name no validator knows: no constraint
            node.pop("type")
        else:
            node["type"] = mapped
    elif isinstance(declared, list):
        mapped_list = [_TYPE_ALIASES.get(str(t).strip().lower()) for t in declared]
        if None in mapped_list:
            node.pop("type")
        else:
            node["type"] = list(dict.fromkeys(t for t in mapped_list if t is not None))
    elif declared is not None:
        node.pop("type")
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        if key in node and not isinstance(node[key], dict):
            node.pop(key)
    if "required" in node:
        required = node["required"]
        if isinstance(required, list):
            node["required"] = list(dict.fromkeys(r for r in required if isinstance(r, str)))
        else:
            node.pop("required")
    return node


def normalize_schema(schema: Mapping[str, Any]) -> Schema:
    """Map loose type names (BFCL's ``dict``, ``float``, ``tuple``, ``any``...) to JSON Schema.

    ``dict`` → ``object``, ``float`` → ``number``, ``tuple`` → ``array``, and so on, at every
    depth; a type nobody can validate (``any``, ``Object``) becomes no constraint. The top level
    is always an object schema with ``properties``.
    """
    out: Schema = map_schema(
        {k: v for k, v in schema.items() if isinstance(k, str)}, _normalize_node
    )
    out["type"] = "object"  # a call's arguments are always a JSON object
    out.setdefault("properties", {})
    return out


def _is_object_schema(node: Schema) -> bool:
    declared = node.get("type")
    return declared == "object" or (
        isinstance(declared, list) and "object" in declared
    ) or "properties" in node


def strict_schema(schema: Schema) -> Schema:
    """Every object schema that does not say otherwise gets ``additionalProperties: false``."""

    def close(node: Schema) -> Schema:
        if _is_object_schema(node) and "additionalProperties" not in node \
                and "patternProperties" not in node:
            return {**node, "additionalProperties": False}
        return node

    result: Schema = map_schema(schema, close)
    return result


def resolve_ref(root: Schema, node: Any, *, limit: int = 32) -> Any:
    """Follow local ``$ref`` pointers from ``node`` (siblings of the ref are merged in)."""
    for _ in range(limit):
        if not isinstance(node, dict):
            return node
        name = _local_ref_name(node.get("$ref"))
        if name is None:
            return node
        defs = root.get("$defs", {}) if node["$ref"].startswith("#/$defs/") \
            else root.get("definitions", {})
        target = defs.get(name) if isinstance(defs, dict) else None
        if not isinstance(target, dict):
            return {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


