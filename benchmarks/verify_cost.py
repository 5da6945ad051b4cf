"""What one verification forward costs as the tree grows (not a timed test).

A speculative step verifies every drafted token in one target forward over the cached prompt.
How much more a bigger tree costs decides how big a tree may be: ``HFTarget``'s
``node_budget`` / ``max_draft_tokens``. This times one forward of ``n`` new tokens after a
cached prompt of ``--prompt-tokens`` tokens, for each ``n`` of ``--sizes``, and prints the
median of ``--repeat`` runs and its ratio to the first size's. A chain of ``n`` tokens costs what
a tree of ``n`` nodes does (the tree only changes the attention mask).

    python benchmarks/verify_cost.py                     # the embedded target, 1 thread
    python benchmarks/verify_cost.py --sizes 1,32,64 --prompt-tokens 600 --json out.json
    python benchmarks/verify_cost.py --model tiny        # a tiny random model (mechanics only)
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any


def _load(name: str) -> Any:
    if name == "tiny":
        import torch
        from transformers import AutoModelForCausalLM, LlamaConfig

        torch.manual_seed(0)
        config = LlamaConfig(
            vocab_size=512, hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        )  # fmt: skip
        return AutoModelForCausalLM.from_config(config).eval()
    from ooo_agent.models import load_preset

    model, _ = load_preset(name, merge=True, dtype="float32")
    return model.eval()


def _sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be whole numbers of at least 1; got {text!r}")
    return sizes


def measure(
    model: Any, sizes: list[int], *, prompt_tokens: int, repeat: int, seed: int = 0
) -> list[dict[str, float]]:
    """``[{"tokens": n, "ms": median, "ratio": ms / first size's ms}]``, one per size."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    vocab = int(model.config.vocab_size)
    prompt = torch.randint(0, vocab, (1, prompt_tokens), generator=generator)
    rows: list[dict[str, float]] = []
    with torch.no_grad():
        cache = model(prompt, use_cache=True).past_key_values
        for n in sizes:
            times = []
            for _ in range(repeat):
                fresh = copy.deepcopy(cache)  # each forward starts from the prompt alone
                tokens = torch.randint(0, vocab, (1, n), generator=generator)
                started = time.perf_counter()
                model(tokens, past_key_values=fresh, use_cache=True)
                times.append(time.perf_counter() - started)
            rows.append({"tokens": n, "ms": round(statistics.median(times) * 1000, 1)})
    for row in rows:
        row["ratio"] = round(row["ms"] / rows[0]["ms"], 2)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="smollm2-135m-toolcall", help="a target preset or 'tiny'"
    )
    parser.add_argument("--sizes", type=_sizes, default=_sizes("1,8,16,32,48,64,96"))
    parser.add_argument("--prompt-tokens", type=int, default=420)
    parser.add_argument("--repeat", type=int, default=7, help="runs per size (the median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 on a shared box)")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    model = _load(args.model)
    rows = measure(model, args.sizes, prompt_tokens=args.prompt_tokens, repeat=args.repeat)
    print(f"one verification forward after {args.prompt_tokens} cached prompt tokens "
          f"({args.model}, {args.threads} thread(s), median of {args.repeat})")  # fmt: skip
    print("tokens verified |     ms | vs first")
    for row in rows:
        print(f"{row['tokens']:>15} | {row['ms']:>6} | {row['ratio']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
