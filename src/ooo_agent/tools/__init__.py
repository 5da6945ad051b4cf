"""Tools: ``@tool``, :class:`Tool` and :class:`Toolset`.

A :class:`Tool` is the pure data a model sees (name, description, JSON-schema parameters)
plus an optional handler and its execution policy (timeout, sequential, read-only)::

    @tool(timeout=5, read_only=True)
    async def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        '''Current weather in a city.

        Args:
            city: City name, e.g. "Paris".
            unit: Temperature unit.
        '''
        ...

    await get_weather("Paris")                 # still the function
    get_weather.to_openai()                    # {"type": "function", "function": {...}}
    await get_weather.invoke({"city": "Oslo"}) # validated, then called

Tools are built three ways: from a function or method (``@tool``), from a pydantic model
(:meth:`Tool.from_model`) or from an OpenAI / BFCL tool dict (:meth:`Tool.from_openai`).

The package, in the order a call goes through it:

* :mod:`~ooo_agent.tools.decorator` — :class:`Tool` and ``@tool``; :mod:`~ooo_agent.tools.toolset`
  — :class:`Toolset`; :mod:`~ooo_agent.tools.context` — :class:`ToolContext`;
* :mod:`~ooo_agent.tools.definition` — what a tool is built from (function, model, OpenAI dict),
  with :mod:`~ooo_agent.tools.signature` (a signature → a schema),
  :mod:`~ooo_agent.tools.docstrings` (descriptions) and :mod:`~ooo_agent.tools.schema`
  (cleaning, normalising, strict mode);
* :mod:`~ooo_agent.tools.validation` — a model's call → ``ToolCall`` or ``CallError``, with
  :mod:`~ooo_agent.tools.arguments` (decoding, error paths) and :mod:`~ooo_agent.tools.lenient`
  (the lenient type fixes);
* :mod:`~ooo_agent.tools.dispatch` — running validated calls;
* :mod:`~ooo_agent.tools.speculation` — pre-executing read-only tools on the sidecar's guess.
"""

from __future__ import annotations

from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.decorator import Tool, tool
from ooo_agent.tools.toolset import ToolLike, Toolset

__all__ = ["Tool", "ToolContext", "ToolLike", "Toolset", "tool"]
