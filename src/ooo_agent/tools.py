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
"""

from __future__ import annotations

from ooo_agent._tool import Tool, tool
from ooo_agent._toolset import ToolLike, Toolset
from ooo_agent.context import ToolContext

__all__ = ["Tool", "ToolContext", "ToolLike", "Toolset", "tool"]
