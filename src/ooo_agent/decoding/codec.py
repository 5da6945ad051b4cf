"""A Hugging Face tokenizer seen as a :class:`~ooo_agent.decoding.drafts.base.TextCodec`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["END_OF_TURN_TOKENS", "TokenizerCodec", "end_token_ids"]

END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")
"""Special tokens that end an assistant turn in common chat templates."""


class TokenizerCodec:
    """``encode`` adds no special tokens; ``decode`` keeps them and does not clean spaces,
    so text and tokens round-trip the way the model wrote them."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, token_ids: Sequence[int]) -> str:
        return str(
            self.tokenizer.decode(
                list(token_ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        )


def _as_ids(value: Any) -> Iterable[int]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return (int(v) for v in value)


def end_token_ids(tokenizer: Any, model: Any = None) -> set[int]:
    """EOS and end-of-turn token ids known to the tokenizer and the model's generation config."""
    ids: set[int] = set(_as_ids(getattr(tokenizer, "eos_token_id", None)))
    generation_config = getattr(model, "generation_config", None)
    ids.update(_as_ids(getattr(generation_config, "eos_token_id", None)))
    try:
        vocab = tokenizer.get_vocab()
    except (AttributeError, NotImplementedError):
        vocab = {}
    for token in END_OF_TURN_TOKENS:
        if token in vocab:
            ids.add(int(vocab[token]))
    return ids
