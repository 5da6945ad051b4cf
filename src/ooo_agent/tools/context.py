"""The context object the SDK hands to tools that ask for it.

A tool asks for it by annotating one parameter with :class:`ToolContext`; that parameter
never appears in the schema the model sees::

    @tool
    async def remember(note: str, ctx: ToolContext) -> str:
        return f"call {ctx.call_id} saw {len(ctx.messages)} messages"
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolContext"]


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about the call that started it.

    Attributes:
        call_id: The id of the call being executed (the one its result will carry).
        tool_name: The name the model used to call the tool.
        messages: The conversation up to (not including) the assistant turn that made the call.
        deps: Anything the application passes through (a database handle, a user id...).
    """

    call_id: str
    tool_name: str
    messages: Sequence[Mapping[str, Any]] = ()
    deps: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Free-form metadata a caller may attach (e.g. the turn number)."""
