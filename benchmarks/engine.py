"""Vanilla vs ToolSpec on one model, same machine, same run (not a timed test).

Prints, per mode: target forward passes per call, mean tokens committed per step, prefill
and decode time, drafting overhead, and whether each call's tokens equal vanilla's.

    python benchmarks/engine.py                       # the embedded SmolLM2 model
    python benchmarks/engine.py --model tiny          # a tiny random model (mechanics only)
    python benchmarks/engine.py --model ./my-model --threads 1 --repeat 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from ooo_agent.targets.base import TargetRequest
from ooo_agent.targets.hf import DEFAULT_NODE_BUDGET, HFTarget

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculate_area",
            "description": "Area of a rectangle.",
            "parameters": {
                "type": "object",
                "properties": {"width": {"type": "number"}, "height": {"type": "number"}},
                "required": ["width", "height"],
            },
        },
    },
]
PROMPTS = [
    "What's the weather in Paris right now?",
    "Tell me the temperature in Tokyo in fahrenheit.",
    "What is the area of a 3 by 4.5 rectangle?",
    "Is it raining in Berlin? Use celsius.",
    "Compute the area of a rectangle 12 wide and 7 high.",
]


def _load(name: str, dtype: str) -> tuple[Any, Any]:
    if name == "smollm2":
        from ooo_agent.models.smollm2 import load_smollm2

        return load_smollm2(dtype=dtype)
    if name == "tiny":
        import torch
        from transformers import AutoModelForCausalLM, Qwen2Config

        from ooo_agent.models.smollm2 import load_smollm2

        _, tokenizer = load_smollm2()
        torch.manual_seed(0)
        config = Qwen2Config(
            vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        )  # fmt: skip
        return AutoModelForCausalLM.from_config(config).eval(), tokenizer
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(
        name, dtype=dtype
    ).eval(), AutoTokenizer.from_pretrained(name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="smollm2 | tiny | a model folder")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 on a shared box)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1, help="passes over the prompts")
    parser.add_argument("--node-budget", type=int, default=DEFAULT_NODE_BUDGET)
    parser.add_argument("--min-gain", type=float, default=0.05)
    parser.add_argument("--format", default="hermes")
    args = parser.parse_args(argv)

    model, tokenizer = _load(args.model, args.dtype)
    # One target per mode on the same model: each keeps its own prefix cache and retrieval
    # memory, so toolspec never sees vanilla's output for the same request.
    targets = {
        mode: HFTarget(
            model,
            tokenizer,
            args.format,
            num_threads=args.threads,
            node_budget=args.node_budget,
            min_gain=args.min_gain,
        )
        for mode in ("vanilla", "toolspec")
    }
    rows: dict[str, list[dict[str, float]]] = {"vanilla": [], "toolspec": []}
    identical = 0
    total = 0
    for _ in range(args.repeat):
        for prompt in PROMPTS:
            messages = [{"role": "user", "content": prompt}]
            tokens: dict[str, list[int]] = {}
            for mode in ("vanilla", "toolspec"):
                request = TargetRequest(
                    messages,
                    TOOLS,
                    mode=mode,
                    max_new_tokens=args.max_new_tokens,  # type: ignore[arg-type]
                )
                started = time.perf_counter()
                generation = targets[mode].generate_sync(request)
                wall = time.perf_counter() - started
                stats = generation.stats
                tokens[mode] = generation.token_ids
                rows[mode].append(
                    {
                        "wall": wall,
                        "forwards": stats.forward_passes,
                        "tokens": stats.new_tokens,
                        "mean_accepted": stats.mean_accepted,
                        "prefill": stats.prefill_s,
                        "decode": stats.decode_s,
                        "draft": stats.draft_s,
                        "nodes": statistics.fmean(stats.tree_nodes) if stats.tree_nodes else 0.0,
                    }
                )
            total += 1
            identical += tokens["vanilla"] == tokens["toolspec"]

    def mean(mode: str, key: str) -> float:
        return statistics.fmean(r[key] for r in rows[mode])

    print(
        f"model={args.model} threads={args.threads} calls={total} (vanilla then toolspec, same run)"
    )
    header = f"{'':22}{'vanilla':>12}{'toolspec':>12}"
    print(header)
    for label, key, fmt in [
        ("forward passes / call", "forwards", "{:12.1f}"),
        ("new tokens / call", "tokens", "{:12.1f}"),
        ("tokens / step", "mean_accepted", "{:12.2f}"),
        ("tree nodes / step", "nodes", "{:12.1f}"),
        ("prefill s / call", "prefill", "{:12.3f}"),
        ("decode s / call", "decode", "{:12.3f}"),
        ("drafting s / call", "draft", "{:12.3f}"),
        ("wall s / call", "wall", "{:12.3f}"),
    ]:
        print(f"{label:22}" + fmt.format(mean("vanilla", key)) + fmt.format(mean("toolspec", key)))
    ratio = mean("vanilla", "wall") / max(mean("toolspec", "wall"), 1e-9)
    draft_share = mean("toolspec", "draft") / max(mean("toolspec", "decode"), 1e-9)
    print(f"speed-up (wall, vanilla/toolspec): {ratio:.2f}x")
    print(f"drafting share of toolspec decode time: {draft_share:.1%}")
    print(f"identical to vanilla: {identical}/{total}")


if __name__ == "__main__":
    main()
