"""``OpenAISidecar``: the sidecar behind an OpenAI-compatible ``/v1/completions`` server.

Meant for vLLM serving the adapter as a LoRA module (``--enable-lora --lora-modules
sidecar=<adapter dir>``) or for ``ooo-agent serve-sidecar``. One wave is ONE HTTP request
carrying the LIST of templated row prompts (``"prompt": [...]``, greedy, 32 tokens each); the
server batches them and shares their prefix. The prompt text is built here, so the client
needs the sidecar's chat template: the Qwen3 ChatML template (empty think block) by default,
or a tokenizer / callable of your choice.

Example::

    sidecar = OpenAISidecar("http://127.0.0.1:8001")
    caller = FastToolCaller(target, sidecar)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ooo_agent.errors import SidecarError
from ooo_agent.sidecar._wave import WaveAssembler, WaveOptions, WavePlan, WaveReport
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest
from ooo_agent.sidecar.prompts import PromptTemplate, chatml_prompt, template_from_tokenizer

__all__ = ["OpenAISidecar", "completions_url"]


def completions_url(base_url: str) -> str:
    """``…/v1/completions`` for a server root, a ``…/v1`` base or the full endpoint."""
    url = base_url.rstrip("/")
    if url.endswith("/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/completions"
    return url + "/v1/completions"


class OpenAISidecar:
    """A sidecar reached over HTTP through the OpenAI completions API.

    Args:
        base_url: the server (``http://host:port``, ``…/v1`` or the full endpoint).
        model: the served model (for vLLM, the LoRA module's name).
        template: a callable rendering chat messages into prompt text, or a tokenizer with a
            chat template; default :func:`~ooo_agent.sidecar.prompts.chatml_prompt`.
        api_key: sent as a bearer token when given.
        timeout: seconds for the whole HTTP exchange.
        max_tokens: token budget per row.
        options: which rows a wave asks.
        client: an ``httpx.AsyncClient`` to reuse (connection pooling); by default each wave
            opens its own short-lived client, which is safe across event loops.
        extra_body: more JSON fields for every request (e.g. ``{"add_special_tokens": False}``).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "sidecar",
        template: PromptTemplate | Any | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_tokens: int = 32,
        options: WaveOptions | None = None,
        client: httpx.AsyncClient | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        self.url = completions_url(base_url)
        self.model = model
        if template is None:
            self.template: PromptTemplate = chatml_prompt
        elif hasattr(template, "apply_chat_template"):
            self.template = template_from_tokenizer(template)
        elif callable(template):
            self.template = template
        else:
            raise TypeError("template must be a callable or a tokenizer with a chat template")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.options = options or WaveOptions()
        if self.options.function_choice != "index":
            raise ValueError(
                f"function_choice={self.options.function_choice!r} needs the sidecar model's "
                "log-probabilities; an HTTP sidecar answers the function-index row (use "
                "HFSidecar to score names)"
            )
        if self.options.required_values:
            raise ValueError(
                "required_values=True bans the first tokens of null in the sidecar's own "
                "decoding; an HTTP sidecar's decoding is the server's (use HFSidecar)"
            )
        if self.options.mentioned_values:
            raise ValueError(
                "mentioned_values=True bans the first tokens of null in the sidecar's own "
                "decoding; an HTTP sidecar's decoding is the server's (use HFSidecar)"
            )
        if self.options.typed_values:
            raise ValueError(
                "typed_values=True steers each argument row's tokens in the sidecar's own "
                "decoding; an HTTP sidecar's decoding is the server's (use HFSidecar)"
            )
        self.client = client
        self.extra_body = dict(extra_body or {})

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        """Run one wave (one HTTP request) and fill ``box``; return the final hint."""
        return (await self.run_wave(request, box)).hint

    async def run_wave(self, request: SidecarRequest, box: HintBox) -> WaveReport:
        """Like :meth:`wave`, with dropped slots, arrival order and latency."""
        plan = WavePlan.build(request, self.template, self.options)
        assembler = WaveAssembler.start(plan, box, self.options)
        if plan.rows:
            texts = await self._complete(plan.prompts)
            # All answers arrive together; the function goes first so its slots publish at once.
            order = sorted(range(len(texts)), key=lambda i: plan.rows[i].kind != "function_index")
            for i in order:
                assembler.answer(i, texts[i].strip())
        return assembler.finish()

    async def _complete(self, prompts: list[str]) -> list[str]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompts,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            **self.extra_body,
        }
        try:
            if self.client is not None:
                response = await self.client.post(
                    self.url, json=body, headers=self.headers, timeout=self.timeout
                )
            else:
                async with httpx.AsyncClient(timeout=self.timeout) as client:
                    response = await client.post(self.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise SidecarError(f"sidecar request to {self.url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise SidecarError(
                f"sidecar server answered HTTP {response.status_code}: {response.text[:300]}"
            )
        try:
            payload = response.json()
        except ValueError as exc:
            raise SidecarError(f"sidecar server answered non-JSON: {response.text[:300]!r}") from exc
        return _choice_texts(payload, len(prompts))


def _choice_texts(payload: Any, count: int) -> list[str]:
    """The text of each prompt's choice, by ``choices[i].index``; a missing one is ``""``."""
    choices = payload.get("choices") if isinstance(payload, Mapping) else None
    if not isinstance(choices, list):
        raise SidecarError(f"sidecar response has no 'choices' list: {str(payload)[:300]}")
    texts = [""] * count
    for position, choice in enumerate(choices):
        if not isinstance(choice, Mapping) or not isinstance(choice.get("text"), str):
            raise SidecarError(f"malformed choice in sidecar response: {str(choice)[:200]}")
        index = choice.get("index", position)
        if not isinstance(index, int) or not 0 <= index < count:
            raise SidecarError(f"choice index {index!r} out of range for {count} prompts")
        texts[index] = choice["text"]
    return texts
