"""``HFSidecar``: the OoO-Spec sidecar in-process, with transformers (+ peft for the adapter).

One wave is ONE batched greedy generation over all semantic rows: the rows' shared prefix
(system message + dialogue) is computed once and its KV reused by every row
(:class:`~ooo_agent.sidecar.batch.SharedPrefixGenerator`). Each row's answer lands in the
:class:`~ooo_agent.sidecar.base.HintBox` the moment the row ends, so the drafter sees the
function first (its row is one token long) and then each slot as it arrives.

The shared prefix is kept in the sidecar's own
:class:`~ooo_agent.decoding.prefix_cache.PrefixCache`, so a later wave whose prompt starts the
same way (the same listing, the same conversation one turn on) runs only what follows;
``box.usage`` counts the tokens served and run, and where the time went.

The generation runs in a worker thread with its own torch thread count (one by default: on a
small machine the target and the sidecar must not both ask for every core) and stops between
two forward passes when the wave is cancelled.

Example::

    sidecar = HFSidecar.from_pretrained("Qwen/Qwen3-0.6B", adapter="ArisrrrX/OoO-Spec-sidecar-lora")
    caller = FastToolCaller(target, sidecar)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ooo_agent.decoding.prefix_cache import DEFAULT_PREFIX_CACHE_BYTES, PrefixCache
from ooo_agent.errors import ModelNotAvailableError, SidecarError
from ooo_agent.observability import quiet_loading
from ooo_agent.offered import OfferedTool
from ooo_agent.rules.conventions import free_string
from ooo_agent.rules.text import user_text
from ooo_agent.rules.words import described_date_form, names_a_date
from ooo_agent.sidecar._wave import (
    WaveAssembler,
    WaveOptions,
    WavePlan,
    WaveReport,
    required_parameters,
)
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest, WaveUsage
from ooo_agent.sidecar.batch import (
    GenerationCancelled,
    KeptPrefix,
    RowResult,
    SharedPrefixGenerator,
    common_prefix_length,
)
from ooo_agent.sidecar.prompts import PromptTemplate, template_from_tokenizer
from ooo_agent.sidecar.relevance import tool_relevance, with_relevance
from ooo_agent.sidecar.rows import (
    build_wave_rows,
    direct_call_start,
    parse_function_index,
    parse_slot_value,
    tool_signatures,
)
from ooo_agent.sidecar.values import ValueConstraint, comma_free_place, copies_words

__all__ = ["ADAPTER_SUBFOLDERS", "HFSidecar"]

ADAPTER_SUBFOLDERS: dict[str, str] = {
    "ArisrrrX/OoO-Spec-sidecar-lora": "sidecar-lora-spaced",
}
"""Default adapter subfolder of known multi-adapter repositories (``sidecar-lora`` selectable)."""

_SUBFOLDER_CANDIDATES = ("sidecar-lora-spaced", "sidecar-lora")



class HFSidecar:
    """A sidecar model run in-process with transformers.

    Args:
        model: a causal LM (a ``PeftModel`` or a merged one), in eval mode.
        tokenizer: its tokenizer; its chat template renders the rows unless ``template`` is given.
        template: chat messages → prompt text (default: the tokenizer's template, thinking off).
        num_threads: torch intra-op threads for the sidecar's generation (``None``: untouched).
        max_new_tokens: token budget per row (answers are short: an index or a JSON value).
        options: which rows a wave asks (:class:`~ooo_agent.sidecar._wave.WaveOptions`).
        prefix_cache_bytes: memory for the prompt prefixes kept between waves
            (:attr:`prefix_cache`; None: 2 GiB; 0: none kept, every wave runs its whole
            prompt).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        template: PromptTemplate | None = None,
        num_threads: int | None = 1,
        max_new_tokens: int = 32,
        options: WaveOptions | None = None,
        prefix_cache_bytes: int | None = None,
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, not {max_new_tokens}")
        budget = DEFAULT_PREFIX_CACHE_BYTES if prefix_cache_bytes is None else prefix_cache_bytes
        cache = PrefixCache(budget)  # raises on a bad budget
        self.prefix_cache: PrefixCache | None = cache if budget else None
        """The prompt prefixes kept between this sidecar's waves (None: none kept)."""
        self.generator = SharedPrefixGenerator(
            model, tokenizer, num_threads=num_threads, prefix_cache=self.prefix_cache
        )
        self.template = template or template_from_tokenizer(tokenizer)
        self.max_new_tokens = max_new_tokens
        self.options = options or WaveOptions()
        self._null_ids: list[int] | None = None
        self._end_ids: list[int] | None = None
        if self.options.required_values:
            self.null_token_ids()  # once, at load time (~0.2 s for a 49k vocabulary), not in a wave
        if self.options.joint_values:
            self.call_end_token_ids()  # the same

    @property
    def model(self) -> Any:
        return self.generator.model

    @property
    def tokenizer(self) -> Any:
        return self.generator.tokenizer

    # -- construction ------------------------------------------------------------------
    @classmethod
    @quiet_loading
    def from_pretrained(
        cls,
        base: str | Path,
        adapter: str | Path | None = None,
        subfolder: str | None = None,
        *,
        dtype: Any = None,
        device: str = "cpu",
        merge: bool = True,
        **kwargs: Any,
    ) -> HFSidecar:
        """Load a base model (local dir or hub id) and, optionally, a LoRA adapter on top.

        ``subfolder`` picks one adapter of a multi-adapter repository or folder; for
        ``ArisrrrX/OoO-Spec-sidecar-lora`` (or a local copy of it) the default is
        ``sidecar-lora-spaced``, the adapter behind the published numbers. ``merge`` folds the
        LoRA weights into the base (faster per step, same outputs). ``dtype`` defaults to
        :func:`~ooo_agent.models.presets.sidecar_dtype`: bfloat16 where the hardware has native
        bf16 kernels (a GPU, or a CPU with AVX512-BF16 / AMX), float32 elsewhere — the hint's
        precision never changes the target's output. Other keyword arguments go to ``__init__``.
        """
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelNotAvailableError(
                "HFSidecar needs the 'hf' extra: pip install 'ooo-agent[hf]'"
            ) from exc
        if dtype is None:
            from ooo_agent.models.presets import sidecar_dtype

            dtype = sidecar_dtype(device)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(base))
            auto_model: Any = AutoModelForCausalLM  # transformers' stubs are narrower than its API
            model = auto_model.from_pretrained(str(base), dtype=dtype)
        except OSError as exc:
            raise ModelNotAvailableError(
                f"cannot load sidecar base model {str(base)!r}: {exc}"
            ) from exc
        if adapter is not None:
            model = _attach_adapter(model, adapter, subfolder, merge=merge)
        model = model.to(device).eval()
        return cls(model, tokenizer, **kwargs)

    @classmethod
    def from_preset(
        cls, name: str, *, dtype: Any = None, device: str | None = None, **kwargs: Any
    ) -> HFSidecar:
        """A sidecar from a named model preset (see ``ooo_agent.models``).

        ``dtype`` None: :func:`~ooo_agent.models.presets.sidecar_dtype` for ``device``. Without
        ``options``, the preset's own ``wave``
        (:func:`~ooo_agent.models.presets.sidecar_options`).
        """
        try:
            from ooo_agent.models import load_preset  # type: ignore[attr-defined,unused-ignore]
        except ImportError as exc:
            raise ModelNotAvailableError(
                "model presets are not available in this installation (ooo_agent.models.load_preset)"
            ) from exc
        from ooo_agent.models.presets import sidecar_dtype, sidecar_options

        kwargs.setdefault("options", sidecar_options(name))
        loaded = load_preset(name, dtype=dtype or sidecar_dtype(device), device=device)
        if isinstance(loaded, tuple) and len(loaded) >= 2:
            model, tokenizer = loaded[0], loaded[1]
        elif hasattr(loaded, "model") and hasattr(loaded, "tokenizer"):
            model, tokenizer = loaded.model, loaded.tokenizer
        else:
            raise ModelNotAvailableError(f"preset {name!r} did not give a (model, tokenizer) pair")
        return cls(model, tokenizer, **kwargs)

    # -- the wave ----------------------------------------------------------------------
    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        """Run one wave for ``request``, filling ``box`` as rows finish; return the final hint."""
        return (await self.run_wave(request, box)).hint

    async def run_wave(self, request: SidecarRequest, box: HintBox) -> WaveReport:
        """Like :meth:`wave`, with dropped slots, arrival order and latency."""
        plan = WavePlan.build(request, self.template, self.options)
        assembler = WaveAssembler.start(plan, box, self.options)
        if plan.rows or plan.choice_prompt is not None:
            cancel = threading.Event()
            try:
                # Abandoned on cancellation: the thread sees `cancel` before its next forward.
                await anyio.to_thread.run_sync(
                    self._generate, plan, assembler, cancel, abandon_on_cancel=True
                )
            finally:
                cancel.set()
        return assembler.finish()

    def run_wave_sync(
        self, request: SidecarRequest, box: HintBox, cancel: threading.Event | None = None
    ) -> WaveReport:
        """The wave in the calling thread (for servers, scripts and benchmarks)."""
        plan = WavePlan.build(request, self.template, self.options)
        assembler = WaveAssembler.start(plan, box, self.options)
        if plan.rows or plan.choice_prompt is not None:
            self._generate(plan, assembler, cancel)
        return assembler.finish()

    # -- the next turn -----------------------------------------------------------------
    def next_turn_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> list[int]:
        """The tokens every wave prompt after ``messages`` (ending with the assistant's calls)
        starts with, whatever its tool results say: the rows' prompt in :attr:`options`'
        layout, up to where the first result's text begins."""
        calls = messages[-1].get("tool_calls") if messages else None
        call_id = (calls[0] or {}).get("id") if calls else None

        def with_result(text: str) -> list[int]:
            result = {"role": "tool", "tool_call_id": call_id, "content": text}
            rows = build_wave_rows([*messages, result], tools, layout=self.options.layout)
            return self.generator.encode(self.template(rows[0].messages))

        one, other = with_result("0"), with_result("1")
        return one[: common_prefix_length([one, other])]

    def prefill_next_turn_sync(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        cancel: threading.Event | None = None,
    ) -> int:
        """Prefill :meth:`next_turn_ids` into :attr:`prefix_cache` (while the tools run), so
        the next turn's wave runs only the results and what follows; returns the tokens that
        ran (0 without a prefix cache). Waits for a wave running on this sidecar's model."""
        if self.prefix_cache is None:
            return 0
        return self.generator.prefill(self.next_turn_ids(messages, tools), cancel=cancel)

    async def prefill_next_turn(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> int:
        """:meth:`prefill_next_turn_sync` in a worker thread; cancelled, this returns at once
        and the thread finishes the prefill (a wave waits for it)."""
        return await anyio.to_thread.run_sync(
            lambda: self.prefill_next_turn_sync(messages, tools), abandon_on_cancel=True
        )

    @property
    def schedule(self) -> str:
        """The row schedule in use: ``options.schedule`` with ``auto`` resolved by device."""
        if self.options.schedule != "auto":
            return self.options.schedule
        device = getattr(next(iter(self.model.parameters()), None), "device", None)
        return "function-first" if getattr(device, "type", "cpu") == "cpu" else "parallel"

    def _schedule(
        self, plan: WavePlan, assembler: WaveAssembler, cancel: threading.Event | None
    ) -> tuple[list[int], Callable[[list[RowResult]], list[int]] | None]:
        if self.schedule != "function-first" or len(plan.rows) < 2:
            return [], None
        if any(row.kind == "function_index" for row in plan.rows):
            return _function_first(plan, assembler)
        if plan.choice_prompt is not None:
            return _chosen_first(plan, assembler)
        return [], None

    def _choose(
        self, plan: WavePlan, assembler: WaveAssembler, cancel: threading.Event | None
    ) -> None:
        """``function_choice="scored"``: the tool whose name starts the likeliest direct call,
        with ``options.relevance_weight`` times the tools' lexical relevance added."""
        assert plan.choice_prompt is not None
        names = [tool.name for tool in plan.request.tools]
        usage = assembler.box.usage
        scores = self._name_scores(plan.choice_prompt, names, cancel, usage)
        if self.options.relevance_weight:
            relevance = tool_relevance(
                plan.request.messages,
                plan.request.tools,
                parameter_weight=self.options.relevance_parameter_weight,
            )
            scores = with_relevance(scores, relevance, self.options.relevance_weight)
        assembler.choose(max(range(len(scores)), key=scores.__getitem__))

    def tool_choice_scores(self, request: SidecarRequest) -> list[float]:
        """What a scored choice reads, for inspection: each offered tool's name score after
        the request's direct-call prompt."""
        options = WaveOptions(
            function_choice="scored",
            layout=self.options.layout,
        )
        plan = WavePlan.build(request, self.template, options)
        if plan.choice_prompt is None:
            raise ValueError("a tool choice needs two or more offered tools")
        names = [tool.name for tool in request.tools]
        return self._name_scores(plan.choice_prompt, names, None)

    def _name_scores(
        self,
        prompt: str,
        names: list[str],
        cancel: threading.Event | None,
        usage: WaveUsage | None = None,
    ) -> list[float]:
        """Log-probability of each name's direct-call start after ``prompt``, one forward."""
        base = self.generator.encode(prompt)
        sequences: list[list[int]] = []
        counts: list[int] = []
        for name in names:
            start = direct_call_start(name)
            full = self.generator.encode(prompt + start)
            if full[: len(base)] != base:  # the answer's start merged into the prompt's end
                full = base + self.generator.encode(start)
            sequences.append(full)
            counts.append(len(full) - len(base))
        return self.generator.score(sequences, counts, cancel=cancel, usage=usage)

    def _generate(
        self, plan: WavePlan, assembler: WaveAssembler, cancel: threading.Event | None
    ) -> list[RowResult]:
        def land(result: RowResult) -> None:
            assembler.answer(result.index, result.text.strip())

        usage = assembler.box.usage
        clock = _Clock(usage)
        try:
            if plan.choice_prompt is not None:
                self._choose(plan, assembler, cancel)
                usage.choice_s += clock.lap()
            if not plan.rows:  # every argument row left out (unnamed_nulls): the choice alone
                return []
            prompts = [self.generator.encode(text) for text in plan.prompts]
            first, then = self._schedule(plan, assembler, cancel)
            if plan.choice_prompt is not None and then is not None and not first:
                return []  # the chosen tool has no parameters: no row to ask
            bans, constraints = self._steers(plan)
            if then is not None and plan.choice_prompt is None:  # the index row runs first

                def chosen(results: list[RowResult], then: Any = then) -> list[int]:
                    if not clock.choice_done:
                        clock.choice_done = True
                        usage.choice_s += clock.lap()
                    return list(then(results))

                then = chosen
            results = self.generator.generate(
                prompts,
                max_new_tokens=self.max_new_tokens,
                on_row=land,
                cancel=cancel,
                first=first,
                then=then,
                first_token_bans=bans,
                constraints=constraints,
                usage=usage,
            )
            if self.options.joint_values and constraints:
                self._joint_values(plan, assembler, constraints, cancel)
            usage.rows_s += clock.lap()
            return results
        except GenerationCancelled:
            raise
        except Exception as exc:
            raise SidecarError(f"sidecar generation failed: {type(exc).__name__}: {exc}") from exc

    def _steers(
        self, plan: WavePlan
    ) -> tuple[dict[int, list[int]] | None, dict[int, ValueConstraint] | None]:
        """The argument rows' decoding steers, in one pass over the rows: with
        ``options.required_values``, for each row of a required parameter the tokens that would
        start ``null`` (``first_token_bans``; with ``options.mentioned_values`` also for each
        optional parameter the request names); with ``options.typed_values``, each row held to
        its parameter's schema (``constraints``) — as the target reads it when the request says
        the target holds values to conventions (the ``values`` rule: ``SidecarRequest.ruled``), a free
        string then holding a comma only where the request writes it (``commas_from``), and
        none in a place its description shows without one (:func:`comma_free_place`)."""
        required_values, typed_values = self.options.required_values, self.options.typed_values
        # Not where the caller knows the target leaves named optionals to the model.
        mentioned_values = self.options.mentioned_values and plan.request.named_optionals is not False
        if not (required_values or typed_values or mentioned_values):
            return None, None
        named: list[tuple[str, ...]] = []  # per offered tool, its named optional parameters
        if mentioned_values:
            named = [plan.named.get(tool.name, ()) for tool in plan.request.tools]
        tools: Sequence[OfferedTool] = plan.request.tools
        request_text: str | None = None  # the user's words, beside a convention-holding target
        ruled = plan.request.ruled
        if typed_values and ruled is not None and ruled.has("values"):
            tools = ruled.tools  # the target's, computed once for both
            request_text = user_text(plan.request.messages)
        bans: dict[int, list[int]] = {}
        constraints: dict[int, ValueConstraint] = {}
        for i, row in enumerate(plan.rows):
            if row.kind != "argument_value" or row.function_index is None or row.param is None:
                continue
            tool = plan.request.tools[row.function_index]
            needs_value = (required_values and row.param in required_parameters(tool)) or (
                bool(named) and row.param in named[row.function_index]
            )
            if needs_value:
                bans[i] = self.null_token_ids()
            if typed_values:
                schema = tools[row.function_index].properties.get(row.param)
                row_commas = (
                    request_text if request_text is not None and free_string(schema) else None
                )
                if row_commas is not None and comma_free_place(row.param, schema):
                    row_commas = ""  # no comma at all
                row_words = (
                    request_text if self.options.whole_words and copies_words(schema) else None
                )
                constraints[i] = ValueConstraint(
                    schema if schema is not None else {},
                    self.generator.decode,
                    stop_ids=self.generator.stop_token_ids,
                    null_ok=not needs_value,
                    commas_from=row_commas,
                    words_from=row_words,
                    encode=self.generator.encode,
                    date_row=names_a_date(row.param),
                    date_form=described_date_form((schema or {}).get("description")),
                )
        steered = required_values or mentioned_values
        return (bans if steered else None), (constraints if typed_values else None)

    def _joint_values(
        self,
        plan: WavePlan,
        assembler: WaveAssembler,
        constraints: dict[int, ValueConstraint],
        cancel: threading.Event | None,
    ) -> None:
        """``options.joint_values``: the numbers the chosen tool's rows answered, and each
        string that repeats an earlier one of the call, written again in the call one after
        another (each lands as it ends; the rest of the call is the answers as they stand)."""
        index = assembler.function
        if index is None:
            return
        name, params = tool_signatures(plan.request.tools)[index]
        rows = {
            row.param: i
            for i, row in enumerate(plan.rows)
            if row.kind == "argument_value" and row.function_index == index
        }
        answers = assembler.answers_of(index)
        values: list[tuple[str, Any]] = []  # the call's arguments, in the tool's order
        for param in params:
            try:
                value = parse_slot_value(answers.get(param) or "null")
            except ValueError:
                continue  # garbage is no argument of the call (the hint drops it too)
            if value is not None:
                values.append((param, value))
        prompt: str | None = None  # the direct-call prompt, built for the first value asked
        # As a direct-call answer is written (json.dumps of {"name": ..., "parameters": ...}).
        call = direct_call_start(name) + 'parameters": {'
        kept = KeptPrefix()
        usage = assembler.box.usage
        ends = self.call_end_token_ids()
        written: list[Any] = []  # the call's values so far, as written
        for n, (param, value) in enumerate(values):
            call += (", " if n else "") + json.dumps(param, ensure_ascii=False) + ": "
            row = rows.get(param)
            number = _number(value) and row in constraints and constraints[row].free_number
            again = number or (row in constraints and _repeats(value, written))
            if row is not None and again:
                if prompt is None:
                    prompt = self._call_prompt(plan)
                # A number ends where a comma or the call's brace follows it; a string where
                # its closing quote does (it may hold a comma itself).
                stops = (",", "}") if number else ('",', '"}')
                result = self.generator.generate(
                    [self.generator.encode(prompt + call)],
                    max_new_tokens=self.max_new_tokens,
                    stop_strings=stops,
                    cancel=cancel,
                    constraints={0: constraints[row].in_call(ends)},
                    kept=kept,
                    usage=usage,
                )[0]
                text = result.text.strip() + ("" if number else '"')
                try:
                    again_value = json.loads(text) if result.finish_reason == "stop" else None
                except ValueError:
                    again_value = None
                if _number(again_value) if number else isinstance(again_value, str):
                    assembler.answer(row, text)
                    call += text
                    written.append(again_value)
                    continue
            call += json.dumps(value, ensure_ascii=False)
            written.append(value)
        cache = self.prefix_cache
        whole = kept.cache is not None and kept.cache.get_seq_length() == len(kept.ids)
        if cache is not None and kept.ids and whole:  # the call's KV, for the next wave
            cache.insert(kept.ids, kept.cache)

    def _call_prompt(self, plan: WavePlan) -> str:
        """The direct-call prompt of ``plan``'s request (the one a scored tool choice read)."""
        if plan.choice_prompt is not None:
            return plan.choice_prompt
        direct = build_wave_rows(
            plan.request.messages,
            plan.request.tools,
            direct_call=True,
            layout=self.options.layout,
        )[-1]
        return self.template(direct.messages)

    def call_end_token_ids(self) -> list[int]:
        """Ids of the tokens that end a value inside a call (``options.joint_values``):
        those whose text starts with ``,`` or ``}``."""
        if self._end_ids is None:
            tokenizer = self.generator.tokenizer
            self._end_ids = [
                token_id
                for token_id in range(len(tokenizer))
                if tokenizer.decode([token_id])[:1] in (",", "}")
            ]
        return self._end_ids

    def null_token_ids(self) -> list[int]:
        """Ids of the tokens a required parameter's answer may not start with: those an
        answer ``null`` can start with (the stripped text a non-empty prefix of ``null``, or
        starting with it: ``n``, `` null``…), blank ones (a blank start could still lead to
        ``null``) and the end-of-turn tokens (an empty answer is no value either)."""
        if self._null_ids is None:
            tokenizer = self.generator.tokenizer
            found = set(self.generator.stop_token_ids)
            for token_id in range(len(tokenizer)):
                raw = tokenizer.decode([token_id])
                text = raw.strip()
                if (raw and not text) or (
                    text and ("null".startswith(text) or text.startswith("null"))
                ):
                    found.add(token_id)
            self._null_ids = sorted(found)
        return self._null_ids


class _Clock:
    """Laps of a wave's time with the shared prompt's prefill left out (it is counted in
    ``usage.prefill_s`` as it runs)."""

    def __init__(self, usage: WaveUsage) -> None:
        self.usage = usage
        self.at = time.perf_counter()
        self.prefill_at = usage.prefill_s
        self.choice_done = False

    def lap(self) -> float:
        """Seconds since the last lap, less the prefill run meanwhile."""
        now, prefill = time.perf_counter(), self.usage.prefill_s
        spent = now - self.at - (prefill - self.prefill_at)
        self.at, self.prefill_at = now, prefill
        return max(0.0, spent)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _repeats(value: Any, earlier: list[Any]) -> bool:
    """Whether a string repeats one of the ``earlier`` strings of its call, or holds one, or
    is part of one (case aside): two parameters of a tool seldom take the same words, and a
    row that answers another row's span again has most likely read the wrong one."""
    if not isinstance(value, str) or not value.strip():
        return False
    mine = value.strip().lower()
    return any(
        isinstance(other, str)
        and other.strip()
        and (mine in other.strip().lower() or other.strip().lower() in mine)
        for other in earlier
    )


def _function_first(
    plan: WavePlan, assembler: WaveAssembler
) -> tuple[list[int], Callable[[list[RowResult]], list[int]]]:
    """The function-index row first; then the argument rows of one tool: the one the target
    wrote when it is known by then (the assembler follows it), else
    the one the row names (none if it names none: without a function no slot can reach the
    hint). When the target turns out to write another tool, that tool's rows run next."""
    head = [i for i, row in enumerate(plan.rows) if row.kind == "function_index"]
    count = len(plan.request.tools)
    asked: set[int] = set()

    def then(results: list[RowResult]) -> list[int]:
        index = parse_function_index(results[0].text.strip(), count)
        if assembler.followed:
            index = assembler.function
        if index is None or index in asked:
            return []
        asked.add(index)
        return _argument_rows(plan, index)

    return head, then


def _chosen_first(
    plan: WavePlan, assembler: WaveAssembler
) -> tuple[list[int], Callable[[list[RowResult]], list[int]]]:
    """The argument rows of the tool already chosen (``scored``) first;
    then, when the target has written another tool by then, that tool's rows."""
    asked = {assembler.function}

    def then(results: list[RowResult]) -> list[int]:
        index = assembler.function
        if not assembler.followed or index in asked:
            return []
        asked.add(index)
        return _argument_rows(plan, index)

    return _argument_rows(plan, assembler.function), then


def _argument_rows(plan: WavePlan, index: int | None) -> list[int]:
    """The plan's argument rows of tool ``index`` (row positions)."""
    return [
        i
        for i, row in enumerate(plan.rows)
        if row.kind == "argument_value" and row.function_index == index
    ]


@quiet_loading
def _attach_adapter(model: Any, adapter: str | Path, subfolder: str | None, *, merge: bool) -> Any:
    try:
        from peft import PeftModel
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ModelNotAvailableError(
            "a LoRA adapter needs peft: pip install 'ooo-agent[hf]'"
        ) from exc
    if subfolder is None:
        subfolder = _default_subfolder(adapter)
    extra: dict[str, Any] = {"subfolder": subfolder} if subfolder else {}
    try:
        peft_cls: Any = PeftModel
        peft_model = peft_cls.from_pretrained(model, str(adapter), **extra)
    except (OSError, ValueError) as exc:
        where = f"{adapter}" + (f" (subfolder {subfolder!r})" if subfolder else "")
        raise ModelNotAvailableError(f"cannot load sidecar adapter {where}: {exc}") from exc
    return peft_model.merge_and_unload() if merge else peft_model


def _default_subfolder(adapter: str | Path) -> str | None:
    """The adapter subfolder to use when none was asked for."""
    known = ADAPTER_SUBFOLDERS.get(str(adapter))
    if known is not None:
        return known
    folder = Path(adapter)
    if folder.is_dir() and not (folder / "adapter_config.json").is_file():
        # A local copy of a multi-adapter repository: prefer the published adapter.
        for name in _SUBFOLDER_CANDIDATES:
            if (folder / name / "adapter_config.json").is_file():
                return name
    return None
