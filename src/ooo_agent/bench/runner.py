"""The end-to-end benchmark: vanilla vs ToolSpec vs OoO-Spec (vs Hugging Face prompt lookup).

Every mode runs on the same loaded model, in the same process, interleaved per request (the
mode order rotates from one request to the next, so drift and warm caches hit all modes
alike). Each mode has its own target *instance* over the shared weights: prefix cache,
retrieval memory, token-recycling table and acceptance rates evolve as if that mode ran
alone, and no mode ever sees another mode's output for the same request.

A request's latency runs from its arrival to validated calls (``FastToolCaller.call``, no
dispatch): prompt rendering, prefill, decoding, parsing and validation, and — in mode ``ooo`` —
the sidecar, started at that arrival and never before (no prefetch across requests).

Example::

    runners = build_runners(model, tokenizer, modes=("vanilla", "toolspec"), fmt="hermes")
    records = anyio.run(run_requests, [(item, False) for item in items], runners)
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ooo_agent.bench.ast_check import check
from ooo_agent.bench.datasets import BenchItem
from ooo_agent.bench.report import RequestRecord
from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import CallResult
from ooo_agent.errors import OooAgentError
from ooo_agent.rules import Rule
from ooo_agent.targets.base import Generation, Mode, Target, TargetRequest

if TYPE_CHECKING:
    from ooo_agent.bench.oracle import OracleSidecar
    from ooo_agent.formats.base import ChatFormat
    from ooo_agent.sidecar.base import Sidecar

__all__ = [
    "BENCH_MODES",
    "ModeRunner",
    "RecordingTarget",
    "build_runners",
    "fill_record",
    "identity_failures",
    "prepare_oracle",
    "run_requests",
]

BENCH_MODES: tuple[str, ...] = ("vanilla", "toolspec", "ooo", "hf-pld")
"""Modes the benchmark knows: ours, and Hugging Face's prompt lookup as an outside baseline."""

CHECKED_MODES: tuple[str, ...] = ("toolspec", "ooo")
"""Modes that must reproduce vanilla's output exactly (a mismatch fails the benchmark)."""


