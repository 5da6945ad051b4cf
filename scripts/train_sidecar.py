"""Train the embedded sidecar's LoRA (SmolLM2-135M-Instruct answering OoO-Spec semantic rows).

Runs ``ooo-agent train sidecar --recipe cpu-sidecar`` (see :mod:`ooo_agent.train.recipes`) on
the rows of ``python -m ooo_agent.train.sidecar_data``, options renamed; the card records this
script's command. The run behind ``adapters/smollm2-135m-sidecar/``::

    python -m ooo_agent.train.sidecar_data --requests runs/target-data/requests.jsonl \\
        --target-adapter adapters/smollm2-135m-toolcall --out runs/sidecar-data \\
        --threads 2 --token-budget 520000 --index-permutations 2
    nohup python scripts/train_sidecar.py --data runs/sidecar-data \\
        --init-adapter adapters/smollm2-135m-toolcall --max-steps 260 \\
        --out adapters/smollm2-135m-sidecar > runs/sidecar/train.log 2>&1 &
"""

from __future__ import annotations

import argparse

from ooo_agent.train.recipes import RECIPES
from ooo_agent.train.run import script_main

RENAMES = {"batch_size": "batch", "grad_accum": "accum", "max_eval_rows": "max_eval"}
NUMBERS = (
    "r", "alpha", "lr", "epochs", "batch_size", "grad_accum", "max_len", "max_eval_rows", "threads",
)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="runs/sidecar-data", help="sidecar_data output folder")
    parser.add_argument("--out", default="adapters/smollm2-135m-sidecar", help="adapter folder")
    parser.add_argument("--base", default="smollm2-135m-instruct", help="embedded name or folder")
    for n in (*NUMBERS, "save_every"):  # unset: the recipe's value
        d = RECIPES["cpu-sidecar"].values[RENAMES.get(n, n)]
        parser.add_argument("--" + n.replace("_", "-"), type=type(d), help=f"default: {d}")
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    parser.add_argument("--init-adapter", help="warm start from this LoRA adapter folder")
    parser.add_argument("--max-steps", type=int, help="stop early (smoke tests)")
    parser.add_argument("--cache-dir", help="ooo-agent cache root")
    return script_main("scripts/train_sidecar.py", "sidecar", "cpu-sidecar", parser, argv, RENAMES)


if __name__ == "__main__":
    raise SystemExit(main())
