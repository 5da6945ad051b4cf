"""``ooo-agent train target|sidecar``: train an adapter from JSONL rows or a data folder.

The command-line layer over :func:`~ooo_agent.train.train_lora`: reads rows (a JSONL file,
with an eval split held out of it unless ``--eval-data`` is given, or a data folder holding
``train.jsonl``, ``eval.jsonl`` and ``stats.json``), applies a named ``--recipe``
(:mod:`ooo_agent.train.recipes`) under the options given, loads the base model, trains and
prints the report. What the run ships (card command, ``adapter_config.json`` base,
``train_report.json``) names no absolute path of this machine (:mod:`ooo_agent.train.portable`).
Also runnable as ``python -m ooo_agent.train``.

Example (the embedded sidecar's run)::

    ooo-agent train sidecar --recipe cpu-sidecar --data runs/sidecar-data \\
        --out adapters/smollm2-135m-sidecar
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.models.smollm2 import PYPI_DISTRIBUTION, PYPI_VERSION, SMOLLM2_NAME
from ooo_agent.train._batches import read_rows
from ooo_agent.train.config import DEFAULT_TARGET_MODULES, TrainConfig
from ooo_agent.train.portable import portable_command, portable_command_line, portable_path
from ooo_agent.train.recipes import DATA_BUILDERS, DATA_DESCRIBERS, RECIPES, Recipe

__all__ = [
    "add_train_arguments",
    "base_model_label",
    "base_model_ref",
    "holdout_split",
    "main",
    "run_train",
]

_DEFAULT_BASE = SMOLLM2_NAME
_T = TypeVar("_T")
_SEED_RECIPE = TrainConfig(out_dir=".")
"""The seed recipe: the defaults when neither ``--recipe`` nor the option sets a value."""


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``train`` options to ``parser`` (used by the ``ooo-agent`` CLI too).

    Options a recipe sets default to ``None`` here; :func:`run_train` resolves them (the
    option given, else the recipe's value, else the seed recipe's).
    """
    d = _SEED_RECIPE
    recipes = "; ".join(f"{name}: {r.summary}" for name, r in RECIPES.items())
    parser.add_argument("role", choices=("target", "sidecar"), help="what the adapter is for")
    parser.add_argument(
        "--data",
        required=True,
        type=Path,
        help='JSONL of {"prompt","completion"}, or a data folder with train.jsonl, eval.jsonl '
        "and stats.json (python -m ooo_agent.train.data / .sidecar_data)",
    )
    parser.add_argument("--out", required=True, type=Path, help="folder for the adapter + card")
    parser.add_argument(
        "--recipe",
        choices=tuple(RECIPES),
        help=f"defaults for the options below, any option given still wins ({recipes}); "
        "default: the OoO-Spec seed recipe",
    )
    parser.add_argument(
        "--eval-data", type=Path, help="held-out JSONL (default: split --data, or DIR/eval.jsonl)"
    )
    parser.add_argument("--eval-fraction", type=float, default=0.05, help="default: %(default)s")
    parser.add_argument(
        "--max-eval", type=int, help="cap on eval rows (default 200; cpu-target: no cap)"
    )
    parser.add_argument(
        "--base", default=_DEFAULT_BASE, help="embedded name, local folder or hub id"
    )
    parser.add_argument("--cache-dir", help="ooo-agent cache root (for the embedded base)")
    parser.add_argument("--r", type=int, help=f"LoRA rank (seed: {d.r})")
    parser.add_argument("--alpha", type=int, help=f"seed: {d.alpha}")
    parser.add_argument("--dropout", type=float, help=f"seed: {d.dropout}")
    parser.add_argument(
        "--target-modules", default=",".join(DEFAULT_TARGET_MODULES), help="comma separated"
    )
    parser.add_argument("--lr", type=float, help=f"peak learning rate (seed: {d.lr:g})")
    parser.add_argument("--epochs", type=int, help=f"seed: {d.epochs}")
    parser.add_argument("--batch", type=int, help=f"micro-batch size (seed: {d.batch_size})")
    parser.add_argument("--accum", type=int, help=f"gradient accumulation (seed: {d.grad_accum})")
    parser.add_argument("--warmup", type=float, help=f"warmup fraction (seed: {d.warmup_ratio})")
    parser.add_argument("--max-len", type=int, help=f"seed: {d.max_len}")
    parser.add_argument(
        "--key-weight",
        type=float,
        help="loss weight of a call's JSON keys and of the , / } / ] after each value, where the "
        f"model picks the next argument or ends the call (seed: {d.key_weight:g}, plain "
        "cross-entropy)",
    )
    parser.add_argument(
        "--pack",
        action=argparse.BooleanOptionalAction,
        help="train the rows that share a prompt prefix (a request's sidecar rows) in one "
        "forward over their token trie: same loss per row, less compute (seed: off)",
    )
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument(
        "--dtype", choices=("auto", "float32", "bfloat16", "float16"), help=f"seed: {d.dtype}"
    )
    parser.add_argument(
        "--save-dtype", default=d.save_dtype, choices=("float16", "bfloat16", "float32")
    )
    parser.add_argument("--device", help=f"seed: {d.device}")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads for the run")
    parser.add_argument("--eval-every", type=int, default=0, help="steps (0: only at the end)")
    parser.add_argument("--save-every", type=int, help="checkpoint every N steps (seed: 0, never)")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument(
        "--init-adapter", default=None, help="warm start from this LoRA adapter folder"
    )
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep them after the run")
    parser.add_argument("--max-steps", type=int, help="stop early after N optimizer steps")
    parser.add_argument("--log-every", type=int, help="print a line every N steps (seed: 10)")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="live progress bar (default: on, off in the cpu-* recipes)",
    )
    parser.add_argument("--describe", default="", help="data description for the model card")
    parser.add_argument(
        "--card-extra", type=Path, help="markdown appended to the card (e.g. eval numbers)"
    )


