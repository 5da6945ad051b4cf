"""What the server checks in a chat-completions request beyond its shape.

Each check raises :class:`RequestError` (a 400 in OpenAI's error shape, ``param`` the offending
field written as OpenAI writes it, ``messages[1].tool_call_id``): a body that is not strict
JSON (``NaN``, nesting deeper than :data:`MAX_DEPTH`, lone UTF-16 surrogates), messages OpenAI
would refuse (unknown role, a ``tool`` message answering no call, content that is not text) and
tool schemas that are not JSON Schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "MAX_DEPTH",
    "ROLES",
    "RequestError",
    "check_messages",
    "check_tool_schema",
    "dumps",
    "load_body",
    "param_path",
]

MAX_DEPTH = 48
"""Deepest nesting of a request body (a tool schema gets about 40 of these levels; OpenAI's
strict schemas allow 10). Bounds the recursion of every later step, schema checks included."""

ROLES = ("system", "developer", "user", "assistant", "tool")

_SURROGATE = re.compile("[\ud800-\udfff]")


class RequestError(ValueError):
    """A request the server refuses with 400: the message, the field, and a code."""

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_value") -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


def param_path(*parts: str | int) -> str:
    """``("messages", 1, "content")`` as OpenAI names the field: ``messages[1].content``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def load_body(body: bytes) -> Any:
    """The request body as JSON, held to what every later step can take: no ``NaN`` or
    ``Infinity``, at most :data:`MAX_DEPTH` levels, no string (or key) holding a lone UTF-16
    surrogate (``"\\ud800"`` is valid JSON but no text: a tokenizer cannot encode it)."""

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        data = json.loads(body, parse_constant=constant)
    except RecursionError:
        raise RequestError(
            f"Request body is nested deeper than {MAX_DEPTH} levels.", None, "too_deep"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an over-long integer, NaN
        raise RequestError(f"Request body is not valid JSON: {exc}", None, "invalid_json") from None
    _check_values(data)
    return data


def _check_values(data: Any) -> None:
    """Depth and surrogates, walked without recursion (the body may be hostile)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            where = param_path(*path[:MAX_DEPTH])
            raise RequestError(
                f"Request body is nested deeper than {MAX_DEPTH} levels (at {where}).",
                where,
                "too_deep",
            )
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, path)
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))


def _check_text(text: str, path: tuple[str | int, ...]) -> None:
    found = _SURROGATE.search(text)
    if found is not None:
        where = param_path(*path) or None
        raise RequestError(
            f"{where or 'Request body'}: holds a lone UTF-16 surrogate "
            f"(\\u{ord(found.group()):04x} at character {found.start()}), which is not text; "
            "send valid Unicode.",
            where,
            "invalid_unicode",
        )


def check_messages(messages: Any) -> None:
    """OpenAI's rules for ``messages``: a known ``role``; text content (a string or ``text``
    parts) where a role needs it (an assistant message may have ``tool_calls`` instead);
    ``tool_calls`` entries with an ``id`` and a function ``name`` and string ``arguments``; a
    ``tool`` message with the ``tool_call_id`` of a call of the assistant message before it.

    Anything that is not a list of objects is left to the request model to report.
    """
    if not isinstance(messages, list):
        return
    answerable: set[str] = set()  # call ids a tool message may answer at this point
    for index, message in enumerate(messages):
        at = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise RequestError(f"{at} must be an object, not {_kind(message)}.", at)
        role = message.get("role")
        if role not in ROLES:
            expected = ", ".join(repr(r) for r in ROLES)
            what = "is missing" if role is None else f"{role!r} is not a role"
            raise RequestError(f"{at}.role: {what}; expected one of {expected}.", f"{at}.role")
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise RequestError(f"{at}.name must be a string, not {_kind(name)}.", f"{at}.name")
        calls = message.get("tool_calls")
        if role == "assistant":
            ids = _check_tool_calls(calls, f"{at}.tool_calls")
            content = message.get("content")
            _check_content(content, f"{at}.content", optional=bool(ids), refusal=True)
            answerable = set(ids)
            continue
        if calls is not None:
            raise RequestError(
                f"{at}.tool_calls: only an assistant message has tool_calls, not a {role} one.",
                f"{at}.tool_calls",
            )
        _check_content(message.get("content"), f"{at}.content", optional=False)
        if role != "tool":
            answerable = set()
            continue
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise RequestError(
                f"{at}.tool_call_id: a 'tool' message needs the id of the call it answers "
                f"(a non-empty string), got {_kind(call_id)}.",
                f"{at}.tool_call_id",
                "missing_required_parameter" if call_id is None else "invalid_value",
            )
        if call_id not in answerable:
            known = ", ".join(repr(i) for i in sorted(answerable)) or "none"
            raise RequestError(
                f"{at}.tool_call_id: {call_id!r} answers no call of the assistant message "
                f"before it (its tool_calls ids: {known}); a 'tool' message must follow the "
                "assistant message whose call it answers.",
                f"{at}.tool_call_id",
            )


def _check_tool_calls(calls: Any, at: str) -> list[str]:
    """The ids of an assistant message's ``tool_calls``, each entry checked."""
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise RequestError(f"{at} must be a list, not {_kind(calls)}.", at)
    ids: list[str] = []
    for index, call in enumerate(calls):
        here = f"{at}[{index}]"
        if not isinstance(call, Mapping):
            raise RequestError(f"{here} must be an object, not {_kind(call)}.", here)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise RequestError(f"{here}.id must be a non-empty string, not {_kind(call_id)}.", f"{here}.id")
        if call.get("type", "function") != "function":
            raise RequestError(f"{here}.type must be 'function', not {call.get('type')!r}.", f"{here}.type")
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise RequestError(
                f"{here}.function must be an object, not {_kind(function)}.", f"{here}.function"
            )
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(
                f"{here}.function.name must be a non-empty string, not {_kind(name)}.",
                f"{here}.function.name",
            )
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise RequestError(
                f"{here}.function.arguments must be a string (the arguments as JSON text), "
                f"not {_kind(arguments)}.",
                f"{here}.function.arguments",
            )
        ids.append(call_id)
    return ids


