"""The next turn's wave prompt is prefilled into the sidecar's cache while the tools run.

Tiny random models (float32, the sidecar tests' ChatML tokenizer). The prefill changes no
answer: the next turn's wave answers as a sidecar's that was not warmed and one without any
cache; it only moves tokens from prefilled to cached.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import anyio  # noqa: E402

from ooo_agent import FastToolCaller  # noqa: E402
from ooo_agent.sidecar import Hint, HintBox, SidecarRequest, WaveOptions  # noqa: E402
from ooo_agent.targets.base import Mode  # noqa: E402
from ooo_agent.targets.replay import ReplayTarget  # noqa: E402
from ooo_agent.tools import tool  # noqa: E402
from sidecar_tiny import make_model, make_tokenizer  # noqa: E402
from test_sidecar_cache import (  # noqa: E402
    CALL_1,
    INDEX_PARALLEL,
    PRESET_LIKE,
    TOOLS,
    TURN_1,
    _shared_prefix,
    _sidecar,
    _wave,
)

CALLED = [*TURN_1, CALL_1]
NEXT = [*CALLED, {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 C"}]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return make_tokenizer()


@pytest.mark.parametrize(
    "options",
    [PRESET_LIKE, INDEX_PARALLEL, WaveOptions(function_choice="scored")],  # last: dialogue-first
    ids=["preset-like", "index-parallel", "dialogue-first"],
)
def test_the_next_turns_wave_answers_as_without_the_prefill_and_prefills_less(
    tokenizer: Any, options: WaveOptions
) -> None:
    model = make_model("qwen3", len(tokenizer), seed=3)
    warmed, plain = _sidecar(model, tokenizer, options), _sidecar(model, tokenizer, options)
    cold = _sidecar(model, tokenizer, options, prefix_cache_bytes=0)
    for sidecar in (warmed, plain):
        _wave(sidecar, TURN_1, TOOLS)  # the turn that wrote the call
    known = warmed.next_turn_ids(CALLED, TOOLS)
    shared = _shared_prefix(warmed, NEXT, TOOLS)
    assert shared[: len(known)] == known  # where the next wave's prompt starts, whatever it says
    assert warmed.tokenizer.decode(shared[len(known) :]).startswith("sunny")
    ran = warmed.prefill_next_turn_sync(CALLED, TOOLS)
    assert 0 < ran < len(known)  # only what the last wave did not leave in the cache
    assert warmed.prefill_next_turn_sync(CALLED, TOOLS) == 0  # already there

    got, got_box = _wave(warmed, NEXT, TOOLS)
    unwarmed, plain_box = _wave(plain, NEXT, TOOLS)
    alone, _ = _wave(cold, NEXT, TOOLS)
    assert got.answers == unwarmed.answers == alone.answers
    assert got.hint == unwarmed.hint == alone.hint
    assert got_box.usage.cached_tokens == plain_box.usage.cached_tokens + ran
    assert got_box.usage.prefill_tokens == plain_box.usage.prefill_tokens - ran
    assert cold.prefill_next_turn_sync(CALLED, TOOLS) == 0  # no cache: nothing to keep


def test_a_wave_started_while_the_prefill_runs_waits_for_it_and_answers_the_same(
    tokenizer: Any,
) -> None:
    model = make_model("llama", len(tokenizer), seed=9)
    sidecar = _sidecar(model, tokenizer, INDEX_PARALLEL)
    cold = _sidecar(model, tokenizer, INDEX_PARALLEL, prefix_cache_bytes=0)
    _wave(sidecar, TURN_1, TOOLS)
    inside, release = threading.Event(), threading.Event()
    real = sidecar.generator.decoder.forward
    order: list[str] = []

    def forward(*args: Any, **kwargs: Any) -> Any:
        if not inside.is_set():  # the prefill's one forward: held until released
            inside.set()
            assert release.wait(10)
            order.append("prefill")
        return real(*args, **kwargs)

    sidecar.generator.decoder.forward = forward
    prefill = threading.Thread(target=sidecar.prefill_next_turn_sync, args=(CALLED, TOOLS))
    prefill.start()
    assert inside.wait(10)
    got: list[Any] = []
    wave = threading.Thread(target=lambda: got.append(_wave(sidecar, NEXT, TOOLS)))
    wave.start()
    wave.join(0.3)
    assert wave.is_alive() and not got  # the model is the prefill's until it ends
    release.set()
    prefill.join(10)
    wave.join(10)
    sidecar.generator.decoder.forward = real
    assert order == ["prefill"]
    ((report, box),) = got
    assert report.answers == _wave(cold, NEXT, TOOLS)[0].answers
    assert box.usage.cached_tokens >= len(sidecar.next_turn_ids(CALLED, TOOLS))


# -- the caller ---------------------------------------------------------------------------------


@tool
async def slow_weather(city: str, days: int = 1) -> dict[str, Any]:
    """The weather.

    Args:
        city: The city.
        days: How many days.
    """
    await anyio.sleep(0.3)
    return {"city": city, "at": time.perf_counter()}


CALL = (
    '<tool_call>\n{"name": "slow_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
)


class _Replay(ReplayTarget):
    """Replays ``CALL`` in every mode."""

    def __init__(self) -> None:
        super().__init__([CALL], format="hermes")

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla", "toolspec", "ooo")


class _Warming:
    """A sidecar with no hint whose next-turn prefill is recorded and takes ``takes`` s."""

    def __init__(self, *, takes: float = 0.0, fail: bool = False) -> None:
        self.takes, self.fail = takes, fail
        self.prefills: list[tuple[float, list[dict[str, Any]], list[Any]]] = []
        self.ended: list[float] = []

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        return Hint()

    async def prefill_next_turn(self, messages: Any, tools: Any) -> int:
        self.prefills.append((time.perf_counter(), [dict(m) for m in messages], list(tools)))
        if self.fail:
            raise RuntimeError("no room for it")
        await anyio.to_thread.run_sync(time.sleep, self.takes, abandon_on_cancel=True)
        self.ended.append(time.perf_counter())
        return 1


@pytest.mark.parametrize("fail", [False, True])
def test_the_caller_prefills_the_next_wave_beside_the_tools_and_never_waits_for_it(
    fail: bool,
) -> None:
    sidecar = _Warming(takes=1.5, fail=fail)
    caller = FastToolCaller(_Replay(), sidecar, mode="ooo")
    started = time.perf_counter()
    result = caller.call_sync(TURN_1, [slow_weather])
    returned = time.perf_counter()
    assert result.ok and result.results[0].value["city"] == "Paris"  # a failure is harmless
    ((at, messages, tools),) = sidecar.prefills
    assert messages == [*TURN_1, result.assistant_message()]
    assert [t["function"]["name"] for t in tools] == ["slow_weather"]
    assert at < result.results[0].value["at"]  # beside the tool, not after it
    assert returned - started < 1.2 and not sidecar.ended  # the call did not wait for it


def test_the_caller_skips_the_wave_prefill_when_off_or_unsupported() -> None:
    off, undispatched, no_wave = _Warming(), _Warming(), _Warming()
    FastToolCaller(_Replay(), off, mode="ooo", prefill_next_turn=False).call_sync(
        TURN_1, [slow_weather]
    )
    FastToolCaller(_Replay(), undispatched, mode="ooo").call_sync(
        TURN_1, [slow_weather], dispatch=False
    )
    # Mode toolspec and no read-only tool to pre-execute: no wave ran, none is warmed.
    FastToolCaller(_Replay(), no_wave, mode="toolspec").call_sync(TURN_1, [slow_weather])
    assert off.prefills == undispatched.prefills == no_wave.prefills == []

    class _Plain:  # a sidecar without the method
        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            return Hint()

    result = FastToolCaller(_Replay(), _Plain(), mode="ooo").call_sync(TURN_1, [slow_weather])
    assert result.ok and result.results[0].value["city"] == "Paris"
