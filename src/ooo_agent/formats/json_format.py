"""Plain JSON tool calling, as ToolSpec prompts it: ``{"name": ..., "parameters": {...}}``.

One call is one JSON object; parallel calls are a JSON list of them. The whole answer must
be the call (a call is never read out of prose); in lenient mode one code fence around it,
and several calls one after another, are accepted too.

Example::

    fmt = JsonFormat()
    fmt.render_calls([("get_time", {"tz": "UTC"})])
    # '{"name": "get_time", "parameters": {"tz": "UTC"}}'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.formats._common import (
    content_text,
    dump_json,
    message_calls,
    plain_tools,
    whole_json_calls,
)
from ooo_agent.formats.base import ChatFormat, ParseResult, ToolDict
from ooo_agent.formats.skeleton import CallSyntax, SchemaSkeleton

__all__ = ["JsonCallFormat", "JsonFormat"]

_EXAMPLE = '{"name": <tool-name>, "parameters": <arguments-object>}'


def _syntax(separator: str, opens_after: str) -> CallSyntax:
    return CallSyntax(
        prefix='{"name": "',
        prefix_re=re.compile(r'\{\s*"name"\s*:\s*"'),
        after_name=', "parameters": ',
        after_name_re=re.compile(r'\s*,\s*"(?:parameters|arguments)"\s*:\s*\{'),
        suffix="}",
        suffix_re=re.compile(r"\s*\}"),
        separator=separator,
        opens_after=opens_after,
    )


class JsonCallFormat(ChatFormat):
    """Shared base of the formats whose calls are bare ``{"name", "parameters"}`` JSON.

    Subclasses choose the prompt (:meth:`render_messages`) and how several calls are joined.
    """

    name = "json"
    call_separator = ", "
    """Between calls in :meth:`render_calls` (and what the skeleton drafts after a call)."""
    example = _EXAMPLE

    def __init__(self) -> None:
        self._syntax = _syntax(self.call_separator, opens_after="[>")

    def render_calls(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """Each call as ``{"name": NAME, "parameters": ARGS}``; several as a JSON list."""
        return self._join([self._call_text(name, args) for name, args in calls])

    def _join(self, texts: list[str]) -> str:
        return texts[0] if len(texts) == 1 else "[" + self.call_separator.join(texts) + "]"

    @staticmethod
    def _call_text(name: str, args: Any) -> str:
        # Arguments that were never valid JSON are shown as written.
        args_text = args if isinstance(args, str) else dump_json(args)
        return f'{{"name": {dump_json(name)}, "parameters": {args_text}}}'

    def _history_calls(self, message: Mapping[str, Any]) -> str:
        text = content_text(message.get("content"))
        calls = self._join([self._call_text(n, a) for n, a in message_calls(message)])
        return (text + "\n" if text else "") + calls

    strict_separators = r"\s*"
    """Between calls where strict mode takes several (see :meth:`parse`)."""
    strict_many = False
    """Whether strict mode takes several calls one after another (else one value only)."""

    def parse(self, text: str, *, strict: bool = False) -> ParseResult:
        """The calls of an answer that is, as a whole, a JSON call object or a list of them;
        any other answer is text (JSON inside prose is never a call).

        Strict takes the bare answer only; lenient also one code fence around it, and several
        calls separated by whitespace, ``,`` or ``;``.
        """
        found = whole_json_calls(
            text,
            self.example,
            fence=not strict,
            many=self.strict_many or not strict,
            separators=self.strict_separators if strict else r"[\s,;]*",
        )
        if found is None:
            return ParseResult([], text.strip(), [])
        return ParseResult(found.calls, "", found.errors)

    def skeleton(self, tools: Sequence[ToolDict]) -> SchemaSkeleton:
        """The drafting skeleton of JSON calls for these tools."""
        return SchemaSkeleton(self._syntax, plain_tools(tools))

    @property
    def stop_strings(self) -> tuple[str, ...]:
        """None beyond end of turn."""
        return ()


class JsonFormat(JsonCallFormat):
    """ToolSpec's plain JSON calls: tools listed in the system prompt, one JSON line each."""

    name = "json"

    def system_prompt(self, tools: Sequence[ToolDict]) -> str:
        """The tool section of the system prompt (empty without tools)."""
        if not tools:
            return ""
        lines = "\n".join(dump_json(t) for t in plain_tools(tools))
        return (
            "You can call the following tools, each described as a JSON object:\n"
            f"{lines}\n\n"
            f"To call a tool, reply with only a JSON object {_EXAMPLE}. "
            "To call several tools at once, reply with a JSON list of such objects."
        )

    def render_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolDict]
    ) -> list[dict[str, Any]]:
        """Tools in the system prompt, assistant calls as JSON text, tool results as user
        turns (``Result of NAME: CONTENT``, consecutive results merged)."""
        names: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        merge = False
        for message in messages:
            role = message.get("role")
            if role == "tool":
                call_id = message.get("tool_call_id")
                name = names.get(call_id, "the tool") if isinstance(call_id, str) else "the tool"
                line = f"Result of {name}: {content_text(message.get('content'))}"
                if merge:
                    out[-1]["content"] += "\n" + line
                else:
                    out.append({"role": "user", "content": line})
                merge = True
                continue
            merge = False
            if role == "assistant" and message.get("tool_calls"):
                for call in message.get("tool_calls") or ():
                    fn = call.get("function", {}) if isinstance(call, Mapping) else {}
                    if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                        names[call["id"]] = str(fn.get("name", "the tool"))
                out.append({"role": "assistant", "content": self._history_calls(message)})
            else:
                out.append({"role": role, "content": content_text(message.get("content"))})
        tool_text = self.system_prompt(tools)
        if tool_text:
            if out and out[0]["role"] in ("system", "developer"):
                own = out[0]["content"]
                out[0] = {
                    "role": "system",
                    "content": f"{own}\n\n{tool_text}" if own else tool_text,
                }
            else:
                out.insert(0, {"role": "system", "content": tool_text})
        return out
