"""What the call constraint costs per output token, in Python, beside the model.

Replays the outputs of an evaluation report (``python -m ooo_agent.train.eval_target ...
--out report.json``) token by token through :class:`~ooo_agent.decoding.constraint.CallConstraint`
with the embedded target's tokenizer, the output's own token standing as the argmax at every
position (the common case: allowed, one decode and one scan), for each kind of constraint
(``names+mentioned``: the arguments constraint with the optional parameters the request names
counted as required, :mod:`ooo_agent.rules.mentions`; ``names+mentioned+values``: and the
values held to the tool's and the request's conventions, :mod:`ooo_agent.rules.conventions`;
finding them is timed too):

    python benchmarks/constraint_cost.py --report simple-args.json --category simple_python

No model runs: the figure is the constraint's own work, to set beside a forward pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from ooo_agent.bench.datasets import load_bfcl
from ooo_agent.decoding.codec import TokenizerCodec
from ooo_agent.decoding.constraint import CallConstraint
from ooo_agent.formats import HermesFormat
from ooo_agent.rules.conventions import with_value_conventions
from ooo_agent.rules.mentions import with_mentioned_required

KINDS: dict[str, dict[str, bool]] = {
    "names": {"names": True},
    "names+json": {"names": True, "well_formed": True},
    "names+arguments": {"names": True, "arguments": True},
    "names+mentioned": {"names": True, "arguments": True},
    "names+mentioned+values": {"names": True, "arguments": True},
}

Output = tuple[list[dict[str, Any]], str, list[dict[str, Any]]]
"""An output's offered tools, its text and the request's messages."""


def measure(
    outputs: list[Output], tokenizer: Any, repeats: int = 1
) -> dict[str, dict[str, float]]:
    """Mean microseconds per token of ``choose`` for each kind, over ``(tools, output,
    messages)`` triples."""
    codec = TokenizerCodec(tokenizer)
    encoded = [
        (tools, tokenizer.encode(text, add_special_tokens=False), messages)
        for tools, text, messages in outputs
    ]
    logits = torch.zeros(len(tokenizer))
    results: dict[str, dict[str, float]] = {}
    for kind, options in KINDS.items():
        tokens = overrides = 0
        started = time.perf_counter()
        for _ in range(repeats):
            for tools, ids, messages in encoded:
                if kind.startswith("names+mentioned"):
                    tools = with_mentioned_required(messages, tools)
                if kind == "names+mentioned+values":
                    tools = with_value_conventions(messages, tools)
                constraint = CallConstraint(
                    HermesFormat().skeleton(tools), codec.decode, **options
                )
                for k in range(len(ids)):
                    constraint.choose(ids[:k], logits, ids[k])
                tokens += len(ids)
                overrides += constraint.overrides
        elapsed = time.perf_counter() - started
        results[kind] = {
            "tokens": tokens,
            "us_per_token": 1e6 * elapsed / max(tokens, 1),
            "overrides": overrides,
        }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", required=True, help="an eval_target JSON report")
    parser.add_argument("--category", required=True, help="the BFCL category it scored")
    parser.add_argument("--n", type=int, default=100, help="first N items of the report")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from ooo_agent.models import load_preset

    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    items = {item.id: item for item in load_bfcl(args.category)}
    outputs = [
        (items[row["id"]].tools, row["output"], items[row["id"]].messages)
        for row in report["items"][: args.n]
        if row["id"] in items
    ]
    if not outputs:
        print(f"no item of {args.category!r} in {args.report}", file=sys.stderr)
        return 2
    _, tokenizer = load_preset("smollm2-135m-toolcall")
    results = measure(outputs, tokenizer, repeats=args.repeats)
    print(f"{len(outputs)} outputs of {args.category}")
    for kind, row in results.items():
        print(
            f"{kind:23} {row['us_per_token']:8.0f} us per token  "
            f"({int(row['tokens'])} tokens, {int(row['overrides'])} overrides)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
