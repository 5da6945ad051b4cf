"""Reading and rewriting tool parameters: what the rules of :mod:`ooo_agent.rules` share."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from ooo_agent.formats._common import loose_function
from ooo_agent.offered import OfferedTool, ToolLike, offer

__all__ = [
    "free_string",
    "options",
    "parameters_matching",
    "rewrite_functions",
    "rewrite_parameters",
]

T = TypeVar("T")


def parameters_matching(
    tools: Sequence[ToolLike], keep: Callable[[str, Any], bool]
) -> dict[str, tuple[str, ...]]:
    """Per tool name, its parameters (schema order) whose ``(name, schema)`` ``keep`` accepts;
    tools with none, or without properties, are left out."""
    found: dict[str, tuple[str, ...]] = {}
    for tool in offer(tools):
        kept = tuple(str(k) for k, schema in tool.properties.items() if keep(str(k), schema))
        if kept:
            found[tool.name] = kept
    return found


def rewrite_parameters(
    tools: Sequence[Mapping[str, Any]],
    keys: Mapping[str, Sequence[str]],
    rewrite: Callable[[Mapping[str, Any]], Mapping[str, Any]],
) -> list[Mapping[str, Any]]:
    """``tools`` with the schema of each parameter ``keys`` names (per tool name) replaced by
    ``rewrite(schema)``: copies of the tools it touches; the others are passed as they are."""

    def edit(function: dict[str, Any], names: Sequence[str]) -> None:
        properties = function["parameters"]["properties"]
        for key in names:
            properties[key] = rewrite(properties[key])

    return rewrite_functions(tools, keys, edit)


def rewrite_functions(
    tools: Sequence[Mapping[str, Any]],
    touched: Mapping[str, T],
    edit: Callable[[dict[str, Any], T], None],
) -> list[Mapping[str, Any]]:
    """``tools`` with ``edit(function, touched[name])`` applied to a copy of each tool whose
    name ``touched`` gives a non-empty value; the others are passed as they are."""
    out: list[Mapping[str, Any]] = []
    for tool in tools:
        value = touched.get(OfferedTool.from_openai(tool).name)
        if not value:
            out.append(tool)
            continue
        changed = copy.deepcopy(dict(tool))
        edit(cast(dict[str, Any], loose_function(changed)), value)
        out.append(changed)
    return out


def free_string(schema: Any) -> bool:
    """A string parameter without an enum, a pattern or a format of its own: what the request
    and the model's own words fill."""
    if not isinstance(schema, Mapping) or schema.get("type") != "string":
        return False
    return not any(key in schema for key in ("enum", "const", "pattern", "format"))


_QUOTED = re.compile(r"""(?<!\w)(?:'([^']{1,30})'|"([^"]{1,30})")(?!\w)""")
"""A value a description quotes (an apostrophe inside a word starts no quote)."""
_EXAMPLES = re.compile(r"(?:\be\.g\.,?|\bsuch as\b|\blike\b)\s+([^.;()]+)", re.IGNORECASE)
"""The list after "e.g.", "such as" or "like" in a description, up to the sentence's end."""
_LIST_SEPARATOR = re.compile(r",|\bor\b|\band\b|\betc\b")


def options(schema: Any) -> list[str]:
    """The values a parameter's schema offers by name: its ``enum``, its array items' ``enum``,
    and the values its description quotes or lists after "e.g." / "such as" / "like"."""
    if not isinstance(schema, Mapping):
        return []
    found: list[Any] = list(schema.get("enum") or [])
    items = schema.get("items")
    if isinstance(items, Mapping):
        found += list(items.get("enum") or [])
    description = schema.get("description")
    if isinstance(description, str):
        found += (single or double for single, double in _QUOTED.findall(description))
        for listed in _EXAMPLES.findall(description):
            found += (part.strip(" '\"") for part in _LIST_SEPARATOR.split(listed))
    return [str(option) for option in found if isinstance(option, str)]
