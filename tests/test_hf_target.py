"""HFTarget end to end on a tiny random model with a real (byte-level) tokenizer."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch")
from ooo_agent.formats.hermes import HermesFormat  # noqa: E402
from ooo_agent.sidecar.base import HintBox  # noqa: E402
from ooo_agent.targets.base import Target, TargetRequest  # noqa: E402
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
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def target() -> HFTarget:
    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    return HFTarget(model, tokenizer, "hermes", node_budget=16)


def _request(mode: str, **kw: Any) -> TargetRequest:
    return TargetRequest(MESSAGES, TOOLS, mode=mode, max_new_tokens=24, **kw)  # type: ignore[arg-type]


def test_is_a_target_with_all_modes(target: HFTarget) -> None:
    assert isinstance(target, Target)
    assert isinstance(target.format, HermesFormat)
    assert target.modes == ("vanilla", "toolspec", "ooo")
    ids = target.prompt_ids(MESSAGES, TOOLS)
    text = target.codec.decode(ids)
    assert text.endswith("<|im_start|>assistant\n") and "get_weather" in text


def test_every_mode_writes_the_same_tokens(target: HFTarget) -> None:
    box = HintBox()
    box.set_function("get_weather")
    box.set_slot("city", "Paris")
    outputs = {
        mode: target.generate_sync(_request(mode, hint_box=box if mode == "ooo" else None))
        for mode in ("vanilla", "toolspec", "ooo")
    }
    vanilla = outputs["vanilla"]
    assert vanilla.stats.mode == "vanilla" and vanilla.stats.forward_passes == len(
        vanilla.token_ids
    )
    for mode in ("toolspec", "ooo"):
        assert outputs[mode].token_ids == vanilla.token_ids
        assert outputs[mode].text == vanilla.text
        assert outputs[mode].stats.mode == mode
    assert box.function_step == 0  # the reader reported its steps to the box


def test_retrieval_memory_makes_a_repeated_request_cheap(target: HFTarget) -> None:
    first = target.generate_sync(_request("toolspec"))
    again = target.generate_sync(_request("toolspec"))
    assert again.token_ids == first.token_ids
    assert len(target.memory) >= 1
    # The earlier output is drafted from memory and accepted in long runs.
    assert again.stats.forward_passes < len(again.token_ids) / 2
    assert (
        again.stats.accepted_by_drafter.get("memory", 0)
        + again.stats.accepted_by_drafter.get("ngram", 0)
        > 0
    )
    # Prefix reuse: the same prompt only runs its last token.
    assert again.stats.prefill_tokens == 1
    assert again.stats.prompt_tokens == len(target.prompt_ids(MESSAGES, TOOLS))


def test_prefix_reuse_matches_a_cold_target() -> None:
    tokenizer = byte_tokenizer()
    model = tiny_model("llama", "eager", vocab_size=len(tokenizer), seed=22)
    warm = HFTarget(model, tokenizer, prefix_reuse=True)
    cold = HFTarget(model, tokenizer, prefix_reuse=False)
    warm.generate_sync(_request("toolspec"))
    other = TargetRequest(
        [{"role": "user", "content": "And in Rome?"}], TOOLS, mode="toolspec", max_new_tokens=16
    )
    reused = warm.generate_sync(other)
    fresh = cold.generate_sync(other)
    assert reused.token_ids == fresh.token_ids
    assert reused.stats.prefill_tokens < fresh.stats.prefill_tokens == fresh.stats.prompt_tokens


def test_generate_is_async_and_cancellable(target: HFTarget) -> None:
    async def main() -> tuple[Any, bool, float]:
        result = await target.generate(_request("toolspec"))
        started = threading.Event()
        original = target.engine.verifier.verify

        def slow_verify(*args: Any, **kwargs: Any) -> Any:
            started.set()
            return original(*args, **kwargs)

        target.engine.verifier.verify = slow_verify  # type: ignore[method-assign]
        cancelled = False
        try:
            with anyio.move_on_after(0.05) as scope:
                await target.generate(TargetRequest(MESSAGES, TOOLS, max_new_tokens=100_000))
            cancelled = scope.cancelled_caught
        finally:
            target.engine.verifier.verify = original  # type: ignore[method-assign]
        begun = anyio.current_time()
        follow_up = await target.generate(_request("vanilla"))
        return result, cancelled and follow_up.token_ids == result.token_ids, begun

    result, ok, _ = anyio.run(main)
    assert result.stats.forward_passes >= 1
    assert ok


def test_bad_requests_get_clear_errors(target: HFTarget) -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        target.generate_sync(_request("turbo"))
    with pytest.raises(ValueError, match="node_budget"):
        HFTarget(target.model, target.tokenizer, node_budget=-1)
    with pytest.raises(ValueError, match="max_draft_tokens"):
        HFTarget(target.model, target.tokenizer, max_draft_tokens=-1)
