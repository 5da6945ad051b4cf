"""How sure the target was of the values a sidecar must predict, and where the sidecar misses.

A sidecar is scored against the target's own calls (``ooo-agent eval-sidecar``). Where the
target wrote a value it was unsure of — some token of it under 50 % of the target's own
probability — the value hangs on a close choice of the target's, which a sidecar reading the
request in other words can hardly copy. This reads the target's probability of each token of
each argument value in its call (teacher-forced on the call text it wrote, the prompt
rendered as the preset's format renders it), takes a value's least sure token, and splits the
sidecar's argument rows (the rows and hits of ``benchmarks/sidecar_reading.py``) by it:

    python benchmarks/target_confidence.py --report sc-m200.json --labels m200-labels.jsonl \\
        --category multiple

A value's tokens are those that overlap its text in the call, less a last token that also
runs past it (``"}`` ends the value and the call at once: a choice about what follows). The
probabilities are the unconstrained model's: where the demo's decoding constraint masked a
token, the target's choice was narrower than read here. Rows of arguments the target left
out have no value tokens and are counted apart. ``--rows-out ROWS.jsonl`` writes every row
(request, parameter, the target's value, the sidecar's answer, hit, least sure token, bin), to
read the misses of one bin.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sidecar_reading import rows, summary  # a sibling script

BINS = ("sure (every token >= 90 %)", "unsure (a token 50-90 %)", "close (a token < 50 %)")
LEFT_OUT = "left out (no value tokens)"


def value_spans(text: str, arguments: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """Character spans ``[start, end)`` of each argument's value in a call text whose JSON
    object has an ``"arguments"`` object (the Hermes call format). Keys the text does not
    hold are left out."""
    decoder = json.JSONDecoder()
    start = text.find('"arguments"')
    if start < 0:
        return {}
    i = text.find("{", start)
    spans: dict[str, tuple[int, int]] = {}
    while 0 <= i < len(text):
        i += 1
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] != '"':
            break
        key, i = decoder.raw_decode(text, i)
        i = text.index(":", i) + 1
        while text[i] in " \t\r\n":
            i += 1
        _, end = decoder.raw_decode(text, i)
        if key in arguments:
            spans[key] = (i, end)
        i = end - 1
    return spans


def least_sure(
    offsets: Sequence[tuple[int, int]], probs: Sequence[float], span: tuple[int, int]
) -> float | None:
    """The smallest probability among the tokens of ``span`` (see the module's doc)."""
    start, end = span
    inside = [k for k, (a, b) in enumerate(offsets) if a < end and b > start and b > a]
    if len(inside) > 1 and offsets[inside[-1]][1] > end:
        inside = inside[:-1]
    return min((probs[k] for k in inside), default=None)


def bin_of(prob: float | None) -> str:
    if prob is None:
        return LEFT_OUT
    return BINS[0] if prob >= 0.9 else BINS[1] if prob >= 0.5 else BINS[2]


def split(
    found: Iterable[tuple[str, str, str, bool]], sure: Mapping[tuple[str, str], float | None]
) -> dict[str, dict[str, int]]:
    """Rows and sidecar hits per bin of the target's least sure value token (``sure`` by
    request id and parameter; a parameter absent there was left out by the target)."""
    binned = ((rid, param, bin_of(sure.get((rid, param))), hit) for rid, param, _, hit in found)
    return summary(binned, (*BINS, LEFT_OUT))


def target_sureness(
    target: Any, labels: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, str], float | None]:
    """The target's least sure token of each value it wrote, by request id and parameter."""
    import torch

    tokenizer, model = target.tokenizer, target.model
    out: dict[tuple[str, str], float | None] = {}
    for label in labels:
        call = label.get("target_call")
        if not call:
            continue
        text = label["target_text"]
        spans = value_spans(text, call["arguments"])
        if spans.keys() != call["arguments"].keys():
            raise ValueError(f"{label['id']}: values not found in the call text: {text!r}")
        prompt = target.prompt_ids(label["messages"], label["tools"])
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = list(encoded["input_ids"])
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
            chosen = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(ids)[:, None])
        probs = chosen.squeeze(1).exp().tolist()
        for param, span in spans.items():
            out[(label["id"], param)] = least_sure(encoded["offset_mapping"], probs, span)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, required=True, help="eval-sidecar JSON report")
    parser.add_argument("--labels", type=Path, required=True, help="eval_target label file")
    parser.add_argument("--category", required=True, help="the labels' BFCL category")
    parser.add_argument("--preset", default="smollm2-135m-toolcall", help="the labelling target")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument(
        "--rows-out", type=Path, default=None, help="write each row (JSONL) with its bin and values"
    )
    args = parser.parse_args(argv)

    import torch

    from ooo_agent.bench.datasets import load_bfcl
    from ooo_agent.sidecar.rows import tool_signatures
    from ooo_agent.targets.hf import HFTarget

    if args.threads:
        torch.set_num_threads(args.threads)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    with args.labels.open(encoding="utf-8") as handle:
        labels = {row["id"]: row for row in map(json.loads, handle)}
    items = {item.id: item for item in load_bfcl(args.category)}
    found = rows(report["predictions"], labels, items)
    asked = {rid for rid, _, _, _ in found}
    target = HFTarget.from_preset(args.preset, dtype=torch.float32)
    sure = target_sureness(target, (labels[rid] for rid in sorted(asked)))
    for key, counts in split(found, sure).items():
        share = counts["hits"] / counts["n"]
        print(f"{key:32s} {counts['hits']:5d}/{counts['n']:<5d} {share:6.1%}")
    if args.rows_out is not None:
        answers = {p["id"]: p["answers"] for p in report["predictions"]}
        with args.rows_out.open("w", encoding="utf-8") as out:
            for rid, param, group, hit in found:
                call = labels[rid]["target_call"]
                names = [name for name, _ in tool_signatures(labels[rid]["tools"])]
                index = names.index(call["name"])
                row = {
                    "id": rid,
                    "param": param,
                    "group": group,
                    "hit": hit,
                    "least_sure": sure.get((rid, param)),
                    "bin": bin_of(sure.get((rid, param))),
                    "target": call["arguments"].get(param),
                    "sidecar": answers[rid].get(f"{index}.{param}"),
                }
                out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
