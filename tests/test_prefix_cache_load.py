"""The prefix cache under load: 16 sessions of several turns through the server, and threads
calling one target at once. The byte budget holds at every insertion, and every answer equals
the answer of a target without a cache (tiny random model, byte tokenizer)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from ooo_agent.caller import FastToolCaller  # noqa: E402
from ooo_agent.decoding.prefix_cache import PrefixCache  # noqa: E402
from ooo_agent.integrations.server import create_app  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402

BOUND = 2 * 2**20
"""Bytes the cache may hold: a few entries of these prompts (about 1 KiB a token)."""

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    for name, description in (
        ("get_weather", "Weather in a city."),
        ("get_time", "Time in a city."),
    )
]
CITIES = ["Paris", "Rome", "Oslo", "Lima", "Kyiv", "Pune", "Baku", "Doha",
          "Riga", "Bern", "Nice", "Cork", "Graz", "Kobe", "Perth", "Quito"]  # fmt: skip


def _turns(session: int) -> list[list[dict[str, Any]]]:
    """The session's requests: each turn's history holds fixed calls and results, so every
    request is known before any answer."""
    city = CITIES[session]
    history: list[dict[str, Any]] = [{"role": "user", "content": f"Weather in {city}?"}]
    turns = [list(history)]
    for k, name in enumerate(("get_weather", "get_time")):
        call = {"id": f"call_{k}", "type": "function",
                "function": {"name": name, "arguments": f'{{"city": "{city}"}}'}}  # fmt: skip
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": f"{k + len(city)} units"},
            {"role": "user", "content": "And the time there?" if k == 0 else "Thanks!"},
        ]
        turns.append(list(history))
    return turns


def _answer(body: dict[str, Any]) -> tuple[Any, ...]:
    message = body["choices"][0]["message"]
    calls = [
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()
    ]
    return message.get("content"), tuple(calls)


@pytest.fixture(scope="module")
def byte_model() -> Any:
    return tiny_model("llama", "sdpa", vocab_size=len(byte_tokenizer()), seed=23)


def _target(byte_model: Any, **kw: Any) -> HFTarget:
    return HFTarget(byte_model, byte_tokenizer(), "hermes", node_budget=16, **kw)


def _watched(cache: PrefixCache) -> list[int]:
    """The bytes the cache holds after every insertion (the list grows as it runs)."""
    held: list[int] = []
    insert = cache.insert

    def watched(ids: Any, kv: Any) -> None:
        insert(ids, kv)
        held.append(cache.nbytes)

    cache.insert = watched  # type: ignore[method-assign]
    return held


async def _serve(app: Any, sessions: int, *, at_once: bool) -> dict[tuple[int, int], Any]:
    answers: dict[tuple[int, int], Any] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:

        async def session(s: int) -> None:
            for t, messages in enumerate(_turns(s)):
                body = {"model": "m", "messages": messages, "tools": TOOLS, "max_tokens": 8}
                response = await client.post("/v1/chat/completions", json=body)
                assert response.status_code == 200, response.text
                answers[s, t] = _answer(response.json())

        if at_once:
            async with anyio.create_task_group() as group:
                for s in range(sessions):
                    group.start_soon(session, s)
        else:
            for s in range(sessions):
                await session(s)
    return answers


def test_sixteen_sessions_through_the_server_keep_the_bound_and_the_answers(
    byte_model: Any,
) -> None:
    target = _target(byte_model, prefix_cache_bytes=BOUND)
    assert target.prefix_cache is not None
    held = _watched(target.prefix_cache)
    app = create_app(FastToolCaller(target, mode="toolspec"), model_name="m", max_concurrency=4)
    cold = create_app(
        FastToolCaller(_target(byte_model, prefix_reuse=False), mode="toolspec"), model_name="m"
    )
    got = anyio.run(lambda: _serve(app, 16, at_once=True))
    want = anyio.run(lambda: _serve(cold, 16, at_once=False))
    assert len(got) == 16 * 3 and got == want
    assert len(held) >= 16 * 3 and max(held) <= BOUND
    assert target.prefix_cache.evictions > 0  # the bound was reached, not merely respected
    assert len(target.prefix_cache) >= 1


def test_threads_on_one_target_never_corrupt_the_cache(byte_model: Any) -> None:
    shared = _target(byte_model, prefix_cache_bytes=BOUND)
    cold = _target(byte_model, prefix_reuse=False)
    assert shared.prefix_cache is not None
    held = _watched(shared.prefix_cache)
    jobs = [(s, t, mode) for s in range(6) for t in range(3) for mode in ("vanilla", "toolspec")]

    def request(s: int, t: int, mode: str) -> TargetRequest:
        return TargetRequest(_turns(s)[t], TOOLS, mode=mode, max_new_tokens=8)  # type: ignore[arg-type]

    want = {job: cold.generate_sync(request(*job)).token_ids for job in jobs}
    go = threading.Barrier(4)

    def run(chunk: list[tuple[int, int, str]]) -> dict[tuple[int, int, str], list[int]]:
        go.wait()
        out = {}
        for s, t, mode in chunk:
            history = _turns(s)[t]
            if history[-1]["role"] == "user" and t:  # also warm a next turn, as an agent does
                shared.prefill_next_turn_sync(history[:-2], TOOLS)
            out[s, t, mode] = shared.generate_sync(request(s, t, mode)).token_ids
        return out

    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(run, [jobs[i::4] for i in range(4)]))
    got = {job: ids for part in parts for job, ids in part.items()}
    assert got == want
    assert held and max(held) <= BOUND
