"""Outside baselines for the benchmark: Hugging Face's own prompt-lookup decoding.

:class:`PromptLookupTarget` runs ``model.generate(..., prompt_lookup_num_tokens=N)`` (greedy,
n-gram drafts copied from the prompt, verified by the target in one forward) on the same
loaded model as our modes, behind the :class:`~ooo_agent.targets.base.Target` protocol, so
the benchmark times it through the same caller (render → decode → parse → validate).

Its output is cut with the same stop rule as our decode loop (end-of-turn tokens, the format's
stop strings), so it can be compared token for token with our ``vanilla`` mode. Target forward
passes are counted with a forward hook; the tokens each verification step commits are read
from the positions of consecutive forwards (a forward starts where the previous step's
accepted tokens end).

Example::

    baseline = PromptLookupTarget(model, tokenizer, "hermes", prompt_lookup_num_tokens=10)
    caller = FastToolCaller(baseline, mode="vanilla")
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ooo_agent.calls import DecodeStats
from ooo_agent.errors import TargetError
from ooo_agent.offered import ToolLike
from ooo_agent.targets.base import Generation, Mode, TargetRequest

if TYPE_CHECKING:
    from ooo_agent.formats.base import ChatFormat

__all__ = ["PromptLookupTarget"]


class PromptLookupTarget:
    """Greedy ``generate`` with Hugging Face prompt lookup decoding, as a :class:`Target`.

    Args:
        model: a loaded ``AutoModelForCausalLM`` (shared with other targets: it is not changed).
        tokenizer: its tokenizer (with a chat template).
        format: the call format the model writes (renders the prompt, parses the output).
        prompt_lookup_num_tokens: draft length (Hugging Face's suggested default is 10).
        max_matching_ngram_size: longest n-gram matched against the prompt (HF default 2).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        format: str | ChatFormat = "hermes",
        *,
        prompt_lookup_num_tokens: int = 10,
        max_matching_ngram_size: int = 2,
    ) -> None:
        from ooo_agent.decoding.codec import TokenizerCodec, end_token_ids
        from ooo_agent.formats import get_format

        if prompt_lookup_num_tokens < 1 or max_matching_ngram_size < 1:
            raise ValueError("prompt_lookup_num_tokens and max_matching_ngram_size must be >= 1")
        self.model = model
        self.tokenizer = tokenizer
        self._format = get_format(format)
        self.codec = TokenizerCodec(tokenizer)
        self.end_ids = sorted(end_token_ids(tokenizer, model))
        self.prompt_lookup_num_tokens = prompt_lookup_num_tokens
        self.max_matching_ngram_size = max_matching_ngram_size
        self._serial = threading.Lock()

    @property
    def format(self) -> ChatFormat:
        return self._format

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla",)  # greedy; prompt lookup is how it decodes, not a mode of ours

    async def generate(self, request: TargetRequest) -> Generation:
        """Run ``generate`` in a worker thread (not interruptible mid-generation)."""
        return await anyio.to_thread.run_sync(self.generate_sync, request)

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]
    ) -> list[int]:
        """The rendered conversation's token ids, exactly as ``HFTarget`` builds them."""
        from ooo_agent.targets.hf import chat_prompt_ids

        return chat_prompt_ids(self._format, self.tokenizer, self.codec, messages, tools)

    def generate_sync(self, request: TargetRequest) -> Generation:
        """Blocking :meth:`generate`."""
        import torch

        from ooo_agent.decoding.stopping import StopCondition

        prompt = self.prompt_ids(request.messages, request.tools)
        stop = StopCondition.of(self.end_ids, self._format.stop_strings, self.codec.decode)
        starts: list[int] = []

        def count_forward(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            starts.append(_first_position(args, kwargs))

        stats = DecodeStats(mode="hf-pld", prompt_tokens=len(prompt), prefill_tokens=len(prompt))
        # On the model's device (a GPU when the bench runs there): generate does not move inputs.
        device = next(iter(self.model.parameters())).device
        input_ids = torch.tensor([prompt], dtype=torch.long, device=device)
        options: dict[str, Any] = {
            "do_sample": False,
            "max_new_tokens": request.max_new_tokens,
            "prompt_lookup_num_tokens": self.prompt_lookup_num_tokens,
            "max_matching_ngram_size": self.max_matching_ngram_size,
            "eos_token_id": self.end_ids or None,
            "pad_token_id": self.end_ids[0] if self.end_ids else None,
            # Sampling knobs a checkpoint's generation config may carry would only warn.
            "temperature": None,
            "top_p": None,
            "top_k": None,
        }
        if self._format.stop_strings:
            options.update(stop_strings=list(self._format.stop_strings), tokenizer=self.tokenizer)
        with self._serial:
            handle = self.model.register_forward_pre_hook(count_forward, with_kwargs=True)
            started = time.perf_counter()
            try:
                with torch.inference_mode():
                    output = self.model.generate(
                        input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **options
                    )
            except Exception as exc:
                raise TargetError(f"prompt-lookup generate failed: {exc!r}") from exc
            finally:
                handle.remove()
            stats.decode_s = time.perf_counter() - started
        raw = [int(t) for t in output[0, len(prompt) :].tolist()]
        last_position = len(prompt) + len(raw) - 1
        ended = stop.check(raw, 0)
        tokens = raw[: ended[0]] if ended else raw
        stats.finish_reason = ended[1] if ended else "length"
        stats.new_tokens = len(tokens)
        stats.forward_passes = len(starts)
        # Step k commits the tokens between its first position and the next forward's; the
        # last step ends at the final token's position (its bonus is never fed back).
        bounds = [*starts[1:], last_position]
        stats.accepted_lengths = [max(b - a, 0) for a, b in itertools.pairwise(bounds)]
        stats.tree_nodes = []
        body = tokens[:-1] if tokens and tokens[-1] in self.end_ids else tokens
        return Generation(text=self.codec.decode(body), token_ids=tokens, stats=stats)


def _first_position(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """Position of a forward's first input token (0 for the prefill)."""
    for key in ("cache_position", "position_ids"):
        value = kwargs.get(key)
        if value is not None and getattr(value, "numel", lambda: 0)() > 0:
            return int(value.reshape(-1)[0])
    cache = kwargs.get("past_key_values")
    if cache is not None and hasattr(cache, "get_seq_length"):
        return int(cache.get_seq_length())
    return 0
