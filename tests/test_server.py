"""The OpenAI-compatible server, driven by the official `openai` client over loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

import httpx  # noqa: E402
import uvicorn  # noqa: E402

from ooo_agent import FastToolCaller  # noqa: E402
from ooo_agent.integrations.server import create_app  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.replay import ReplayTarget  # noqa: E402

MODEL = "test-model"
TOKEN = "s3cret-token"
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Local time in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
]


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def respond(request: TargetRequest) -> str:
    """A deterministic stand-in for a model: reads the last user message."""
    if not request.tools:
        return "I will answer without tools: it is sunny in Paris."
    last = str(request.messages[-1].get("content") or "")
    if "both" in last:
        return call("get_weather", city="Paris") + "\n" + call("get_time", city="Paris")
    if "broken" in last:
        return call("get_weather", unit="kelvin")  # no city, bad unit
    if "just chat" in last:
        return "Just words, no call."
    if "surrogate" in last:
        return "A lone \ud800 surrogate the model wrote."  # model output is not always text
    if request.messages[-1].get("role") == "tool":
        return "It is 21 degrees in Paris."
    names = [t.name for t in request.tools]
    return call(names[0], city="Paris, France", unit="c") if names[0] == "get_weather" else call(names[0], city="Paris")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, **kwargs: Any) -> None:
        self.target = ReplayTarget(respond)
        app = create_app(FastToolCaller(self.target), model_name=MODEL, **kwargs)
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server(api_key=TOKEN, max_body_bytes=20_000) as running:
        yield running


@pytest.fixture()
def client(server: Server) -> Any:
    return openai.OpenAI(base_url=server.url, api_key=TOKEN, max_retries=0, timeout=10)


def ask(client: Any, text: str, **kwargs: Any) -> Any:
    kwargs.setdefault("tools", TOOLS)
    return client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}], **kwargs)


def test_models_lists_the_served_model(client: Any) -> None:
    assert [m.id for m in client.models.list().data] == [MODEL]


def test_tool_call_in_openai_shape(client: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS
    )
    completion = raw.parse()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    (tool_call,) = choice.message.tool_calls
    assert tool_call.type == "function" and tool_call.id.startswith("call_")
    assert tool_call.function.name == "get_weather"
    assert isinstance(tool_call.function.arguments, str)
    assert json.loads(tool_call.function.arguments) == {"city": "Paris, France", "unit": "c"}
    stats = json.loads(raw.headers["x-ooo-stats"])
    assert {"mode", "forward_passes", "total_s"} <= set(stats)
    extra = completion.model_extra or {}
    assert "decode" in extra["ooo"]["stats"]
    assert completion.usage is not None


def test_tool_result_turn_gives_text(client: Any) -> None:
    first = ask(client, "Weather in Paris?").choices[0].message
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "21C"},
    ]
    completion = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content == "It is 21 degrees in Paris."


def test_streaming_deltas_reassemble_to_the_same_calls(client: Any) -> None:
    plain = ask(client, "both please").choices[0].message.tool_calls
    stream = ask(client, "both please", stream=True, stream_options={"include_usage": True})
    calls: dict[int, dict[str, str]] = {}
    finish = None
    usage = None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                slot = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] += delta.id or ""
                if delta.function is not None:
                    slot["name"] += delta.function.name or ""
                    slot["arguments"] += delta.function.arguments or ""
    assert finish == "tool_calls" and usage is not None
    assert [calls[i]["name"] for i in sorted(calls)] == [c.function.name for c in plain]
    assert [json.loads(calls[i]["arguments"]) for i in sorted(calls)] == [
        json.loads(c.function.arguments) for c in plain
    ]
    assert all(calls[i]["id"].startswith("call_") for i in calls)


def test_tool_choice_none_yields_text(client: Any, server: Server) -> None:
    completion = ask(client, "Weather in Paris?", tool_choice="none")
    message = completion.choices[0].message
    assert message.tool_calls is None and "sunny" in (message.content or "")
    assert completion.choices[0].finish_reason == "stop"


def test_named_tool_choice_restricts_tools(client: Any, server: Server) -> None:
    choice = {"type": "function", "function": {"name": "get_time"}}
    message = ask(client, "Time?", tool_choice=choice).choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_time"]
    assert [t.name for t in server.target.requests[-1].tools] == ["get_time"]


def test_parallel_tool_calls_false_returns_one_call(client: Any) -> None:
    completion = ask(client, "both please", parallel_tool_calls=False)
    message = completion.choices[0].message
    assert len(message.tool_calls) == 1
    invalid = (completion.model_extra or {})["ooo"]["invalid_tool_calls"]
    assert [i["kind"] for i in invalid] == ["tool_choice"]  # the other call: listed, not returned
    assert invalid[0]["name"] != message.tool_calls[0].function.name


def test_rejected_call_is_reported_not_returned(client: Any) -> None:
    completion = ask(client, "broken call")
    message = completion.choices[0].message
    assert message.tool_calls is None and completion.choices[0].finish_reason == "stop"
    invalid = (completion.model_extra or {})["ooo"]["invalid_tool_calls"]
    assert invalid and invalid[0]["name"] == "get_weather"


def assert_openai_error(exc: Any, status: int) -> dict[str, Any]:
    assert exc.status_code == status
    body = exc.response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"]
    return dict(body["error"])


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}, "tools"),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"}, "tool_choice"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": TOOLS,
             "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}, "tool_choice"),
    ],
)  # fmt: skip
def test_malformed_requests_get_400(client: Any, kwargs: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, **kwargs)
    error = assert_openai_error(info.value, 400)
    assert error["type"] == "invalid_request_error"
    assert (error["param"] or "").startswith(param)


def test_invalid_json_gets_400(server: Server) -> None:
    response = httpx.post(
        f"{server.url}/chat/completions",
        content=b"{not json",
        headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_unknown_model_gets_404(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])
    assert assert_openai_error(info.value, 404)["code"] == "model_not_found"


def test_wrong_token_gets_401(server: Server) -> None:
    bad = openai.OpenAI(base_url=server.url, api_key="wrong-token", max_retries=0, timeout=10)
    with pytest.raises(openai.AuthenticationError) as info:
        ask(bad, "Weather in Paris?")
    assert assert_openai_error(info.value, 401)["code"] == "invalid_api_key"


@pytest.mark.parametrize("header", [None, "Bearer", "Basic s3cret-token", "Bearer s3cret-tokenX"])
def test_missing_or_malformed_token_gets_401(server: Server, header: str | None) -> None:
    headers = {} if header is None else {"authorization": header}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}
    for response in (
        httpx.get(f"{server.url}/models", headers=headers),
        httpx.post(f"{server.url}/chat/completions", json=body, headers=headers),
    ):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_api_key"


def test_oversized_body_gets_413(client: Any) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        ask(client, "x" * 50_000)
    assert_openai_error(info.value, 413)


def test_oversized_chunked_body_gets_413(server: Server) -> None:
    def body() -> Iterator[bytes]:
        yield b'{"model": "test-model", "messages": [{"role": "user", "content": "'
        for _ in range(30):
            yield b"x" * 1000
        yield b'"}]}'

    response = httpx.post(
        f"{server.url}/chat/completions", content=body(), headers={"authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 413


def test_unknown_route_gets_openai_shaped_404(server: Server) -> None:
    response = httpx.get(f"http://127.0.0.1:{server.port}/v2/nothing")
    assert response.status_code == 404 and "error" in response.json()


def test_concurrency_limit_serialises_generation() -> None:
    import anyio

    active = 0
    peak = 0

    class SlowTarget(ReplayTarget):
        async def generate(self, request: TargetRequest) -> Any:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await anyio.sleep(0.05)
            active -= 1
            return await super().generate(request)

    from ooo_agent.integrations.server import create_app as make

    app = make(FastToolCaller(SlowTarget(["ok"], cycle=True)), model_name=MODEL, max_concurrency=1)

    async def hammer() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            codes: list[int] = []

            async def one() -> None:
                codes.append((await http.post("/v1/chat/completions", json=body)).status_code)

            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(one)
            return codes

    assert anyio.run(hammer) == [200] * 5
    assert peak == 1


def test_bad_settings_are_refused() -> None:
    caller = FastToolCaller(ReplayTarget([]))
    with pytest.raises(ValueError, match="max_concurrency"):
        create_app(caller, max_concurrency=0)
    with pytest.raises(ValueError, match="max_body_bytes"):
        create_app(caller, max_body_bytes=0)


def test_history_the_format_cannot_render_gets_400() -> None:
    import anyio

    from ooo_agent.errors import FormatError

    class RenderingTarget(ReplayTarget):
        """Renders the prompt as a white-box target does before answering; its format cannot
        render a message naming "unrenderable"."""

        async def generate(self, request: TargetRequest) -> Any:
            if any("unrenderable" in str(m.get("content")) for m in request.messages):
                raise FormatError("this format cannot render that message")
            self.format.render_messages(request.messages, request.tools)
            return await super().generate(request)

    app = create_app(FastToolCaller(RenderingTarget(["ok"], cycle=True)), model_name=MODEL)

    async def post(payload: dict[str, Any]) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            return await http.post("/v1/chat/completions", json=payload)

    body = {"model": MODEL, "messages": [{"role": "user", "content": "unrenderable"}]}
    response = anyio.run(post, body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages"
    # A malformed call in the history is refused before any rendering, naming the field.
    broken = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {}}]}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}, broken]}
    response = anyio.run(post, body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[1].tool_calls[0].function.name"
    ok = anyio.run(post, {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "ok"


def test_failing_target_gets_502_without_a_traceback() -> None:
    import anyio

    from ooo_agent.errors import TargetError

    class DownTarget(ReplayTarget):
        async def generate(self, request: TargetRequest) -> Any:
            raise TargetError("upstream refused the connection")

    app = create_app(FastToolCaller(DownTarget([])), model_name=MODEL)

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            return await http.post("/v1/chat/completions", json=body)

    response = anyio.run(post)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "server_error" and "upstream refused" in error["message"]
    assert "Traceback" not in response.text


# -- OpenAI's contract: a forced tool_choice yields a call or an error ------------------------


@pytest.mark.parametrize("text", ["broken call", "just chat"])
@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "get_weather"}}]
)
def test_forced_tool_choice_without_a_valid_call_is_an_error_not_markup(
    client: Any, text: str, choice: Any
) -> None:
    """Never HTTP 200 with no call, finish_reason "stop" and the model's <tool_call> markup as
    content: a clear 400 (code tool_use_failed) saying why, the rejected calls in "ooo"."""
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            ask(client, text, tool_choice=choice, stream=stream)
        error = assert_openai_error(info.value, 400)
        assert error["code"] == "tool_use_failed" and error["param"] == "tool_choice"
        assert "asks for a call, but the model wrote no valid one" in error["message"]
        body = info.value.response.json()
        if text == "broken call":
            assert "'city' is a required property" in error["message"]
            (invalid,) = body["ooo"]["invalid_tool_calls"]
            assert invalid["name"] == "get_weather"
        else:
            assert "calls no tool" in error["message"] or "answered in text" in error["message"]
        assert "<tool_call>" not in error["message"]


def test_forced_tool_choice_with_a_valid_call_returns_it(client: Any) -> None:
    completion = ask(client, "Weather in Paris?", tool_choice="required")
    assert completion.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in completion.choices[0].message.tool_calls] == ["get_weather"]


def test_auto_tool_choice_may_still_answer_in_text(client: Any) -> None:
    completion = ask(client, "just chat")
    assert completion.choices[0].message.content == "Just words, no call."
    assert completion.choices[0].finish_reason == "stop"


# -- tool schemas and messages are checked ------------------------------------------------------


def tool_with(parameters: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "f", "parameters": parameters}}]


@pytest.mark.parametrize(
    ("parameters", "param", "words"),
    [
        ({"type": "objekt"}, "tools[0].function.parameters.type", "'objekt' is not valid"),
        (
            {"type": "object", "properties": {"a": {"type": "strng"}}},
            "tools[0].function.parameters.properties.a.type",
            "'strng' is not valid",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(["}}},
            "tools[0].function.parameters.properties.a.pattern",
            "is not a 'regex'",
        ),
        ({"type": "object", "required": "a"}, "tools[0].function.parameters.required", "array"),
        ({"type": "string"}, "tools[0].function.parameters.type", "type 'object'"),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
            "tools[0].function.parameters.properties.a.$ref",
            "'#/$defs/Missing' points nowhere",
        ),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
            "tools[0].function.parameters.properties.a.$ref",
            "is not local",
        ),
    ],
)
def test_tool_schemas_are_checked_against_the_meta_schema(
    client: Any, parameters: dict[str, Any], param: str, words: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        ask(client, "x", tools=tool_with(parameters))
    error = assert_openai_error(info.value, 400)
    assert error["param"] == param and error["code"] == "invalid_function_parameters"
    assert words in error["message"] and "'f'" in error["message"]


def test_a_valid_schema_with_refs_is_served(client: Any) -> None:
    parameters = {
        "type": "object",
        "$defs": {"City": {"type": "string", "minLength": 1}, "Tree": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        "properties": {
            "city": {"$ref": "#/$defs/City"},
            "tree": {"$ref": "#/$defs/Tree"},
            "note": {"type": "object", "default": {"$ref": "data, not a reference"}},
        },
        "required": ["city"],
    }
    tools = [{"type": "function", "function": {"name": "get_time", "parameters": parameters}}]
    message = ask(client, "Time?", tools=tools).choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_time"]


CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("messages", "param", "words"),
    [
        (
            [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [CALL]},
             {"role": "tool", "content": "21C"}],
            "messages[2].tool_call_id",
            "needs the id of the call it answers",
        ),
        (
            [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [CALL]},
             {"role": "tool", "tool_call_id": "call_9", "content": "21C"}],
            "messages[2].tool_call_id",
            "'call_9' answers no call",
        ),
        (
            [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_1", "content": "21C"}],
            "messages[1].tool_call_id",
            "answers no call",
        ),
        ([{"role": "wizard", "content": "x"}], "messages[0].role", "'wizard' is not a role"),
        ([{"content": "x"}], "messages[0].role", "is missing"),
        ([{"role": "user", "content": 5}], "messages[0].content", "must be a string or a list"),
        ([{"role": "user"}], "messages[0].content", "is required"),
        ([{"role": "assistant", "content": None}], "messages[0].content", "is required"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x"}}]}],
            "messages[0].content[0].type",
            "'image_url' content is not supported",
        ),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "messages[0].content[0].text", "string"),
        (
            [{"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": {}}}]}],
            "messages[0].tool_calls[0].function.arguments",
            "must be a string",
        ),
        ([{"role": "user", "content": "x", "tool_calls": [CALL]}], "messages[0].tool_calls", "only an assistant"),
        ([{"role": "user", "content": "x", "name": 7}], "messages[0].name", "must be a string"),
        (["hello"], "messages[0]", "must be an object"),
    ],
)  # fmt: skip
def test_messages_openai_would_refuse_get_400(
    client: Any, messages: list[Any], param: str, words: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    error = assert_openai_error(info.value, 400)
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert words in error["message"]


def test_text_parts_and_a_full_tool_round_are_accepted(client: Any, server: Server) -> None:
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "21C"}]},
    ]
    completion = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert completion.choices[0].message.content == "It is 21 degrees in Paris."
    refused = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot."}]}
    client.chat.completions.create(model=MODEL, messages=[messages[1], refused, messages[1]])
    assert server.target.requests[-1].messages[1]["content"] == "I cannot."  # kept, not dropped


def test_health_answers_without_auth(server: Server) -> None:
    response = httpx.get(f"http://127.0.0.1:{server.port}/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


# -- every answer is JSON or a complete stream ---------------------------------------------------


def post_raw(server: Server, content: bytes) -> httpx.Response:
    return httpx.post(
        f"{server.url}/chat/completions",
        content=content,
        headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"},
    )


@pytest.mark.parametrize(
    ("content", "code", "param"),
    [
        (b'{"model": "test-model", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}", "too_deep", None),
        (
            b'{"model": "test-model", "messages": [{"role": "user", "content": "x", "meta": '
            + b'{"a": ' * 60 + b"1" + b"}" * 60 + b"}]}",
            "too_deep",
            "messages[0].meta" + ".a" * 45,
        ),
        (b'{"model": "test-model", "messages": [{"role": "user", "content": "\\\\ud800 hi"}]}', None, None),
        (
            b'{"model": "test-model", "messages": [{"role": "user", "content": "hi \\ud800"}]}',
            "invalid_unicode",
            "messages[0].content",
        ),
        (
            b'{"model": "test-model", "messages": [{"role": "user", "content": "hi", "\\udfff": 1}]}',
            "invalid_unicode",
            "messages[0]",
        ),
        (b'{"model": "test-model", "temperature": NaN, "messages": [{"role": "user", "content": "x"}]}',
         "invalid_json", None),
        (b'{"model": "test-model", "max_tokens": ' + b"9" * 5000 + b', "messages": []}', "invalid_json", None),
        (b'{"model": "test-model", "messages": [{"role": "user", "content": "\xff"}]}', "invalid_json", None),
    ],
    ids=["deep-list", "deep-object", "escaped-backslash", "surrogate", "surrogate-key", "nan",
         "huge-int", "not-utf8"],
)  # fmt: skip
def test_hostile_bodies_get_a_json_400(
    server: Server, content: bytes, code: str | None, param: str | None
) -> None:
    response = post_raw(server, content)
    if code is None:  # an escaped backslash, not a surrogate: served
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code and error["param"] == param and error["type"] == "invalid_request_error"


def test_a_lone_surrogate_the_model_writes_is_escaped_json(client: Any, server: Server) -> None:
    """Model output may hold one: the body stays valid UTF-8 JSON, the text comes back intact."""
    completion = ask(client, "surrogate please", tool_choice="auto")
    assert completion.choices[0].message.content == "A lone \ud800 surrogate the model wrote."
    pieces = []
    for chunk in ask(client, "surrogate please", stream=True):
        pieces.extend(c.delta.content or "" for c in chunk.choices)
    assert "".join(pieces) == "A lone \ud800 surrogate the model wrote."


def test_an_unexpected_failure_is_a_json_500() -> None:
    import anyio

    from ooo_agent.integrations import server as server_module

    app = create_app(FastToolCaller(ReplayTarget(["ok"], cycle=True)), model_name=MODEL)

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
            return await http.post("/v1/chat/completions", json=body)

    original = server_module.completion_response
    server_module.completion_response = explode  # type: ignore[assignment]
    try:
        response = anyio.run(post)
    finally:
        server_module.completion_response = original  # type: ignore[assignment]
    assert response.status_code == 500
    assert response.json()["error"] == {
        "message": "Internal error.", "type": "server_error", "param": None, "code": "internal_error"
    }


def hostile_bodies() -> list[tuple[str, bytes, bool]]:
    """(kind, body, streamed) for each kind of request the load test mixes: ordinary ones,
    streamed or not, forced or not, and hostile ones."""

    def body(**fields: Any) -> bytes:
        return json.dumps({"model": MODEL, **fields}).encode()

    user = [{"role": "user", "content": "Weather in Paris?"}]
    deep = b'{"model": "test-model", "messages": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    surrogate = body(messages=user).replace(b"Paris?", b"Paris \\ud83d?")
    return [
        ("call", body(messages=user, tools=TOOLS), False),
        ("call-stream", body(messages=user, tools=TOOLS, stream=True), True),
        ("both-stream", body(messages=[{"role": "user", "content": "both"}], tools=TOOLS, stream=True), True),
        ("text", body(messages=[{"role": "user", "content": "just chat"}], tools=TOOLS), False),
        ("model-surrogate", body(messages=[{"role": "user", "content": "surrogate"}], stream=True), True),
        ("forced-broken", body(messages=[{"role": "user", "content": "broken"}], tools=TOOLS,
                               tool_choice="required", stream=True), True),
        ("nested", deep, False),
        ("surrogate", surrogate, True),
        ("oversize", body(messages=[{"role": "user", "content": "x" * 30_000}], tools=TOOLS), False),
        ("bad-schema", body(messages=user, tools=tool_with({"type": "objekt"})), True),
        ("no-tool-call-id", body(messages=[*user, {"role": "tool", "content": "21C"}]), False),
        ("nan", body(messages=user).replace(b'"model"', b'"temperature": NaN, "model"'), False),
    ]  # fmt: skip


def check_answer(response: httpx.Response, streamed: bool) -> str | None:
    """What is wrong with one answer (None: JSON in OpenAI's shape, or a complete stream)."""
    if response.status_code != 200 or not streamed:
        try:
            data = response.json()
        except ValueError:
            return f"non-JSON {response.status_code}: {response.text[:80]!r}"
        if response.status_code != 200:
            keys = set(data.get("error", {}))
            return None if keys == {"message", "type", "param", "code"} else f"bad error {data}"
        return None if data.get("object") == "chat.completion" else f"bad body {data}"
    events = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]
    if not events or events[-1] != "[DONE]":
        return f"truncated stream ending {response.text[-80:]!r}"
    for event in events[:-1]:
        try:
            json.loads(event)
        except ValueError:
            return f"non-JSON event {event[:80]!r}"
    return None


