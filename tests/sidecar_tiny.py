"""Tiny random models and a small ChatML tokenizer for the sidecar tests (CPU, seconds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
)

from ooo_agent.sidecar.rows import SIDECAR_SYSTEM

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}"
)

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_CORPUS = [
    SIDECAR_SYSTEM,
    "**Dialogue Records History**\n<user>What is the weather in Paris in celsius?</user>",
    "Available tools:\n[0] get_weather(city, unit)\n[1] get_time(zone)",
    "Available tool parameters:\n[0] get_weather param: city",
    "Which tool should be called? Respond with only the index number.",
    "What is the value for parameter 'city' of tool [0] get_weather? Respond with a compact "
    "JSON value, or the literal string null if not applicable.",
    '{"name": "get_weather", "parameters": {"city": "Paris"}} null 0 1 2 3 ["a","b"] 5',
    "<think>\n\n</think>\n\n",
]


def make_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE (~400 tokens) with ChatML specials and a ChatML chat template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def make_model(kind: str, vocab_size: int, seed: int = 0) -> Any:
    """A 2-layer random Qwen3 or Llama in fp32, eval mode, sdpa attention."""
    torch.manual_seed(seed)
    common: dict[str, Any] = {
        "vocab_size": vocab_size,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": False,
    }
    if kind == "qwen3":
        config = Qwen3Config(head_dim=16, **common)
        model = Qwen3ForCausalLM(config)
    else:
        config = LlamaConfig(**common)
        model = LlamaForCausalLM(config)
    # Random weights give near-uniform logits: scale the head so greedy choices are clear-cut
    # and an answer is not decided by float noise in the last digit.
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)
    model.config._attn_implementation = "sdpa"
    return model.eval()


class ScriptedLM(torch.nn.Module):
    """Wraps a causal LM so its greedy choice follows a next-token table (a causal function of
    the input, so batching and caching must not change it).

    After token ``a`` the model prefers ``table[a]``; after any other token, ``default``
    (``None``: the inner model's own choice).
    ``delay_s`` slows every forward (for cancellation tests); ``forwards`` counts them.
    ``bonus`` is what the preferred token's logit gains (a smaller one under a larger one
    scripts the runner-up).
    """

    def __init__(
        self,
        inner: Any,
        table: dict[int, int],
        default: int | None,
        delay_s: float = 0.0,
        bonus: float = 1e4,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.table = table
        self.default = default
        self.delay_s = delay_s
        self.bonus = bonus
        self.forwards = 0
        self.config = inner.config
        self.generation_config = inner.generation_config

    def forward(self, input_ids: Any = None, cache: Any = None, **kwargs: Any) -> Any:
        import time

        self.forwards += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        out = self.inner(input_ids=input_ids, cache=cache, **kwargs)
        last = input_ids[:, -1]
        for row, token in enumerate(last.tolist()):
            choice = self.table.get(token, self.default)
            if choice is not None:
                out.logits[row, -1, choice] += self.bonus
        return out


def save_tiny_model(folder: Path, arch: str = "llama") -> Path:
    """A tiny random model and its tokenizer saved as a loadable model folder."""
    tokenizer = make_tokenizer()
    model = make_model(arch, len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
