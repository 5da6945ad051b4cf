"""Helpers shared by the call formats: tool dicts, message content, JSON call objects.

Nothing here knows a particular format; each format composes these pieces.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ooo_agent._json import finite_float, reject_constant, reject_duplicate_keys
from ooo_agent.calls import CallError, CallErrorKind, RawCall
from ooo_agent.errors import FormatError
from ooo_agent.offered import ToolLike, openai_tools

__all__ = [
    "ARGUMENT_KEYS",
    "WholeCalls",
    "content_text",
    "dump_json",
    "function_of",
    "loose_function",
    "message_calls",
    "plain",
    "plain_tools",
    "strip_fence_lines",
    "whole_json_calls",
]

ARGUMENT_KEYS = ("arguments", "parameters")
"""Keys a model may use for a call's arguments; formats render one, parse accepts both."""

_FENCE_LINE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$\n?", re.MULTILINE)
# One code fence around a whole output: ```json\n...\n```.
_WHOLE_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*)\n[ \t]*```", re.DOTALL)
# Where a JSON call starts: an object (or a list of objects) opening with a call's key.
_CALL_START = re.compile(r'(?:\[\s*)?\{\s*"(?:name|arguments|parameters)"\s*:')


def plain(value: Any) -> Any:
    """``value`` with every Mapping turned into a dict and every tuple into a list, so that
    ``json.dumps`` accepts it (tool schemas often arrive as read-only mappings)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def plain_tools(tools: Sequence[ToolLike]) -> list[dict[str, Any]]:
    """Tools as plain OpenAI tool dicts (an offered tool as the dict it came from); a bare
    ``{"name", "parameters"}`` function is wrapped."""
    out: list[dict[str, Any]] = []
    for tool in openai_tools(tools):
        if not isinstance(tool, Mapping):
            raise FormatError(f"a tool must be an OpenAI tool dict, got {type(tool).__name__}")
        if "function" not in tool and "name" in tool:
            out.append({"type": "function", "function": plain(tool)})
        else:
            out.append(plain(tool))
    return out


def function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``function`` part of an OpenAI tool dict (the dict itself for a bare function)."""
    fn = tool.get("function", tool)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise FormatError(f"tool has no function name: {tool!r:.200}")
    return fn


def loose_function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """As :func:`function_of`, for readers that skip what they cannot use: the ``function``
    part when it is a mapping, else the dict itself; never raises."""
    fn = tool.get("function")
    return fn if isinstance(fn, Mapping) else tool


def dump_json(value: Any) -> str:
    """JSON text as models are taught to write it: default separators, unicode kept."""
    try:
        return json.dumps(plain(value), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise FormatError(f"value is not JSON-serializable: {exc}") from exc


def content_text(content: Any) -> str:
    """A message's content as text (``None`` → ``""``; OpenAI content parts are joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    if isinstance(content, Mapping):
        return dump_json(content)
    return str(content)


def message_calls(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of an assistant message's OpenAI ``tool_calls``.

    Arguments given as JSON text are decoded; text that is not JSON is kept as a string
    so that a format can still show the model what it wrote.
    """
    calls: list[tuple[str, Any]] = []
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping):
            raise FormatError(f"a tool call must be a dict, got {type(call).__name__}")
        fn = call.get("function", call)
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise FormatError(f"tool call without a function name: {call!r:.200}")
        args = fn.get("arguments", {})
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args) if args.strip() else {}
        calls.append((fn["name"], args))
    return calls


def strip_fence_lines(text: str) -> str:
    """``text`` without Markdown code-fence lines (```` ``` ```` / ```` ```json ````)."""
    return _FENCE_LINE.sub("", text)


def _is_call_dict(obj: Any) -> bool:
    return isinstance(obj, dict) and "name" in obj


def call_from_object(obj: dict[str, Any], raw: str, example: str) -> RawCall | CallError:
    """A decoded ``{"name", "arguments" | "parameters"}`` object as a :class:`RawCall`."""
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return CallError(
            CallErrorKind.MALFORMED_CALL,
            f'The tool call has no function name (a string under "name"). Write it as {example}.',
            raw=raw,
        )
    args_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    extra = sorted(set(obj) - {"name", *ARGUMENT_KEYS, "id", "type"})
    if args_key is None and extra:
        return CallError(
            CallErrorKind.MALFORMED_CALL,
            f"The call to {name!r} puts its arguments ({', '.join(extra)}) at the top level; "
            f"nest them in one object. Write it as {example}.",
            name=name,
            raw=raw,
        )
    args: Any = obj.get(args_key, {}) if args_key else {}
    if args is None:
        args = {}
    if not isinstance(args, (dict, str)):
        return CallError(
            CallErrorKind.MALFORMED_CALL,
            f"The arguments of {name!r} must be a JSON object, got {type(args).__name__}. "
            f"Write it as {example}.",
            name=name,
            raw=raw,
        )
    call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    return RawCall(name=name, arguments=args, id=call_id, raw=raw)


def malformed_json(raw: str, exc: Exception, example: str) -> CallError:
    """The error for a call whose JSON does not decode."""
    detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    where = (
        f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
    )
    return CallError(
        CallErrorKind.MALFORMED_JSON,
        f"The tool call is not valid JSON: {detail}{where}. Write it as {example}.",
        raw=raw,
    )


def decode_json(text: str, start: int = 0) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` as a call is read: a key written twice, ``NaN`` /
    ``Infinity`` and numbers out of float range are ``ValueError`` s, and so is deep nesting."""
    try:
        return _DECODER.raw_decode(text, start)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


_DECODER = json.JSONDecoder(
    object_pairs_hook=reject_duplicate_keys, parse_constant=reject_constant, parse_float=finite_float
)


@dataclass(frozen=True)
class WholeCalls:
    """An output that is nothing but JSON calls: the calls, and the parts that were not."""

    calls: list[RawCall]
    errors: list[CallError]


def whole_json_calls(
    text: str,
    example: str,
    *,
    fence: bool = False,
    many: bool = True,
    separators: str = r"\s*",
) -> WholeCalls | None:
    """The calls of an output that is, as a whole, bare JSON calls; None when it is not.

    The output (whitespace stripped; with ``fence``, the inside of one Markdown code fence
    around all of it) must be a call object (``{"name", "arguments" | "parameters"}``) or a
    list of them; with ``many``, several such values, with ``separators`` (a regex) between
    them. JSON that sits anywhere inside prose is text, never a call: ``I will not do that.
    {"name": "delete_account", ...}`` is not a call. An output that opens a call and does not
    decode (``{"name": "a", "parameters": {"x": ``) is one MALFORMED_JSON error.
    """
    body = text.strip()
    if fence:
        fenced = _WHOLE_FENCE.fullmatch(body)
        if fenced is not None:
            body = fenced.group(1).strip()
    if not body or body[0] not in "{[":
        return None
    gap = re.compile(separators)
    calls: list[RawCall] = []
    errors: list[CallError] = []
    pos = 0
    while pos < len(body):
        try:
            obj, end = decode_json(body, pos)
        except ValueError as exc:
            if not _CALL_START.match(body, pos):
                return None
            errors.append(malformed_json(body[pos:], exc, example))
            break
        items = obj if isinstance(obj, list) and obj else [obj]
        if not all(_is_call_dict(item) for item in items):
            return None  # JSON, but not calls: text
        for item in items:
            result = call_from_object(item, body[pos:end], example)
            if isinstance(result, RawCall):
                calls.append(result)
            else:
                errors.append(result)
        after = gap.match(body, end)
        pos = after.end() if after is not None else end
        if after is None and pos < len(body):
            return None
        if pos < len(body) and not many:
            return None
    return WholeCalls(calls, errors)
