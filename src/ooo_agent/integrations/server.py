"""An OpenAI-compatible HTTP server over a :class:`~ooo_agent.FastToolCaller`.

``POST /v1/chat/completions`` (tools, ``tool_choice``, ``parallel_tool_calls``, ``stream``) and
``GET /v1/models`` (and ``GET /health``, without auth), so the official ``openai`` client and
anything built on it work unchanged::

    app = create_app(FastToolCaller(target), model_name="smollm2-135m-toolcall", api_key="s3cret")
    serve(app, port=8000)          # or: ooo-agent serve --port 8000

The server does not run tools (the client does): the caller runs with ``dispatch=False`` and
the response carries validated calls. With ``server_tools``, read-only tools the server holds
itself may be pre-executed on the sidecar's prediction: a result the target's verified call
confirms comes back in the assistant message's ``ooo_tool_results`` extension field.

OoO statistics come in the ``ooo`` field of each response (and of the last stream chunk) and,
summarised, in the ``x-ooo-stats`` header. Every answer is JSON or a complete stream; errors
use OpenAI's shape ``{"error": {"message", "type", "param", "code"}}``: 400 malformed or
invalid request (not strict JSON, nested too deep, lone surrogates, messages OpenAI would
refuse, tool schemas that are not JSON Schema, a prompt beyond the model's context) or a forced
``tool_choice`` the model answered without a valid call (code ``tool_use_failed``), 401 missing/wrong token, 404 unknown model or
route, 413 body too large, 502 a failing target, 500 anything else.

Needs the ``server`` extra (``pip install "ooo-agent[server]"``).
"""

from __future__ import annotations

import hmac
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import CallResult
from ooo_agent.errors import FormatError, OooAgentError, TargetError
from ooo_agent.integrations._checks import (
    RequestError,
    check_messages,
    check_tool_schema,
    dumps,
    load_body,
    param_path,
)
from ooo_agent.integrations._openai import keep_first_call, stats_header, tools_for_choice
from ooo_agent.integrations._protocol import (
    ChatCompletionRequest,
    completion_chunks,
    completion_response,
    error_body,
    extension,
    new_completion_id,
)
from ooo_agent.tools import Tool, ToolContext, Toolset

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["DEFAULT_MAX_BODY_BYTES", "APIError", "create_app", "serve"]

DEFAULT_MAX_BODY_BYTES = 1 << 20
"""1 MiB: far above any real tool-calling request, small enough to refuse abuse cheaply."""

logger = logging.getLogger("ooo_agent.server")


