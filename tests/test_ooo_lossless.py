"""OoO-Spec on a real (tiny, random) model: hints of any quality never change the output.

Random and adversarial hints (right tool, wrong tool, unknown tool, garbage values, hints that
land mid-decode from another thread) and faulty sidecars through `FastToolCaller`: the `ooo`
output is token-identical to `vanilla` / `toolspec`, and the stats say what happened.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest  # noqa: E402
from ooo_agent.calls import SidecarStats  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert",
            "description": "Convert money.",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
                "required": ["amount", "to"],
            },
        },
    },
]
PROMPTS = ["What is the weather in Paris?", "Convert 12 EUR to USD", "hi", "Weather for 3 days in Oslo"]


@pytest.fixture(scope="module")
def target() -> HFTarget:
    tokenizer = byte_tokenizer()
    model = tiny_model("llama", "sdpa", vocab_size=len(tokenizer), seed=5, dtype=torch.float64)
    return HFTarget(model, tokenizer, "hermes", node_budget=24)


@pytest.fixture(scope="module")
def reference(target: HFTarget) -> dict[str, list[int]]:
    return {
        p: target.generate_sync(
            TargetRequest([{"role": "user", "content": p}], TOOLS, mode="vanilla", max_new_tokens=32)
        ).token_ids
        for p in PROMPTS
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
hints = st.builds(
    lambda function, slots: (function, slots),
    st.sampled_from(["get_weather", "convert", "no_such_tool", "", None]),
    st.dictionaries(st.sampled_from(["city", "days", "amount", "to", "bogus"]), json_values, max_size=4),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.sampled_from(PROMPTS), hint=hints, land_after_s=st.sampled_from([None, 0.0, 0.01, 0.05]))
def test_any_hint_at_any_time_leaves_the_output_unchanged(
    target: HFTarget,
    reference: dict[str, list[int]],
    prompt: str,
    hint: tuple[str | None, dict[str, Any]],
    land_after_s: float | None,
) -> None:
    function, slots = hint
    box = HintBox()

    def land() -> None:
        box.set_function(function)
        for key, value in slots.items():
            box.set_slot(key, value)
        box.finish()

    writer = None
    if land_after_s is None:
        land()  # already there at step 0
    else:
        writer = threading.Timer(land_after_s, land)
        writer.start()
    request = TargetRequest([{"role": "user", "content": prompt}], TOOLS, mode="ooo", max_new_tokens=32, hint_box=box)
    out = target.generate_sync(request)
    if writer is not None:
        writer.join()
    assert out.token_ids == reference[prompt]


def test_a_hint_in_the_targets_own_words_is_accepted(target: HFTarget, reference: dict[str, list[int]]) -> None:
    """A hint equal to what the target writes is drafted and accepted (fewer forwards)."""
    prompt = PROMPTS[0]
    text = target.codec.decode(reference[prompt])
    box = HintBox()
    request = TargetRequest([{"role": "user", "content": prompt}], TOOLS, mode="ooo", max_new_tokens=32, hint_box=box)
    # Fresh targets over the same weights: the module's target has this output in its retrieval
    # memory already, which would make the toolspec baseline cheap for reasons of its own.
    plain = HFTarget(target.model, target.tokenizer, "hermes", node_budget=24).generate_sync(
        TargetRequest(request.messages, TOOLS, mode="toolspec", max_new_tokens=32)
    )
    fresh = HFTarget(target.model, target.tokenizer, "hermes", node_budget=24)
    # The random model writes no call, so the hint text itself is the n-gram context that helps:
    # put the exact output in a slot value so the rendered hint contains it.
    box.set_function("get_weather")
    box.set_slot("city", text)
    box.finish()
    out = fresh.generate_sync(request)
    assert out.token_ids == reference[prompt] == plain.token_ids
    assert out.stats.accepted_by_drafter.get("hint", 0) > 0
    assert out.stats.forward_passes < plain.stats.forward_passes


class Faulty:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.cancelled = False

    async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
        try:
            if self.behaviour == "raise":
                raise ValueError("boom")
            if self.behaviour == "hang":
                await anyio.sleep(60)
            if self.behaviour == "wrong-types":
                box.set_function("convert")
                box.set_slot("amount", "not a number")
                box.set_slot("to", {"nested": [1, 2]})
                return Hint("convert", {"amount": "not a number"}, True)
            box.set_function("get_weather")
            box.set_slot("city", "\x00\ufffd" * 20)
            return "garbage"
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("behaviour", "status"),
    [("raise", "error"), ("hang", "late"), ("wrong-types", "ok"), ("garbage", "garbage")],
)
async def test_faulty_sidecars_change_nothing(
    target: HFTarget, reference: dict[str, list[int]], behaviour: str, status: str
) -> None:
    messages = [{"role": "user", "content": PROMPTS[1]}]
    toolspec = await FastToolCaller(target, mode="toolspec", max_new_tokens=32).call(messages, TOOLS, dispatch=False)
    sidecar = Faulty(behaviour)
    before = threading.active_count()
    started = time.perf_counter()
    result = await FastToolCaller(target, sidecar, max_new_tokens=32).call(messages, TOOLS, dispatch=False)
    assert time.perf_counter() - started < 30, "the call waited for the sidecar"
    assert result.stats.decode.mode == "ooo"
    assert result.raw_text == toolspec.raw_text == target.codec.decode(reference[PROMPTS[1]])
    assert result.stats.sidecar.status == status
    assert sidecar.cancelled is (behaviour == "hang")
    assert threading.active_count() <= before + 1


@pytest.mark.anyio
async def test_slow_sidecar_lands_after_the_first_steps(
    target: HFTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hint that lands at step 3 is used from then on: the target waits at step 4 until the
    wave's answer is in, so the test does not depend on how the threads are scheduled."""
    waves: list[SidecarStats] = []
    run_wave = FastToolCaller._run_wave

    async def spy(self: FastToolCaller, sidecar: Any, request: Any, box: Any, stats: Any, spec: Any) -> None:
        waves.append(stats)
        await run_wave(self, sidecar, request, box, stats, spec)

    monkeypatch.setattr(FastToolCaller, "_run_wave", spy)

    class Slow:
        """Answers once the target reports its third decode step; holds the target's
        fourth step until the caller has taken the answer."""

        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            landed = threading.Event()
            mark_step = box.mark_step

            def mark(step: int) -> None:  # the target's thread
                mark_step(step)
                if step == 3:
                    landed.set()
                elif step > 3:
                    deadline = time.monotonic() + 10
                    while waves[-1].status != "ok" and time.monotonic() < deadline:
                        time.sleep(0.001)

            box.mark_step = mark  # type: ignore[method-assign]
            with anyio.fail_after(10):
                while not landed.is_set():
                    await anyio.sleep(0.001)
            box.set_function("get_weather")
            box.set_slot("city", "Paris")
            box.finish()
            return Hint("get_weather", {"city": "Paris"}, True)

    def fresh() -> HFTarget:  # the module's target may already know this output by heart
        return HFTarget(target.model, target.tokenizer, "hermes", node_budget=24)

    messages = [{"role": "user", "content": PROMPTS[0]}]
    plain = await FastToolCaller(fresh(), mode="toolspec", max_new_tokens=32).call(messages, TOOLS, dispatch=False)
    assert len(plain.stats.decode.accepted_lengths) > 4  # the target still decodes at step 4
    result = await FastToolCaller(fresh(), Slow(), max_new_tokens=32).call(messages, TOOLS, dispatch=False)
    sidecar = result.stats.sidecar
    assert sidecar.status == "ok"
    assert sidecar.function_arrival_step is not None and sidecar.function_arrival_step >= 3
    assert sidecar.slot_arrival_steps["city"] >= 3
    assert result.raw_text == plain.raw_text


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_hint_follows_the_tool_the_embedded_target_writes() -> None:
    """A sidecar that guessed the other tool: once the real target has written its function
    name, the hint is for that tool (the drafter reports it through the box); output unchanged."""
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset
    from ooo_agent.sidecar import WaveOptions
    from ooo_agent.sidecar._wave import WaveAssembler, WavePlan
    from ooo_agent.sidecar.prompts import chatml_prompt

    try:
        model, tokenizer = load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded tool-calling adapter not available: {exc}")
    real = HFTarget(model, tokenizer, "hermes")
    messages = [{"role": "user", "content": "Convert 12 EUR to USD please."}]
    plain = await FastToolCaller(real, mode="toolspec", max_new_tokens=64).call(messages, TOOLS, dispatch=False)
    assert plain.calls, plain.raw_text
    written = plain.calls[0].name
    wrong = next(i for i, t in enumerate(TOOLS) if t["function"]["name"] != written)

    class WrongGuess:
        """Names the other tool at once, then keeps listening until the target has written."""

        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            options = WaveOptions(schedule="parallel")
            assembler = WaveAssembler.start(WavePlan.build(request, chatml_prompt, options), box, options)
            assembler.answer(0, str(wrong))  # row 0: the function-index row
            with anyio.fail_after(60):
                while box.target_function is None:
                    await anyio.sleep(0.005)
            return assembler.finish().hint

    result = await FastToolCaller(real, WrongGuess(), max_new_tokens=64).call(messages, TOOLS, dispatch=False)
    assert result.raw_text == plain.raw_text
    assert result.stats.sidecar.status == "ok" and result.stats.sidecar.function_from_target


