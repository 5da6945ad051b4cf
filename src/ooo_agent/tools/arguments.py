"""Decoding a call's arguments and describing schema errors, for
:mod:`ooo_agent.tools.validation`.

Both halves are written for the model that will read the result: a JSON error says where it
happened and the likely mistake (single quotes, a trailing comma, a truncated object); a
schema error says where, with a JSON path such as ``$.items[2].qty``.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ooo_agent._json import (
    MAX_DEPTH,
    finite_float,
    json_path,
    not_json_data,
    plain_json,
    reject_constant,
    reject_duplicate_keys,
)
from ooo_agent.calls import CallErrorKind, ErrorDetail

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "ArgumentsError",
    "decode_arguments",
    "schema_errors",
]

_MAX_ERRORS = 100


@dataclass(frozen=True)
class ArgumentsError:
    """Why arguments could not be decoded. ``message`` follows "The arguments of `tool` "."""

    kind: CallErrorKind
    message: str
    detail: str
    path: str = "$"
    """Where in the arguments the problem is."""


def _json_hint(text: str, error: json.JSONDecodeError) -> str:
    """The likely mistake behind a JSON error, in words a model can act on."""
    pos = error.pos
    at = text[pos] if pos < len(text) else ""
    before = text[:pos].rstrip()[-1:]
    if pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
        return "the JSON ends too early (truncated: close every string, object and array)"
    if at == "'" or (error.msg.startswith("Expecting property name") and at == "'"):
        return "JSON strings and keys need double quotes, not single quotes"
    if before == "," and at in "}]":
        return "trailing commas are not allowed in JSON"
    if error.msg.startswith("Extra data"):
        return "there is text after the JSON object"
    for word, fix in (("True", "true"), ("False", "false"), ("None", "null")):
        if text.startswith(word, pos):
            return f"write {fix}, not {word}"
    if error.msg.startswith("Expecting property name") and (at.isalpha() or at == "_"):
        return "object keys need double quotes"
    return ""


def _depth_ok(value: Any) -> bool:
    """Iteratively check that ``value`` is nested at most MAX_DEPTH deep."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


def _loads(text: str, lenient: bool) -> Any:
    # ``strict=False`` lets raw control characters (a literal newline) sit inside strings.
    # A key written twice is an error in both modes: which value was meant is unknowable.
    return json.loads(
        text,
        strict=not lenient,
        parse_constant=reject_constant,
        parse_float=finite_float,
        object_pairs_hook=reject_duplicate_keys,
    )


def decode_arguments(arguments: Any, *, lenient: bool) -> dict[str, Any] | ArgumentsError:
    """Decode a call's arguments (JSON text, an object, or nothing) into a JSON object."""
    if arguments is None:
        return {}
    if isinstance(arguments, bytes | bytearray):
        try:
            arguments = bytes(arguments).decode("utf-8")
        except UnicodeDecodeError:
            return ArgumentsError(CallErrorKind.MALFORMED_JSON, "are not UTF-8 text.", "not UTF-8")
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            return {}
        try:
            value = _loads(text, lenient)
            if isinstance(value, str) and value.strip()[:1] in ("{", "["):
                # Double-encoded: the object was sent as a JSON string.
                value = _loads(value.strip(), lenient)
        except json.JSONDecodeError as exc:
            where = f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"
            hint = _json_hint(exc.doc, exc)
            near = exc.doc[max(0, exc.pos - 30) : exc.pos + 10].replace("`", "'")
            message = (
                f"are not valid JSON: {where}" + (f": {hint}" if hint else "")
                + f". Near: `{near}`. Send the arguments as one JSON object with "
                "double-quoted keys and strings."
            )
            return ArgumentsError(CallErrorKind.MALFORMED_JSON, message, where)
        except RecursionError:
            return ArgumentsError(
                CallErrorKind.MALFORMED_JSON, "are nested too deeply.", "nested too deeply"
            )
        except ValueError as exc:  # NaN / Infinity / out-of-range numbers / huge integers
            return ArgumentsError(
                CallErrorKind.MALFORMED_JSON, f"are not valid JSON: {exc}.", str(exc)
            )
    else:
        try:
            value = plain_json(arguments)
        except ValueError as exc:
            return ArgumentsError(
                CallErrorKind.MALFORMED_CALL, f"are not JSON data: {exc}.", str(exc)
            )
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(value), "a number"
        )
        return ArgumentsError(
            CallErrorKind.SCHEMA_VIOLATION,
            f"must be a JSON object of named parameters, got {kind}.",
            f"expected an object, got {kind}",
        )
    if not _depth_ok(value):
        return ArgumentsError(
            CallErrorKind.SCHEMA_VIOLATION,
            f"are nested too deeply (more than {MAX_DEPTH} levels).",
            "nested too deeply",
        )
    problem = not_json_data(value)
    if problem is not None:
        path, reason = problem
        return ArgumentsError(
            CallErrorKind.MALFORMED_JSON, f"are not valid: {path} {reason}.", reason, path
        )
    return value


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(error: SchemaValidationError) -> ErrorDetail:
    """One schema error as a path and a message; unions are summarised, not dumped."""
    context = list(error.context or ())
    if error.validator in ("anyOf", "oneOf") and context:
        if all(e.validator == "type" and not e.relative_path for e in context):
            wanted = " or ".join(dict.fromkeys(repr(e.validator_value) for e in context))
            message = f"{_clip(repr(error.instance), 80)} is not of type {wanted}"
            return ErrorDetail(json_path(error.absolute_path), message)
        from jsonschema.exceptions import best_match

        best = best_match(context)
        if best is not None:
            return ErrorDetail(json_path(best.absolute_path), _clip(best.message))
    return ErrorDetail(json_path(error.absolute_path), _clip(error.message))


def schema_errors(validator: Validator, instance: Any) -> list[ErrorDetail]:
    """Every schema error of ``instance`` (up to a hundred), each with its JSON path."""
    details: list[ErrorDetail] = []
    try:
        for error in itertools.islice(validator.iter_errors(instance), _MAX_ERRORS):
            detail = _describe(error)
            if detail not in details:
                details.append(detail)
    except Exception as exc:  # a schema the validator cannot apply (bad regex, ...)
        details.append(ErrorDetail("$", f"the arguments could not be checked: {exc}"))
    return details
