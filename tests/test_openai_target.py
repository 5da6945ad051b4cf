"""OpenAITarget against a real HTTP server on loopback that checks requests and scripts answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ooo_agent.errors import TargetError
from ooo_agent.targets.base import Target, TargetRequest
from ooo_agent.targets.openai import OpenAITarget, chat_completions_url

pytestmark = pytest.mark.anyio

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]


def completion(message: dict[str, Any], finish: str = "stop", **usage: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": usage,
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class Scripted:
    """What the server answers (in order; the last reply repeats) and what it received."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def next_reply(self) -> Reply:
        with self.lock:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


def _handler(script: Scripted) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            script.requests.append(
                {"path": self.path, "headers": dict(self.headers), "json": json.loads(raw)}
            )
            reply = script.next_reply()
            time.sleep(reply.delay_s)
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, Scripted]]:
    script = Scripted()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def _target(base: str, **kwargs: Any) -> OpenAITarget:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("backoff_s", 0.01)
    return OpenAITarget("test-model", base_url=base, **kwargs)


async def test_tool_call_round_trip_and_request_shape(server: tuple[str, Scripted]) -> None:
    base, script = server
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    script.replies = [
        Reply(
            body=completion(
                {"content": None, "tool_calls": [call]},
                "tool_calls",
                prompt_tokens=50,
                completion_tokens=12,
                prompt_tokens_details={"cached_tokens": 20},
            )
        )
    ]
    async with _target(base) as target:
        assert isinstance(target, Target)
        assert target.format is None and target.modes == ("vanilla",)
        history = [
            *MESSAGES,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c0", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
                ],
            },
            {"role": "tool", "tool_call_id": "c0", "content": "rain"},
        ]
        gen = await target.generate(
            TargetRequest(
                history,
                TOOLS,
                mode="ooo",
                tool_choice="required",
                parallel_tool_calls=False,
                max_new_tokens=77,
            )
        )
    [request] = script.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["json"]
    assert body["model"] == "test-model"
    assert body["tools"] == TOOLS and body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False and body["max_tokens"] == 77
    sent_call = body["messages"][1]["tool_calls"][0]
    assert sent_call["type"] == "function"
    assert sent_call["function"]["arguments"] == '{"city": "Oslo"}'  # dict → JSON text
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "c0", "content": "rain"}

    assert gen.text == ""
    assert gen.raw_calls is not None
    [raw] = gen.raw_calls
    assert (raw.name, raw.arguments, raw.id) == ("get_weather", '{"city": "Paris"}', "call_1")
    assert gen.stats.mode == "vanilla" and gen.stats.finish_reason == "tool_calls"
    assert (gen.stats.prompt_tokens, gen.stats.prefill_tokens, gen.stats.new_tokens) == (50, 30, 12)
    assert gen.stats.decode_s > 0


async def test_text_answer_without_tools_or_usage(
    server: tuple[str, Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, script = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    script.replies = [
        Reply(body={"choices": [{"message": {"content": [{"type": "text", "text": "Hi"}]}}]})
    ]
    target = OpenAITarget("m", base_url=base + "/")
    gen = await target.generate(TargetRequest(MESSAGES, []))
    await target.aclose()
    body = script.requests[0]["json"]
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body
    assert script.requests[0]["headers"]["Authorization"] == "Bearer sk-env"
    assert gen.text == "Hi" and gen.raw_calls == []
    assert gen.stats.prompt_tokens == 0 and gen.stats.finish_reason == ""


async def test_retries_rate_limits_and_server_errors(server: tuple[str, Scripted]) -> None:
    base, script = server
    ok = Reply(body=completion({"content": "done"}))
    script.replies = [
        Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
        Reply(503, {"error": "busy"}),
        ok,
    ]
    async with _target(base, max_retries=2) as target:
        gen = await target.generate(TargetRequest(MESSAGES, TOOLS))
    assert gen.text == "done" and len(script.requests) == 3


async def test_gives_up_after_retries_with_the_servers_message(
    server: tuple[str, Scripted],
) -> None:
    base, script = server
    script.replies = [Reply(500, {"error": {"message": "kaboom"}})]
    async with _target(base, max_retries=1) as target:
        with pytest.raises(TargetError, match=r"HTTP 500: kaboom \(after 2 attempts\)"):
            await target.generate(TargetRequest(MESSAGES, TOOLS))
    assert len(script.requests) == 2


async def test_client_errors_are_not_retried(server: tuple[str, Scripted]) -> None:
    base, script = server
    script.replies = [Reply(401, {"error": {"message": "Incorrect API key provided"}})]
    async with _target(base, max_retries=3) as target:
        with pytest.raises(TargetError, match="HTTP 401: Incorrect API key"):
            await target.generate(TargetRequest(MESSAGES, TOOLS))
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"<html>oops</html>", "not JSON"),
        ({"object": "chat.completion"}, "no choices"),
        ({"choices": [{"finish_reason": "stop"}]}, "without a message"),
        ({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, "without a function name"),
    ],
)
async def test_bad_bodies_are_target_errors(
    server: tuple[str, Scripted], body: Any, match: str
) -> None:
    base, script = server
    script.replies = [Reply(200, body)]
    async with _target(base) as target:
        with pytest.raises(TargetError, match=match):
            await target.generate(TargetRequest(MESSAGES, TOOLS))


async def test_timeout_is_a_target_error(server: tuple[str, Scripted]) -> None:
    base, script = server
    script.replies = [Reply(body=completion({"content": "late"}), delay_s=1.0)]
    async with _target(base, timeout=0.2, max_retries=0) as target:
        with pytest.raises(TargetError, match="timed out"):
            await target.generate(TargetRequest(MESSAGES, TOOLS))


async def test_unreachable_server_is_a_target_error() -> None:
    async with _target("http://127.0.0.1:9/v1", max_retries=1) as target:
        with pytest.raises(TargetError, match="could not be reached"):
            await target.generate(TargetRequest(MESSAGES, TOOLS))


def test_url_and_argument_checks() -> None:
    assert chat_completions_url("http://h/v1/") == "http://h/v1/chat/completions"
    assert chat_completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
    with pytest.raises(ValueError):
        OpenAITarget("")
    with pytest.raises(ValueError):
        OpenAITarget("m", max_retries=-1)
