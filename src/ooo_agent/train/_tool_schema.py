"""Small builders shared by the generated-request modules: their data tables, OpenAI tool
schemas and phrasing."""

from __future__ import annotations

import json
import random
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "PYTHON_NOTE",
    "array_param",
    "load_table",
    "param",
    "pick",
    "python_tool",
    "table_tools",
    "tool_schema",
]


@cache
def load_table(name: str) -> dict[str, Any]:
    """The data table ``ooo_agent/train/tables/<name>.json``, read once (callers must not
    change it)."""
    text = (
        resources.files("ooo_agent.train")
        .joinpath(f"tables/{name}.json")
        .read_text(encoding="utf-8")
    )
    table: dict[str, Any] = json.loads(text)
    return table


def tool_schema(
    name: str, description: str, params: dict[str, dict[str, Any]], required: list[str]
) -> dict[str, Any]:
    """An OpenAI-style function tool with an object of ``params``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": params, "required": required},
        },
    }


PYTHON_NOTE = " Note that the provided function is in Python 3 syntax."
"""Appended to the descriptions of Python-style tools, as BFCL's Python functions read."""


def python_tool(
    name: str, description: str, params: dict[str, dict[str, Any]], required: list[str]
) -> dict[str, Any]:
    """:func:`tool_schema` for a Python function: the description ends with :data:`PYTHON_NOTE`."""
    return tool_schema(name, description + PYTHON_NOTE, params, required)


def table_tools(specs: dict[str, Any], *, python: bool = False) -> dict[str, dict[str, Any]]:
    """Tools by name from a table's ``{name: {description, properties, required}}``; with
    ``python``, built by :func:`python_tool`."""
    build = python_tool if python else tool_schema
    return {
        name: build(name, spec["description"], spec["properties"], spec["required"])
        for name, spec in specs.items()
    }


def param(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    """One JSON-schema parameter of type ``kind``."""
    return {"type": kind, "description": description, **extra}


def array_param(description: str, items: str = "string") -> dict[str, Any]:
    """An array parameter whose items are of type ``items``."""
    return {"type": "array", "description": description, "items": {"type": items}}


def pick(rng: random.Random, *options: str) -> str:
    """One of ``options``: the phrasing of a request."""
    return rng.choice(options)
