"""Hermes-style tool calling, as Qwen2.5 / Qwen3 and many fine-tunes write it.

Tools are listed as JSON lines inside ``<tools></tools>`` in the system prompt; the model
answers with one ``<tool_call>`` block per call; tool results go back as
``<tool_response>`` blocks in a user turn, so any plain chat template (ChatML) works.

Example::

    fmt = HermesFormat()
    fmt.render_calls([("get_weather", {"city": "Paris"})])
    # '<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris"}}\\n</tool_call>'
    fmt.parse(_).calls[0].name  # 'get_weather'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.calls import CallError, CallErrorKind, RawCall
from ooo_agent.formats._common import (
    call_from_object,
    content_text,
    decode_json,
    dump_json,
    malformed_json,
    message_calls,
    plain_tools,
    strip_fence_lines,
    whole_json_calls,
)
from ooo_agent.formats.base import ChatFormat, ParseResult, ToolDict
from ooo_agent.formats.skeleton import CallSyntax, SchemaSkeleton

__all__ = ["HermesDescriptionFirstFormat", "HermesFormat"]

_OPEN = "<tool_call>"
_CLOSE = "</tool_call>"
_EXAMPLE = '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'

_SYSTEM_HEAD = (
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
)
_SYSTEM_TAIL = (
    "\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n" + _EXAMPLE
)

# A block runs to its closing tag, or to the next opening tag / the end when unterminated
# (the model ran out of tokens or was stopped at the closing tag).
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
# Around the JSON of a block: whitespace and an optional code fence.
_BODY_START = re.compile(r"\s*(?:```[\w+-]*\s*)?")
_BODY_END = re.compile(r"\s*(?:```\s*)?(?:</tool_call>)?")
# Strict mode: the JSON alone in the block, then the closing tag (or the next block, or the
# end of the answer: a model stopped at the closing tag).
_STRICT_BODY_START = re.compile(r"\s*")
_STRICT_BODY_END = re.compile(r"\s*(?:</tool_call>|(?=<tool_call>)|\Z)")

SYNTAX = CallSyntax(
    prefix='<tool_call>\n{"name": "',
    prefix_re=re.compile(r'<tool_call>\s*\{\s*"name"\s*:\s*"'),
    after_name=', "arguments": ',
    after_name_re=re.compile(r'\s*,\s*"(?:arguments|parameters)"\s*:\s*\{'),
    suffix="}\n</tool_call>",
    suffix_re=re.compile(r"\s*\}\s*</tool_call>"),
    separator="\n",
    anchor=_OPEN,
)


class HermesFormat(ChatFormat):
    """``<tool_call>`` JSON blocks (Hermes, Qwen2.5, Qwen3).

    ``description_first``: where several tools are offered, list each in the system prompt
    with its ``description`` before its ``name`` (the rest unchanged). With the usual order a
    small model that matches the request against a description tends to write the *next*
    tool's name — the nearest name after the text it matched; the embedded target chooses the
    right tool far more often this way. A single tool leaves nothing to choose and is listed
    as usual (for the embedded target, trained on the usual order, the new order costs
    argument accuracy there). Calls are written and parsed the same either way.
    """

    name = "hermes"

    markup_tags = ("<tool_response>", "</tool_response>", _OPEN, _CLOSE)

    def __init__(self, *, description_first: bool = False) -> None:
        self.description_first = description_first

    # -- rendering -------------------------------------------------------------------
    def system_prompt(self, tools: Sequence[ToolDict]) -> str:
        """The tool section of the system prompt (empty without tools)."""
        if not tools:
            return ""
        listed = plain_tools(tools)
        if self.description_first and len(listed) > 1:
            listed = [_description_first(t) for t in listed]
        lines = "\n".join(dump_json(t) for t in listed)
        return _SYSTEM_HEAD + lines + _SYSTEM_TAIL

    def render_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolDict]
    ) -> list[dict[str, Any]]:
        """Messages for a plain chat template: tools appended to the system message (after a
        blank line), assistant calls as ``<tool_call>`` text, tool results as user turns."""
        out: list[dict[str, Any]] = []
        for message in messages:
            role = message.get("role")
            if role == "tool":
                block = f"<tool_response>\n{content_text(message.get('content'))}\n</tool_response>"
                if out and out[-1].get("_tool_turn"):
                    out[-1]["content"] += "\n" + block
                else:
                    out.append({"role": "user", "content": block, "_tool_turn": True})
            elif role == "assistant" and message.get("tool_calls"):
                text = content_text(message.get("content"))
                calls = self._render_call_texts(message_calls(message))
                out.append({"role": "assistant", "content": (text + "\n" if text else "") + calls})
            else:
                out.append({"role": role, "content": content_text(message.get("content"))})
        for message in out:
            message.pop("_tool_turn", None)
        tool_text = self.system_prompt(tools)
        if tool_text:
            if out and out[0]["role"] in ("system", "developer"):
                own = out[0]["content"]
                out[0] = {
                    "role": "system",
                    "content": own + "\n\n" + tool_text if own else tool_text,
                }
            else:
                out.insert(0, {"role": "system", "content": tool_text})
        return out

    def render_calls(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """``<tool_call>\\n{"name": NAME, "arguments": ARGS}\\n</tool_call>`` per call, ``\\n``-joined."""
        return self._render_call_texts(calls)

    def _render_call_texts(self, calls: Sequence[tuple[str, Any]]) -> str:
        blocks = []
        for name, args in calls:
            # Arguments that were never valid JSON are shown as written.
            args_text = args if isinstance(args, str) else dump_json(args)
            blocks.append(
                f'{_OPEN}\n{{"name": {dump_json(name)}, "arguments": {args_text}}}\n{_CLOSE}'
            )
        return "\n".join(blocks)

    # -- parsing ---------------------------------------------------------------------
    def parse(self, text: str, *, strict: bool = False) -> ParseResult:
        """Every ``<tool_call>`` block in ``text``, the rest being text.

        Without a block, lenient mode reads an answer that is as a whole bare JSON calls (one
        code fence around it allowed), and strict mode reports such an answer as an error:
        neither runs a call written inside prose. Strict mode also wants nothing but the JSON
        inside a block (no fence, no trailing text).
        """
        if _OPEN not in text:
            found = whole_json_calls(text, _EXAMPLE, fence=not strict)
            if found is None:
                return ParseResult([], text.strip(), [])
            if strict:
                why = CallError(
                    CallErrorKind.MALFORMED_CALL,
                    f"A tool call must be written inside <tool_call> tags: {_EXAMPLE}.",
                    name=found.calls[0].name if found.calls else None,
                    raw=text.strip(),
                )
                return ParseResult([], "", [why])
            return ParseResult(found.calls, "", found.errors)
        calls: list[RawCall] = []
        errors: list[CallError] = []
        outside: list[str] = []
        pos = 0
        while (at := text.find(_OPEN, pos)) >= 0:
            outside.append(text[pos:at])
            pos = self._parse_block(text, at, calls, errors, strict)
        outside.append(text[pos:])
        rest = "".join(outside).replace(_CLOSE, "")
        return ParseResult(calls, strip_fence_lines(rest).strip(), errors)

    @staticmethod
    def _parse_block(
        text: str, at: int, calls: list[RawCall], errors: list[CallError], strict: bool
    ) -> int:
        """Parse the block opened at ``at``; return where the text after it starts."""
        opener = _STRICT_BODY_START if strict else _BODY_START
        start = opener.match(text, at + len(_OPEN)).end()  # type: ignore[union-attr]
        try:
            # Decode first and look for the closing tag after: a "</tool_call>" inside an
            # argument string must not end the block.
            obj, end = decode_json(text, start)
        except ValueError as exc:
            block = _BLOCK.match(text, at)
            assert block is not None  # the pattern matches any text after "<tool_call>"
            raw = block.group(0)
            if not strip_fence_lines(block.group(1)).strip():
                errors.append(
                    CallError(
                        CallErrorKind.MALFORMED_CALL,
                        f"The tool call is empty. Write it as {_EXAMPLE}.",
                        raw=raw,
                    )
                )
            else:
                errors.append(malformed_json(raw, exc, _EXAMPLE))
            return block.end()
        closing = (_STRICT_BODY_END if strict else _BODY_END).match(text, end)
        if closing is None:  # strict: text after the JSON, inside the block
            close_at = text.find(_CLOSE, end)
            block_end = len(text) if close_at < 0 else close_at + len(_CLOSE)
            errors.append(
                CallError(
                    CallErrorKind.MALFORMED_CALL,
                    "A <tool_call> block must hold the call's JSON and nothing else. "
                    f"Write it as {_EXAMPLE}.",
                    raw=text[at:block_end],
                )
            )
            return block_end
        end = closing.end()
        raw = text[at:end]
        items = obj if isinstance(obj, list) and obj else [obj]
        for item in items:
            if not isinstance(item, dict):
                errors.append(
                    CallError(
                        CallErrorKind.MALFORMED_CALL,
                        f"A tool call must be a JSON object. Write it as {_EXAMPLE}.",
                        raw=raw,
                    )
                )
                continue
            result = call_from_object(item, raw, _EXAMPLE)
            if isinstance(result, RawCall):
                calls.append(result)
            else:
                errors.append(result)
        return end

    # -- decoding support ------------------------------------------------------------
    def skeleton(self, tools: Sequence[ToolDict]) -> SchemaSkeleton:
        """The drafting skeleton of ``<tool_call>`` blocks for these tools."""
        return SchemaSkeleton(SYNTAX, plain_tools(tools))

    @property
    def stop_strings(self) -> tuple[str, ...]:
        """None beyond end of turn: several calls may follow each other."""
        return ()


class HermesDescriptionFirstFormat(HermesFormat):
    """:class:`HermesFormat` with ``description_first=True`` (format name
    ``hermes-description-first``; the embedded target's)."""

    name = "hermes-description-first"

    def __init__(self) -> None:
        super().__init__(description_first=True)


def _description_first(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool`` with its function's ``description`` moved before its ``name``."""
    fn = tool.get("function")
    if not isinstance(fn, dict) or "description" not in fn:
        return tool
    ordered = {"description": fn["description"]}
    ordered.update((k, v) for k, v in fn.items() if k != "description")
    return {**tool, "function": ordered}
