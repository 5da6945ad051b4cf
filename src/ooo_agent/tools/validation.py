"""Model-written calls → :class:`ToolCall` or :class:`CallError`; never an exception.

::

    outcome = validate_call(RawCall("get_weather", '{"city": "Paris"}'), toolset)
    if isinstance(outcome, CallError):
        messages.append(outcome.to_message())   # a retry turn the model can act on

For one call: the name is looked up (exactly), the arguments decoded, lenient mode's type fixes
applied (none in strict mode or for a ``destructive`` tool), the arguments checked against the
tool's JSON schema and then typed by its pydantic model, if any; the result is plain, finite,
valid-Unicode JSON. Each step's errors and fixes: docs/tools.md ("Validation").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ooo_agent._json import json_path, not_json_data
from ooo_agent.calls import CallError, CallErrorKind, ErrorDetail, RawCall, ToolCall, new_call_id
from ooo_agent.tools.arguments import ArgumentsError, decode_arguments, schema_errors
from ooo_agent.tools.decorator import Tool
from ooo_agent.tools.lenient import loosen
from ooo_agent.tools.toolset import ToolLike, Toolset

__all__ = ["canonical_arguments", "validate_call", "validate_calls"]

_MAX_LISTED_TOOLS = 40
_MAX_DETAILS = 20


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(name: str) -> str:
    """A name as an error message shows it: clipped, and written as a JSON string's body
    where it holds anything but plain printable text (``delete_account\\n``)."""
    clipped = _clip(name, 80)
    if clipped.isprintable() and clipped == clipped.strip():
        return clipped
    return json.dumps(clipped)[1:-1]


def _as_raw(raw: Any) -> RawCall | None:
    """A RawCall from a RawCall, ``{"name", "arguments"}`` or an OpenAI ``tool_call`` dict."""
    if isinstance(raw, RawCall):
        return raw
    if isinstance(raw, Mapping):
        function = raw.get("function")
        body: Mapping[str, Any] = function if isinstance(function, Mapping) else raw
        arguments = body.get("arguments", body.get("parameters"))
        call_id = raw.get("id")
        return RawCall(
            name=body.get("name"),  # type: ignore[arg-type]  # checked by the caller
            arguments=arguments,
            id=call_id if isinstance(call_id, str) else None,
        )
    return None


def _raw_text(raw: RawCall) -> str | None:
    if isinstance(raw.raw, str):
        return raw.raw
    return raw.arguments if isinstance(raw.arguments, str) else None


def _unknown_tool(name: str, toolset: Toolset, raw: RawCall, call_id: str | None) -> CallError:
    suggestion = toolset.suggest(name)
    names = list(toolset.names)
    listed = ", ".join(names[:_MAX_LISTED_TOOLS])
    if len(names) > _MAX_LISTED_TOOLS:
        listed += f", … ({len(names) - _MAX_LISTED_TOOLS} more)"
    parts = [f"Unknown tool `{_shown(name)}`."]
    if suggestion:
        parts.append(f"Did you mean `{suggestion}`?")
    parts.append(f"Available tools: {listed}." if names else "No tools are available.")
    return CallError(
        kind=CallErrorKind.UNKNOWN_TOOL,
        message=" ".join(parts),
        name=name,
        call_id=call_id,
        raw=_raw_text(raw),
    )


def _type_label(prop: Any, depth: int = 0) -> str | None:
    """A short type for a property schema: ``string``, ``"c" | "f"``, ``integer | null``."""
    if not isinstance(prop, dict) or depth > 3:
        return None
    if isinstance(prop.get("enum"), list):
        return " | ".join(json.dumps(v) for v in prop["enum"][:8])
    declared = prop.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        return " | ".join(str(t) for t in declared)
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            labels = [_type_label(b, depth + 1) for b in prop[key]]
            return " | ".join(dict.fromkeys(x for x in labels if x)) or None
    return None


def _parameter_summary(tool: Tool) -> str:
    """``city: string (required), unit: "c" | "f"`` — a reminder of the expected arguments."""
    schema = tool.schema()
    required = set(schema.get("required") or [])
    parts = []
    for key, prop in (schema.get("properties") or {}).items():
        label = _type_label(prop)
        text = f"{key}: {label}" if label else str(key)
        parts.append(text + (" (required)" if key in required else ""))
    return ", ".join(parts) if parts else "no parameters"


def _invalid(
    tool: Tool,
    kind: CallErrorKind,
    details: list[ErrorDetail],
    raw: RawCall,
    call_id: str | None,
) -> CallError:
    lines = [f"Invalid arguments for `{tool.name}`:"]
    lines += [f"- {d.path}: {d.message}" for d in details[:_MAX_DETAILS]]
    if len(details) > _MAX_DETAILS:
        lines.append(f"- … and {len(details) - _MAX_DETAILS} more")
    lines.append(f"Expected parameters: {_parameter_summary(tool)}.")
    lines.append(f"Call `{tool.name}` again with corrected arguments.")
    return CallError(
        kind=kind,
        message="\n".join(lines),
        name=tool.name,
        call_id=call_id,
        details=tuple(details),
        raw=_raw_text(raw),
    )


def _pydantic_details(error: ValidationError) -> list[ErrorDetail]:
    details = []
    for item in error.errors(include_url=False):
        got = item.get("input")
        suffix = "" if item["type"] == "missing" else f" (got {_clip(repr(got), 60)})"
        details.append(ErrorDetail(json_path(item["loc"]), item["msg"] + suffix))
    return details


def _check(tool: Tool, arguments: dict[str, Any], strict: bool) -> dict[str, Any] | tuple[
    CallErrorKind, list[ErrorDetail]
]:
    """Validated arguments, or the kind and details of what is wrong with them."""
    validator = tool.validator(strict=strict)
    model = tool.args_model
    # The schema first, in both modes: the pydantic model's lax coercions ("yes" → True,
    # "nan" → NaN, True → 1) must never see what the schema rejects.
    found = schema_errors(validator, arguments)
    if found:
        return _kind_of(found, coerced=not strict), found
    if model is None:
        # Lenient JSON-in-a-string decoding can bring what the text hid ("\\ud800" escapes).
        problem = not_json_data(arguments)
        if problem is not None:
            return CallErrorKind.SCHEMA_VIOLATION, [ErrorDetail(*problem)]
        return arguments
    try:
        instance = model.model_validate(arguments)
    except ValidationError as exc:
        # jsonschema's paths are cleaner than pydantic's (no union-member tags); use them
        # when they see the problem too.
        found = schema_errors(validator, arguments)
        if found:
            return _kind_of(found, coerced=not strict), found
        return CallErrorKind.SCHEMA_VIOLATION, _pydantic_details(exc)
    try:
        dumped = instance.model_dump(mode="json", by_alias=True, exclude_unset=True)
    except Exception as exc:  # a custom serializer failed
        return CallErrorKind.COERCION, [ErrorDetail("$", f"arguments cannot be serialised: {exc}")]
    # What the model accepted must satisfy the schema the model was shown.
    found = schema_errors(validator, dumped)
    if found:
        return CallErrorKind.SCHEMA_VIOLATION, found
    problem = not_json_data(dumped)
    if problem is not None:
        return CallErrorKind.SCHEMA_VIOLATION, [ErrorDetail(*problem)]
    result: dict[str, Any] = dumped
    return result


def _kind_of(details: list[ErrorDetail], *, coerced: bool) -> CallErrorKind:
    """Coercion failure when every problem is a value of a type that could not be converted."""
    if coerced and details and all(" is not of type " in d.message for d in details):
        return CallErrorKind.COERCION
    return CallErrorKind.SCHEMA_VIOLATION


def _validate(raw_input: Any, toolset: Toolset, strict: bool) -> ToolCall | CallError:
    raw = _as_raw(raw_input)
    if raw is None:
        return CallError(
            kind=CallErrorKind.MALFORMED_CALL,
            message="A tool call must have a name and arguments.",
        )
    call_id = raw.id if isinstance(raw.id, str) and raw.id else None
    name = raw.name
    if not isinstance(name, str) or not name.strip():
        return CallError(
            kind=CallErrorKind.MALFORMED_CALL,
            message="The tool call has no tool name. Write the name of one of the available "
            f"tools: {', '.join(toolset.names[:_MAX_LISTED_TOOLS]) or 'none'}.",
            call_id=call_id,
            raw=_raw_text(raw),
        )
    found = toolset.get(name)  # exactly: "delete_account\n" is not delete_account
    if found is None:
        return _unknown_tool(name, toolset, raw, call_id)
    # A destructive tool's arguments get no repairs: exactly what strict mode accepts.
    strict = strict or found.destructive
    decoded = decode_arguments(raw.arguments, lenient=not strict)
    if isinstance(decoded, ArgumentsError):
        return CallError(
            kind=decoded.kind,
            message=f"The arguments of `{found.name}` {decoded.message}",
            name=found.name,
            call_id=call_id,
            details=(ErrorDetail(decoded.path, decoded.detail),),
            raw=_raw_text(raw),
        )
    arguments = decoded
    if not strict:
        # The validator's own schema: the tool's, read-only, no copy on the hot path.
        schema = found.validator().schema
        arguments = loosen(arguments, schema, schema)
    checked = _check(found, arguments, strict)
    if isinstance(checked, tuple):
        return _invalid(found, checked[0], checked[1], raw, call_id)
    return ToolCall(id=call_id or new_call_id(), name=found.name, arguments=checked)


def validate_call(
    raw: RawCall | Mapping[str, Any],
    toolset: Toolset | Iterable[ToolLike],
    *,
    strict: bool | None = None,
) -> ToolCall | CallError:
    """Validate one call the model wrote.

    Args:
        raw: A :class:`RawCall` (or a ``{"name", "arguments", "id"}`` / OpenAI tool-call dict).
        toolset: The tools the model was offered.
        strict: Reject undeclared keys and apply no type fixes. ``None`` follows
            ``toolset.strict``.

    Returns:
        A :class:`ToolCall` (the raw id kept, or a fresh one) or a :class:`CallError` whose
        ``message`` is written for the model. Never raises.
    """
    try:
        tools = Toolset.coerce(toolset)
        mode = tools.strict if strict is None else bool(strict)
        return _validate(raw, tools, mode)
    except Exception as exc:  # last line of defence: model output is arbitrary
        return CallError(
            kind=CallErrorKind.MALFORMED_CALL,
            message=f"The tool call could not be validated ({type(exc).__name__}: "
            f"{_clip(str(exc), 200)}). Write the call again.",
        )


def validate_calls(
    raws: Iterable[RawCall | Mapping[str, Any]],
    toolset: Toolset | Iterable[ToolLike],
    *,
    strict: bool | None = None,
) -> tuple[list[ToolCall], list[CallError]]:
    """Validate every call of a turn: ``(valid calls in order, errors in order)``.

    Call ids are made unique within the turn (a repeated id gets a fresh one), since results
    are matched to calls by id.
    """
    tools = Toolset.coerce(toolset)
    calls: list[ToolCall] = []
    errors: list[CallError] = []
    seen: set[str] = set()
    for raw in raws:
        outcome = validate_call(raw, tools, strict=strict)
        if isinstance(outcome, CallError):
            errors.append(outcome)
            continue
        if outcome.id in seen:
            outcome = ToolCall(id=new_call_id(), name=outcome.name, arguments=outcome.arguments)
        seen.add(outcome.id)
        calls.append(outcome)
    return calls, errors


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        # JSON has one number type: 1 and 1.0 are the same argument.
        return int(value) if value.is_integer() and abs(value) < 2**63 else value
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return str(value)


def canonical_arguments(call_or_arguments: ToolCall | Mapping[str, Any]) -> str:
    """Canonical JSON of a call's arguments: keys sorted, no spaces, ``1.0`` written ``1``.

    Two calls with equal canonical arguments do the same thing, so a result computed
    speculatively for one can answer the other.

    >>> canonical_arguments({"b": 1.0, "a": [2, {"y": True, "x": None}]})
    '{"a":[2,{"x":null,"y":true}],"b":1}'
    """
    arguments = (
        call_or_arguments.arguments
        if isinstance(call_or_arguments, ToolCall)
        else call_or_arguments
    )
    return json.dumps(
        _canonical(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
