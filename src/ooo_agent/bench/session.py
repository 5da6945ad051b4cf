"""``ooo-agent bench session``: the workload of an agent, where toolsets and conversations repeat.

Requests come in conversations on fixed toolsets: the project's held-out toolset (nine
executable tools; one- and two-step tasks, each a conversation of its own on the same tools)
and BFCL ``multi_turn_base`` (its toolset classes executed from the ``bfcl-eval`` wheel; one
conversation per entry, several user turns). A request's history holds the *gold* calls before
it and their *executed* results, so every request is independent of any model's earlier
mistakes; its gold answer is the next gold call. Conversations are interleaved (``interleave``
at a time, request by request), so the prefix caches hold several at once, as a server's do.

Every mode runs every request on its own target instance (same cache policy, no mode sees
another's output), modes in rotating order per request; latency runs from the request's
arrival, sidecar included, and nothing is prefetched across requests. Reported per call and
per mode: prompt tokens, tokens prefilled and served from the target's prefix cache (and where
the cache diverged), the wave's own figures (every number ``SidecarStats`` holds), late waves
(the target's call was done first), forward passes, latency, identity with ``vanilla``, and
the BFCL AST check against the gold call.

Example::

    ooo-agent bench session --n 12 --sources held_out,multi_turn_base --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ooo_agent.bench.agent_tasks import NeededCall
from ooo_agent.bench.ast_check import check
from ooo_agent.bench.datasets import BenchItem
from ooo_agent.bench.report import RequestRecord
from ooo_agent.bench.runner import ModeRunner, fill_record, run_rotated
from ooo_agent.calls import SidecarStats, ToolCall, ToolResult
from ooo_agent.errors import OooAgentError
from ooo_agent.tools import Tool, Toolset

__all__ = [
    "SESSION_GOALS",
    "SESSION_SOURCES",
    "SessionRecord",
    "SessionRequest",
    "add_session_arguments",
    "bfcl_conversations",
    "conversation_requests",
    "held_out_conversations",
    "interleave_conversations",
    "run_session_bench",
    "run_sessions",
    "session_summary",
]

SESSION_SOURCES: tuple[str, ...] = ("held_out", "multi_turn_base")

SESSION_GOALS: dict[str, float] = {
    "ooo_vs_toolspec_min": 1.5,
    "ooo_vs_vanilla_min": 4.0,
    "late_waves_max_percent": 10.0,
    "identity_min_percent": 100.0,
}
"""Issue 52's goals for this workload (one run, modes interleaved, latency from arrival)."""

AFTER_TURN = "Done."
"""The assistant's words closing a BFCL user turn in the history (after its gold calls)."""


@dataclass(frozen=True)
class SessionRequest:
    """One request of a conversation: the history so far (gold calls, executed results) and
    the next gold call as ``item.gold``."""

    item: BenchItem
    conversation: str
    source: str
    place: int
    """This request's place in its conversation (0: the first, on a fresh history)."""


@dataclass
class SessionRecord(RequestRecord):
    """What one mode did for one session request (a line of ``requests.jsonl``)."""

    conversation: str = ""
    source: str = ""
    place: int = 0
    cached_tokens: int = 0
    """Prompt tokens the target's prefix cache served (``DecodeStats.cached_tokens``)."""
    cache_diverged_at: int | None = None
    first_call_ok: bool = False
    """The answer's first call passes the AST check alone (calls the model added after it
    left out: in a sequential agent only the first is the next step)."""
    late_wave: bool = False
    """The wave was still running when the target's call was done (``status == "late"``)."""
    wave: dict[str, float] = field(default_factory=dict)
    """Every number of the call's ``SidecarStats`` (latency, arrival steps, and whatever the
    sidecar reports of its prefill and time split); empty without a wave."""


# -- the workload ----------------------------------------------------------------------------
def _gold_answer(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, list[Any]]:
    """BFCL-shaped acceptable values: each given argument as given; an optional parameter
    the gold call leaves out may be absent or take its default."""
    answer: dict[str, list[Any]] = {k: [v] for k, v in arguments.items()}
    parameters = tool.parameters
    required = set(parameters.get("required") or ())
    for name, schema in (parameters.get("properties") or {}).items():
        if name in answer or name in required:
            continue
        answer[name] = [""] + ([schema["default"]] if "default" in schema else [])
    return answer


