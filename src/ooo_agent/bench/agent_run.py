"""``ooo-agent bench agent``: agent tasks end to end, every mode side by side.

Each task runs once per mode on the same loaded weights (one target per mode, so no mode's
caches see another's output), modes in rotating order. A run is an :class:`~ooo_agent.Agent`
conversation: each user turn is driven until the model answers in text (or a budget ends it),
then the next user turn follows on the same history. Reported per mode: tasks done (overall
and by the number of calls a task needs), BFCL turns whose toolset state matches the gold
calls', gold calls made, stop reasons, identity with ``vanilla``, and per model call of a
conversation the prompt tokens and the tokens actually prefilled.

Example::

    ooo-agent bench agent --source held_out --n 40 --out agent-held-out.json
    ooo-agent bench agent --source multi_turn_base --n 20 --modes vanilla
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ooo_agent.agent import Agent
from ooo_agent.bench.agent_tasks import AgentTask, needed_calls_made
from ooo_agent.caller import FastToolCaller

__all__ = ["TaskRecord", "add_agent_arguments", "run_agent_tasks", "run_agent_tasks_sync", "summarize_agent"]


@dataclass
class TaskRecord:
    """One task in one mode."""

    task_id: str
    source: str
    mode: str
    steps: int
    done: bool
    turns_ok: list[bool]
    """BFCL: per user turn, the toolset state matches the gold calls' (held-out: the needed
    calls of the turn were made)."""
    gold_calls_made: list[bool]
    answer_ok: bool
    stop_reasons: list[str]
    final_text: str
    transcript: str
    """What the model wrote, call by call (identity across modes is checked on it)."""
    model_calls: int = 0
    forwards: int = 0
    seconds: float = 0.0
    prompt_tokens: list[int] = field(default_factory=list)
    prefill_tokens: list[int] = field(default_factory=list)
    error: str = ""


async def run_task(task: AgentTask, mode: str, caller: FastToolCaller, *, max_turns: int) -> TaskRecord:
    """Drive ``task`` through ``caller`` and score it."""
    tools = task.make_tools()
    agent = Agent(caller, max_turns=max_turns, on_retry_budget="stop")
    history: list[dict[str, Any]] = []
    record = TaskRecord(task.id, task.source, mode, task.steps, False, [], [], False, [], "", "")
    written: list[str] = []
    started = time.perf_counter()
    try:
        for index, text in enumerate(task.turns):
            before = len(history) + 1
            history.append({"role": "user", "content": text})
            result = await agent.run(history, tools)
            history = result.messages
            made = [(c.name, dict(c.arguments)) for c in result.calls]
            needed = task.needed[index] if index < len(task.needed) else []
            made_all = needed_calls_made(needed, made)
            record.gold_calls_made.append(made_all)
            # BFCL: the state check, and the gold calls made (stricter than BFCL's response
            # check, which accepts any calls whose results hold the gold calls' results).
            state_ok = task.check_turn(index, tools) if task.check_turn is not None else True
            record.turns_ok.append(state_ok and made_all)
            record.stop_reasons.append(result.stop_reason)
            record.final_text = result.final_text
            record.model_calls += len(result.stats.turns)
            record.forwards += result.stats.forward_passes
            for turn_stats in result.stats.turns:
                record.prompt_tokens.append(turn_stats.decode.prompt_tokens)
                record.prefill_tokens.append(turn_stats.decode.prefill_tokens)
            written += [_written(m) for m in result.messages[before:] if m.get("role") == "assistant"]
    except Exception as exc:  # a task that crashes the runtime is a failed task, reported
        record.error = f"{type(exc).__name__}: {exc}"
    record.seconds = time.perf_counter() - started
    record.transcript = "\n".join(written)
    text = record.final_text.lower()
    record.answer_ok = bool(record.final_text) and all(
        v.lower() in text for v in task.answer_values
    )
    record.done = (
        not record.error
        and len(record.turns_ok) == len(task.turns)
        and all(record.turns_ok)
        and record.stop_reasons[-1:] == ["answer"]
        and record.answer_ok
    )
    return record


def _written(message: Mapping[str, Any]) -> str:
    """An assistant message as the model wrote it (call ids, which are random, left out)."""
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()]
    return json.dumps([message.get("content"), calls])


async def run_agent_tasks(
    tasks: Sequence[AgentTask],
    callers: Mapping[str, FastToolCaller],
    *,
    max_turns: int = 6,
    on_record: Any = None,
) -> list[TaskRecord]:
    """Every task in every mode (modes in rotating order per task)."""
    modes = list(callers)
    records = []
    for index, task in enumerate(tasks):
        order = modes[index % len(modes) :] + modes[: index % len(modes)]
        for mode in order:
            record = await run_task(task, mode, callers[mode], max_turns=max_turns)
            records.append(record)
            if on_record is not None:
                on_record(record)
    return records


def run_agent_tasks_sync(
    tasks: Sequence[AgentTask], callers: Mapping[str, FastToolCaller], *, max_turns: int = 6
) -> list[TaskRecord]:
    """:func:`run_agent_tasks` from synchronous code."""
    import anyio

    async def main() -> list[TaskRecord]:
        return await run_agent_tasks(tasks, callers, max_turns=max_turns)

    return anyio.run(main)


def _share(flags: Sequence[bool]) -> float:
    return round(100 * sum(flags) / len(flags), 1) if flags else 0.0


def summarize_agent(records: Sequence[TaskRecord]) -> dict[str, Any]:
    """Per mode: done %, done % by steps, turn accuracy, gold calls made, stop reasons,
    identity with vanilla, mean seconds and forwards per task, and prompt / prefilled tokens
    by the model call's place in its conversation."""
    by_mode: dict[str, list[TaskRecord]] = defaultdict(list)
    for r in records:
        by_mode[r.mode].append(r)
    reference = {r.task_id: r.transcript for r in by_mode.get("vanilla", [])}
    out: dict[str, Any] = {}
    for mode, rows in by_mode.items():
        by_steps: dict[str, list[bool]] = defaultdict(list)
        for r in rows:
            by_steps[str(r.steps)].append(r.done)
        places: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for r in rows:
            for i, (p, f) in enumerate(zip(r.prompt_tokens, r.prefill_tokens, strict=True)):
                places[i + 1].append((p, f))
        stops: dict[str, int] = defaultdict(int)
        for r in rows:
            for s in r.stop_reasons:
                stops[s] += 1
        out[mode] = {
            "tasks": len(rows),
            "done_percent": _share([r.done for r in rows]),
            "done_percent_by_steps": {k: _share(v) for k, v in sorted(by_steps.items())},
            "turn_accuracy_percent": _share([t for r in rows for t in r.turns_ok]),
            "gold_calls_made_percent": _share([t for r in rows for t in r.gold_calls_made]),
            "answer_ok_percent": _share([r.answer_ok for r in rows]),
            "stop_reasons": dict(stops),
            "errors": sum(bool(r.error) for r in rows),
            "identical_to_vanilla": (
                sum(reference.get(r.task_id) == r.transcript for r in rows) if reference else None
            ),
            "seconds_per_task": round(statistics.fmean(r.seconds for r in rows), 3) if rows else 0,
            "forwards_per_task": round(statistics.fmean(r.forwards for r in rows), 1) if rows else 0,
            "tokens_by_model_call": {
                str(k): {
                    "prompt": round(statistics.fmean(p for p, _ in v), 1),
                    "prefilled": round(statistics.fmean(f for _, f in v), 1),
                    "n": len(v),
                }
                for k, v in sorted(places.items())
                if k <= 8
            },
        }
    return out


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ooo-agent bench agent``."""
    parser.add_argument("--source", choices=("held_out", "multi_turn_base"), default="held_out")
    parser.add_argument("--n", type=int, default=40, help="tasks (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="held-out task draw")
    parser.add_argument("--modes", default="vanilla,toolspec,ooo", help="comma list")
    parser.add_argument("--max-turns", type=int, default=6, help="model calls per user turn")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the target")
    parser.add_argument("--sidecar", default="smollm2-135m-sidecar", help="preset for mode ooo")
    parser.add_argument(
        "--adapter",
        default=None,
        help="score this target adapter folder on the embedded base instead of the shipped one",
    )
    parser.add_argument(
        "--call-again-below",
        type=_threshold,
        default="preset",
        help="after a tool's result, call again only when a call is at least this likely "
        "('off': the model's greedy choice; default: the preset's)",
    )
    parser.add_argument("--out", default=None, help="write records and summary here (JSON)")


def _threshold(text: str) -> float | str | None:
    if text in ("off", "preset"):
        return None if text == "off" else text
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("a probability between 0 and 1, 'off' or 'preset'")
    return value


def run_agent_bench(args: argparse.Namespace) -> int:
    """Load the embedded target (one per mode, the demo's decoding) and run the tasks."""
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import anyio
    import torch

    from ooo_agent.bench.agent_tasks import bfcl_multi_turn_tasks, held_out_tasks
    from ooo_agent.models import (
        load_preset,
        target_call_again_below,
        target_decline_below,
        target_format,
    )
    from ooo_agent.models.presets import attach_adapter, load_base
    from ooo_agent.targets.hf import HFTarget

    torch.set_num_threads(args.threads)
    name = "smollm2-135m-toolcall"
    if args.adapter:
        from ooo_agent.models.presets import get_preset

        model, tokenizer = load_base(get_preset(name).base)
        model = attach_adapter(model, args.adapter, merge=True)
    else:
        model, tokenizer = load_preset(name)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    sidecar = None
    if "ooo" in modes:
        from ooo_agent.sidecar.hf import HFSidecar

        sidecar = HFSidecar.from_preset(args.sidecar)
    callers = {
        mode: FastToolCaller(
            HFTarget(
                model,
                tokenizer,
                target_format(name),
                num_threads=args.threads,
                constrain_names=True,
                constrain_mentioned=True,
                constrain_values=True,
                decline_below=target_decline_below(name),
                call_again_below=(
                    target_call_again_below(name)
                    if args.call_again_below == "preset"
                    else args.call_again_below
                ),
            ),
            sidecar if mode == "ooo" else None,
            mode=mode,
        )
        for mode in modes
    }
    tasks = (
        held_out_tasks(args.n, seed=args.seed)
        if args.source == "held_out"
        else bfcl_multi_turn_tasks(args.n)
    )

    def show(record: TaskRecord) -> None:
        mark = "done" if record.done else "FAIL"
        print(f"{record.task_id:>22} {record.mode:>8} {mark} {record.seconds:6.1f}s "
              f"stops={','.join(record.stop_reasons)} {record.error}", flush=True)  # fmt: skip

    async def main() -> list[TaskRecord]:
        return await run_agent_tasks(tasks, callers, max_turns=args.max_turns, on_record=show)

    records = anyio.run(main)
    summary = summarize_agent(records)
    print(json.dumps(summary, indent=2))
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "command": getattr(args, "command_line", ""),
                    "source": args.source,
                    "adapter": args.adapter,
                    "call_again_below": args.call_again_below,
                    "summary": summary,
                    "records": [asdict(r) for r in records],
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0
