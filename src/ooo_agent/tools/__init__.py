"""Tools: ``@tool``, :class:`Tool` and :class:`Toolset` (guide: docs/tools.md).

A :class:`Tool` is what a model sees (name, description, JSON-schema parameters) plus an
optional handler and its execution policy; it is built from a function (``@tool``), a pydantic
model (:meth:`Tool.from_model`) or an OpenAI / BFCL dict (:meth:`Tool.from_openai`). Modules, in
the order a call goes through them: ``decorator``, ``toolset``, ``context``; ``definition``
with ``signature``, ``docstrings`` and ``schema``; ``validation`` with ``arguments`` and
``lenient``; ``dispatch``; ``speculation`` (pre-executing read-only tools on the sidecar's
guess).
"""

from __future__ import annotations

from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.decorator import Tool, tool
from ooo_agent.tools.toolset import ToolLike, Toolset

__all__ = ["Tool", "ToolContext", "ToolLike", "Toolset", "tool"]