def _execute(tool: Tool | None, call: ToolCall) -> dict[str, Any]:
    """The tool message of running ``call`` (its error as the result when it raises)."""
    if tool is None:
        return ToolResult(call.id, call.name, error=f"no tool {call.name!r}").to_message()
    try:
        value = tool(**call.arguments)
    except Exception as exc:  # the executed result, whatever it is: the model sees it
        return ToolResult(
            call.id, call.name, error=str(exc), error_type=type(exc).__name__
        ).to_message()
    return ToolResult(call.id, call.name, value=value).to_message()


def conversation_requests(
    conversation: str,
    source: str,
    tools: Sequence[Tool],
    turns: Sequence[tuple[str, Sequence[NeededCall]]],
    *,
    system: str | None = None,
    after_turn: str | None = AFTER_TURN,
) -> list[SessionRequest]:
    """One request per gold call of ``turns`` (``(user text, gold calls)``): the history
    before it holds the earlier gold calls (one assistant message each) and their results,
    executed on ``tools`` as they come; ``after_turn`` closes a user turn before the next."""
    toolset = Toolset(list(tools))
    tool_dicts = toolset.to_openai()
    by_name = {t.name: t for t in tools}
    history: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    requests: list[SessionRequest] = []
    for turn, (text, gold) in enumerate(turns):
        if turn and after_turn is not None and history[-1]["role"] == "tool":
            history.append({"role": "assistant", "content": after_turn})
        history.append({"role": "user", "content": text})
        for call in gold:
            tool = by_name.get(call.name)
            place = len(requests)
            item = BenchItem(
                id=f"{conversation}#{place}",
                category=source,
                messages=[dict(m) for m in history],
                tools=tool_dicts,
                gold=[{call.name: _gold_answer(tool, call.arguments) if tool else {}}],
            )
            requests.append(SessionRequest(item, conversation, source, place))
            made = ToolCall(f"call_{place}", call.name, dict(call.arguments))
            history.append({"role": "assistant", "content": None, "tool_calls": [made.to_openai()]})
            history.append(_execute(tool, made))
    return requests


def held_out_conversations(n: int, *, seed: int = 0) -> list[list[SessionRequest]]:
    """Conversations of the held-out tasks (one each), all nine tools offered every time,
    until ``n`` requests are made (the last conversation cut there)."""
    from ooo_agent.bench.agent_tasks import held_out_tasks, held_out_tools

    out: list[list[SessionRequest]] = []
    total = 0
    batch = max(8, n)
    for task in held_out_tasks(batch * 2, seed=seed):
        if total >= n:
            break
        turns = list(zip(task.turns, task.needed, strict=False))
        requests = conversation_requests(task.id, "held_out", held_out_tools(), turns)
        requests = requests[: n - total]
        total += len(requests)
        out.append(requests)
    return out


def bfcl_conversations(n: int) -> list[list[SessionRequest]]:
    """Conversations of BFCL ``multi_turn_base`` entries, in order, until ``n`` requests
    are made (the last conversation cut there)."""
    from ooo_agent.bench.agent_tasks import bfcl_multi_turn_tasks

    out: list[list[SessionRequest]] = []
    total = 0
    tasks = bfcl_multi_turn_tasks(max(1, math.ceil(n / 3) + 1))
    for task in tasks:
        if total >= n:
            break
        turns = list(zip(task.turns, task.needed, strict=False))
        requests = conversation_requests(task.id, "multi_turn_base", task.make_tools(), turns)
        requests = requests[: n - total]
        total += len(requests)
        out.append(requests)
    return out


def interleave_conversations(
    conversations: Sequence[Sequence[SessionRequest]], width: int = 2
) -> list[SessionRequest]:
    """The requests of ``conversations``, ``width`` conversations at a time, one request of
    each in turn; a conversation that ends gives its place to the next."""
    if width < 1:
        raise ValueError("width must be at least 1")
    waiting = [list(c) for c in conversations if c]
    active: list[list[SessionRequest]] = []
    out: list[SessionRequest] = []
    while waiting or active:
        while waiting and len(active) < width:
            active.append(waiting.pop(0))
        for conversation in list(active):
            out.append(conversation.pop(0))
            if not conversation:
                active.remove(conversation)
    return out


