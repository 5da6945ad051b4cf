"""One tool as a request offers it: :class:`OfferedTool`, made once per request by the caller.

Targets, sidecars and rules read a tool's ``name``, ``description`` and ``parameters`` from it;
a chat format that renders the tools into a prompt gets :meth:`OfferedTool.to_openai`, the very
mapping the tool was made from, so the prompt is what the dict alone would give. Functions that
take tools accept OpenAI tool dicts too and convert them with :func:`offer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["OfferedTool", "ToolLike", "offer", "openai_tools"]


@dataclass(frozen=True)
class OfferedTool:
    """A tool offered to the model: its function's name, description and parameter schema,
    and the OpenAI tool dict it came from (:meth:`from_openai`; :meth:`to_openai` gives it
    back)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """The JSON schema of the arguments (``{}`` where the tool gives none)."""
    source: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    """The mapping the tool was made from (None for one built field by field)."""

    @classmethod
    def from_openai(cls, tool: Mapping[str, Any]) -> OfferedTool:
        """The tool of an OpenAI tool dict ``{"type": "function", "function": {...}}`` or of a
        bare function dict; never raises: what is missing reads as empty."""
        function = tool.get("function")
        if not isinstance(function, Mapping):
            function = tool
        parameters = function.get("parameters")
        return cls(
            name=str(function.get("name", "")),
            description=str(function.get("description") or ""),
            parameters=parameters if isinstance(parameters, Mapping) else {},
            source=tool,
        )

    def to_openai(self) -> Mapping[str, Any]:
        """The OpenAI tool dict: the mapping the tool was made from, itself (not a copy), or
        one built from the fields."""
        if self.source is not None:
            return self.source
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = dict(self.parameters)
        return {"type": "function", "function": function}

    @property
    def properties(self) -> Mapping[str, Any]:
        """Each parameter's schema, by name, in schema order (``parameters.properties``)."""
        properties = self.parameters.get("properties")
        return properties if isinstance(properties, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        """The required parameters' names (``parameters.required``)."""
        required = self.parameters.get("required")
        return tuple(str(name) for name in required) if isinstance(required, list | tuple) else ()


ToolLike: TypeAlias = OfferedTool | Mapping[str, Any]
"""What functions that take tools accept: an :class:`OfferedTool` or an OpenAI tool dict."""


def offer(tools: Iterable[ToolLike]) -> tuple[OfferedTool, ...]:
    """``tools`` as :class:`OfferedTool` s, in order; a tuple of them is returned as it is."""
    if isinstance(tools, tuple) and all(isinstance(t, OfferedTool) for t in tools):
        return tools
    return tuple(t if isinstance(t, OfferedTool) else OfferedTool.from_openai(t) for t in tools)


def openai_tools(tools: Sequence[ToolLike]) -> list[Mapping[str, Any]]:
    """``tools`` as OpenAI tool dicts (:meth:`OfferedTool.to_openai`; dicts as they are)."""
    return [t.to_openai() if isinstance(t, OfferedTool) else t for t in tools]
