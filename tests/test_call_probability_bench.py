"""benchmarks/call_probability.py: the first token's call probability, per category and threshold."""

from __future__ import annotations

import pytest

from repo_scripts import load_script

torch = pytest.importorskip("torch")

from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_counts_below_each_threshold_per_category() -> None:
    module = load_script("benchmarks", "call_probability")
    records = [
        {"category": "irrelevance", "p": 0.3},
        {"category": "irrelevance", "p": 0.97},
        {"category": "simple_python", "p": 0.999},
        {"category": "irrelevance", "p": 0.9995},
    ]
    assert module.table(records, (0.5, 0.98, 0.9999)) == [
        {"category": "irrelevance", "n": 3, "below": [1, 2, 3]},
        {"category": "simple_python", "n": 1, "below": [0, 0, 1]},
    ]
    assert module._categories("irrelevance, live_simple:20") == [
        ("irrelevance", None),
        ("live_simple", 20),
    ]


def test_the_probability_is_the_one_the_policy_reads() -> None:
    module = load_script("benchmarks", "call_probability")
    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    target = HFTarget(model, tokenizer, "hermes", decline_below=0.5)
    p = module.call_probability(target, MESSAGES, TOOLS)
    assert target.decline_below == 0.5  # restored
    full = target.generate_sync(TargetRequest(MESSAGES, TOOLS, mode="toolspec", max_new_tokens=12))
    assert full.stats.call_probability == pytest.approx(p, rel=1e-9)
    assert 0.0 <= p <= 1.0
    with pytest.raises(ValueError, match="no tools"):
        module.call_probability(target, MESSAGES, [])