def test_under_load_with_hostile_bodies_every_answer_is_json_or_a_complete_stream() -> None:
    """1,000 requests, 16 at a time, over loopback to the real server on a replay target, a
    third of them hostile: 0 non-JSON answers, 0 truncated streams, 0 500s."""
    import anyio

    kinds = hostile_bodies()
    counts: dict[str, int] = {}
    problems: list[str] = []
    statuses: dict[int, int] = {}

    with Server(api_key=TOKEN, max_body_bytes=20_000, max_concurrency=4) as running:
        url = f"{running.url}/chat/completions"
        headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}

        async def worker(http: httpx.AsyncClient, jobs: list[int]) -> None:
            while jobs:
                kind, content, streamed = kinds[jobs.pop() % len(kinds)]
                response = await http.post(url, content=content, headers=headers)
                counts[kind] = counts.get(kind, 0) + 1
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                problem = check_answer(response, streamed)
                if problem is not None:
                    problems.append(f"{kind}: {problem}")

        async def run() -> None:
            jobs = list(range(1000))
            limits = httpx.Limits(max_connections=16)
            async with (
                httpx.AsyncClient(timeout=30, limits=limits) as http,
                anyio.create_task_group() as tg,
            ):
                for _ in range(16):
                    tg.start_soon(worker, http, jobs)

        anyio.run(run)

    assert problems == []
    assert sum(counts.values()) == 1000 and set(counts) == {k for k, _, _ in kinds}
    assert 500 not in statuses and set(statuses) <= {200, 400, 413}
    assert statuses[413] == counts["oversize"]
    hostile = ("nested", "surrogate", "bad-schema", "no-tool-call-id", "nan", "forced-broken")
    assert statuses[400] == sum(counts[k] for k in hostile)


