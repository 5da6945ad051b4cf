"""Speculation never changes the output: toolspec == vanilla, token for token.

Tiny random float64 models (no numerical near-ties) for Llama / Qwen2 / Qwen3 under sdpa and
eager attention, hypothesis-driven prompts, stops and adversarial drafts (random, partially
right, right then wrong, right). 6 x 35 = 210 generated cases. The real-model check (fp32
SmolLM2 through ``HFTarget``) is marked slow and skips when the model is not available.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ooo_agent.decoding.drafts.base import DraftContext, TokenDraft  # noqa: E402
from ooo_agent.decoding.drafts.ngram import NgramDrafter  # noqa: E402
from ooo_agent.decoding.loop import DecodeEngine  # noqa: E402
from ooo_agent.decoding.planner import DraftPlanner  # noqa: E402
from ooo_agent.decoding.stopping import StopCondition  # noqa: E402
from test_decoding_support import ARCHS, ATTENTIONS, tiny_model  # noqa: E402

VOCAB = 96
_ENGINES: dict[tuple[str, str], tuple[DecodeEngine, DecodeEngine]] = {}


def _engines(arch: str, attention: str) -> tuple[DecodeEngine, DecodeEngine]:
    """(reference, speculative) engines sharing one model, built once per module."""
    key = (arch, attention)
    if key not in _ENGINES:
        model = tiny_model(arch, attention, vocab_size=VOCAB, seed=len(_ENGINES))
        _ENGINES[key] = (
            DecodeEngine(model, prefix_reuse=False),
            DecodeEngine(model, prefix_reuse=True),
        )
    return _ENGINES[key]


class AdversarialDrafter:
    """Drafts built from the true output: random, partially right, right then wrong, right."""

    def __init__(self, truth: Sequence[int], rng: random.Random, kinds: Sequence[str]) -> None:
        self.truth = list(truth)
        self.rng = rng
        self.kinds = kinds

    def _random(self, n: int) -> tuple[int, ...]:
        return tuple(self.rng.randrange(VOCAB) for _ in range(n))

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        at = len(context.generated_ids)
        true = tuple(self.truth[at : at + self.rng.randint(1, 12)])
        drafts = []
        for kind in self.kinds:
            if kind == "random":
                tokens = self._random(self.rng.randint(1, 6))
            elif kind == "partial":
                tokens = tuple(
                    t if self.rng.random() < 0.6 else self.rng.randrange(VOCAB) for t in true
                )
            elif kind == "right_then_wrong":
                tokens = true[: self.rng.randint(0, len(true))] + self._random(3)
            else:
                tokens = true
            if tokens:
                source = self.rng.choice(["schema", "ngram", "hint", "recycling"])
                drafts.append(TokenDraft(tokens, source, self.rng.random()))
        return drafts

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None


cases = st.fixed_dictionaries(
    {
        "prompt": st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=24),
        "max_new": st.integers(1, 20),
        "eos": st.sets(st.integers(0, VOCAB - 1), max_size=3),
        "kinds": st.lists(
            st.sampled_from(["random", "partial", "right_then_wrong", "right"]),
            min_size=0,
            max_size=4,
        ),
        "budget": st.integers(0, 24),
        "seed": st.integers(0, 2**16),
        "with_ngram": st.booleans(),
    }
)


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("arch", ARCHS)
@settings(
    max_examples=35,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases)
def test_toolspec_equals_vanilla(arch: str, attention: str, case: dict[str, object]) -> None:
    reference, speculative = _engines(arch, attention)
    prompt = list(case["prompt"])  # type: ignore[call-overload]
    stop = StopCondition.of(case["eos"])  # type: ignore[arg-type]
    max_new = int(case["max_new"])  # type: ignore[call-overload]
    # One reference run, past the stop: drafts may run beyond it. Greedy output with a stop
    # is this run cut at the first stop token (the cut itself is tested in test_decoding).
    truth = reference.decode(prompt, max_new_tokens=max_new + 8, stop=StopCondition.of([]))
    expected = truth.token_ids[:max_new]
    ends = [i for i, t in enumerate(expected) if t in stop.eos_ids]
    if ends:
        expected = expected[: ends[0] + 1]
    rng = random.Random(int(case["seed"]))  # type: ignore[call-overload]
    drafters = [AdversarialDrafter(truth.token_ids, rng, case["kinds"])]  # type: ignore[arg-type]
    if case["with_ngram"]:
        drafters.append(NgramDrafter(prompt))  # type: ignore[arg-type]
    planner = DraftPlanner(drafters, budget=int(case["budget"]), min_gain=0.0)  # type: ignore[call-overload]
    spec = speculative.decode(prompt, max_new_tokens=max_new, stop=stop, planner=planner)
    assert spec.token_ids == expected
    assert spec.stats.finish_reason == ("stop" if ends else "length")
    assert spec.stats.forward_passes <= len(expected)
    assert len(spec.stats.accepted_lengths) == spec.stats.forward_passes - 1
    assert sum(spec.stats.accepted_lengths) >= len(spec.token_ids) - 1


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
REAL_PROMPTS = [
    "What's the weather in Paris right now?",
    "Tell me the temperature in Tokyo in fahrenheit.",
    "Is it raining in Berlin?",
]


@pytest.mark.slow
def test_toolspec_equals_vanilla_on_the_embedded_model() -> None:
    try:
        from ooo_agent.models.smollm2 import load_smollm2
    except ImportError as exc:
        pytest.skip(f"the embedded model module is not available: {exc}")
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget

    try:
        model, tokenizer = load_smollm2(download=False)
    except ModelNotAvailableError as exc:
        pytest.skip(f"the embedded model is not available: {exc}")
    target = HFTarget(model, tokenizer, "hermes")
    for text in REAL_PROMPTS:
        messages = [{"role": "user", "content": text}]
        outputs = {}
        for mode in ("vanilla", "toolspec"):
            request = TargetRequest(messages, [WEATHER_TOOL], mode=mode, max_new_tokens=48)
            outputs[mode] = target.generate_sync(request)
        assert outputs["toolspec"].token_ids == outputs["vanilla"].token_ids, text
        assert outputs["toolspec"].stats.forward_passes <= outputs["vanilla"].stats.forward_passes