# -- running ---------------------------------------------------------------------------------
_NUMBERS = tuple(f.name for f in fields(SidecarStats))


def _wave_numbers(stats: SidecarStats) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in _NUMBERS:
        value = getattr(stats, name, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


async def _measure(
    runner: ModeRunner, request: SessionRequest, position: int, warmup: bool
) -> SessionRecord:
    item = request.item
    record = SessionRecord(
        item_id=item.id, category=item.category, mode=runner.name, position=position,
        warmup=warmup, latency_s=math.nan, generate_s=math.nan, forward_passes=0,
        new_tokens=0, prompt_tokens=0, prefill_tokens=0, prefill_s=0.0, decode_steps=0,
        accepted_tokens=0, conversation=request.conversation, source=request.source,
        place=request.place,
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
    record.cached_tokens = result.stats.decode.cached_tokens
    record.cache_diverged_at = result.stats.decode.cache_diverged_at
    record.late_wave = result.stats.sidecar.status == "late"
    first = result.calls[:1]
    record.first_call_ok = bool(first) and check(first, item).ok
    if result.stats.sidecar.status != "off":
        record.wave = _wave_numbers(result.stats.sidecar)
    return record


async def run_sessions(
    requests: Sequence[tuple[SessionRequest, bool]],
    runners: Mapping[str, ModeRunner],
    *,
    on_record: Callable[[SessionRecord], None] | None = None,
) -> list[SessionRecord]:
    """Every ``(request, is_warmup)`` in every mode, in order, the mode order rotating per
    request; ``identical`` compares each mode's output with vanilla's."""
    return await run_rotated(requests, runners, _measure, on_record=on_record)


# -- the summary -----------------------------------------------------------------------------
def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _percent(flags: Sequence[bool]) -> float | None:
    return round(100 * sum(flags) / len(flags), 1) if flags else None


def _mode_figures(rows: Sequence[SessionRecord]) -> dict[str, Any]:
    ok = [r for r in rows if not r.failure]
    waves = [r for r in ok if r.sidecar_status != "off"]
    compared = [r.identical for r in ok if r.identical is not None]
    numbers = sorted({k for r in waves for k in r.wave})
    return {
        "requests": len(rows),
        "failed": len(rows) - len(ok),
        "latency_s": _mean([r.latency_s for r in ok]),
        "total_s": round(sum(r.latency_s for r in ok), 3),
        "forwards_per_call": _mean([float(r.forward_passes) for r in ok]),
        "prompt_tokens": _mean([float(r.prompt_tokens) for r in ok]),
        "target_prefill_tokens": _mean([float(r.prefill_tokens) for r in ok]),
        "target_cached_tokens": _mean([float(r.cached_tokens) for r in ok]),
        "target_prefill_s": _mean([r.prefill_s for r in ok]),
        "cache_diverged_percent": _percent([r.cache_diverged_at is not None for r in ok]),
        "waves": len(waves),
        "late_waves_percent": _percent([r.late_wave for r in waves]),
        "wave_status": {
            s: sum(r.sidecar_status == s for r in waves)
            for s in sorted({r.sidecar_status for r in waves})
        },
        "wave_means": {k: _mean([r.wave[k] for r in waves if k in r.wave]) for k in numbers},
        "identity_percent": _percent([bool(x) for x in compared]),
        "ast_percent": _percent([r.ast_ok for r in rows]),
        "first_call_ast_percent": _percent([r.first_call_ok for r in rows]),
    }


def _ratio(base: Mapping[str, Any] | None, other: Mapping[str, Any] | None) -> float | None:
    if not base or not other or not other.get("total_s"):
        return None
    return round(float(base["total_s"]) / float(other["total_s"]), 3)


def session_summary(records: Sequence[SessionRecord]) -> dict[str, Any]:
    """Per mode (all measured requests, then by source and by first request vs follow-up):
    latency, forwards, prompt / prefilled / cached target tokens, divergences, late waves, the
    wave's numbers, identity and AST; speedups as total-latency ratios over the same requests;
    and issue 52's goals checked against the ``ooo`` row."""
    measured = [r for r in records if not r.warmup]
    ids_by_mode: dict[str, set[str]] = {}
    for r in measured:
        if not r.failure:
            ids_by_mode.setdefault(r.mode, set()).add(r.item_id)
    shared = set.intersection(*ids_by_mode.values()) if ids_by_mode else set()

    def group(rows: Sequence[SessionRecord]) -> dict[str, Any]:
        by_mode: dict[str, list[SessionRecord]] = {}
        for r in rows:
            by_mode.setdefault(r.mode, []).append(r)
        out = {mode: _mode_figures(rs) for mode, rs in by_mode.items()}
        paired = {
            mode: _mode_figures([r for r in rs if r.item_id in shared])
            for mode, rs in by_mode.items()
        }
        for mode, figures in out.items():
            figures["speedup_vs_vanilla"] = _ratio(paired.get("vanilla"), paired[mode])
            figures["speedup_vs_toolspec"] = _ratio(paired.get("toolspec"), paired[mode])
        return out

    summary: dict[str, Any] = {
        "modes": group(measured),
        "by_source": {
            source: group([r for r in measured if r.source == source])
            for source in sorted({r.source for r in measured})
        },
        "by_place": {
            "first": group([r for r in measured if r.place == 0]),
            "follow_up": group([r for r in measured if r.place > 0]),
        },
    }
    ooo = summary["modes"].get("ooo")
    waves = sorted({k for r in measured for k in r.wave})
    summary["wave_prefill_reported"] = any("prefill" in k or "cached" in k for k in waves)
    if ooo is not None:
        identity = [
            summary["modes"][m]["identity_percent"]
            for m in ("toolspec", "ooo")
            if m in summary["modes"] and summary["modes"][m]["identity_percent"] is not None
        ]
        checks = {
            "ooo_vs_toolspec": ooo["speedup_vs_toolspec"],
            "ooo_vs_vanilla": ooo["speedup_vs_vanilla"],
            "late_waves_percent": ooo["late_waves_percent"],
            "identity_percent": min(identity) if identity else None,
        }
        summary["goals"] = {
            **SESSION_GOALS,
            **checks,
            "ooo_vs_toolspec_met": _at_least(checks["ooo_vs_toolspec"], "ooo_vs_toolspec_min"),
            "ooo_vs_vanilla_met": _at_least(checks["ooo_vs_vanilla"], "ooo_vs_vanilla_min"),
            "late_waves_met": (
                None
                if checks["late_waves_percent"] is None
                else checks["late_waves_percent"] <= SESSION_GOALS["late_waves_max_percent"]
            ),
            "identity_met": _at_least(checks["identity_percent"], "identity_min_percent"),
        }
    return summary


def _at_least(value: float | None, goal: str) -> bool | None:
    return None if value is None else value >= SESSION_GOALS[goal]


def session_table(summary: Mapping[str, Any], *, title: str = "") -> Any:
    """The per-mode session figures as a rich table: all requests, then the follow-ups only
    (requests after a gold call, where ``diverged`` says how often the cache stopped inside
    the history)."""
    from rich.table import Table

    table = Table(title=title or None, title_justify="left")
    columns = ("mode", "n", "mean s", "vs vanilla", "vs toolspec", "fwd/call", "prompt tok",
               "prefilled tok", "cached tok", "diverged", "wave prefilled", "wave cached",
               "late waves", "identity", "AST", "AST 1st call")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "mode" else "right")

    def cell(value: Any, suffix: str = "", spec: str = ".2f") -> str:
        return "-" if value is None else format(value, spec) + suffix

    groups = (("", summary["modes"]), (" (follow-ups)", summary["by_place"]["follow_up"]))
    for label, modes in groups:
        for mode, f in modes.items():
            table.add_row(
                mode + label, str(f["requests"]), cell(f["latency_s"], spec=".3f"),
                cell(f["speedup_vs_vanilla"], "x"), cell(f["speedup_vs_toolspec"], "x"),
                cell(f["forwards_per_call"], spec=".1f"), cell(f["prompt_tokens"], spec=".0f"),
                cell(f["target_prefill_tokens"], spec=".1f"),
                cell(f["target_cached_tokens"], spec=".0f"),
                cell(f["cache_diverged_percent"], "%", ".0f"),
                cell(f["wave_means"].get("prefill_tokens"), spec=".1f"),
                cell(f["wave_means"].get("cached_tokens"), spec=".0f"),
                cell(f["late_waves_percent"], "%", ".0f"), cell(f["identity_percent"], "%", ".0f"),
                cell(f["ast_percent"], "%", ".0f"), cell(f["first_call_ast_percent"], "%", ".0f"),
            )  # fmt: skip
    return table


def wave_table(summary: Mapping[str, Any], *, mode: str = "ooo") -> Any:
    """Where ``mode``'s waves spend their time, per source and for follow-ups: the mean wave
    (arrival to its last answer) split into shared-prompt prefill, tool choice, argument rows
    and the rest, with the shared-prompt tokens served from cache and run, and the hint tokens
    the target accepted."""
    from rich.table import Table

    table = Table(title=f"{mode} waves: where the time goes", title_justify="left")
    columns = ("requests", "waves", "wave s", "prefill s", "choice s", "rows s", "other s",
               "cached tok", "prefilled tok", "row tok", "hint tok accepted", "late %")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "requests" else "right")

    def cell(value: Any, spec: str = ".3f") -> str:
        return "-" if value is None else format(value, spec)

    groups = [("all", summary["modes"])]
    groups += [(source, modes) for source, modes in summary.get("by_source", {}).items()]
    groups.append(("follow-ups", summary["by_place"]["follow_up"]))
    for label, modes in groups:
        figures = modes.get(mode)
        if not figures or not figures["waves"]:
            continue
        means = figures["wave_means"]
        parts = [means.get(k) for k in ("prefill_s", "choice_s", "rows_s")]
        wave = means.get("latency_s")
        other = (
            None if wave is None or None in parts else wave - sum(p for p in parts if p is not None)
        )
        table.add_row(
            label, str(figures["waves"]), cell(wave), *(cell(p) for p in parts), cell(other),
            cell(means.get("cached_tokens"), ".0f"), cell(means.get("prefill_tokens"), ".1f"),
            cell(means.get("row_tokens"), ".1f"), cell(means.get("hint_tokens_accepted"), ".1f"),
            cell(figures["late_waves_percent"], ".0f"),
        )  # fmt: skip
    return table


