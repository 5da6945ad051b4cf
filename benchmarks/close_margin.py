"""How sure the target is when it closes a call's arguments: could a bias keep it writing?

For every scored call of an evaluation report (``python -m ooo_agent.train.eval_target ...
--out report.json``) whose function is right and whose output parses, this runs the target once
on the prompt plus its own output up to the brace that closes the arguments, and sums the
next-token probability over tokens that start with ``}`` (close) and with ``,`` (another
argument). Grouped by outcome — acceptable calls, calls that left out an argument the request
named (``missing_optional``), calls with a wrong value — it shows whether a decoding bias
toward "one more argument" could recover the dropped ones without breaking the right ones:

    python benchmarks/close_margin.py --report s400.json --category simple_python

The model is the embedded target (``--adapter``, default the shipped one), float32, greedy
context only; no generation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

from ooo_agent.bench.datasets import BenchItem, load_bfcl
from ooo_agent.formats import get_format
from ooo_agent.formats.base import ChatFormat
from ooo_agent.models.presets import attach_adapter
from ooo_agent.models.smollm2 import load_smollm2

THRESHOLDS = (0.001, 0.01, 0.05, 0.1, 0.2)


def arguments_end(text: str) -> int | None:
    """Offset of the brace that closes the (last) call's arguments, or None."""
    start = text.find('"arguments"')
    end = text.rfind("}")
    end = text.rfind("}", 0, end) if end > 0 else -1
    return end if start >= 0 and end > start else None


def margins(
    report: dict[str, Any],
    items: dict[str, BenchItem],
    model: Any,
    tokenizer: Any,
    fmt: ChatFormat,
    category: str,
) -> list[dict[str, Any]]:
    """One row per measurable call of ``category``: its outcome and the two probabilities."""
    vocab = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    close = torch.tensor([v.lstrip().startswith("}") for v in vocab])
    comma = torch.tensor([v.lstrip().startswith(",") for v in vocab])
    rows: list[dict[str, Any]] = []
    for scored in report["items"]:
        if scored["category"] != category or not scored["name"]:
            continue
        if scored["failure"] in ("malformed", "count"):
            continue
        end = arguments_end(scored["output"])
        if end is None:
            continue
        item = items[scored["id"]]
        messages = fmt.render_messages(item.messages, item.tools)
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        text = prompt + scored["output"][:end].rstrip()
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.inference_mode():
            probs = torch.softmax(model(ids).logits[0, -1].float(), dim=-1)
        rows.append(
            {
                "id": scored["id"],
                "outcome": "acceptable" if scored["ast"] else scored["failure"],
                "p_close": float(probs[close].sum()),
                "p_comma": float(probs[comma].sum()),
            }
        )
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per outcome: how many calls, and how many give ``,`` more than each threshold."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        groups[row["outcome"]].append(row["p_comma"])
    return {
        outcome: {
            "n": len(values),
            "p_comma_above": {str(t): sum(v > t for v in values) for t in THRESHOLDS},
            "median_p_comma": sorted(values)[len(values) // 2],
        }
        for outcome, values in sorted(groups.items())
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", required=True, help="an eval_target JSON report")
    parser.add_argument("--category", default="simple_python")
    parser.add_argument("--adapter", default="adapters/smollm2-135m-toolcall")
    parser.add_argument("--format", default="hermes-description-first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", help="write every call's probabilities here (JSON)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    model, tokenizer = load_smollm2(None)
    model = attach_adapter(model, args.adapter, merge=True)
    items = {item.id: item for item in load_bfcl(args.category)}
    rows = margins(report, items, model, tokenizer, get_format(args.format), args.category)
    if not rows:
        print("no call to measure in this report", file=sys.stderr)
        return 1
    summary = summarize(rows)
    print(f"{'outcome':18s} {'n':>4s} " + " ".join(f"p(,)>{t:<6}" for t in THRESHOLDS) + " median")
    for outcome, s in summary.items():
        above = " ".join(f"{s['p_comma_above'][str(t)]:>10d}" for t in THRESHOLDS)
        print(f"{outcome:18s} {s['n']:4d} {above} {s['median_p_comma']:.4f}")
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "calls": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
