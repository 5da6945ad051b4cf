"""Average LoRA adapters of one base model into one adapter of the same rank ("model soup").

Two checkpoints of one training chain (an adapter and the same adapter one epoch further)
often err on different items; the average of their weight updates can keep what each got
right. The exact average of rank-``r`` updates ``Σ wᵢ·Bᵢ·Aᵢ`` has rank up to ``n·r``; it is
brought back to rank ``r`` (so the file stays the size of one adapter) by a truncated SVD per
layer — PEFT's ``add_weighted_adapter(combination_type="svd")``. With ``--rank`` at least
``n·r`` the average is exact.

Command line (writes ``adapter_config.json`` + ``adapter_model.safetensors`` in float16 and
``average_report.json`` naming the inputs)::

    python -m ooo_agent.train.average runs/target6/adapter runs/target7/adapter \\
        --out runs/soup/adapter

The base model is the embedded SmolLM2 unless ``--base`` names a local folder or hub id.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ooo_agent.train.portable import portable_path

__all__ = ["average_adapters", "main"]

_DTYPES = ("float16", "bfloat16", "float32")


def average_adapters(
    base_model: Any,
    adapters: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    weights: Sequence[float] | None = None,
    rank: int | None = None,
    save_dtype: str = "float16",
) -> Path:
    """Average ``adapters`` (LoRA folders of ``base_model``) and save the result in ``out_dir``.

    ``weights`` default to equal shares; ``rank`` defaults to the first adapter's. The saved
    adapter has ``lora_alpha = r`` (scaling 1: the SVD factors carry the whole update) and the
    adapters' target modules. Returns the saved folder.
    """
    import torch
    from peft import PeftModel

    if len(adapters) < 2:
        raise ValueError("give at least two adapters to average")
    weights = list(weights) if weights is not None else [1.0 / len(adapters)] * len(adapters)
    if len(weights) != len(adapters) or any(w < 0 for w in weights) or not sum(weights) > 0:
        raise ValueError("need one non-negative weight per adapter, not all zero")
    if save_dtype not in _DTYPES:
        raise ValueError(f"save_dtype must be one of {_DTYPES}, not {save_dtype!r}")
    names = [f"a{i}" for i in range(len(adapters))]
    model = PeftModel.from_pretrained(base_model, str(adapters[0]), adapter_name=names[0])
    for name, folder in zip(names[1:], adapters[1:], strict=True):
        model.load_adapter(str(folder), adapter_name=name)
    first: Any = model.peft_config[names[0]]
    rank = rank or int(first.r)
    model.add_weighted_adapter(
        names, list(weights), adapter_name="average", combination_type="svd", svd_rank=rank
    )
    model.set_adapter("average")
    for name in names:
        model.delete_adapter(name)
    target_dtype = getattr(torch, save_dtype)
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if "lora_" in pname and ".average." in pname:
                param.data = param.data.to(target_dtype)
    out = Path(out_dir)
    tmp = out / ".average"
    model.save_pretrained(str(tmp), selected_adapters=["average"], safe_serialization=True)
    out.mkdir(parents=True, exist_ok=True)
    saved = tmp / "average" if (tmp / "average").is_dir() else tmp
    for item in saved.iterdir():
        if item.name in ("adapter_config.json", "adapter_model.safetensors"):
            item.replace(out / item.name)
    shutil.rmtree(tmp)
    adapter_config = json.loads((out / "adapter_config.json").read_text(encoding="utf-8"))
    adapter_config["base_model_name_or_path"] = getattr(first, "base_model_name_or_path", None)
    (out / "adapter_config.json").write_text(
        json.dumps(adapter_config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    report = {
        "adapters": [portable_path(os.fspath(a)) for a in adapters],
        "weights": weights,
        "rank": rank,
        "combination": "svd",
        "save_dtype": save_dtype,
    }
    (out / "average_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.train.average``: average LoRA adapters of one base."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train.average", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("adapters", nargs="+", help="LoRA adapter folders (two or more)")
    parser.add_argument("--out", required=True, help="folder for the averaged adapter")
    parser.add_argument("--weights", type=float, nargs="+", default=None, help="default: equal")
    parser.add_argument("--rank", type=int, default=None, help="default: the first adapter's r")
    parser.add_argument("--dtype", choices=_DTYPES, default="float16", help="saved precision")
    parser.add_argument("--base", default=None, help="base model (default: embedded SmolLM2)")
    parser.add_argument("--cache-dir", default=None, help="ooo-agent cache root")
    args = parser.parse_args(argv)
    if len(args.adapters) < 2:
        parser.error("give at least two adapters to average")
    import torch

    if args.base:
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(args.base, dtype=torch.float32)
    else:
        from ooo_agent.models.smollm2 import load_smollm2

        base, _ = load_smollm2(args.cache_dir)
    try:
        out = average_adapters(
            base, args.adapters, args.out, weights=args.weights, rank=args.rank,
            save_dtype=args.dtype,
        )  # fmt: skip
    except ValueError as exc:
        parser.error(str(exc))
    print(f"averaged {len(args.adapters)} adapters into {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
