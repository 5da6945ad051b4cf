"""Checking a sidecar's slot values against the slot's JSON schema.

A wrong hint never changes the target's output (the target verifies every token), but a value
that cannot be right (a string where the schema says integer) only wastes draft nodes, so it is
dropped before it reaches the drafter. Schemas written for BFCL use Python type names
(``dict``, ``float``, ``tuple``, ``any``); they are normalised to JSON Schema first.

Example::

    check = slot_checker(tools)
    check(0, "unit", "kelvin")   # -> "'kelvin' is not one of ['celsius', 'fahrenheit']"
    check(0, "city", "Paris")    # -> None
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ooo_agent.offered import OfferedTool, ToolLike, offer

__all__ = ["SlotCheck", "normalize_schema", "parameter_schemas", "slot_checker"]

SlotCheck = Callable[[int, str, Any], "str | None"]
"""``check(tool_index, param, value)``: an error message, or None when the value is acceptable."""

# BFCL (and some hand-written schemas) use Python type names; None means "any type".
_TYPE_ALIASES: dict[str, str | None] = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "list": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
    "any": None,
}


def _normalize_type(value: Any) -> Any:
    if isinstance(value, str):
        return _TYPE_ALIASES.get(value, value)
    if isinstance(value, list):
        kinds = [_normalize_type(v) for v in value]
        return None if None in kinds else kinds
    return value


def normalize_schema(schema: Any) -> Any:
    """A copy of ``schema`` with Python type names turned into JSON Schema ones, recursively.

    ``{"type": "any"}`` loses its ``type`` (anything validates); unknown keys are kept.
    """
    if isinstance(schema, list):
        return [normalize_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            kind = _normalize_type(value)
            if kind is not None:
                out[key] = kind
        elif key in ("properties", "definitions", "$defs", "patternProperties"):
            out[key] = (
                {k: normalize_schema(v) for k, v in value.items()}
                if isinstance(value, Mapping)
                else value
            )
        elif key in ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = normalize_schema(value)
        else:
            out[key] = value
    return out


def parameter_schemas(tool: ToolLike) -> Mapping[str, Any]:
    """Each parameter's schema (``parameters.properties``) of an offered tool, an OpenAI tool
    dict or a bare function dict; empty when it declares none."""
    return (tool if isinstance(tool, OfferedTool) else OfferedTool.from_openai(tool)).properties


def slot_checker(tools: Sequence[ToolLike]) -> SlotCheck:
    """A ``check(tool_index, param, value) -> str | None`` for these tools (offered or OpenAI
    tool dicts).

    Validators are built once per slot, on first use. An unknown tool index or parameter is
    an error; a schema that is itself invalid accepts everything (the sidecar cannot be blamed
    for a broken schema, and the target's output is verified anyway).
    """
    import jsonschema  # a core dependency, imported here to keep `import ooo_agent` light

    cache: dict[tuple[int, str], Any] = {}
    offered = offer(tools)

    def check(index: int, param: str, value: Any) -> str | None:
        if not 0 <= index < len(offered):
            return f"no tool with index {index}"
        properties = offered[index].properties
        if param not in properties:
            return f"tool {index} has no parameter {param!r}"
        key = (index, param)
        if key not in cache:
            schema = normalize_schema(properties[param])
            try:
                validator_cls = jsonschema.validators.validator_for(schema)
                validator_cls.check_schema(schema)
                cache[key] = validator_cls(schema)
            except (jsonschema.SchemaError, TypeError):
                cache[key] = None
        validator = cache[key]
        if validator is None:
            return None
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        return None if error is None else error.message

    return check