def holdout_split(
    rows: list[dict[str, str]], fraction: float, max_eval: int | None, seed: int
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Deterministically split off ``fraction`` of ``rows`` (at most ``max_eval``; ``None``: no
    cap) for eval."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"--eval-fraction must be in [0, 1), got {fraction}")
    count = int(len(rows) * fraction)
    if max_eval is not None:
        count = min(max_eval, count)
    if count == 0:
        return rows, []
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held = set(order[:count])
    train = [r for i, r in enumerate(rows) if i not in held]
    return train, [rows[i] for i in sorted(held)]


def base_model_ref(base: str) -> str:
    """What ``adapter_config.json`` records for ``--base``: the embedded name or a hub id as
    given, a local folder as a portable path."""
    return base if base == SMOLLM2_NAME else portable_path(base)


def base_model_label(base: str) -> str:
    """The base model as the model card names it."""
    if base == SMOLLM2_NAME:
        return f"SmolLM2-135M-Instruct (embedded, from {PYPI_DISTRIBUTION}=={PYPI_VERSION})"
    return base_model_ref(base)


class _MissingData(Exception):
    """A data folder lacks a file its builder writes."""


@dataclass
class _Rows:
    train: list[dict[str, str]]
    eval: list[dict[str, str]]
    description: str
    folder: Path | None


def _pick(args: argparse.Namespace, recipe: Recipe | None, name: str, seed: _T) -> _T:
    """The option given, else the recipe's value, else ``seed``."""
    given = getattr(args, name, None)
    if given is not None:
        return cast(_T, given)
    if recipe is not None and name in recipe.values:
        return cast(_T, recipe.values[name])
    return seed


def _read_folder(args: argparse.Namespace, max_eval: int | None) -> _Rows:
    folder: Path = args.data
    needed = ["train.jsonl"] if args.eval_data is not None else ["train.jsonl", "eval.jsonl"]
    for name in needed:
        if not (folder / name).is_file():
            raise _MissingData(
                f"{folder / name} is missing; build the folder with '{DATA_BUILDERS[args.role]}'"
            )
    rows = read_rows(folder / "train.jsonl")
    label = folder.absolute().name  # the folder's own name, also for "."
    if args.eval_data is not None:
        eval_path, eval_name = args.eval_data, args.eval_data.name
    else:
        eval_path, eval_name = folder / "eval.jsonl", f"{label}/eval.jsonl"
    eval_rows = read_rows(eval_path)
    capped = max_eval is not None and len(eval_rows) > max_eval
    eval_rows = eval_rows[:max_eval] if max_eval is not None else eval_rows
    parts = [args.describe] if args.describe else []
    stats_path = folder / "stats.json"
    if stats_path.is_file():
        stats: Mapping[str, Any] = json.loads(stats_path.read_text(encoding="utf-8"))
        parts.append(DATA_DESCRIBERS[args.role](stats))
    parts.append(
        f"Training rows from `{label}/train.jsonl`; eval: {'the first ' if capped else ''}"
        f"{len(eval_rows)} held-out rows of `{eval_name}`."
    )
    return _Rows(rows, eval_rows, "\n\n".join(parts), folder)


def _read_file(args: argparse.Namespace, max_eval: int | None) -> _Rows:
    rows = read_rows(args.data)
    if args.eval_data is not None:
        eval_rows = read_rows(args.eval_data)
        split_note = f"held-out rows from `{args.eval_data.name}`"
    else:
        rows, eval_rows = holdout_split(rows, args.eval_fraction, max_eval, args.seed)
        split_note = f"{len(eval_rows)} rows held out of `{args.data.name}` (seed {args.seed})"
    description = (args.describe + "\n\n" if args.describe else "") + (
        f"Training rows from `{args.data.name}`; eval: {split_note}."
    )
    return _Rows(rows, eval_rows, description, None)


def _portable_report(out: Path) -> dict[str, Any]:
    """Rewrite ``out/train_report.json`` with portable paths; returns it."""
    path = out / "train_report.json"
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for key in ("out_dir", "adapter_path"):
        report[key] = portable_path(report[key])
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def _build_config(
    args: argparse.Namespace, recipe: Recipe | None, rows: _Rows, command: str | None
) -> TrainConfig:
    d = _SEED_RECIPE
    extra = {}
    if args.card_extra is not None:
        extra["Evaluation"] = args.card_extra.read_text(encoding="utf-8")
    return TrainConfig(
        out_dir=args.out,
        r=_pick(args, recipe, "r", d.r),
        alpha=_pick(args, recipe, "alpha", d.alpha),
        dropout=_pick(args, recipe, "dropout", d.dropout),
        target_modules=tuple(m.strip() for m in args.target_modules.split(",") if m.strip()),
        lr=_pick(args, recipe, "lr", d.lr),
        epochs=_pick(args, recipe, "epochs", d.epochs),
        batch_size=_pick(args, recipe, "batch", d.batch_size),
        grad_accum=_pick(args, recipe, "accum", d.grad_accum),
        warmup_ratio=_pick(args, recipe, "warmup", d.warmup_ratio),
        max_len=_pick(args, recipe, "max_len", d.max_len),
        key_weight=_pick(args, recipe, "key_weight", d.key_weight),
        pack=_pick(args, recipe, "pack", d.pack),
        seed=args.seed,
        dtype=_pick(args, recipe, "dtype", d.dtype),
        save_dtype=args.save_dtype,
        device=_pick(args, recipe, "device", d.device),
        num_threads=_pick(args, recipe, "threads", d.num_threads),
        eval_every=args.eval_every,
        save_every=_pick(args, recipe, "save_every", d.save_every),
        resume=args.resume,
        init_adapter=args.init_adapter,
        keep_checkpoints_after=args.keep_checkpoints,
        max_steps=args.max_steps,
        log_every=_pick(args, recipe, "log_every", 10),
        progress=_pick(args, recipe, "progress", True),
        command=None if command is None else portable_command_line(command),
        role=args.role,
        base_model_name=base_model_label(args.base),
        base_model_ref=base_model_ref(args.base),
        data_description=rows.description,
        extra_card_sections=extra,
    )


def run_train(args: argparse.Namespace, command: str | None = None) -> int:
    """Run a training job from parsed arguments; returns a process exit code.

    ``command`` (the line that started the run) goes to the model card, paths made portable.
    Exit codes: 0 trained; 1 the base model or a data folder's file is missing (the message
    names what builds it); 2 bad options or rows.
    """
    recipe = RECIPES[args.recipe] if getattr(args, "recipe", None) else None
    try:
        if recipe is not None and recipe.role != args.role:
            raise ValueError(f"--recipe {args.recipe} is for a {recipe.role}, not a {args.role}")
        max_eval: int | None = _pick(args, recipe, "max_eval", 200)
        reader = _read_folder if args.data.is_dir() else _read_file
        rows = reader(args, max_eval)
        config = _build_config(args, recipe, rows, command)
    except _MissingData as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    from ooo_agent.models import load_base
    from ooo_agent.train.trainer import train_lora

    try:
        model, tokenizer = load_base(args.base, cache_dir=getattr(args, "cache_dir", None))
    except ModelNotAvailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        report = train_lora(config, model, tokenizer, rows.train, rows.eval)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _copy_training_list(args.role, rows.folder, Path(config.out_dir))
    summary = _portable_report(Path(config.out_dir))
    eval_text = "–" if report.eval_loss is None else f"{report.eval_loss:.4f}"
    train_text = "–" if report.train_loss is None else f"{report.train_loss:.4f}"
    print(
        f"trained {report.steps} steps on {report.examples} rows: train loss {train_text}, "
        f"eval loss {eval_text}; adapter {summary['adapter_path']} "
        f"({report.adapter_bytes / 1e6:.1f} MB)"
    )
    return 0


def _copy_training_list(role: str, folder: Path | None, out: Path) -> None:
    """A sidecar's training requests go beside it: ``ooo-agent eval-sidecar`` refuses them."""
    from ooo_agent.train.eval_sidecar import TRAINING_LIST

    if role == "sidecar" and folder is not None and (folder / TRAINING_LIST).is_file():
        shutil.copyfile(folder / TRAINING_LIST, out / TRAINING_LIST)


def main(argv: Sequence[str] | None = None, *, command: str | None = None) -> int:
    """Entry point of ``python -m ooo_agent.train``; ``command`` is what the card records
    (default: this command line)."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_train_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if command is None:
        command = portable_command(["python", "-m", "ooo_agent.train"], argv)
    return run_train(args, command=command)