class APIError(Exception):
    """An error answered in OpenAI's shape with an HTTP status (``extra``: more top-level
    fields beside ``error``)."""

    def __init__(
        self,
        status: int,
        message: str,
        type: str,
        param: str | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {**error_body(message, type, param, code), **(extra or {})}


class SafeJSONResponse(JSONResponse):
    """JSON that always encodes: a lone surrogate escaped, a non-finite number ``null``."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


class _JSONErrors:
    """Outermost guard: an exception no handler answered becomes a 500 in OpenAI's shape
    (logged with its traceback), never a plain-text page."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception:
            logger.exception("request failed")
            if started:  # nothing can be said any more; streams are built before they start
                raise
            body = error_body("Internal error.", "server_error", None, "internal_error")
            await SafeJSONResponse(body, status_code=500)(scope, receive, send)


def create_app(
    caller: FastToolCaller,
    *,
    model_name: str = "ooo-agent",
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_concurrency: int = 1,
    server_tools: Toolset | Iterable[Tool] | None = None,
) -> FastAPI:
    """Build the ASGI app.

    Args:
        caller: produces each turn (with ``dispatch=False``).
        model_name: the one model id served; requests naming another get 404.
        api_key: when set, requests need ``Authorization: Bearer <api_key>`` (else 401).
        max_body_bytes: larger request bodies get 413 without being read whole.
        max_concurrency: turns generated at once; the rest wait. Keep 1 for a single-stream
            in-process target (``HFTarget``); raise it for remote targets.
        server_tools: implementations the server may pre-execute on the sidecar's prediction
            (needs a caller with a sidecar and ``preexecute`` on). Only ``read_only`` tools with
            a function are used, and only for a request that offers a tool of the same name
            whose ``parameters`` equal the server tool's exactly. Results the target's
            verified call confirms come back in the message's ``ooo_tool_results`` field.
    """
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency}")
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be positive, not {max_body_bytes}")
    app = FastAPI(
        title="ooo-agent",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=SafeJSONResponse,
    )
    app.add_middleware(_JSONErrors)
    limiter = anyio.CapacityLimiter(max_concurrency)
    runnable = _runnable_tools(server_tools)
    created = int(time.time())

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return SafeJSONResponse(exc.body, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        body = error_body(str(exc.detail), kind, None, str(exc.status_code))
        return SafeJSONResponse(body, status_code=exc.status_code)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness for load balancers and orchestrators: no auth, no model work."""
        return {"status": "ok"}

    @app.get("/v1/models")
    async def list_models(request: Request) -> dict[str, Any]:
        _check_auth(request, api_key)
        model = {"id": model_name, "object": "model", "created": created, "owned_by": "ooo-agent"}
        return {"object": "list", "data": [model]}

    @app.get("/v1/models/{model_id:path}")
    async def get_model(model_id: str, request: Request) -> dict[str, Any]:
        _check_auth(request, api_key)
        if model_id != model_name:
            raise _unknown_model(model_id)
        return {"id": model_name, "object": "model", "created": created, "owned_by": "ooo-agent"}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        _check_auth(request, api_key)
        body = await _read_body(request, max_body_bytes)
        chat = _parse_request(body)
        if chat.model != model_name:
            raise _unknown_model(chat.model)
        toolset, choice = _request_tools(chat)
        async with limiter:  # the in-process target decodes one stream at a time
            await _check_context(caller, chat, toolset)
            result = await _generate(caller, chat, _with_handlers(toolset, runnable), choice)
        if chat.parallel_tool_calls is False:
            keep_first_call(result)
        if not result.calls and (choice == "required" or isinstance(choice, dict)):
            raise _no_forced_call(result, choice)
        completion_id = new_completion_id()
        headers = {"x-ooo-stats": stats_header(result.stats)}
        if chat.stream:
            include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
            # Built whole before the first byte: a stream that starts always ends.
            chunks = list(
                completion_chunks(
                    result, completion_id=completion_id, model=model_name, include_usage=include_usage
                )
            )
            return StreamingResponse(
                _aiter(chunks), media_type="text/event-stream", headers=headers
            )
        payload = completion_response(result, completion_id=completion_id, model=model_name)
        return SafeJSONResponse(payload, headers=headers)

    return app


def serve(
    app: FastAPI,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    on_listening: Callable[[], None] | None = None,
) -> None:
    """Run ``app`` with uvicorn until interrupted (binds to loopback unless told otherwise).

    The socket is bound and listening before ``on_listening`` runs, so a client told "ready"
    there can connect at once: the kernel queues its connection until uvicorn, still starting,
    accepts it (a line printed before ``uvicorn.run`` could be read before the port opened).
    """
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level)
    sock = config.bind_socket()  # exits with uvicorn's start-up code when the port is taken
    try:
        sock.listen(config.backlog)
        if on_listening is not None:
            on_listening()
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _check_auth(request: Request, api_key: str | None) -> None:
    if api_key is None:
        return
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    # compare_digest: the comparison's time must not reveal how much of the token matched
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), api_key.encode()):
        message = "Missing API key." if not header else "Incorrect API key provided."
        raise APIError(401, message, "invalid_request_error", None, "invalid_api_key")


async def _read_body(request: Request, limit: int) -> bytes:
    too_large = APIError(
        413, f"Request body exceeds {limit} bytes.", "invalid_request_error", None, "request_too_large"
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():  # a body without Content-Length is capped while read
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_request(body: bytes) -> ChatCompletionRequest:
    """The request, checked (strict JSON, messages, shape, tool schemas) or a 400."""
    try:
        data = load_body(body)
        if not isinstance(data, dict):
            raise RequestError("Request body must be a JSON object.")
        check_messages(data.get("messages"))
        try:
            chat = ChatCompletionRequest.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            param = param_path(*(p for p in first["loc"] if _is_field(p))) or None
            message = f"Invalid request: {param}: {first['msg']}" if param else first["msg"]
            raise RequestError(message, param) from None
        for index, tool in enumerate(chat.tools or []):
            if tool.function.parameters is not None:
                at = f"tools[{index}].function.parameters"
                check_tool_schema(tool.function.parameters, at, tool.function.name)
    except RequestError as exc:
        raise APIError(400, exc.message, "invalid_request_error", exc.param, exc.code) from None
    return chat


def _is_field(part: str | int) -> bool:
    """Whether a pydantic error location part names a field or an index (not a union member
    tag such as ``literal['auto','none']`` or ``NamedToolChoice``)."""
    if isinstance(part, int):
        return True
    return part.isidentifier() and not part[:1].isupper() and part not in _TYPE_TAGS


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def _no_forced_call(result: CallResult, choice: str | dict[str, Any]) -> APIError:
    """The 400 for a turn that ``"required"`` or a named ``tool_choice`` forced to call, but
    that holds no valid call: why, in the message; the rejected calls in ``ooo``."""
    label = repr(choice) if isinstance(choice, str) else repr(choice["function"]["name"])
    reasons = [_short(e.message) for e in result.errors] or ["the model answered in text"]
    if result.stats.decode.finish_reason == "length":
        reasons.append("the token budget ended the answer (max_tokens)")
    return APIError(
        400,
        f"tool_choice {label} asks for a call, but the model wrote no valid one: "
        + "; ".join(reasons),
        "invalid_request_error",
        "tool_choice",
        "tool_use_failed",
        extra={"ooo": extension(result)},
    )


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _request_tools(chat: ChatCompletionRequest) -> tuple[Toolset, str | dict[str, Any]]:
    choice = chat.tool_choice_value()
    try:
        toolset = Toolset.coerce(chat.tool_dicts())
    except (OooAgentError, ValueError, TypeError) as exc:
        raise APIError(400, f"Invalid tools: {exc}", "invalid_request_error", "tools") from None
    try:
        return tools_for_choice(toolset, choice), choice
    except ValueError as exc:
        raise APIError(400, str(exc), "invalid_request_error", "tool_choice") from None


def _runnable_tools(server_tools: Toolset | Iterable[Tool] | None) -> dict[str, Tool]:
    """The server tools that may be pre-executed: read-only, with a function, by name."""
    if server_tools is None:
        return {}
    toolset = Toolset.coerce(server_tools)
    return {t.name: t for t in toolset if t.read_only and t.has_handler}


def _with_handlers(toolset: Toolset, runnable: Mapping[str, Tool]) -> Toolset:
    """The request's tools (the client's schemas validate the calls), each offered tool that
    matches a runnable server tool (same name, equal parameters) given that tool's function."""
    if not runnable or not any(t.name in runnable for t in toolset):
        return toolset
    tools: list[Tool] = []
    for offered in toolset:
        own = runnable.get(offered.name)
        if own is None or offered.schema() != own.schema():
            tools.append(offered)
            continue
        tools.append(
            Tool.from_openai(
                offered.to_openai(),
                _server_handler(own),
                read_only=True,
                timeout=own.timeout,
                sequential=own.sequential,
            )
        )
    return Toolset(tools, strict=toolset.strict)


