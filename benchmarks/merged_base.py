"""A base model folder with part of an adapter's weight change folded in (a probe, no training).

Writes ``base + scale × (base with ADAPTER merged − base)`` as a plain transformers folder, to
put under another adapter with ``ooo-agent eval-sidecar --base FOLDER``: does the target's
reading come with its weights into the sidecar's rows? (docs/lab-notes/2026-12-04-sidecar-tool-choice-and-rows.md §2.0zzzzzzzzzzz:
it does not; nor after an epoch of the sidecar trained on them, §2.0zzzzzzzzzzzz.)

    python benchmarks/merged_base.py --adapter adapters/smollm2-135m-toolcall --scale 0.5 \\
        --out runs/target-half
    ooo-agent eval-sidecar --sidecar adapters/smollm2-135m-sidecar --base runs/target-half \\
        --requests m200-opt2-labels.jsonl --n 60 --labels target --threads 2 --no-direct \\
        --dtype float32 --value-conventions --function-choice scored --relevance-weight 2 \\
        --required-values on --mentioned-values on --typed-values on --out half-m60.json

(``--sidecar`` names the adapter folder, not the preset, so that ``--base`` is read; the
flags after ``--dtype`` are the preset's wave.)
"""

from __future__ import annotations

import argparse
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", required=True, help="LoRA adapter folder")
    parser.add_argument("--base", default="smollm2-135m-instruct", help="embedded name or folder")
    parser.add_argument("--scale", type=float, default=1.0, help="share of the change to add")
    parser.add_argument("--out", required=True, type=Path, help="folder to write")
    args = parser.parse_args(argv)

    import torch

    from ooo_agent.models.presets import attach_adapter, load_base

    model, tokenizer = load_base(args.base, dtype=torch.float32)
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    merged = attach_adapter(model, args.adapter, merge=True)
    after = merged.state_dict()
    changed = 0
    with torch.no_grad():
        for name, tensor in after.items():
            if not torch.equal(tensor, before[name]):
                changed += 1
                tensor.copy_(before[name] + args.scale * (tensor - before[name]))
    merged.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"wrote {args.out}: {changed} tensors moved by {args.scale:g} × the adapter's change")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