class RecordingTarget:
    """A :class:`Target` that delegates and keeps the last :class:`Generation` (token ids)."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.last: Generation | None = None

    @property
    def format(self) -> ChatFormat | None:
        return self.inner.format

    @property
    def modes(self) -> tuple[Mode, ...]:
        return tuple(self.inner.modes)

    # FastToolCaller reads the target's rules to apply them once for the target and the
    # sidecar (``TargetRequest.ruled``); a wrapper that hid them would send every bench wave
    # without them.
    @property
    def rules(self) -> tuple[Rule, ...] | None:
        return getattr(self.inner, "rules", None)

    async def generate(self, request: TargetRequest) -> Generation:
        self.last = None
        generation = await self.inner.generate(request)
        self.last = generation
        return generation


@dataclass
class ModeRunner:
    """One benchmark mode: a caller over its own target instance, and the mode it asks for."""

    name: str
    caller: FastToolCaller
    recorder: RecordingTarget
    call_mode: Mode


def build_runners(
    model: Any,
    tokenizer: Any,
    *,
    modes: Sequence[str],
    fmt: str = "hermes",
    sidecar: Sidecar | None = None,
    threads: int | None = None,
    prefix_reuse: bool = True,
    max_new_tokens: int = 256,
    sidecar_timeout: float = 30.0,
    pld_tokens: int = 10,
    wrap: Callable[[str, Target], Target] | None = None,
    constrain_names: bool = False,
    constrain_json: bool = False,
    constrain_arguments: bool = False,
    rules: Iterable[str] = (),
    node_budget: int | None = None,
    max_draft_tokens: int | None = None,
    decline_below: float | None = None,
) -> dict[str, ModeRunner]:
    """A :class:`ModeRunner` per mode, all over ``model`` (one target instance each).

    ``wrap(mode, target)`` may replace a mode's target (tests inject faults with it).
    ``constrain_names`` / ``constrain_json`` / ``constrain_arguments`` / ``rules``: every
    ``HFTarget`` mode decodes with the function-name / well-formed-call /
    arguments-follow-the-schema constraint and these request rules (:mod:`ooo_agent.rules`;
    ``hf-pld``, transformers' own loop, cannot).
    ``node_budget`` / ``max_draft_tokens``: every ``HFTarget`` mode's tree size and draft length
    (``None``: ``HFTarget``'s defaults). ``decline_below``: every ``HFTarget`` mode's decline
    policy (``hf-pld`` has none).
    """
    from ooo_agent.bench.baselines import PromptLookupTarget
    from ooo_agent.targets.hf import DEFAULT_MAX_DRAFT_TOKENS, DEFAULT_NODE_BUDGET, HFTarget

    unknown = [m for m in modes if m not in BENCH_MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; known: {', '.join(BENCH_MODES)}")
    if "ooo" in modes and sidecar is None:
        raise ValueError("mode 'ooo' needs a sidecar")
    rules = tuple(rules)
    constrained = constrain_names or constrain_json or constrain_arguments or bool(rules)
    if (constrained or decline_below is not None) and "hf-pld" in modes:
        raise ValueError(
            "mode 'hf-pld' (transformers' generate) cannot constrain decoding or decline"
        )
    runners: dict[str, ModeRunner] = {}
    for name in modes:
        target: Target
        if name == "hf-pld":
            target = PromptLookupTarget(model, tokenizer, fmt, prompt_lookup_num_tokens=pld_tokens)
            call_mode: Mode = "vanilla"
        else:
            target = HFTarget(
                model,
                tokenizer,
                fmt,
                num_threads=threads,
                prefix_reuse=prefix_reuse,
                constrain_names=constrain_names,
                constrain_json=constrain_json,
                constrain_arguments=constrain_arguments,
                rules=rules,
                decline_below=decline_below,
                node_budget=DEFAULT_NODE_BUDGET if node_budget is None else node_budget,
                max_draft_tokens=(
                    DEFAULT_MAX_DRAFT_TOKENS if max_draft_tokens is None else max_draft_tokens
                ),
            )
            call_mode = "ooo" if name == "ooo" else "toolspec" if name == "toolspec" else "vanilla"
        if wrap is not None:
            target = wrap(name, target)
        recorder = RecordingTarget(target)
        caller = FastToolCaller(
            recorder,
            sidecar if name == "ooo" else None,
            mode=call_mode,
            sidecar_timeout=sidecar_timeout,
            max_new_tokens=max_new_tokens,
        )
        runners[name] = ModeRunner(name, caller, recorder, call_mode)
    return runners


async def prepare_oracle(
    oracle: OracleSidecar,
    target: Target,
    items: Sequence[BenchItem],
    *,
    max_new_tokens: int = 256,
    on_item: Callable[[], None] | None = None,
) -> None:
    """Decode every item greedily (untimed) and remember its first call in ``oracle``.

    ``target`` should be a fresh instance: it must not share state with the timed modes.
    """
    caller = FastToolCaller(target, mode="vanilla", max_new_tokens=max_new_tokens)
    fmt = target.format
    for item in items:
        result = await caller.call(item.messages, item.tools, dispatch=False)
        parsed = fmt.parse(result.raw_text).calls if fmt is not None else []
        oracle.remember(item.messages, item.tools, parsed[0] if parsed else None)
        if on_item is not None:
            on_item()


_Item = TypeVar("_Item")
_Record = TypeVar("_Record", bound="RequestRecord")


async def _measure(
    runner: ModeRunner, item: BenchItem, position: int, warmup: bool
) -> RequestRecord:
    record = RequestRecord(
        item_id=item.id, category=item.category, mode=runner.name, position=position,
        warmup=warmup, latency_s=math.nan, generate_s=math.nan, forward_passes=0,
        new_tokens=0, prompt_tokens=0, prefill_tokens=0, prefill_s=0.0, decode_steps=0,
        accepted_tokens=0,
    )  # fmt: skip
    try:
        result = await runner.caller.call(
            item.messages, item.tools, dispatch=False, mode=runner.call_mode
        )
    except (OooAgentError, ValueError) as exc:  # one broken request must not end the run
        record.failure = f"{type(exc).__name__}: {exc}"
        record.ast_reason = "the request failed"
        return record
    fill_record(record, result, runner, item)
    return record


def fill_record(
    record: RequestRecord, result: CallResult, runner: ModeRunner, item: BenchItem
) -> None:
    """Copy what ``runner``'s call for ``item`` did (``result``) into ``record``: stats,
    sidecar figures, output tokens, calls and the AST verdict."""
    stats = result.stats
    decode = stats.decode
    record.latency_s = stats.total_s
    record.generate_s = stats.generate_s
    record.forward_passes = decode.forward_passes
    record.new_tokens = decode.new_tokens
    record.prompt_tokens = decode.prompt_tokens
    record.prefill_tokens = decode.prefill_tokens
    record.prefill_s = decode.prefill_s
    record.decode_steps = decode.decode_steps
    record.accepted_tokens = sum(decode.accepted_lengths)
    record.accepted_by_drafter = dict(decode.accepted_by_drafter)
    record.constrained_tokens = decode.constrained_tokens
    record.declined = decode.declined
    record.sidecar_status = stats.sidecar.status
    record.sidecar_latency_s = stats.sidecar.latency_s
    record.sidecar_function_step = stats.sidecar.function_arrival_step
    record.sidecar_slot_steps = dict(stats.sidecar.slot_arrival_steps)
    record.hint_tokens_accepted = stats.sidecar.hint_tokens_accepted
    record.sidecar_function_from_target = stats.sidecar.function_from_target
    record.sidecar_predicted = stats.sidecar.predicted
    record.text = result.raw_text
    record.token_ids = list(runner.recorder.last.token_ids) if runner.recorder.last else []
    record.calls = [{"name": c.name, "arguments": c.arguments} for c in result.calls]
    record.errors = [e.message for e in result.errors]
    if result.errors:
        record.ast_ok, record.ast_reason = False, "invalid call: " + result.errors[0].message
    else:
        verdict = check(result.calls, item)
        record.ast_ok, record.ast_reason = verdict.ok, verdict.reason


def _same_output(reference: RequestRecord, other: RequestRecord) -> bool | None:
    if reference.failure or other.failure:
        return None
    if reference.token_ids and other.token_ids:
        return reference.token_ids == other.token_ids
    return reference.text == other.text


async def run_requests(
    items: Sequence[tuple[BenchItem, bool]],
    runners: Mapping[str, ModeRunner],
    *,
    on_record: Callable[[RequestRecord], None] | None = None,
) -> list[RequestRecord]:
    """Run every ``(item, is_warmup)`` through every mode, rotating the mode order per item.

    Records come back in item order, modes in ``runners`` order; ``identical`` compares
    each mode's output with vanilla's for the same item.
    """
    return await run_rotated(items, runners, _measure, on_record=on_record)


async def run_rotated(
    entries: Sequence[tuple[_Item, bool]],
    runners: Mapping[str, ModeRunner],
    measure: Callable[[ModeRunner, _Item, int, bool], Awaitable[_Record]],
    *,
    on_record: Callable[[_Record], None] | None = None,
) -> list[_Record]:
    """``measure`` every ``(entry, is_warmup)`` in every mode, the mode order rotating per
    entry; records in entry order, modes in ``runners`` order, ``identical`` set against
    vanilla's."""
    names = list(runners)
    records: list[_Record] = []
    for index, (entry, warmup) in enumerate(entries):
        shift = index % len(names) if names else 0
        order = names[shift:] + names[:shift]
        done: dict[str, _Record] = {}
        for position, name in enumerate(order):
            done[name] = await measure(runners[name], entry, position, warmup)
        reference = done.get("vanilla")
        for name in names:
            record = done[name]
            if reference is not None and name != "vanilla":
                record.identical = _same_output(reference, record)
            records.append(record)
            if on_record is not None:
                on_record(record)
    return records


def identity_failures(records: Sequence[RequestRecord]) -> list[str]:
    """``"item_id/mode"`` for every checked-mode record whose output differs from vanilla's."""
    return [
        f"{r.item_id}/{r.mode}" for r in records if r.mode in CHECKED_MODES and r.identical is False
    ]


def running_means(records: Sequence[RequestRecord]) -> str:
    """A one-line live summary: mean latency per mode and speedup over vanilla so far."""
    sums: dict[str, list[float]] = {}
    for r in records:
        if not r.warmup and not r.failure:
            sums.setdefault(r.mode, []).append(r.latency_s)
    if not sums:
        return "warming up"
    base = sums.get("vanilla")
    parts = []
    for mode, values in sums.items():
        mean = sum(values) / len(values)
        text = f"{mode} {mean:.2f}s"
        if base and mode != "vanilla" and len(base) == len(values) and sum(values) > 0:
            text += f" ({sum(base) / sum(values):.2f}x)"
        parts.append(text)
    return " · ".join(parts)


def timestamp() -> str:
    """UTC time as ``YYYY-mm-ddTHH:MM:SSZ``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