def _server_handler(own: Tool) -> Callable[..., Any]:
    """Runs ``own`` (validated by it again), with the call's context."""

    async def run(ooo_tool_context: ToolContext, **arguments: Any) -> Any:
        return await own.invoke(arguments, ooo_tool_context)

    return run


async def _check_context(caller: FastToolCaller, chat: ChatCompletionRequest, toolset: Toolset) -> None:
    """A prompt the target's model cannot hold (with the answer's token budget) is a 400,
    OpenAI's ``context_length_exceeded``, before any decoding: a white-box target (one with
    ``prompt_ids`` and a model whose config gives ``max_position_embeddings``) would otherwise
    prefill a megabyte of text whole. Other targets are not checked here."""
    target = caller.target
    config = getattr(getattr(target, "model", None), "config", None)
    limit = getattr(config, "max_position_embeddings", None)
    prompt_ids = getattr(target, "prompt_ids", None)
    if not isinstance(limit, int) or limit <= 0 or not callable(prompt_ids):
        return
    try:
        ids = await anyio.to_thread.run_sync(prompt_ids, chat.message_dicts(), toolset.to_openai())
    except FormatError as exc:
        raise APIError(400, f"Invalid messages: {exc}", "invalid_request_error", "messages") from None
    budget = chat.max_completion_tokens or chat.max_tokens or caller.max_new_tokens
    if len(ids) + budget > limit:
        raise APIError(
            400,
            f"This model's maximum context length is {limit} tokens; the messages and tools "
            f"take {len(ids)} and the answer may take {budget} more (max_tokens). Shorten the "
            "messages or lower max_tokens.",
            "invalid_request_error",
            "messages",
            "context_length_exceeded",
        )


async def _generate(
    caller: FastToolCaller, chat: ChatCompletionRequest, toolset: Toolset, choice: str | dict[str, Any]
) -> CallResult:
    preexecute = (
        caller.sidecar is not None and caller.preexecute and any(t.has_handler for t in toolset)
    )
    try:
        try:
            return await caller.call(
                chat.message_dicts(),
                toolset,
                # The client runs the tools; only results pre-executed here come back.
                dispatch="speculated" if preexecute else False,
                tool_choice=choice,
                parallel_tool_calls=chat.parallel_tool_calls is not False,
                max_new_tokens=chat.max_completion_tokens or chat.max_tokens,
            )
        except BaseExceptionGroup as group:  # a task group around the target wraps its error
            raise _single_error(group) from None
    except FormatError as exc:  # the messages cannot be rendered in the target's format
        raise APIError(400, f"Invalid messages: {exc}", "invalid_request_error", "messages") from None
    except TargetError as exc:
        logger.warning("target failed: %s", exc)
        raise APIError(502, f"The model failed: {exc}", "server_error", None, "target_error") from None
    except Exception:
        # Never leak a traceback to the client; the log keeps it.
        logger.exception("chat completion failed")
        raise APIError(500, "Internal error while generating.", "server_error") from None


def _single_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error inside (possibly nested) single-member groups, else the group itself."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _unknown_model(model: str) -> APIError:
    return APIError(
        404, f"The model {model!r} does not exist.", "invalid_request_error", "model", "model_not_found"
    )


async def _aiter(chunks: Any) -> AsyncIterator[str]:
    for chunk in chunks:
        yield chunk
