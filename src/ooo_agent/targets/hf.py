"""``HFTarget``: any ``AutoModelForCausalLM`` as a white-box, speculating target.

Modes (all greedy, all producing the same tokens):

* ``vanilla`` — one forward per token: the reference.
* ``toolspec`` — lossless tree speculation: schema skeleton, n-gram lookup over the prompt,
  the output and a retrieval memory of earlier verified calls, token recycling as fallback.
* ``ooo`` — ``toolspec`` plus the sidecar's hint, read from ``request.hint_box`` at every
  step without ever waiting for it.

Example::

    target = HFTarget.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct", format="hermes")
    generation = await target.generate(TargetRequest(messages, tools, mode="toolspec"))
    generation.stats.forward_passes, generation.stats.mean_accepted
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ooo_agent.errors import TargetError
from ooo_agent.observability import quiet_loading
from ooo_agent.offered import OfferedTool, ToolLike, openai_tools
from ooo_agent.rules import SHORTHANDS, Rule, RuledTools, rules_named
from ooo_agent.targets.base import (
    MODES,
    Generation,
    Mode,
    TargetRequest,
    chosen_tool,
    normalize_tool_choice,
    tools_named,
)

if TYPE_CHECKING:
    import torch

    from ooo_agent.calls import RawCall
    from ooo_agent.decoding.constraint import CallConstraint, TokenConstraint
    from ooo_agent.decoding.decline import DeclinePolicy
    from ooo_agent.decoding.drafts.hint import HintReader
    from ooo_agent.decoding.drafts.memory import RetrievalMemory
    from ooo_agent.decoding.drafts.ngram import NgramDrafter
    from ooo_agent.decoding.drafts.recycling import TokenRecycler
    from ooo_agent.decoding.drafts.schema import SchemaDrafter
    from ooo_agent.decoding.loop import DecodeEngine
    from ooo_agent.decoding.planner import AcceptanceRates
    from ooo_agent.decoding.prefix_cache import PrefixCache
    from ooo_agent.formats.base import CallSkeleton, ChatFormat
    from ooo_agent.hints import Hint, HintBox

__all__ = ["DEFAULT_MAX_DRAFT_TOKENS", "DEFAULT_NODE_BUDGET", "HFTarget"]

DEFAULT_NODE_BUDGET = 64
"""Tree nodes one verification step holds at most (``HFTarget(node_budget=...)``)."""
DEFAULT_MAX_DRAFT_TOKENS = 64
"""The longest draft one drafter proposes (``HFTarget(max_draft_tokens=...)``)."""


class HFTarget:
    """A local Hugging Face causal LM that writes calls in a :class:`ChatFormat`.

    Every mode decodes the same tokens. ``node_budget`` / ``max_draft_tokens`` (64) cap the
    drafted tree per step and each draft, ``min_gain`` drops unlikely nodes, ``memory_size``
    sizes the retrieval memory, ``num_threads`` sets torch's threads; ``prefix_reuse`` keeps
    each call's KV in an LRU :attr:`prefix_cache` of ``prefix_cache_bytes`` (None: 2 GiB)
    and prefills only what follows the longest cached prefix (docs/architecture.md).
    ``constrain_names`` / ``constrain_json`` / ``constrain_arguments`` hold calls to the
    offered tools (:mod:`ooo_agent.decoding.constraint`); ``rules`` (or the shorthands
    ``constrain_mentioned`` / ``constrain_values``) rewrite each request's tool schemas first
    (:mod:`ooo_agent.rules`); all off by default. ``decline_below`` and, after a tool's result,
    ``call_again_below`` (None: off) answer in words when the first token's probability of a
    call is below them (``stats.declined``, ``stats.call_probability``); ``request.tool_choice``
    is honoured in every mode. See docs/tools.md and docs/rules.md.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        format: str | ChatFormat = "hermes",
        *,
        num_threads: int | None = None,
        prefix_reuse: bool = True,
        prefix_cache_bytes: int | None = None,
        node_budget: int = DEFAULT_NODE_BUDGET,
        min_gain: float = 0.05,
        max_draft_tokens: int = DEFAULT_MAX_DRAFT_TOKENS,
        memory_size: int = 256,
        memory_top_k: int = 10,
        recycling: bool = True,
        recycling_top_k: int = 8,
        split_head: bool | None = None,
        constrain_names: bool = False,
        constrain_json: bool = False,
        constrain_arguments: bool = False,
        constrain_mentioned: bool = False,
        constrain_values: bool = False,
        rules: Iterable[Rule | str] = (),
        decline_below: float | None = None,
        call_again_below: float | None = None,
    ) -> None:
        import torch

        from ooo_agent.decoding.codec import TokenizerCodec, end_token_ids
        from ooo_agent.decoding.drafts.memory import RetrievalMemory
        from ooo_agent.decoding.drafts.recycling import TokenRecycler
        from ooo_agent.decoding.loop import DecodeEngine
        from ooo_agent.decoding.planner import AcceptanceRates
        from ooo_agent.decoding.prefix_cache import DEFAULT_PREFIX_CACHE_BYTES, PrefixCache
        from ooo_agent.formats import get_format

        if num_threads is not None:
            torch.set_num_threads(num_threads)
        if node_budget < 0:
            raise ValueError("node_budget must be >= 0")
        if max_draft_tokens < 0:
            raise ValueError("max_draft_tokens must be >= 0")
        if decline_below is not None and not 0 <= decline_below <= 1:
            raise ValueError("decline_below must be between 0 and 1 (or None: off)")
        if call_again_below is not None and not 0 <= call_again_below <= 1:
            raise ValueError("call_again_below must be between 0 and 1 (or None: off)")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self._format = get_format(format)
        self.codec = TokenizerCodec(tokenizer)
        self.end_ids = end_token_ids(tokenizer, model)
        self.node_budget = node_budget
        self.min_gain = min_gain
        self.max_draft_tokens = max_draft_tokens
        self.constrain_names = constrain_names
        self.constrain_json = constrain_json
        shorthands = [
            name
            for name, on in (("mentioned", constrain_mentioned), ("values", constrain_values))
            if on
        ]
        self.rules: tuple[Rule, ...] = rules_named([*rules, *shorthands])
        """The request rules every call is decoded under (:mod:`ooo_agent.rules`)."""
        self.constrain_arguments = constrain_arguments or bool(self.rules)
        self.decline_below = decline_below
        self.call_again_below = call_again_below
        prefix_cache = PrefixCache(  # raises on a bad budget
            DEFAULT_PREFIX_CACHE_BYTES if prefix_cache_bytes is None else prefix_cache_bytes
        )
        self.engine: DecodeEngine = DecodeEngine(
            model, prefix_reuse=prefix_reuse, split_head=split_head, prefix_cache=prefix_cache
        )
        self.memory: RetrievalMemory = RetrievalMemory(memory_size, top_k=memory_top_k)
        self.recycler: TokenRecycler | None = (
            TokenRecycler(top_k=recycling_top_k) if recycling else None
        )
        # Acceptance rates carry over between calls: a drafter's quality is stable.
        self.rates: AcceptanceRates = AcceptanceRates()
        self._skeletons: dict[str, CallSkeleton] = {}
        self._call_start: tuple[frozenset[int], str] | None = None
        """The token a call starts with and the text that opens one (the decline policy's)."""
        self._serial = threading.Lock()

    @classmethod
    @quiet_loading
    def from_pretrained(
        cls,
        path_or_id: str,
        *,
        dtype: Any = "float32",
        attn_implementation: str | None = None,
        **kwargs: Any,
    ) -> HFTarget:
        """Load model and tokenizer from a folder or hub id; other arguments go to ``__init__``."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch_dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        load: dict[str, Any] = {"dtype": torch_dtype}
        if attn_implementation is not None:
            load["attn_implementation"] = attn_implementation
        try:
            tokenizer = AutoTokenizer.from_pretrained(path_or_id)
            model = AutoModelForCausalLM.from_pretrained(path_or_id, **load)
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot load {path_or_id!r}: {exc}") from exc
        return cls(model, tokenizer, **kwargs)

    @classmethod
    def from_preset(
        cls, name: str = "smollm2-135m-toolcall", *, dtype: Any = None, **kwargs: Any
    ) -> HFTarget:
        """A named preset from :mod:`ooo_agent.models` (adapter merged into the weights),
        decoded with the preset's ``rules`` and ``target`` defaults.

        ``HFTarget.from_preset()`` is the embedded default: SmolLM2-135M-Instruct with the
        project's tool-calling adapter, Hermes calls with each tool's description listed
        before its name, no call where its first token gives one less than 90 %, call names
        held to the offered tools and the ``mentioned`` and ``values`` rules. A keyword given
        replaces the preset's (``format=``, ``decline_below=None``, ``constrain_names=False``);
        ``rules=`` adds to its rules, and ``constrain_mentioned=False`` /
        ``constrain_values=False`` take one out. Raises
        :class:`~ooo_agent.errors.ModelNotAvailableError` when the preset cannot be obtained.
        """
        from ooo_agent.models import get_preset, load_preset

        model, tokenizer = load_preset(name, merge=True, dtype=dtype)
        preset = get_preset(name)
        for keyword, value in vars(preset.target).items():
            kwargs.setdefault(keyword, value)
        off = {rule for keyword, rule in SHORTHANDS.items() if not kwargs.get(keyword, True)}
        kwargs["rules"] = (*(r for r in preset.rules if r not in off), *kwargs.get("rules", ()))
        return cls(model, tokenizer, **kwargs)

    @property
    def prefix_cache(self) -> PrefixCache | None:
        """The KV of earlier prompts and outputs this target reuses (None: ``prefix_reuse``
        off)."""
        return self.engine.prefix_cache

    @property
    def constrain_mentioned(self) -> bool:
        """Whether the ``mentioned`` rule is among :attr:`rules`."""
        return any(rule.name == "mentioned" for rule in self.rules)

    @property
    def constrain_values(self) -> bool:
        """Whether the ``values`` rule is among :attr:`rules`."""
        return any(rule.name == "values" for rule in self.rules)

    # -- Target protocol -----------------------------------------------------------------
    @property
    def format(self) -> ChatFormat:
        return self._format

    @property
    def modes(self) -> tuple[Mode, ...]:
        return MODES

    async def generate(self, request: TargetRequest) -> Generation:
        """Decode in a worker thread; a cancelled call returns within one decode step.

        The worker's job and the cancellation meet under one lock: a job cancelled before a
        thread picked it up never decodes (and is not waited for); one already decoding is
        told to stop and waited for, so the model is free when the call returns.
        """
        cancel = threading.Event()
        done = threading.Event()
        handoff = threading.Lock()
        began = False

        def work() -> Generation:
            nonlocal began
            with handoff:
                if cancel.is_set():  # cancelled while queued: nothing to decode
                    from ooo_agent.decoding.loop import DecodeCancelled

                    raise DecodeCancelled
                began = True
            try:
                return self.generate_sync(request, cancel=cancel)
            finally:
                done.set()

        try:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with handoff:
                cancel.set()
                decoding = began
            if decoding:
                # Wait (shielded) for the thread to notice, so the model is free when we return.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(done.wait)
            raise

    # -- prompt --------------------------------------------------------------------------
    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]
    ) -> list[int]:
        """The token ids of the rendered conversation, ready for the assistant's turn."""
        return chat_prompt_ids(self._format, self.tokenizer, self.codec, messages, tools)

    def next_turn_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]
    ) -> list[int]:
        """The tokens every next prompt after ``messages`` (ending with the assistant's calls)
        starts with, whatever its tool results say: the conversation rendered up to where the
        first result's text begins."""
        calls = messages[-1].get("tool_calls") if messages else None
        call_id = (calls[0] or {}).get("id") if calls else None

        def with_result(text: str) -> list[int]:
            result = {"role": "tool", "tool_call_id": call_id, "content": text}
            return self.prompt_ids([*messages, result], tools)

        from ooo_agent.decoding.loop import common_prefix_length

        one, other = with_result("0"), with_result("1")
        return one[: common_prefix_length(one, other)]

    def prefill_next_turn_sync(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolLike],
        *,
        cancel: threading.Event | None = None,
    ) -> int:
        """Prefill :meth:`next_turn_ids` into the prefix cache (while the tools run), so the
        next call prefills only the results and what follows; returns the tokens that ran."""
        ids = self.next_turn_ids(messages, tools)
        _acquire_unless_cancelled(self._serial, cancel)
        try:
            return self.engine.prefill_prefix(ids, cancel=cancel)
        finally:
            self._serial.release()

    async def prefill_next_turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]
    ) -> int:
        """:meth:`prefill_next_turn_sync` in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: self.prefill_next_turn_sync(messages, tools))

    def _skeleton(self, tools: Sequence[Mapping[str, Any]]) -> CallSkeleton | None:
        key = json.dumps(list(tools), sort_keys=True, default=str)
        skeleton = self._skeletons.get(key)
        if skeleton is None:
            try:
                skeleton = self._format.skeleton(tools)
            except Exception:
                return None  # no skeleton: speculation falls back to the other drafters
            if len(self._skeletons) > 64:
                self._skeletons.clear()
            self._skeletons[key] = skeleton
        return skeleton

    def ruled(self, request: TargetRequest) -> RuledTools:
        """The request's tools as :attr:`rules` rewrite them: ``request.ruled`` when it is
        this request's ruling under these rules (the caller's, shared with the sidecar), else
        a new one."""
        ruled = request.ruled
        if ruled is None or not ruled.reads(request.messages, request.tools, self.rules):
            ruled = RuledTools(request.messages, request.tools, self.rules)
        return ruled

    def _decoding_tools(self, request: TargetRequest) -> Sequence[OfferedTool]:
        """The tools as this request's constraint and schema drafts read them (:meth:`ruled`;
        with ``mentioned``, the drafts then offer the named optional keys before the closing
        brace the constraint would refuse)."""
        if not request.tools or not self.rules:
            return request.tools
        return self.ruled(request).tools

    def _constraint(
        self, tools: Sequence[Mapping[str, Any]], *, names: bool = False
    ) -> CallConstraint | None:
        """This request's call constraint (None when off or nothing to constrain); ``names``
        holds call names to ``tools`` whatever ``constrain_names`` says (a named tool_choice)."""
        names = names or self.constrain_names
        if not (names or self.constrain_json or self.constrain_arguments):
            return None
        if not tools:
            return None
        from ooo_agent.decoding.constraint import CallConstraint

        skeleton = self._skeleton(tools)
        if skeleton is None:
            return None
        return CallConstraint(
            skeleton,
            self.codec.decode,
            names=names,
            well_formed=self.constrain_json,
            arguments=self.constrain_arguments,
        )

    def _call_opening(self) -> tuple[frozenset[int], str]:
        """The token a call starts with and the text that opens one, once per target."""
        if self._call_start is None:  # the format does not change
            from ooo_agent.decoding.decline import call_start_ids

            call = self._format.render_calls([("f", {})])
            self._call_start = (call_start_ids(self.codec.encode, call), self._format.call_opening)
        return self._call_start

    def _required_call(
        self, constraint: TokenConstraint | None, named: str | None
    ) -> TokenConstraint:
        """``constraint`` behind the call opening the answer must start with: the format's, or,
        for a named tool, the call as the format renders it up to the tool's name."""
        from ooo_agent.decoding.choice import RequiredCall

        start_ids, opening = self._call_opening()
        if named is not None:
            call = self._format.render_calls([(named, {})])
            at = call.find(named)
            if at >= 0:
                end = at + len(named)
                opening = call[: end + 1] if call[end : end + 1] == '"' else call[:end]
        return RequiredCall(start_ids, opening, self.codec.decode, inner=constraint)

    def _decline_policy(
        self,
        constraint: TokenConstraint | None,
        box: HintBox | None,
        *,
        threshold: float | None = None,
        reason: str | None = None,
    ) -> DeclinePolicy | None:
        """The first-token decline policy around ``constraint`` (None when off; ``threshold``
        defaults to ``decline_below``); a decline is reported to ``box`` (with ``reason``, or
        the probability), so the sidecar's wave stops."""
        threshold = self.decline_below if threshold is None else threshold
        if threshold is None:
            return None
        from ooo_agent.decoding.decline import DeclinePolicy

        start_ids, marker = self._call_opening()

        def report(probability: float) -> None:
            if box is not None:
                box.report_no_call(
                    reason
                    or f"the target declined to call a tool: its first token gave a call "
                    f"{probability:.1%}, below {threshold:.1%}"
                )

        return DeclinePolicy(
            start_ids,
            threshold,
            self.codec.decode,
            marker=marker,
            inner=constraint,
            on_decline=report,
        )

    def _render_hint(self, hint: Hint) -> str | None:
        if hint.function is None:
            return None
        return self._format.render_calls([(hint.function, dict(hint.slots))])

    # -- decoding ------------------------------------------------------------------------
    def generate_sync(
        self, request: TargetRequest, *, cancel: threading.Event | None = None
    ) -> Generation:
        """Blocking :meth:`generate` (what the worker thread runs)."""
        from ooo_agent.decoding.loop import DecodeCancelled
        from ooo_agent.decoding.stopping import StopCondition

        if request.mode not in MODES:
            raise ValueError(f"unknown mode {request.mode!r}; expected one of {MODES}")
        choice = normalize_tool_choice(request.tool_choice)
        named = chosen_tool(choice)
        prompt = self.prompt_ids(request.messages, request.tools)
        stop = StopCondition.of(self.end_ids, self._format.stop_strings, self.codec.decode)
        offered = self._decoding_tools(request)
        if named is not None:  # drafts and constraint for the named tool only
            offered = tools_named(offered, named)
            if not offered:
                raise ValueError(f"tool_choice names {named!r}, which is not among the tools")
        tools = openai_tools(offered)  # the format's skeleton reads OpenAI tool dicts
        plan = None if request.mode == "vanilla" else _Speculation(self, request, prompt, tools)
        constraint: TokenConstraint | None = self._constraint(tools, names=named is not None)
        policy: DeclinePolicy | None = None
        if not request.tools or choice == "auto":
            if _asks_afresh(request):
                policy = self._decline_policy(constraint, request.hint_box)
            elif _after_result(request) and self.call_again_below is not None:
                policy = self._decline_policy(
                    constraint, request.hint_box, threshold=self.call_again_below
                )
        elif choice == "none":
            policy = self._decline_policy(
                constraint, request.hint_box, threshold=math.inf, reason="tool_choice is 'none'"
            )
        else:  # "required" or a named tool
            constraint = self._required_call(constraint, named)
        if policy is not None:
            constraint = policy
        _acquire_unless_cancelled(self._serial, cancel)
        try:
            result = self.engine.decode(
                prompt,
                max_new_tokens=request.max_new_tokens,
                stop=stop,
                planner=plan.planner if plan else None,
                recycler_top_k=self.recycler.top_k if plan and self.recycler else 0,
                on_verdict=plan.on_verdict if plan else None,
                before_step=plan.before_step if plan else None,
                on_prefill=plan.on_prefill if plan else None,
                decode_text=self.codec.decode,
                cancel=cancel,
                mode=request.mode,
                constraint=constraint,
            )
        except DecodeCancelled:
            raise
        except Exception as exc:
            raise TargetError(f"decoding failed: {exc!r}") from exc
        finally:
            self._serial.release()
        tokens = result.token_ids
        self.memory.add(result.prompt_hidden, tokens)
        body = tokens[:-1] if tokens and tokens[-1] in self.end_ids else tokens
        text = self.codec.decode(body)
        if policy is None:
            return Generation(text=text, token_ids=tokens, stats=result.stats)
        result.stats.call_probability = policy.call_probability
        result.stats.declined = policy.declined and choice == "auto"
        # Declined: the answer is words, whatever JSON they might quote.
        calls: list[RawCall] | None = [] if policy.declined else None
        return Generation(text=text, raw_calls=calls, token_ids=tokens, stats=result.stats)


