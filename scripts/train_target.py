"""Train the embedded target's tool-calling LoRA (SmolLM2-135M-Instruct) on CPU.

Reads the rows written by ``python -m ooo_agent.train.data`` and runs the project's LoRA
trainer: a thin wrapper over ``ooo-agent train target --recipe cpu-target`` (same run, options
renamed) whose card records this script's command. The shipped adapter (v3) is v1 trained
three more epochs, each warm-starting from the one before on a fresh data draw; its card
(``adapters/smollm2-135m-toolcall``) has the exact commands, e.g. the last epoch::

    python -m ooo_agent.train.data --out runs/target-data6 --examples 1100 --generated 1200 \\
        --token-budget 400000 --max-prompt-tokens 600 --seed 3 --mix live_multiple=0.35,...
    nohup python scripts/train_target.py --data runs/target-data6 --out runs/target6/adapter \\
        --init-adapter runs/target5/adapter --lr 1.5e-4 > runs/target6/train.log 2>&1 &
"""

from __future__ import annotations

import argparse

from ooo_agent.train.recipes import RECIPES
from ooo_agent.train.run import script_main

RENAMES = {"batch_size": "batch", "grad_accum": "accum"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="runs/target-data", help="folder with train/eval.jsonl")
    parser.add_argument("--out", default="runs/target/adapter", help="adapter output folder")
    for n in ("r", "alpha", "lr", "epochs", "batch_size", "grad_accum", "threads", "save_every"):
        d = RECIPES["cpu-target"].values[RENAMES.get(n, n)]  # unset: the recipe's value
        parser.add_argument("--" + n.replace("_", "-"), type=type(d), help=f"default: {d}")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument("--init-adapter", help="warm start from this LoRA adapter folder")
    parser.add_argument("--max-steps", type=int, help="stop early (smoke tests)")
    return script_main("scripts/train_target.py", "target", "cpu-target", parser, argv, RENAMES)


if __name__ == "__main__":
    raise SystemExit(main())
