"""OpenAISidecar over HTTP, and the `serve-sidecar` completions server it talks to."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from ooo_agent.errors import SidecarError
from ooo_agent.sidecar import HintBox, OpenAISidecar, SidecarRequest, WaveOptions
from ooo_agent.sidecar.openai import completions_url
from ooo_agent.sidecar.prompts import chatml_prompt

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
        },
    },
]
REQUEST = SidecarRequest([{"role": "user", "content": "Weather in Paris for 3 days?"}], TOOLS)


def _mocked(handler: Any, **kwargs: Any) -> OpenAISidecar:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAISidecar("http://sidecar.test/v1", client=client, **kwargs)


def test_completions_url() -> None:
    assert completions_url("http://h:1") == "http://h:1/v1/completions"
    assert completions_url("http://h:1/v1/") == "http://h:1/v1/completions"
    assert completions_url("http://h:1/v1/completions") == "http://h:1/v1/completions"


def test_one_request_carries_every_row_and_maps_choices_by_index() -> None:
    seen: list[dict[str, Any]] = []
    answers = {0: "0", 1: '"Paris"', 2: "3", 3: "null"}

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        # Answer out of order: the client must use `index`, not the position.
        choices = [{"index": i, "text": answers[i], "finish_reason": "stop"} for i in (3, 1, 2, 0)]
        return httpx.Response(200, json={"choices": choices})

    box = HintBox()
    report = anyio.run(_mocked(handler).run_wave, REQUEST, box)
    assert len(seen) == 1
    body = seen[0]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("sidecar", 32, 0)
    assert len(body["prompt"]) == 4
    assert body["prompt"][0].startswith("<|im_start|>system\nYou are a helpful assistant.")
    assert body["prompt"][0].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert report.hint.function == "get_weather"
    assert dict(report.hint.slots) == {"city": "Paris", "days": 3}
    assert report.arrivals[0] == "function"
    assert box.snapshot().complete


@pytest.mark.parametrize(
    ("status", "payload", "match"),
    [
        (500, {"error": "boom"}, "HTTP 500"),
        (200, "not json", "non-JSON"),
        (200, {"nothing": 1}, "no 'choices'"),
        (200, {"choices": [{"index": 9, "text": "0"}]}, "out of range"),
        (200, {"choices": [{"index": 0, "text": 5}]}, "malformed choice"),
    ],
)
def test_server_faults_become_sidecar_errors(status: int, payload: Any, match: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(payload, str):
            return httpx.Response(status, text=payload)
        return httpx.Response(status, json=payload)

    with pytest.raises(SidecarError, match=match):
        anyio.run(_mocked(handler).wave, REQUEST, HintBox())


def test_unreachable_server_is_a_sidecar_error() -> None:
    port = _free_port()
    sidecar = OpenAISidecar(f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(SidecarError, match="failed"):
        anyio.run(sidecar.wave, REQUEST, HintBox())


def test_api_key_is_sent_as_a_bearer_token() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"choices": [{"index": 0, "text": "0"}]})

    anyio.run(_mocked(handler, api_key="k1").wave, REQUEST, HintBox())
    anyio.run(_mocked(handler).wave, REQUEST, HintBox())
    assert seen == ["Bearer k1", None]


def test_template_choices() -> None:
    assert OpenAISidecar("http://x").template is chatml_prompt
    custom = OpenAISidecar("http://x", template=lambda messages: "T")
    assert custom.template([]) == "T"
    with pytest.raises(TypeError):
        OpenAISidecar("http://x", template=42)


# -- the server, end to end over loopback HTTP ------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scripted_sidecar() -> tuple[Any, Any]:
    """``(HFSidecar, tokenizer)`` over a scripted tiny model whose every row answers ``0``."""
    from ooo_agent.sidecar.hf import HFSidecar
    from sidecar_tiny import ScriptedLM, make_model, make_tokenizer

    tokenizer = make_tokenizer()
    zero = tokenizer.convert_tokens_to_ids("0")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model = ScriptedLM(make_model("qwen3", len(tokenizer)), {zero: end}, zero)
    return HFSidecar(model, tokenizer), tokenizer


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Any, Any]]:
    """A scripted tiny model (every row answers ``0``) behind uvicorn on a free port."""
    pytest.importorskip("torch")
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    from ooo_agent.sidecar.server import create_app

    sidecar, tokenizer = _scripted_sidecar()
    port = _free_port()
    config = uvicorn.Config(create_app(sidecar.generator), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}", sidecar, tokenizer
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_http_sidecar_gives_the_in_process_hint(served: tuple[str, Any, Any]) -> None:
    url, local, tokenizer = served
    remote = OpenAISidecar(url, template=tokenizer)
    over_http = anyio.run(remote.run_wave, REQUEST, HintBox())
    # Over HTTP every row goes in one request: the in-process parallel schedule asks the same.
    from ooo_agent.sidecar.hf import HFSidecar

    parallel = HFSidecar(local.model, tokenizer, options=WaveOptions(schedule="parallel"))
    in_process = anyio.run(parallel.run_wave, REQUEST, HintBox())
    assert over_http.hint == in_process.hint
    assert over_http.answers == in_process.answers
    # On the CPU the local default asks the function first, then only its tool's rows.
    function_first = anyio.run(local.run_wave, REQUEST, HintBox())
    assert local.schedule == "function-first"
    assert function_first.hint == in_process.hint
    assert function_first.answers.items() < in_process.answers.items()
    assert over_http.hint.function == "get_weather" and dict(over_http.hint.slots) == {"days": 0}


def test_random_model_answers_match_over_http(served: tuple[str, Any, Any]) -> None:
    """Raw answers of a non-scripted model: the batched server equals the in-process wave."""
    url, local, tokenizer = served
    from ooo_agent.sidecar.hf import HFSidecar

    scripted = local.generator.model
    saved = scripted.table, scripted.default
    scripted.table, scripted.default = {}, None  # the random model's own greedy choices
    try:
        remote = anyio.run(OpenAISidecar(url, max_tokens=5).run_wave, REQUEST, HintBox())
        mine = HFSidecar(
            scripted, tokenizer, max_new_tokens=5, options=WaveOptions(schedule="parallel")
        ).run_wave_sync(REQUEST, HintBox())
    finally:
        scripted.table, scripted.default = saved
    assert len(remote.answers) == 4
    assert any(remote.answers.values())
    assert remote.answers == mine.answers


def test_models_and_request_validation(served: tuple[str, Any, Any]) -> None:
    url = served[0]
    with httpx.Client(base_url=url, timeout=10) as client:
        models = client.get("/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["sidecar"]
        one = client.post("/v1/completions", json={"prompt": "hello", "max_tokens": 3}).json()
        assert one["object"] == "text_completion" and len(one["choices"]) == 1
        assert one["choices"][0]["text"] == "0"
        assert one["choices"][0]["finish_reason"] == "stop"
        many = client.post("/v1/completions", json={"prompt": ["a", "bb", "ccc"]}).json()
        assert [c["index"] for c in many["choices"]] == [0, 1, 2]
        cut = client.post("/v1/completions", json={"prompt": "x", "stop": ["0"]}).json()
        assert cut["choices"][0]["text"] == ""
        bad = [
            ({"prompt": "x", "temperature": 0.7}, 400),
            ({"prompt": "x", "model": "other"}, 404),
            ({"prompt": "x", "stream": True}, 400),
            ({"prompt": [], "model": "sidecar"}, 400),
            ({"prompt": "x", "max_tokens": -1}, 400),
            ({"prompt": "x", "n": 2}, 400),
            ({"max_tokens": 2}, 400),
            ({"prompt": ""}, 400),
        ]
        for body, status in bad:
            response = client.post("/v1/completions", json=body)
            assert response.status_code == status, body
            assert "message" in response.json()["error"]
        assert client.post("/v1/completions", content=b"{oops").status_code == 400


def test_serve_prints_its_ready_line_once_listening(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve-sidecar`` serves through the listening-socket ``serve`` of ``ooo-agent serve``
    (tested there: the line comes once a client can connect) and prints one ready line."""
    pytest.importorskip("torch")
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ooo_agent.sidecar.server import ready_line, serve

    sidecar, _ = _scripted_sidecar()
    seen: dict[str, Any] = {}

    def fake_serve(app: Any, *, host: str, port: int, log_level: str, on_listening: Any) -> None:
        seen.update(app=app, host=host, port=port)
        assert capsys.readouterr().out == ""  # nothing claims readiness before the port listens
        on_listening()

    monkeypatch.setattr("ooo_agent.integrations.server.serve", fake_serve)
    serve(sidecar.generator, host="127.0.0.1", port=8123, model_name="side")
    out = capsys.readouterr().out
    assert out == "serving sidecar 'side' on http://127.0.0.1:8123/v1\n"
    assert out.strip() == ready_line("side", "127.0.0.1", 8123)
    assert (seen["host"], seen["port"]) == ("127.0.0.1", 8123)
    with TestClient(seen["app"]) as client:  # the app served is the sidecar's, under its name
        assert [m["id"] for m in client.get("/v1/models").json()["data"]] == ["side"]
