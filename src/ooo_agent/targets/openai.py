"""``OpenAITarget``: a black-box target behind an OpenAI-compatible chat completions API.

The remote model returns structured tool calls, so there is no format to parse and no tree
decoding; the caller still validates and dispatches what comes back (and may pre-execute
read-only tools). Works with OpenAI, vLLM, llama.cpp's server, Ollama's ``/v1`` and our own
``ooo-agent serve``.

Example::

    async with OpenAITarget("gpt-4o-mini") as target:
        caller = FastToolCaller(target)
        result = await caller.call(messages, tools)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import httpx

from ooo_agent.calls import DecodeStats, RawCall
from ooo_agent.errors import TargetError
from ooo_agent.targets.base import Generation, Mode, TargetRequest

__all__ = ["DEFAULT_BASE_URL", "OpenAITarget", "chat_completions_url"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
"""Statuses worth another try: timeouts, conflicts, rate limits and server errors."""


def chat_completions_url(base_url: str) -> str:
    """``…/chat/completions`` for a ``…/v1`` base URL (the full endpoint passes through)."""
    url = base_url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


class OpenAITarget:
    """A :class:`~ooo_agent.targets.base.Target` reached over ``POST /chat/completions``.

    Args:
        model: the model name the server expects.
        base_url: API base including the version (``https://api.openai.com/v1``,
            ``http://127.0.0.1:8000/v1``); defaults to ``OPENAI_BASE_URL`` or OpenAI's.
        api_key: bearer token; defaults to ``OPENAI_API_KEY`` (none is sent without one,
            which suits local servers).
        timeout: seconds per HTTP attempt.
        max_retries: extra attempts after a 408/409/429/5xx answer or a network failure.
        backoff_s: first wait between attempts, doubled each time (``Retry-After`` wins
            when the server sends one), capped at ``max_backoff_s``.
        client: an ``httpx.AsyncClient`` to use (and leave open); by default one is made
            on first use and closed by :meth:`aclose` / ``async with``.
        extra_body: more JSON fields for every request (``{"temperature": 0}``).
        headers: more HTTP headers for every request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        client: httpx.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {max_retries}")
        self.model = model
        self.url = chat_completions_url(
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        )
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.extra_body = dict(extra_body or {})
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._headers = {"Content-Type": "application/json", **dict(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._client = client
        self._owns_client = client is None

    # -- the Target protocol -----------------------------------------------------------
    @property
    def format(self) -> None:
        """Always ``None``: the API returns structured calls."""
        return None

    @property
    def modes(self) -> tuple[Mode, ...]:
        """Only ``vanilla``: a remote API cannot be tree-decoded from here."""
        return ("vanilla",)

    async def generate(self, request: TargetRequest) -> Generation:
        """One chat completion for ``request`` (any requested mode runs as ``vanilla``).

        Raises :class:`~ooo_agent.errors.TargetError` on HTTP errors (after retries) and on
        answers that are not a chat completion.
        """
        body = self.request_body(request)
        started = time.perf_counter()
        payload = await self._post(body)
        generation = _generation(payload, self.url)
        generation.stats.decode_s = time.perf_counter() - started
        return generation

    def request_body(self, request: TargetRequest) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so that callers can inspect it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_api_message(m) for m in request.messages],
            "max_tokens": request.max_new_tokens,
        }
        if request.tools:
            body["tools"] = [_plain(t.to_openai()) for t in request.tools]
            body["tool_choice"] = _plain(request.tool_choice)
            body["parallel_tool_calls"] = request.parallel_tool_calls
        body.update(self.extra_body)
        return body

    # -- lifecycle ---------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the HTTP client this target opened (a client passed in stays open)."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> OpenAITarget:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- HTTP --------------------------------------------------------------------------
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        return self._client

    async def _post(self, body: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = await self._http().post(
                    self.url, json=body, headers=self._headers, timeout=self.timeout
                )
            except httpx.TimeoutException as exc:
                failure = f"timed out after {self.timeout:g} s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                failure = f"could not be reached: {exc or type(exc).__name__}"
            else:
                if response.status_code < 400:
                    return _json_body(response, self.url)
                failure = f"answered HTTP {response.status_code}: {_error_text(response)}"
                if response.status_code not in RETRY_STATUSES:
                    raise TargetError(f"POST {self.url} {failure}")
                retry_after = _retry_after(response)
            if attempt >= self.max_retries:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise TargetError(f"POST {self.url} {failure}{tries}")
            delay = self.backoff_s * (2**attempt) if retry_after is None else retry_after
            await anyio.sleep(max(0.0, min(delay, self.max_backoff_s)))
            attempt += 1


# -- request shaping --------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _api_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as the API wants it: tool-call arguments as JSON text, ``type`` set."""
    out = _plain(message)
    if not isinstance(out, dict):
        raise TargetError(f"a message must be a dict, got {type(message).__name__}")
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                continue
            call.setdefault("type", "function")
            args = fn.get("arguments", "")
            if not isinstance(args, str):
                fn["arguments"] = json.dumps(args, ensure_ascii=False)
    return out


# -- response reading -------------------------------------------------------------------
def _json_body(response: httpx.Response, url: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        snippet = response.text[:200]
        raise TargetError(f"POST {url} answered with a body that is not JSON: {snippet!r}") from exc


def _error_text(response: httpx.Response) -> str:
    """The server's own error message when it sent one, else the start of the body."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(payload, Mapping):
        error = payload.get("error", payload)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return json.dumps(payload)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def _raw_call(call: Any, url: str) -> RawCall:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise TargetError(f"POST {url} returned a tool call without a function name: {call!r:.200}")
    args = fn.get("arguments")
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    return RawCall(name=fn["name"], arguments="" if args is None else args, id=call_id)


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def _generation(payload: Any, url: str) -> Generation:
    """A :class:`Generation` from a chat completion body."""
    choices = payload.get("choices") if isinstance(payload, Mapping) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise TargetError(f"POST {url} returned no choices: {json.dumps(payload)[:200]}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise TargetError(f"POST {url} returned a choice without a message")
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise TargetError(f"POST {url} returned tool_calls that are not a list")
    raw_calls = [_raw_call(call, url) for call in tool_calls]
    legacy = message.get("function_call")
    if not raw_calls and isinstance(legacy, Mapping):
        raw_calls.append(_raw_call({"function": legacy}, url))
    usage = payload.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    prompt_tokens = _count(usage, "prompt_tokens")
    details = usage.get("prompt_tokens_details")
    cached = _count(details, "cached_tokens") if isinstance(details, Mapping) else 0
    finish = choice.get("finish_reason")
    stats = DecodeStats(
        mode="vanilla",
        prompt_tokens=prompt_tokens,
        prefill_tokens=max(0, prompt_tokens - cached),
        new_tokens=_count(usage, "completion_tokens"),
        finish_reason=finish if isinstance(finish, str) else "",
    )
    return Generation(text=_content_text(message.get("content")), raw_calls=raw_calls, stats=stats)
