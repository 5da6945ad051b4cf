"""One training request: a conversation, the tools offered, and the right answer.

Both row builders read it: the target's rows (``ooo_agent.train.data``) and the sidecar's
semantic rows. ``calls`` empty means the right answer is plain text (``answer``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainRequest"]


@dataclass(frozen=True)
class TrainRequest:
    """A request with its correct calls (or, when no tool fits, its plain-text answer)."""

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    """OpenAI tool dicts."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str = ""
    """The assistant's text when no tool fits (``calls`` empty)."""
    source: str = ""
    """Where it came from: a BFCL category or ``generated``."""

    @property
    def tool_names(self) -> list[str]:
        return [str(t["function"]["name"]) for t in self.tools]

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (one line of ``requests.jsonl``)."""
        return {
            "id": self.id,
            "source": self.source,
            "messages": self.messages,
            "tools": self.tools,
            "calls": [{"name": n, "arguments": a} for n, a in self.calls],
            "answer": self.answer,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainRequest:
        """Inverse of :meth:`to_dict`."""
        calls = [(str(c["name"]), dict(c["arguments"])) for c in data.get("calls", [])]
        return cls(
            id=str(data["id"]),
            messages=[dict(m) for m in data["messages"]],
            tools=[dict(t) for t in data["tools"]],
            calls=calls,
            answer=str(data.get("answer", "")),
            source=str(data.get("source", "")),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)