# -- the command -----------------------------------------------------------------------------
def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ooo-agent bench session``."""
    add = parser.add_argument
    add("--sources", default=",".join(SESSION_SOURCES),
        help=f"comma list of {', '.join(SESSION_SOURCES)} (default: both)")  # fmt: skip
    add("--n", type=int, default=12, help="measured requests per source (default 12)")
    add("--interleave", type=int, default=2,
        help="conversations in progress at once, one request of each in turn (default 2)")  # fmt: skip
    add("--seed", type=int, default=0, help="held-out task draw (default 0)")
    add("--modes", default="vanilla,toolspec,ooo", help="comma list (default: all three)")
    add("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    add("--sidecar", default="smollm2-135m-sidecar", help="sidecar preset for mode ooo")
    add("--sidecar-timeout", type=float, default=30.0)
    add("--max-new-tokens", type=int, default=256)
    add("--no-prefix-reuse", action="store_true", help="every mode prefills every prompt in full")
    add("--out", default="bench-out/session", help="output folder (default bench-out/session)")


def run_session_bench(args: argparse.Namespace) -> int:
    """Load the embedded target (one instance per mode, decoding as the demo does) and the
    sidecar, run the session workload and write the report; 3 when an output differs from
    vanilla's."""
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import anyio
    import torch

    from ooo_agent.bench.runner import build_runners, timestamp
    from ooo_agent.models import (
        load_preset,
        target_constraints,
        target_decline_below,
        target_format,
    )

    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = [s for s in sources if s not in SESSION_SOURCES]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown or not sources or args.n < 1 or args.interleave < 1:
        from ooo_agent.cli.common import CliError

        raise CliError(
            f"--sources must be a comma list of {', '.join(SESSION_SOURCES)}; --n and "
            "--interleave at least 1"
        )
    torch.set_num_threads(args.threads)
    started = timestamp()
    conversations: list[list[SessionRequest]] = []
    if "held_out" in sources:
        conversations += held_out_conversations(args.n, seed=args.seed)
    if "multi_turn_base" in sources:
        conversations += bfcl_conversations(args.n)
    # The sources' conversations alternate: each keeps its own place in the rotation.
    schedule = interleave_conversations(_alternate(conversations), args.interleave)
    name = "smollm2-135m-toolcall"
    model, tokenizer = load_preset(name)
    sidecar = None
    if "ooo" in modes:
        from ooo_agent.sidecar.hf import HFSidecar

        sidecar = HFSidecar.from_preset(args.sidecar)
    runners = build_runners(
        model, tokenizer, modes=modes, fmt=target_format(name), sidecar=sidecar,
        threads=args.threads, prefix_reuse=not args.no_prefix_reuse,
        max_new_tokens=args.max_new_tokens, sidecar_timeout=args.sidecar_timeout,
        decline_below=target_decline_below(name), **target_constraints(name),
    )  # fmt: skip
    warmup = _warmup_request()

    def show(record: SessionRecord) -> None:
        if record.warmup:
            return
        print(f"{record.item_id:>26} {record.mode:>8} {record.latency_s:6.2f}s "
              f"fwd={record.forward_passes:<3} prefill={record.prefill_tokens:<5} "
              f"cached={record.cached_tokens:<5} wave={record.sidecar_status:<7} "
              f"same={record.identical} ast={record.ast_ok}", flush=True)  # fmt: skip

    async def main() -> list[SessionRecord]:
        items = [(warmup, True)] + [(r, False) for r in schedule]
        return await run_sessions(items, runners, on_record=show)

    records = anyio.run(main)
    return _write(records, args, started, modes, sources)


