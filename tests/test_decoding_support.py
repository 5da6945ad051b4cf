"""Shared builders for the decoding tests: tiny random models and a byte-level tokenizer.

Imported by the other ``test_decoding*`` / ``test_lossless*`` / ``test_hf_target*`` files;
its own tests check the builders themselves.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ARCHS = ("llama", "qwen2", "qwen3")
ATTENTIONS = ("sdpa", "eager")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>',
    '{"name": "search", "arguments": {"query": "cheap flights to Rome", "limit": 5}}',
    "You are a helpful assistant. Answer the user's request using the available tools.",
    "What is the weather in Berlin today? Please tell me in fahrenheit.",
    "The quick brown fox jumps over the lazy dog 0123456789 times.",
]


def tiny_model(
    arch: str, attention: str = "sdpa", *, vocab_size: int = 96, dtype: Any = None, seed: int = 0
) -> Any:
    """A 2-layer random causal LM (float64 unless told: no numerical near-ties)."""
    dtype = torch.float64 if dtype is None else dtype
    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
    )
    if arch == "llama":
        config = transformers.LlamaConfig(**common)
    elif arch == "qwen2":
        config = transformers.Qwen2Config(**common)
    elif arch == "qwen3":
        config = transformers.Qwen3Config(head_dim=16, **common)
    else:
        raise ValueError(arch)
    config._attn_implementation = attention
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    # Random init is near-uniform; sharpen the head so greedy output has structure.
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)
    return model.to(dtype).eval()


@functools.lru_cache(maxsize=1)
def byte_tokenizer() -> Any:
    """A small byte-level BPE tokenizer with ChatML specials and a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[
            "<|endoftext|>",
            "<|im_start|>",
            "<|im_end|>",
            "<tool_call>",
            "</tool_call>",
        ],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 4, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def test_tiny_models_build_for_every_arch() -> None:
    for arch in ARCHS:
        model = tiny_model(arch)
        logits = model(input_ids=torch.tensor([[1, 2, 3]])).logits
        assert logits.shape == (1, 3, 96)
        assert logits.dtype == torch.float64


def test_byte_tokenizer_round_trips_text_and_has_specials() -> None:
    tok = byte_tokenizer()
    text = '<tool_call>\n{"name": "x", "arguments": {"a": "Zürich 12"}}\n</tool_call>'
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert tok.convert_tokens_to_ids("<|im_end|>") == tok.eos_token_id
