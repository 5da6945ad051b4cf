"""The OpenAI chat-completions wire format the server speaks: request models and responses.

Kept apart from the HTTP plumbing in ``server.py`` so the shapes can be read (and tested) on
their own. Requests are validated with pydantic; responses are plain dicts in OpenAI's shape.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ooo_agent.calls import CallErrorKind, CallResult
from ooo_agent.integrations._checks import dumps
from ooo_agent.integrations._openai import (
    finish_reason,
    preexecuted_results,
    stats_to_dict,
    usage,
)

__all__ = [
    "ChatCompletionRequest",
    "completion_chunks",
    "completion_response",
    "error_body",
    "new_completion_id",
    "tool_results",
]

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


class FunctionDefinition(BaseModel):
    """``tools[].function``."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolParam(BaseModel):
    """One entry of ``tools``."""

    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(BaseModel):
    name: str


class NamedToolChoice(BaseModel):
    """``{"type": "function", "function": {"name": ...}}``."""

    type: Literal["function"]
    function: NamedFunction


class ChatMessage(BaseModel):
    """One message; fields beyond the ones checked here pass through unchanged."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(exclude_none=True)
        if self.role == "developer":  # OpenAI's newer name for the system role
            data["role"] = "system"
        if isinstance(self.content, list):
            # Text parts, and an assistant's refusal parts (the checks admit no other kind).
            data["content"] = "".join(
                str(block.get("text", "") if block.get("type") == "text" else block.get("refusal", ""))
                for block in self.content
                if block.get("type") in ("text", "refusal")
            )
        data.setdefault("content", None)
        return data


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """``POST /v1/chat/completions``. Sampling fields (temperature, top_p, ...) are accepted
    and ignored: decoding is greedy, which is what makes speculation lossless."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[ToolParam] | None = None
    tool_choice: Literal["auto", "none", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    n: int | None = Field(default=None, ge=1, le=1)

    def tool_choice_value(self) -> str | dict[str, Any]:
        if self.tool_choice is None:
            return "auto"
        if isinstance(self.tool_choice, str):
            return self.tool_choice
        return self.tool_choice.model_dump()

    def tool_dicts(self) -> list[dict[str, Any]]:
        return [t.model_dump(exclude_none=True) for t in self.tools or []]

    def message_dicts(self) -> list[dict[str, Any]]:
        return [m.to_dict() for m in self.messages]


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def error_body(message: str, type: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def response_content(result: CallResult) -> str | None:
    """The assistant text; when every call was rejected the client sees what the model wrote,
    except markup (an echoed tool result): that is reported as an invalid call only."""
    if any(e.kind is CallErrorKind.MARKUP for e in result.errors):
        return None
    if result.errors and not result.calls:
        return result.raw_text or None
    return result.text or None


def invalid_calls(result: CallResult) -> list[dict[str, Any]]:
    return [
        {"name": e.name, "id": e.call_id, "kind": e.kind.value, "error": e.message, "raw": e.raw}
        for e in result.errors
    ]


def extension(result: CallResult) -> dict[str, Any]:
    """The ``ooo`` extension field: statistics and rejected calls."""
    return {"stats": stats_to_dict(result.stats), "invalid_tool_calls": invalid_calls(result)}


def tool_results(result: CallResult) -> list[dict[str, Any]]:
    """The ``ooo_tool_results`` extension of the assistant message: the verified calls the
    server pre-executed, ``[{"tool_call_id", "content"}]`` (content as a ``tool`` message would
    carry it)."""
    return [
        {"tool_call_id": call.id, "content": tool_result.content()}
        for call, tool_result in preexecuted_results(result)
    ]


def completion_response(result: CallResult, *, completion_id: str, model: str) -> dict[str, Any]:
    """A ``chat.completion`` object for one turn (``arguments`` as JSON strings)."""
    message: dict[str, Any] = {"role": "assistant", "content": response_content(result)}
    if result.calls:
        message["tool_calls"] = [c.to_openai() for c in result.calls]
    preexecuted = tool_results(result)
    if preexecuted:
        message["ooo_tool_results"] = preexecuted
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason(result), "logprobs": None}
        ],
        "usage": usage(result),
        "ooo": extension(result),
    }


def completion_chunks(
    result: CallResult, *, completion_id: str, model: str, include_usage: bool, piece: int = 16
) -> Iterator[str]:
    """The turn as server-sent events: role, text, then each call as a header delta followed
    by its arguments in ``piece``-character deltas, the finish reason (its delta carries
    ``ooo_tool_results`` when the server pre-executed calls), usage, ``[DONE]``. Each event's
    JSON encodes as UTF-8 whatever the model wrote (:func:`~._checks.dumps`)."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> str:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}],
            **extra,
        }
        return f"data: {dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    content = response_content(result) or ""
    for start in range(0, len(content), piece):
        yield chunk({"content": content[start : start + piece]})
    for index, call in enumerate(result.calls):
        header = {"index": index, "id": call.id, "type": "function",
                  "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [header]})
        arguments = call.arguments_json()
        for start in range(0, len(arguments), piece):
            delta = {"index": index, "function": {"arguments": arguments[start : start + piece]}}
            yield chunk({"tool_calls": [delta]})
    preexecuted = tool_results(result)
    final = {"ooo_tool_results": preexecuted} if preexecuted else {}
    yield chunk(final, finish_reason(result), ooo=extension(result))
    if include_usage:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage(result),
        }
        yield f"data: {dumps(body)}\n\n"
    yield "data: [DONE]\n\n"
