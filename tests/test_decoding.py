"""The decode loop: greedy reference, stops, prefix reuse, cancellation."""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")
from ooo_agent.decoding.drafts.ngram import NgramDrafter  # noqa: E402
from ooo_agent.decoding.loop import DecodeCancelled, DecodeEngine, common_prefix_length  # noqa: E402
from ooo_agent.decoding.planner import DraftPlanner  # noqa: E402
from ooo_agent.decoding.stopping import StopCondition  # noqa: E402
from test_decoding_support import tiny_model  # noqa: E402

NO_STOP = StopCondition.of([])


@pytest.fixture(scope="module")
def model() -> object:
    return tiny_model("qwen3", "sdpa", seed=11)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_vanilla_equals_transformers_generate(arch: str) -> None:
    model = tiny_model(arch, "eager", seed=12)
    engine = DecodeEngine(model)
    for prompt in ([1, 2, 3], [40, 41, 42, 43, 44, 45, 46], [7]):
        expected = model.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=20,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )[0, len(prompt) :].tolist()
        result = engine.decode(prompt, max_new_tokens=20, stop=NO_STOP)
        assert result.token_ids == expected
        assert result.stats.forward_passes == 20
        assert result.stats.mean_accepted == 1.0
        assert result.stats.finish_reason == "length"


def test_eos_and_stop_strings_cut_where_greedy_stops(model: object) -> None:
    engine = DecodeEngine(model)
    prompt = [5, 6, 7, 8]
    free = engine.decode(prompt, max_new_tokens=16, stop=NO_STOP).token_ids
    eos = free[5]
    first = free.index(eos)
    stopped = engine.decode(prompt, max_new_tokens=16, stop=StopCondition.of([eos]))
    assert stopped.token_ids == free[: first + 1]
    assert stopped.stats.finish_reason == "stop"

    def text(ids: object) -> str:
        return " ".join(str(t) for t in ids)  # type: ignore[attr-defined]

    marker = f"{free[6]} {free[7]}"
    by_text = StopCondition.of([], [marker], text)
    # Speculation commits many tokens at once; the cut must still be greedy's.
    planner = DraftPlanner([NgramDrafter(prompt + free)], budget=16, min_gain=0.0)
    for plan in (None, planner):
        result = engine.decode(prompt, max_new_tokens=16, stop=by_text, planner=plan)
        assert marker in text(result.token_ids)
        assert marker not in text(result.token_ids[:-1])


def test_prefix_reuse_prefills_only_new_tokens_and_changes_nothing(model: object) -> None:
    system = list(range(10, 60))
    first, second = [*system, 3, 4, 5], [*system, 7, 8]
    warm = DecodeEngine(model, prefix_reuse=True)
    cold = DecodeEngine(model, prefix_reuse=False)
    warm.decode(first, max_new_tokens=8, stop=NO_STOP)
    again = warm.decode(second, max_new_tokens=8, stop=NO_STOP)
    assert again.stats.prompt_tokens == len(second)
    assert again.stats.prefill_tokens == 2
    assert again.token_ids == cold.decode(second, max_new_tokens=8, stop=NO_STOP).token_ids
    same = warm.decode(second, max_new_tokens=8, stop=NO_STOP)
    assert same.stats.prefill_tokens == 1  # one token must run to predict the next
    assert same.token_ids == again.token_ids
    assert cold.decode(second, max_new_tokens=2, stop=NO_STOP).stats.prefill_tokens == len(second)


def test_cancel_flag_stops_the_loop(model: object) -> None:
    engine = DecodeEngine(model)
    cancel = threading.Event()
    steps: list[int] = []

    def before_step(step: int) -> None:
        steps.append(step)
        if step == 2:
            cancel.set()

    with pytest.raises(DecodeCancelled):
        engine.decode(
            [1, 2], max_new_tokens=50, stop=NO_STOP, before_step=before_step, cancel=cancel
        )
    assert steps == [0, 1, 2]
    # The engine is usable afterwards, with identical results.
    fresh = DecodeEngine(model, prefix_reuse=False)
    assert (
        engine.decode([1, 2], max_new_tokens=5, stop=NO_STOP).token_ids
        == fresh.decode([1, 2], max_new_tokens=5, stop=NO_STOP).token_ids
    )


def test_bad_input_is_rejected_clearly(model: object) -> None:
    engine = DecodeEngine(model)
    with pytest.raises(ValueError, match="no tokens"):
        engine.decode([], max_new_tokens=4, stop=NO_STOP)
    with pytest.raises(ValueError, match="max_new_tokens"):
        engine.decode([1], max_new_tokens=0, stop=NO_STOP)
    with pytest.raises(ValueError, match="decode_text"):
        StopCondition.of([], ["x"])
    assert common_prefix_length([1, 2, 3], [1, 2, 4]) == 2