def _alternate(conversations: Sequence[list[SessionRequest]]) -> list[list[SessionRequest]]:
    """The conversations with their sources alternating (each source's own order kept)."""
    by_source: dict[str, list[list[SessionRequest]]] = {}
    for conversation in conversations:
        by_source.setdefault(conversation[0].source, []).append(conversation)
    queues = list(by_source.values())
    out: list[list[SessionRequest]] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def _warmup_request() -> SessionRequest:
    """One unmeasured request on tools no measured request offers (the demo's): it warms
    the model's kernels, not the caches the measured requests read."""
    from ooo_agent.demo import DEMO_REQUESTS, demo_tools

    item = BenchItem(
        "warmup#0", "warmup", [{"role": "user", "content": DEMO_REQUESTS[0]}],
        Toolset(demo_tools()).to_openai(), [],
    )  # fmt: skip
    return SessionRequest(item, "warmup", "warmup", 0)


def _write(
    records: Sequence[SessionRecord],
    args: argparse.Namespace,
    started: str,
    modes: Sequence[str],
    sources: Sequence[str],
) -> int:
    from rich.console import Console

    from ooo_agent.bench.report import summarize, write_report
    from ooo_agent.bench.runner import identity_failures, timestamp

    summary = session_summary(records)
    failures = identity_failures(records)
    measured = sum(1 for r in records if not r.warmup) // max(1, len(modes))
    meta = {
        "title": f"ooo-agent bench session · {','.join(sources)} · n={measured} requests",
        "started": started,
        "finished": timestamp(),
        "command": getattr(args, "command_line", shlex.join(["ooo-agent", *sys.argv[1:]])),
        "modes": list(modes),
        "sources": list(sources),
        "measured_requests": measured,
        "settings": {
            "threads": args.threads,
            "interleave": args.interleave,
            "seed": args.seed,
            "sidecar": args.sidecar,
            "prefix_reuse": not args.no_prefix_reuse,
            "max_new_tokens": args.max_new_tokens,
            "history": "gold calls and their executed results",
            "mode_order": "rotated per request",
        },
        "identity_failures": failures,
        "session": summary,
    }
    console = Console(soft_wrap=True, width=200)
    paths = write_report(records, summarize(records), Path(args.out), meta=meta, console=console)
    console.print(session_table(summary, title="session workload"))
    console.print(wave_table(summary))
    if not summary["wave_prefill_reported"]:
        console.print("the sidecar reports no prefill figures of its wave: target only")
    console.print(json.dumps(summary.get("goals", {}), indent=1))
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 3 if failures else 0
