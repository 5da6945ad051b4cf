"""Llama 3.1 JSON tool calling: ``{"name": ..., "parameters": {...}}``.

As Llama 3.1's own chat template does by default, the tool definitions (indented JSON)
and the instruction go at the top of the first user message. The model may start its call
with ``<|python_tag|>``; parsing ignores it there. Several calls follow each other, one per
line or separated by ``;``. Tool results stay ``tool`` messages, which the
Llama template shows in its ``ipython`` turn.

Example::

    fmt = Llama3Format()
    fmt.parse('<|python_tag|>{"name": "get_time", "parameters": {"tz": "UTC"}}').calls
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.formats._common import content_text, plain_tools
from ooo_agent.formats.base import ParseResult, ToolDict
from ooo_agent.formats.json_format import JsonCallFormat

__all__ = ["Llama3Format"]

PYTHON_TAG = "<|python_tag|>"

_INSTRUCTION = (
    "Given the following functions, please respond with a JSON for a function call with its "
    "proper arguments that best answers the given prompt.\n\n"
    'Respond in the format {"name": function name, "parameters": dictionary of argument name '
    "and its value}. Do not use variables.\n\n"
)


class Llama3Format(JsonCallFormat):
    """Llama 3.1 JSON tool calls (one call per line when there are several)."""

    name = "llama3"
    call_separator = "\n"
    strict_many = True
    strict_separators = r"[\s;]*"

    def _join(self, texts: list[str]) -> str:
        return self.call_separator.join(texts)

    def tools_preamble(self, tools: Sequence[ToolDict]) -> str:
        """The text put before the first user message (empty without tools)."""
        if not tools:
            return ""
        defs = "".join(
            json.dumps(t, indent=4, ensure_ascii=False) + "\n\n" for t in plain_tools(tools)
        )
        return _INSTRUCTION + defs

    def render_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolDict]
    ) -> list[dict[str, Any]]:
        """Tools at the top of the first user message; assistant calls as JSON text."""
        out: list[dict[str, Any]] = []
        for message in messages:
            role = message.get("role")
            if role == "assistant" and message.get("tool_calls"):
                out.append({"role": "assistant", "content": self._history_calls(message)})
            else:
                out.append({"role": role, "content": content_text(message.get("content"))})
        preamble = self.tools_preamble(tools)
        if preamble:
            first_user = next((m for m in out if m["role"] == "user"), None)
            if first_user is not None:
                first_user["content"] = preamble + first_user["content"]
            else:
                at = 1 if out and out[0]["role"] == "system" else 0
                out.insert(at, {"role": "user", "content": preamble.rstrip("\n")})
        return out

    def parse(self, text: str, *, strict: bool = False) -> ParseResult:
        """Calls as :class:`JsonCallFormat` reads them, after a leading ``<|python_tag|>``."""
        body = text.lstrip()
        if body.startswith(PYTHON_TAG):
            return super().parse(body[len(PYTHON_TAG) :], strict=strict)
        return super().parse(text, strict=strict)