def _check_content(content: Any, at: str, *, optional: bool, refusal: bool = False) -> None:
    """A string or a list of ``{"type": "text", "text": ...}`` parts (``None`` if optional;
    ``{"type": "refusal", "refusal": ...}`` parts too if ``refusal``, an assistant's)."""
    if content is None:
        if optional:
            return
        raise RequestError(
            f"{at} is required for this message (a string or a list of text parts).",
            at,
            "missing_required_parameter",
        )
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise RequestError(
            f"{at} must be a string or a list of content parts, not {_kind(content)}.", at
        )
    for index, part in enumerate(content):
        here = f"{at}[{index}]"
        if not isinstance(part, Mapping):
            raise RequestError(f"{here} must be an object, not {_kind(part)}.", here)
        kind = part.get("type")
        if kind == "refusal" and refusal:
            if not isinstance(part.get("refusal"), str):
                raise RequestError(
                    f"{here}.refusal must be a string, not {_kind(part.get('refusal'))}.",
                    f"{here}.refusal",
                )
            continue
        if kind != "text":
            raise RequestError(
                f"{here}.type: {kind!r} content is not supported; this model reads text parts "
                "only ({'type': 'text', 'text': ...}).",
                f"{here}.type",
                "unsupported_content",
            )
        if not isinstance(part.get("text"), str):
            raise RequestError(
                f"{here}.text must be a string, not {_kind(part.get('text'))}.", f"{here}.text"
            )


_META: Validator | None = None


def check_tool_schema(parameters: Mapping[str, Any], at: str, name: str) -> None:
    """``parameters`` checked against the JSON Schema (2020-12) meta-schema, ``pattern``s
    compiled, every ``$ref`` resolving inside it, and of type ``object`` when a type is given
    (a call's arguments are an object). ``at`` names the field
    (``tools[0].function.parameters``)."""
    global _META
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    if _META is None:
        _META = Draft202012Validator(
            Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
    try:
        error = best_match(_META.iter_errors(dict(parameters)))
    except RecursionError:
        raise RequestError(f"{at}: the schema is nested too deeply to check.", at, "too_deep") from None
    if error is not None:
        where = param_path(at, *error.absolute_path)
        raise RequestError(
            f"Invalid schema for function {name!r}: {error.message} (at {where}).",
            where,
            "invalid_function_parameters",
        )
    _check_refs(parameters, at, name)
    declared = parameters.get("type")
    if declared is not None and declared != "object":
        raise RequestError(
            f"Invalid schema for function {name!r}: parameters must be a JSON Schema of type "
            f"'object' (the arguments are an object), not {declared!r}.",
            f"{at}.type",
            "invalid_function_parameters",
        )


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: a ``$ref`` key there is no reference."""


def _check_refs(schema: Mapping[str, Any], at: str, name: str) -> None:
    """Every ``$ref`` in ``schema`` points inside it (``#``, ``#/$defs/...``, an ``$anchor``):
    a call could never be checked against one that does not (nothing is fetched)."""
    refs: list[tuple[str, tuple[str | int, ...]]] = []
    anchors: set[str] = set()
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("$ref"), str):
                refs.append((node["$ref"], (*path, "$ref")))
            if isinstance(node.get("$anchor"), str):
                anchors.add(node["$anchor"])
            stack.extend(
                (value, (*path, key)) for key, value in node.items() if key not in _DATA_KEYWORDS
            )
        elif isinstance(node, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(node))
    for ref, path in refs:
        if _resolves(schema, ref, anchors):
            continue
        where = param_path(at, *path)
        why = (
            "points nowhere in the schema"
            if ref.startswith("#")
            else "is not local; only references inside the schema ('#/$defs/...') are followed"
        )
        raise RequestError(
            f"Invalid schema for function {name!r}: $ref {ref!r} {why} (at {where}).",
            where,
            "invalid_function_parameters",
        )


def _resolves(schema: Mapping[str, Any], ref: str, anchors: set[str]) -> bool:
    """Whether the local reference ``ref`` names a node of ``schema``."""
    if not ref.startswith("#"):
        return False
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        return fragment in anchors
    node: Any = schema
    for token in fragment.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return isinstance(node, Mapping | bool)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def dumps(value: Any) -> str:
    """JSON text that always encodes as UTF-8: a lone surrogate (which model output may hold)
    is written as a ``\\uXXXX`` escape, a non-finite number as ``null``."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:  # NaN or infinity somewhere: strict JSON has no such numbers
        return dumps(_finite(value))
    if _SURROGATE.search(text) is None:
        return text
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by ``None``."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_finite(v) for v in value]
    return value
