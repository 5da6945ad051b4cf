"""The :class:`Toolset` (public via :mod:`ooo_agent.tools`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from ooo_agent.errors import ToolDefinitionError, ToolsetError
from ooo_agent.tools.decorator import Tool

__all__ = ["ToolLike", "Toolset"]


ToolLike = Tool | Callable[..., Any] | Mapping[str, Any] | type[BaseModel]
"""Anything :meth:`Toolset.coerce` turns into a tool."""


def _as_tool(item: Any) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, Mapping):
        return Tool.from_openai(item)
    if isinstance(item, type) and issubclass(item, BaseModel):
        return Tool.from_model(item)
    if callable(item) or isinstance(item, classmethod | staticmethod):
        return Tool.from_function(item)
    raise ToolDefinitionError(f"cannot make a tool from {type(item).__name__}: {item!r:.100}")


class Toolset:
    """An ordered collection of tools with unique names.

    ``strict`` makes validation reject undeclared keys and exports schemas with
    ``additionalProperties: false`` on every object.

    >>> ts = Toolset([get_weather, search])          # doctest: +SKIP
    >>> ts.names, ts["search"], ts.to_openai()      # doctest: +SKIP
    """

    def __init__(self, tools: Iterable[ToolLike] = (), *, strict: bool = False) -> None:
        self.strict = bool(strict)
        self._tools: dict[str, Tool] = {}
        for item in tools:
            built = _as_tool(item)
            if built.name in self._tools:
                raise ToolsetError(
                    f"duplicate tool name {built.name!r}: give one of them another name "
                    "(@tool(name=...))"
                )
            self._tools[built.name] = built

    @classmethod
    def coerce(cls, tools: Toolset | ToolLike | Iterable[ToolLike] | None) -> Toolset:
        """A toolset from a Toolset (returned as is), one tool-like item, or an iterable of
        Tools, plain functions (wrapped with :func:`tool`), pydantic models and OpenAI dicts."""
        if tools is None:
            return cls()
        if isinstance(tools, Toolset):
            return tools
        if isinstance(tools, str | bytes):
            raise ToolDefinitionError(f"cannot make a tool from a string: {tools!r:.100}")
        if isinstance(tools, Tool | Mapping | type) or callable(tools):
            return cls([tools])
        if isinstance(tools, Iterable):
            return cls(tools)
        raise ToolDefinitionError(f"cannot make tools from {type(tools).__name__}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name) if isinstance(name, str) else None

    def suggest(self, name: str) -> str | None:
        """The known name closest to ``name`` (a typo's likely intent), if any is close."""
        if not isinstance(name, str):
            return None
        lowered = {n.lower(): n for n in self._tools}
        if name.strip().lower() in lowered:
            return lowered[name.strip().lower()]
        close = difflib.get_close_matches(name, list(self._tools), n=1, cutoff=0.6)
        return close[0] if close else None

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            hint = self.suggest(name)
            did_you_mean = f" Did you mean {hint!r}?" if hint else ""
            raise ToolsetError(f"no tool named {name!r}.{did_you_mean} Tools: {list(self._tools)}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolset({list(self._tools)}{', strict=True' if self.strict else ''})"

    def to_openai(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI tool dict, in order."""
        return [t.to_openai(strict=self.strict) for t in self._tools.values()]
