"""Finding and rewriting tool parameters for a request's decoding (the readers of
:mod:`ooo_agent.decoding.percentages` and :mod:`ooo_agent.decoding.conventions`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from ooo_agent.formats._common import loose_function

__all__ = ["parameters_matching", "rewrite_functions", "rewrite_parameters"]

T = TypeVar("T")


def parameters_matching(
    tools: Sequence[Mapping[str, Any]], keep: Callable[[str, Any], bool]
) -> dict[str, tuple[str, ...]]:
    """Per tool name, its parameters (schema order) whose ``(name, schema)`` ``keep`` accepts;
    tools with none, or without properties, are left out."""
    found: dict[str, tuple[str, ...]] = {}
    for tool in tools:
        function = loose_function(tool)
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        if not isinstance(properties, Mapping):
            continue
        kept = tuple(str(k) for k, schema in properties.items() if keep(str(k), schema))
        if kept:
            found[str(function.get("name", ""))] = kept
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
        value = touched.get(str(loose_function(tool).get("name", "")))
        if not value:
            out.append(tool)
            continue
        changed = copy.deepcopy(dict(tool))
        edit(cast(dict[str, Any], loose_function(changed)), value)
        out.append(changed)
    return out
