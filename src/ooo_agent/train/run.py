"""``ooo-agent train target|sidecar``: train an adapter from JSONL files.

The command-line layer over :func:`~ooo_agent.train.train_lora`: reads rows, holds out an
eval split when no eval file is given, loads the base model, trains, prints the report.
Also runnable as ``python -m ooo_agent.train``.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.train._batches import read_rows
from ooo_agent.train.config import DEFAULT_TARGET_MODULES, TrainConfig

__all__ = ["add_train_arguments", "holdout_split", "main", "run_train"]

_DEFAULT_BASE = "smollm2-135m-instruct"


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``train`` options to ``parser`` (used by the ``ooo-agent`` CLI too)."""
    d = TrainConfig(out_dir=".")
    parser.add_argument("role", choices=("target", "sidecar"), help="what the adapter is for")
    parser.add_argument("--data", required=True, type=Path, help='JSONL of {"prompt","completion"}')
    parser.add_argument("--out", required=True, type=Path, help="folder for the adapter + card")
    parser.add_argument("--eval-data", type=Path, help="held-out JSONL (default: split --data)")
    parser.add_argument("--eval-fraction", type=float, default=0.05, help="default: %(default)s")
    parser.add_argument("--max-eval", type=int, default=200, help="cap on split-off eval rows")
    parser.add_argument(
        "--base", default=_DEFAULT_BASE, help="embedded name, local folder or hub id"
    )
    parser.add_argument("--r", type=int, default=d.r)
    parser.add_argument("--alpha", type=int, default=d.alpha)
    parser.add_argument("--dropout", type=float, default=d.dropout)
    parser.add_argument(
        "--target-modules", default=",".join(DEFAULT_TARGET_MODULES), help="comma separated"
    )
    parser.add_argument("--lr", type=float, default=d.lr)
    parser.add_argument("--epochs", type=int, default=d.epochs)
    parser.add_argument("--batch", type=int, default=d.batch_size, help="micro-batch size")
    parser.add_argument("--accum", type=int, default=d.grad_accum, help="gradient accumulation")
    parser.add_argument("--warmup", type=float, default=d.warmup_ratio, help="warmup fraction")
    parser.add_argument("--max-len", type=int, default=d.max_len)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument(
        "--dtype", default=d.dtype, choices=("auto", "float32", "bfloat16", "float16")
    )
    parser.add_argument(
        "--save-dtype", default=d.save_dtype, choices=("float16", "bfloat16", "float32")
    )
    parser.add_argument("--device", default=d.device)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads for the run")
    parser.add_argument("--eval-every", type=int, default=0, help="steps (0: only at the end)")
    parser.add_argument("--save-every", type=int, default=0, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument(
        "--init-adapter", default=None, help="warm start from this LoRA adapter folder"
    )
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep them after the run")
    parser.add_argument("--max-steps", type=int, help="stop early after N optimizer steps")
    parser.add_argument("--log-every", type=int, default=10, help="print a line every N steps")
    parser.add_argument("--no-progress", action="store_true", help="no live progress bar")
    parser.add_argument("--describe", default="", help="data description for the model card")
    parser.add_argument(
        "--card-extra", type=Path, help="markdown appended to the card (e.g. eval numbers)"
    )


def holdout_split(
    rows: list[dict[str, str]], fraction: float, max_eval: int, seed: int
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Deterministically split off ``fraction`` of ``rows`` (at most ``max_eval``) for eval."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"--eval-fraction must be in [0, 1), got {fraction}")
    count = min(max_eval, int(len(rows) * fraction))
    if count == 0:
        return rows, []
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held = set(order[:count])
    train = [r for i, r in enumerate(rows) if i not in held]
    return train, [rows[i] for i in sorted(held)]


def run_train(args: argparse.Namespace, command: str | None = None) -> int:
    """Run a training job from parsed arguments; returns a process exit code."""
    try:
        rows = read_rows(args.data)
        if args.eval_data is not None:
            eval_rows = read_rows(args.eval_data)
            split_note = f"held-out rows from `{args.eval_data.name}`"
        else:
            rows, eval_rows = holdout_split(rows, args.eval_fraction, args.max_eval, args.seed)
            split_note = f"{len(eval_rows)} rows held out of `{args.data.name}` (seed {args.seed})"
        extra = {}
        if args.card_extra is not None:
            extra["Evaluation"] = args.card_extra.read_text(encoding="utf-8")
        config = TrainConfig(
            out_dir=args.out,
            r=args.r,
            alpha=args.alpha,
            dropout=args.dropout,
            target_modules=tuple(m.strip() for m in args.target_modules.split(",") if m.strip()),
            lr=args.lr,
            epochs=args.epochs,
            batch_size=args.batch,
            grad_accum=args.accum,
            warmup_ratio=args.warmup,
            max_len=args.max_len,
            seed=args.seed,
            dtype=args.dtype,
            save_dtype=args.save_dtype,
            device=args.device,
            num_threads=args.threads,
            eval_every=args.eval_every,
            save_every=args.save_every,
            resume=args.resume,
            init_adapter=args.init_adapter,
            keep_checkpoints_after=args.keep_checkpoints,
            max_steps=args.max_steps,
            log_every=args.log_every,
            progress=not args.no_progress,
            command=command,
            role=args.role,
            base_model_name=args.base,
            data_description=(args.describe + "\n\n" if args.describe else "")
            + f"Training rows from `{args.data.name}`; eval: {split_note}.",
            extra_card_sections=extra,
        )
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    from ooo_agent.models import load_base
    from ooo_agent.train.trainer import train_lora

    try:
        model, tokenizer = load_base(args.base)
    except ModelNotAvailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        report = train_lora(config, model, tokenizer, rows, eval_rows)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    eval_text = "–" if report.eval_loss is None else f"{report.eval_loss:.4f}"
    train_text = "–" if report.train_loss is None else f"{report.train_loss:.4f}"
    print(
        f"trained {report.steps} steps on {report.examples} rows: train loss {train_text}, "
        f"eval loss {eval_text}; adapter {report.adapter_path} "
        f"({report.adapter_bytes / 1e6:.1f} MB)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m ooo_agent.train``."""
    parser = argparse.ArgumentParser(prog="python -m ooo_agent.train", description=__doc__)
    add_train_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    return run_train(args, command=shlex.join(["python", "-m", "ooo_agent.train", *argv]))
