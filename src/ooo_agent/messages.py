"""Reading a conversation's messages (OpenAI chat dicts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["user_text"]


def user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the user's messages (string contents and text parts), space-joined."""
    parts = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):  # content parts: only the text ones
            parts.extend(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text"
            )
    return " ".join(parts)