BOOK = [
    {
        "type": "function",
        "function": {
            "name": "book_flight",
            "description": "Book a flight.",
            "parameters": {
                "type": "object",
                "properties": {
                    "origin": {"type": "string", "description": "Departure city."},
                    "destination": {"type": "string", "description": "Arrival city."},
                    "date": {"type": "string", "description": "Departure date, YYYY-MM-DD."},
                    "passengers": {"type": "integer", "description": "Number of passengers."},
                },
                "required": ["origin", "destination", "date", "passengers"],
            },
        },
    }
]


@pytest.mark.slow
def test_a_whole_call_longer_than_32_tokens_is_verified_in_one_forward() -> None:
    """With the default tree (64 nodes, 64-token drafts) a right hint for a ~60-token call is
    accepted in the first decode step of a fresh target: prefill + 1 forward; a 32-node tree
    needs a second."""
    import json

    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset, target_format

    try:
        model, tokenizer = load_preset("smollm2-135m-toolcall", merge=True)
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded tool-calling adapter not available: {exc}")
    fmt = target_format("smollm2-135m-toolcall")
    messages = [{"role": "user", "content": "Book a flight from San Francisco to New York City on 2025-03-14 for 2 passengers."}]
    reference = HFTarget(model, tokenizer, fmt).generate_sync(TargetRequest(messages, BOOK, mode="vanilla", max_new_tokens=96))
    call = json.loads(reference.text.split("<tool_call>")[1].split("</tool_call>")[0])
    assert 32 < len(reference.token_ids) <= 64, reference.text

    def hinted(target: HFTarget) -> Any:
        box = HintBox()  # a fresh target: the hint's prior acceptance rates alone
        box.set_function(call["name"])
        for key, value in call["arguments"].items():
            box.set_slot(key, value)
        box.finish()
        return target.generate_sync(TargetRequest(messages, BOOK, mode="ooo", max_new_tokens=96, hint_box=box))

    default = hinted(HFTarget(model, tokenizer, fmt))
    small = hinted(HFTarget(model, tokenizer, fmt, node_budget=32, max_draft_tokens=32))
    assert default.token_ids == small.token_ids == reference.token_ids
    assert default.stats.forward_passes == 2
    assert small.stats.forward_passes >= 3
