"""Turning a semantic row's chat messages into the prompt text the sidecar model reads.

In-process backends use the tokenizer's own chat template; an HTTP backend sending raw
``/v1/completions`` prompts needs the same text built on the client, so the ChatML template
the Qwen3 sidecar was trained with is available here without any tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["PromptTemplate", "chatml_prompt", "template_from_tokenizer"]

PromptTemplate = Callable[[Sequence[Mapping[str, str]]], str]
"""Chat messages → the complete prompt text, ending where the assistant's answer starts."""


def chatml_prompt(messages: Sequence[Mapping[str, str]], *, think: bool = False) -> str:
    """The Qwen3 ChatML prompt for ``messages``, thinking disabled by default.

    Equal to Qwen3's chat template with ``add_generation_prompt=True, enable_thinking=False``
    for system/user turns: the assistant turn opens with an empty think block.

    >>> chatml_prompt([{"role": "user", "content": "hi"}])
    '<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n'
    """
    text = "".join(
        f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages
    )
    text += "<|im_start|>assistant\n"
    if not think:
        text += "<think>\n\n</think>\n\n"
    return text


def template_from_tokenizer(tokenizer: Any) -> PromptTemplate:
    """A :data:`PromptTemplate` using ``tokenizer.apply_chat_template``, thinking disabled.

    ``enable_thinking=False`` is passed to every template (Jinja ignores unknown variables,
    so templates without a thinking switch render as usual). A tokenizer without a chat
    template raises ``ValueError`` here, not at the first wave.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "the sidecar's tokenizer has no chat template; pass template=chatml_prompt "
            "or a callable that renders chat messages into prompt text"
        )

    def render(messages: Sequence[Mapping[str, str]]) -> str:
        text = tokenizer.apply_chat_template(
            [dict(m) for m in messages],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=False,
        )
        return str(text)

    return render
