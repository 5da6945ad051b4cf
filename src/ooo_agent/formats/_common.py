"""Helpers shared by the call formats: tool dicts, message content, JSON call objects.

Nothing here knows a particular format; each format composes these pieces.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ooo_agent.calls import CallError, CallErrorKind, RawCall
from ooo_agent.errors import FormatError

__all__ = [
    "ARGUMENT_KEYS",
    "JsonCallScan",
    "content_text",
    "dump_json",
    "function_of",
    "loose_function",
    "message_calls",
    "plain",
    "plain_tools",
    "scan_json_calls",
    "strip_fence_lines",
]

ARGUMENT_KEYS = ("arguments", "parameters")
"""Keys a model may use for a call's arguments; formats render one, parse accepts both."""

_FENCE_LINE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$\n?", re.MULTILINE)
# Where a JSON call may start: an object whose first key is "name", or a list of them.
_CALL_START = re.compile(r'(?:\[\s*)?\{\s*"name"\s*:')
# Where decoding is worth trying: an object (or list of objects) opening with a call's key.
# Trying every brace instead would make parsing quadratic on brace-heavy text.
_CANDIDATE = re.compile(r'(?:\[\s*)?\{\s*"(?:name|arguments|parameters)"\s*:')


def plain(value: Any) -> Any:
    """``value`` with every Mapping turned into a dict and every tuple into a list, so that
    ``json.dumps`` accepts it (tool schemas often arrive as read-only mappings)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def plain_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools as plain OpenAI tool dicts; a bare ``{"name", "parameters"}`` function is wrapped."""
    out: list[dict[str, Any]] = []
    for tool in tools:
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
    detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
    where = (
        f" (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
    )
    return CallError(
        CallErrorKind.MALFORMED_JSON,
        f"The tool call is not valid JSON: {detail}{where}. Write it as {example}.",
        raw=raw,
    )


def decode_json(text: str, start: int = 0) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` that turns deep nesting into a ``ValueError`` too."""
    try:
        return _DECODER.raw_decode(text, start)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


_DECODER = json.JSONDecoder()


class JsonCallScan:
    """Calls written as bare JSON (``{"name": ..., "parameters": ...}`` or a list of them),
    found anywhere in a text, with the text around them."""

    def __init__(self, text: str, example: str) -> None:
        self.calls: list[RawCall] = []
        self.errors: list[CallError] = []
        self.outside: list[str] = []
        self._example = example
        self._scan(text)

    def _add(self, obj: Any, raw: str) -> None:
        items = obj if isinstance(obj, list) else [obj]
        for item in items:
            result = call_from_object(item, raw, self._example)
            if isinstance(result, RawCall):
                self.calls.append(result)
            else:
                self.errors.append(result)

    def _scan(self, text: str) -> None:
        pos = 0
        for start in _openers(text):
            if start < pos:
                continue
            try:
                obj, end = decode_json(text, start)
            except ValueError as exc:
                if not _CALL_START.match(text, start):
                    continue
                # A call that does not decode runs to the next call's start (or the end).
                nxt = _CALL_START.search(text, start + 1)
                end = nxt.start() if nxt else len(text)
                self.outside.append(text[pos:start])
                self.errors.append(malformed_json(text[start:end], exc, self._example))
                pos = end
                continue
            is_list = isinstance(obj, list) and obj and all(_is_call_dict(o) for o in obj)
            if not (_is_call_dict(obj) or is_list):
                continue
            self.outside.append(text[pos:start])
            self._add(obj, text[start:end])
            pos = end
        self.outside.append(text[pos:])


def _openers(text: str) -> Iterator[int]:
    for match in _CANDIDATE.finditer(text):
        yield match.start()


def scan_json_calls(text: str, example: str) -> JsonCallScan:
    """Every bare-JSON call in ``text`` (see :class:`JsonCallScan`)."""
    return JsonCallScan(text, example)