def test_a_prompt_longer_than_the_models_context_is_a_400_before_decoding() -> None:
    """A white-box target's context holds the prompt and the answer's budget, or nothing is
    decoded: OpenAI's context_length_exceeded instead of prefilling a megabyte whole."""
    import functools
    import types

    import anyio

    class SmallContextTarget(ReplayTarget):
        """One token per word, a 64-token context, as an HFTarget's model config gives it."""

        model = types.SimpleNamespace(config=types.SimpleNamespace(max_position_embeddings=64))

        def prompt_ids(self, messages: Any, tools: Any) -> list[int]:
            text = " ".join(str(m.get("content")) for m in messages) + json.dumps(tools)
            return list(range(len(text.split())))

    target = SmallContextTarget(["ok"], cycle=True)
    app = create_app(FastToolCaller(target, max_new_tokens=16), model_name=MODEL)

    async def post(text: str, **fields: Any) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": text}], **fields}
            return await http.post("/v1/chat/completions", json=body)

    assert anyio.run(post, "hi " * 40).status_code == 200  # 40 + 16 <= 64
    for text, fields in [("hi " * 60, {}), ("hi " * 40, {"max_tokens": 30})]:
        response = anyio.run(functools.partial(post, text, **fields))
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
        assert "maximum context length is 64 tokens" in error["message"]
    assert len(target.requests) == 1  # only the request that fits was decoded


@pytest.mark.slow
def test_the_embedded_target_refuses_a_prompt_beyond_its_context(embedded: Any) -> None:
    """On the real model: the context comes from its config and the prompt from its tokenizer;
    a prompt that fits is decoded, one that does not is a 400 without decoding."""
    import functools

    import anyio

    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = embedded
    target = HFTarget(model, tokenizer)
    limit = model.config.max_position_embeddings  # type: ignore[attr-defined]
    app = create_app(FastToolCaller(target, max_new_tokens=8), model_name=MODEL)

    async def post(text: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=120) as http:
            body = {"model": MODEL, "messages": [{"role": "user", "content": text}], "tools": TOOLS}
            return await http.post("/v1/chat/completions", json=body)

    too_long = anyio.run(functools.partial(post, "weather " * limit))
    assert too_long.status_code == 400, too_long.text
    assert too_long.json()["error"]["code"] == "context_length_exceeded"
    assert f"maximum context length is {limit} tokens" in too_long.json()["error"]["message"]
    fits = anyio.run(functools.partial(post, "Weather in Paris?"))
    assert fits.status_code == 200, fits.text