def _acquire_unless_cancelled(lock: threading.Lock, cancel: threading.Event | None) -> None:
    """Take ``lock``, giving up (``DecodeCancelled``) as soon as ``cancel`` is set: a call
    queued behind another's decode returns at its cancellation, not after that decode."""
    from ooo_agent.decoding.loop import DecodeCancelled

    while not lock.acquire(timeout=0.01):
        if cancel is not None and cancel.is_set():
            raise DecodeCancelled
    if cancel is not None and cancel.is_set():
        lock.release()
        raise DecodeCancelled


def _asks_afresh(request: TargetRequest) -> bool:
    """Whether the decline policy applies: tools are offered and the turn answers a user's
    message (not a tool's result, where another call or the final answer is the model's own
    choice)."""
    if not request.tools or not request.messages:
        return False
    return request.messages[-1].get("role") == "user"


def _after_result(request: TargetRequest) -> bool:
    """Whether the turn follows a tool's result with tools still offered."""
    return bool(request.tools and request.messages) and request.messages[-1].get("role") == "tool"


class _Speculation:
    """The drafters of one speculative call, and the hooks the decode loop calls."""

    def __init__(
        self,
        target: HFTarget,
        request: TargetRequest,
        prompt: list[int],
        tools: Sequence[Mapping[str, Any]],
    ) -> None:
        from ooo_agent.decoding.drafts.base import Drafter
        from ooo_agent.decoding.drafts.hint import HintReader
        from ooo_agent.decoding.drafts.ngram import NgramDrafter
        from ooo_agent.decoding.drafts.schema import SchemaDrafter
        from ooo_agent.decoding.planner import DraftPlanner

        self.target = target
        self.hint: HintReader | None = None
        if request.mode == "ooo" and request.hint_box is not None:
            self.hint = HintReader(request.hint_box, target._render_hint, target.codec.encode)
        skeleton = target._skeleton(tools) if tools else None
        self.schema: SchemaDrafter | None = (
            SchemaDrafter(
                skeleton, target.codec, hint=self.hint, max_tokens=target.max_draft_tokens
            )
            if skeleton is not None
            else None
        )
        self.ngram: NgramDrafter = NgramDrafter(prompt, max_len=target.max_draft_tokens)
        drafters: list[Drafter] = [self.ngram]
        if self.schema is not None:
            drafters.insert(0, self.schema)
        self.planner = DraftPlanner(
            drafters,
            budget=target.node_budget,
            min_gain=target.min_gain,
            fallback=[target.recycler] if target.recycler is not None else [],
            rates=target.rates,
        )

    def on_prefill(self, hidden: torch.Tensor | None) -> None:
        self.ngram.set_source("memory", self.target.memory.query(hidden))

    def before_step(self, step: int) -> None:
        if self.hint is not None and self.hint.poll(step):
            # Encoded by the reader, which drops a hint it cannot encode (never the call).
            tokens = self.hint.tokens
            self.ngram.set_source("hint", [tokens] if tokens else [])

    def on_verdict(self, path_tokens: Sequence[int], verdict: Any) -> None:
        recycler = self.target.recycler
        if recycler is not None and verdict.path_top:
            recycler.record(path_tokens, verdict.path_top)


def chat_prompt_ids(
    fmt: ChatFormat,
    tokenizer: Any,
    codec: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolLike],
) -> list[int]:
    """Render ``messages`` and ``tools`` with ``fmt`` and the tokenizer's chat template (the
    format renders each tool's OpenAI dict: :meth:`~ooo_agent.offered.OfferedTool.to_openai`)."""
    rendered = fmt.render_messages(messages, openai_tools(tools))
    try:
        text = tokenizer.apply_chat_template(rendered, tokenize=False, add_generation_prompt=True)
    except Exception as exc:
        raise TargetError(f"the tokenizer's chat template failed: {exc}") from exc
    return list(codec.encode(str(text)))
