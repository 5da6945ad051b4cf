"""``ooo-agent bench``: options, model loading, the progress bar, the report, the exit status.

Exit status: 0 when every ``toolspec`` / ``ooo`` output equals ``vanilla``'s; 3 (after the
report is written) when one does not — speculation must be lossless.

Example::

    ooo-agent bench --categories simple_python --n 20 --sidecar oracle --out bench-out
    ooo-agent bench --device cuda --dtype float32 --sidecar smollm2-135m-sidecar
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ooo_agent.bench.runner import BENCH_MODES
from ooo_agent.cli.common import CliError
from ooo_agent.cli.options import (
    add_constraint_options,
    add_decline_option,
    constrained,
    constraint_options,
)
from ooo_agent.models.presets import SidecarDefaults

__all__ = ["IDENTITY_EXIT", "add_arguments", "run_from_args"]

IDENTITY_EXIT = 3
"""Exit status when a speculative mode's output differs from vanilla's."""

_WAVE_SETTINGS = (*SidecarDefaults.__annotations__, "relevance_parameter_weight")
"""The ``WaveOptions`` fields a sidecar's model decides (``SidecarDefaults``) and the
relevance's parameter weight; a run's settings record each as ``sidecar_<field>``."""


def _modes(text: str) -> list[str]:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in BENCH_MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(
            f"modes must be a comma list of {', '.join(BENCH_MODES)}; got {text!r}"
        )
    return modes


DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1; got {text!r}")
    return value


def _device(text: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (whether CUDA exists is checked at run time)."""
    name = text.strip().lower()
    index = name.removeprefix("cuda:")
    if name in ("auto", "cpu", "cuda") or (name.startswith("cuda:") and index.isdigit()):
        return name
    raise argparse.ArgumentTypeError(f"device must be auto, cpu, cuda or cuda:N; got {text!r}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``bench`` options (and its sub-modes)."""
    add = parser.add_argument
    add("--categories", default="simple_python", help="comma list of BFCL categories")
    add("--data", default=None, help="a JSONL file of items instead of BFCL categories")
    add("--n", type=int, default=20, help="measured requests per category (default 20)")
    add("--warmup", type=int, default=2, help="unmeasured warm-up requests (default 2)")
    add(
        "--skip",
        type=int,
        default=0,
        help="leave out the first SKIP items of each category (or --data file) before the "
        "measured ones (default 0): measure a later range",
    )
    add(
        "--items",
        default=None,
        metavar="ID[,ID...]",
        help="measure just these items of the categories (or --data file), in this order, "
        "instead of --n / --skip; the warm-ups are the first others",
    )
    add(
        "--modes",
        type=_modes,
        default=None,
        help=f"comma list of {', '.join(BENCH_MODES)} (default: all the setup allows)",
    )
    add("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    add("--out", default="bench-out", help="output folder (default bench-out)")
    add("--target", default="auto", help="preset name or model folder (default: auto)")
    add(
        "--format",
        default=None,
        help="the target's call format (default: the target preset's own, else hermes; the "
        "embedded target's is hermes-description-first)",
    )
    add(
        "--sidecar",
        default="auto",
        help="auto | none | oracle | a sidecar preset | a model folder | an http(s) URL",
    )
    add(
        "--sidecar-process",
        action="store_true",
        help="run a local sidecar in its own serve-sidecar process (its own core)",
    )
    add(
        "--oracle-delay",
        type=float,
        default=0.0,
        help="oracle sidecar: publish its hint this many seconds after arrival",
    )
    add(
        "--device",
        type=_device,
        default="cpu",
        help="where the target and a local sidecar run: auto | cpu | cuda | cuda:N (default "
        "cpu; auto: cuda when torch sees a GPU)",
    )
    add(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="weights' precision of the target and a local sidecar (default float32; auto: "
        "bfloat16 on a CUDA GPU that supports it, else float32)",
    )
    add(
        "--sidecar-dtype",
        choices=DTYPES,
        default="auto",
        help="weights' precision of a local sidecar (default auto: bfloat16 where the GPU or "
        "CPU has native bf16 kernels, else float32; never changes the output, only the hint)",
    )
    add(
        "--sidecar-schedule",
        choices=("auto", "parallel", "function-first"),
        default="auto",
        help="a local sidecar's row schedule (default auto: function-first on a CPU, the "
        "function-index row and then the chosen tool's rows; parallel elsewhere)",
    )
    add(
        "--sidecar-follow",
        choices=("on", "off"),
        default="on",
        help="on (default): once the target has written its function name, the hint carries "
        "that tool's slots, whatever the sidecar's function-index row said; off: the "
        "sidecar's choice only (the method as published)",
    )
    add(
        "--sidecar-function-choice",
        choices=("auto", "index", "scored"),
        default="auto",
        help="how a local sidecar picks the tool: index answers the function-index row; "
        "scored picks the tool name it finds likeliest to start a direct call, one batched "
        "forward (in this process only); auto (default): the preset's own choice (scored for "
        "the embedded sidecar), else index",
    )
    add(
        "--sidecar-relevance-weight",
        type=float,
        default=None,
        metavar="W",
        help="with a scored choice, how much the request's own words count: "
        "W times the log-softmax of each tool's lexical relevance is added to the sidecar's "
        "(WaveOptions.relevance_weight); 0 turns it off; default: the preset's own (2 for the "
        "embedded sidecar), else 0",
    )
    add(
        "--sidecar-relevance-parameter-weight",
        type=float,
        default=None,
        metavar="W",
        help="in that relevance, how much a word of a tool's parameter names and descriptions "
        "counts (WaveOptions.relevance_parameter_weight; default 0.5; 0: left out)",
    )
    add(
        "--sidecar-required-values",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a local sidecar's row for a required parameter may not answer null "
        "(WaveOptions.required_values; in this process only); auto (default): the preset's "
        "own setting, else off",
    )
    add(
        "--sidecar-mentioned-values",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a local sidecar's row for an optional parameter the request names may not "
        "answer null (WaveOptions.mentioned_values; in this process only); auto (default): "
        "the preset's own setting, else off",
    )
    add(
        "--sidecar-typed-values",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a local sidecar's argument rows are held to their parameter's schema "
        "(WaveOptions.typed_values; in this process only); auto (default): the preset's own "
        "setting, else off",
    )
    add(
        "--sidecar-unnamed-nulls",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: an optional parameter the request does not name is answered null without "
        "asking its row (WaveOptions.unnamed_nulls; any sidecar); auto (default): the "
        "preset's own setting, else off",
    )
    add(
        "--sidecar-whole-words",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a local sidecar's typed rows copy the request's words, lists and dates whole "
        "(WaveOptions.whole_words, with --sidecar-typed-values; in this process only); auto "
        "(default): the preset's own setting, else off",
    )
    add(
        "--sidecar-request-case",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a string the sidecar capitalises where the request writes it in lower case "
        "takes the request's case (WaveOptions.request_case; any sidecar); auto (default): "
        "the preset's own setting, else off",
    )
    add(
        "--sidecar-joint-values",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: a local sidecar writes the chosen tool's numbers, and each string that "
        "repeats an earlier one, again one after another in its call, each reading the values "
        "before it (WaveOptions.joint_values, with --sidecar-typed-values; in this process "
        "only); auto (default): the preset's own setting, else off",
    )
    add_constraint_options(add, scope="every mode: ")
    add_decline_option(add, scope="every mode: ")
    add("--threads", type=int, default=1, help="torch CPU threads of the target (default 1)")
    add("--sidecar-threads", type=int, default=1, help="torch CPU threads of the sidecar")
    add("--max-new-tokens", type=int, default=256)
    add(
        "--no-prefix-reuse",
        action="store_true",
        help="prefill every prompt in full (the hf-pld baseline always does)",
    )
    add("--pld-tokens", type=int, default=10, help="hf-pld: prompt_lookup_num_tokens")
    add(
        "--node-budget",
        type=_positive,
        default=None,
        help="the most tokens one verification tree holds, in every speculative mode "
        "(default: the target's own)",
    )
    add(
        "--max-draft-tokens",
        type=_positive,
        default=None,
        help="the longest draft one drafter proposes (the sidecar's hint included; default: "
        "the target's own)",
    )
    add("--sidecar-timeout", type=float, default=30.0)
    add("--note", default="", help="free text stored with the results (e.g. machine load)")
    sub = parser.add_subparsers(dest="bench_command", metavar="{agent,session}")
    from ooo_agent.bench.agent_run import add_agent_arguments

    agent = sub.add_parser(
        "agent",
        help="agent tasks end to end, scored by task success: held-out generated tasks or "
        "BFCL multi_turn_base (ooo-agent bench agent --help)",
    )
    add_agent_arguments(agent)
    from ooo_agent.bench.session import add_session_arguments

    session = sub.add_parser(
        "session",
        help="an agent's workload: conversations on fixed toolsets, gold history, every mode "
        "(ooo-agent bench session --help)",
    )
    add_session_arguments(session)


def _load_items(args: argparse.Namespace) -> tuple[list[Any], list[Any], list[str]]:
    """``(measured, warm-up, notes)``: warm-ups follow the first category's measured items."""
    from ooo_agent.bench.datasets import load_bfcl, load_jsonl

    if args.n < 1 or args.warmup < 0 or args.skip < 0:
        raise CliError("--n must be >= 1, --warmup and --skip >= 0")
    if args.sidecar_function_choice == "scored" and args.sidecar_process:
        raise CliError(
            f"--sidecar-function-choice {args.sidecar_function_choice} needs the sidecar in "
            "this process (it scores names with the model's log-probabilities); drop "
            "--sidecar-process"
        )
    remote = str(args.sidecar).startswith(("http://", "https://"))
    weight = args.sidecar_relevance_weight
    if weight is not None and not weight >= 0:
        raise CliError(f"--sidecar-relevance-weight must be at least 0, not {weight}")
    parameters = args.sidecar_relevance_parameter_weight
    if parameters is not None and not parameters >= 0:
        raise CliError(
            f"--sidecar-relevance-parameter-weight must be at least 0, not {parameters}"
        )
    if weight and (args.sidecar_process or remote or args.sidecar_function_choice == "index"):
        raise CliError(
            "--sidecar-relevance-weight is added to a scored tool choice: it "
            "needs the sidecar model in this process (not --sidecar-process, not an HTTP "
            "sidecar) and not --sidecar-function-choice index"
        )
    for flag in ("required_values", "mentioned_values", "typed_values", "whole_words"):
        if getattr(args, f"sidecar_{flag}") == "on" and (args.sidecar_process or remote):
            raise CliError(
                f"--sidecar-{flag.replace('_', '-')} on steers the sidecar's own decoding: it "
                "needs the sidecar model in this process (not --sidecar-process, not an HTTP "
                "sidecar)"
            )
    if constrained(args) and "hf-pld" in (args.modes or []):
        raise CliError(
            "--rules, --constrain-*: hf-pld (transformers' generate) cannot constrain decoding"
        )
    if args.decline_below is not None and "hf-pld" in (args.modes or []):
        raise CliError("--decline-below: mode hf-pld (transformers' generate) cannot decline")
    if args.items is not None:
        return _named_items(args)
    if args.data:
        pools = [load_jsonl(args.data)[args.skip :]]
    else:
        categories = [c.strip() for c in args.categories.split(",") if c.strip()]
        wanted = args.skip + args.n + args.warmup
        pools = [load_bfcl(c, limit=wanted)[args.skip :] for c in categories]
    measured = [item for pool in pools for item in pool[: args.n]]
    # Warm-ups come from beyond the measured range: measured outputs must not be in any
    # retrieval memory before they are measured.
    warmups = pools[0][args.n : args.n + args.warmup] if pools else []
    return measured, warmups, _warmup_notes(warmups, args.warmup)


def _warmup_notes(warmups: list[Any], wanted: int) -> list[str]:
    """A note when the data set had fewer warm-up items than ``--warmup`` asked for."""
    if len(warmups) < wanted:
        return [f"only {len(warmups)} warm-up request(s): the data set has no more items"]
    return []


def _named_items(args: argparse.Namespace) -> tuple[list[Any], list[Any], list[str]]:
    """``--items``: the named items, in the order given, and warm-ups from the others."""
    from ooo_agent.bench.datasets import load_bfcl, load_jsonl

    ids = [i.strip() for i in args.items.split(",") if i.strip()]
    if not ids or len(set(ids)) != len(ids):
        raise CliError("--items: give one or more distinct item ids")
    if args.skip:
        raise CliError("--items names the measured items: drop --skip")
    if args.data:
        pool = load_jsonl(args.data)
    else:
        pool = [
            item
            for category in args.categories.split(",")
            if category.strip()
            for item in load_bfcl(category.strip())
        ]
    by_id = {item.id: item for item in pool}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise CliError(f"--items: no item {', '.join(missing)} in {args.data or args.categories}")
    named = set(ids)
    others = [item for item in pool if item.id not in named]
    warmups = others[: args.warmup]
    return [by_id[i] for i in ids], warmups, _warmup_notes(warmups, args.warmup)


def _table_console() -> Console:
    """Standard output; wide when it is not a terminal (logs keep whole table rows)."""
    console = Console(soft_wrap=True)
    return console if console.is_terminal else Console(soft_wrap=True, width=200)


def run_from_args(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args``; returns the exit status."""
    if args.bench_command == "agent":
        from ooo_agent.bench.agent_run import run_agent_bench

        return run_agent_bench(args)
    if args.bench_command == "session":
        from ooo_agent.bench.session import run_session_bench

        return run_session_bench(args)
    # Before torch loads: its worker threads must not each start one OpenMP thread per core.
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import anyio

    return anyio.run(_run, args)


async def _run(args: argparse.Namespace) -> int:
    import torch

    from ooo_agent.bench import _loading
    from ooo_agent.bench.oracle import OracleSidecar
    from ooo_agent.bench.report import summarize, write_report
    from ooo_agent.bench.runner import (
        build_runners,
        identity_failures,
        prepare_oracle,
        run_requests,
        running_means,
        timestamp,
    )
    from ooo_agent.decoding.planner import AcceptanceRates
    from ooo_agent.targets.hf import DEFAULT_MAX_DRAFT_TOKENS, DEFAULT_NODE_BUDGET, HFTarget

    console = Console(stderr=True, soft_wrap=True)
    started = timestamp()
    device = _loading.resolve_device(args.device)  # before anything slow: no CUDA, no run
    dtype = _loading.resolve_dtype(args.dtype, device)
    measured, warmups, notes = _load_items(args)
    torch.set_num_threads(args.threads)
    loaded = _loading.load_target_model(args.target, device=device, dtype=dtype)
    if args.format is None:
        from ooo_agent.models import target_format

        args.format = target_format(loaded.name)
    if loaded.note:
        notes.append(loaded.note)
    target_device, target_dtype = _loading.describe_placement(loaded.model)
    if target_dtype != "float32":
        notes.append(
            f"{target_dtype} weights: a speculative mode verifies several tokens per forward, "
            "and in reduced precision those logits can differ from one-token forwards in the "
            "last bits, so an identity mismatch may come from arithmetic, not the method"
        )
    with _loading.open_sidecar(
        args.sidecar, threads=args.sidecar_threads, process=args.sidecar_process,
        oracle_delay_s=args.oracle_delay, device=device,
        dtype=_loading.resolve_sidecar_dtype(args.sidecar_dtype, device),
        schedule=args.sidecar_schedule, follow_target=args.sidecar_follow == "on",
        function_choice=args.sidecar_function_choice,
        relevance_weight=args.sidecar_relevance_weight,
        relevance_parameter_weight=args.sidecar_relevance_parameter_weight,
        required_values=args.sidecar_required_values, typed_values=args.sidecar_typed_values,
        mentioned_values=args.sidecar_mentioned_values,
        unnamed_nulls=args.sidecar_unnamed_nulls, whole_words=args.sidecar_whole_words,
        request_case=args.sidecar_request_case, joint_values=args.sidecar_joint_values,
    ) as choice:  # fmt: skip
        if choice.note:
            notes.append(choice.note)
        modes = list(
            args.modes
            or [
                m
                for m in BENCH_MODES
                if (m != "ooo" or choice.sidecar is not None)
                and not (
                    m == "hf-pld" and (constrained(args) or args.decline_below is not None)
                )
            ]
        )
        if "ooo" in modes and choice.sidecar is None:
            raise CliError(
                "mode 'ooo' needs a sidecar: pass --sidecar oracle, a preset, a folder or a URL"
            )
        labels = {m: m for m in modes}
        if "ooo" in modes:
            labels["ooo"] = f"ooo [{choice.label}]"
        for note in notes:
            console.print(f"[yellow]note:[/] {note}")
        # The tree's effective size: what every speculative mode gets and the summary records.
        node_budget = DEFAULT_NODE_BUDGET if args.node_budget is None else args.node_budget
        max_draft = DEFAULT_MAX_DRAFT_TOKENS if args.max_draft_tokens is None else args.max_draft_tokens
        runners = build_runners(
            loaded.model, loaded.tokenizer, modes=modes, fmt=args.format, sidecar=choice.sidecar,
            threads=args.threads, prefix_reuse=not args.no_prefix_reuse,
            max_new_tokens=args.max_new_tokens, sidecar_timeout=args.sidecar_timeout,
            pld_tokens=args.pld_tokens, node_budget=node_budget, max_draft_tokens=max_draft,
            decline_below=args.decline_below, **constraint_options(args),
        )  # fmt: skip
        schedule = [(item, True) for item in warmups] + [(item, False) for item in measured]
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("{task.fields[means]}"), console=console,
        ) as progress:  # fmt: skip
            if isinstance(choice.sidecar, OracleSidecar) and "ooo" in modes:
                task = progress.add_task("oracle pre-pass", total=len(schedule), means="")
                fresh = HFTarget(loaded.model, loaded.tokenizer, args.format)
                await prepare_oracle(
                    choice.sidecar, fresh, [item for item, _ in schedule],
                    max_new_tokens=args.max_new_tokens,
                    on_item=lambda: progress.advance(task),
                )  # fmt: skip
            task = progress.add_task("bench", total=len(schedule) * len(modes), means="")
            seen: list[Any] = []

            def advance(record: Any) -> None:
                seen.append(record)
                progress.update(task, advance=1, means=running_means(seen))
                if not console.is_terminal and len(seen) % len(modes) == 0:
                    # No live bar in a log file: one line per finished request instead.
                    done = len(seen) // len(modes)
                    console.print(
                        f"[{done}/{len(schedule)}] {record.item_id}: {running_means(seen)}",
                        markup=False,
                    )

            records = await run_requests(schedule, runners, on_record=advance)
    failures = identity_failures(records)
    gpu = torch.cuda.get_device_name(target_device) if target_device.startswith("cuda") else None
    meta = {
        "title": f"ooo-agent bench · {loaded.name} · {args.data or args.categories} · "
        f"n={len(measured)} · {target_device} {target_dtype}{f' ({gpu})' if gpu else ''} · "
        f"{'oracle sidecar: upper bound, not a result' if choice.kind == 'oracle' else 'sidecar: ' + choice.label}",
        "started": started,
        "finished": timestamp(),
        "command": getattr(args, "command_line", shlex.join(["ooo-agent", *sys.argv[1:]])),
        "target": loaded.name,
        "device": target_device,
        "dtype": target_dtype,
        "format": args.format,
        "sidecar": {"label": choice.label, "kind": choice.kind},
        "modes": modes,
        "data": args.data or args.categories,
        "measured_requests": len(measured),
        "warmup_requests": len(warmups),
        "seed": args.seed,
        "settings": {
            "device": args.device,
            "dtype": args.dtype,
            "node_budget": node_budget,
            "max_draft_tokens": max_draft,
            "sidecar_device": choice.placement[0] if choice.placement else None,
            "sidecar_dtype": choice.placement[1] if choice.placement else None,
            "sidecar_schedule": getattr(choice.sidecar, "schedule", None),
            "sidecar_follow_target": args.sidecar_follow == "on",
            # The wave settings the sidecar ran with (None: a sidecar without WaveOptions).
            **{
                f"sidecar_{name}": getattr(getattr(choice.sidecar, "options", None), name, None)
                for name in _WAVE_SETTINGS
            },
            **constraint_options(args),
            "decline_below": args.decline_below,
            "target_threads": args.threads,
            "sidecar_threads": args.sidecar_threads,
            "sidecar_process": args.sidecar_process,
            "prefix_reuse": not args.no_prefix_reuse,
            "retrieval_memory": "on (one target instance per mode: each mode remembers only "
            "its own earlier outputs)",
            "token_recycling": "on",
            "max_new_tokens": args.max_new_tokens,
            "hf_pld": f"transformers generate, prompt_lookup_num_tokens={args.pld_tokens}, "
            "no prefix reuse",
            "mode_order": "rotated per request",
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "gpu": gpu,
            "python": platform.python_version(),
        },
        "notes": [*notes, *([args.note] if args.note else [])],
        "identity_failures": failures,
        # What each speculative mode's target learned of its drafters over the run.
        "acceptance_rates": {
            name: rates.snapshot()
            for name, runner in runners.items()
            if isinstance(rates := getattr(runner.recorder.inner, "rates", None), AcceptanceRates)
            and runner.call_mode != "vanilla"
        },
    }
    paths = write_report(
        records, summarize(records, seed=args.seed, labels=labels), Path(args.out),
        meta=meta, labels=labels, console=_table_console(),
    )  # fmt: skip
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")
    if choice.kind == "oracle":
        console.print("[yellow]ooo used the ORACLE sidecar: an upper bound, not an OoO-Spec result")
    if failures:
        console.print(f"[bold red]identity mismatch with vanilla:[/] {', '.join(failures)}")
        return IDENTITY_EXIT
    return 0
