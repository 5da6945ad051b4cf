"""How often each way of choosing the tool picks the target's (and the gold) tool.

For every request of a label file that offers two or more tools and has a labelled target
call naming one of them (``python -m ooo_agent.train.eval_target ... --labels-out X.jsonl``, or
a ``sidecar_data`` run's ``labels.jsonl``), the sidecar scores each tool name once after the
direct-call prompt and once under a content-free request (a user turn ``N/A``, the same
tools); every choice rule is then applied to the same scores:

- ``scored`` (``WaveOptions.function_choice``) and ``calibrated``: each name's score less its
  content-free one, contextual calibration (Zhao et al., 2021; not a wave option),
- ``relevance``: the request's words alone (``ooo_agent.sidecar.relevance``, no model),
- ``scored + W·relevance`` and ``calibrated + W·relevance`` for each ``--weights`` value
  (``WaveOptions.relevance_weight``),
- with ``--reversed``, also ``two orders`` and ``two orders + W·relevance``: each name's score
  averaged with its score when the tools are listed in the reverse order (a small model's
  name score leans on the position; averaging two orders is a debiasing that needs one more
  forward per request, not a wave option),

    python benchmarks/tool_choice.py --labels m200-labels.jsonl
    python benchmarks/tool_choice.py --labels runs/sidecar-data10/labels.jsonl \\
        --exclude adapters/smollm2-135m-sidecar/training_requests.txt --limit 300

``--exclude`` leaves out the requests a sidecar trained on (its ``training_requests.txt``):
the set on which to choose a weight before looking at an evaluation set. To build such a set,
``--select REQUESTS --select-out FILE`` writes the first ``--limit`` requests of a
``python -m ooo_agent.train.data`` draw that offer two or more tools and are not excluded (in
file order, nothing scored), for ``python -m ooo_agent.train.sidecar_data`` to label:

    python benchmarks/tool_choice.py --select runs/target-data13/requests.jsonl \\
        --exclude adapters/smollm2-135m-sidecar/training_requests.txt --limit 340 \\
        --select-out runs/choice13/requests.jsonl

The sidecar runs in float32, so the scores are the same on any CPU (``ooo-agent eval-sidecar
--dtype auto`` takes bfloat16 where the CPU has native kernels).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ooo_agent.sidecar.relevance import PARAMETER_WEIGHT, tool_relevance, with_relevance

CONTENT_FREE = [{"role": "user", "content": "N/A"}]
"""The request under which a name's score is the sidecar's prior for it (its position,
length and words): what ``calibrated`` subtracts."""


@dataclass
class Scored:
    """One request's tool scores and labels."""

    id: str
    names: list[str]
    scored: list[float]
    prior: list[float]
    relevance: list[float]
    target: str
    gold: str | None
    reversed: list[float] | None = None
    """Each name's score with the tools listed in the reverse order (``--reversed``),
    in the original order of ``names``."""


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=values.__getitem__)


def rules(weights: Sequence[float], *, two_orders: bool = False) -> list[str]:
    """The rule names :func:`choose` knows, in table order."""
    names = ["scored", "calibrated", "relevance"]
    for weight in weights:
        names += [f"scored + {weight:g}·relevance", f"calibrated + {weight:g}·relevance"]
    if two_orders:
        names += ["two orders"] + [f"two orders + {weight:g}·relevance" for weight in weights]
    return names


def choose(record: Scored, weights: Sequence[float]) -> dict[str, str]:
    """The tool each rule picks for ``record``."""
    calibrated = [s - p for s, p in zip(record.scored, record.prior, strict=True)]
    picks = {
        "scored": _argmax(record.scored),
        "calibrated": _argmax(calibrated),
        "relevance": _argmax(record.relevance),
    }
    for weight in weights:
        picks[f"scored + {weight:g}·relevance"] = _argmax(
            with_relevance(record.scored, record.relevance, weight)
        )
        picks[f"calibrated + {weight:g}·relevance"] = _argmax(
            with_relevance(calibrated, record.relevance, weight)
        )
    if record.reversed is not None:
        both = [(s + r) / 2 for s, r in zip(record.scored, record.reversed, strict=True)]
        picks["two orders"] = _argmax(both)
        for weight in weights:
            picks[f"two orders + {weight:g}·relevance"] = _argmax(
                with_relevance(both, record.relevance, weight)
            )
    return {rule: record.names[index] for rule, index in picks.items()}


def table(records: Sequence[Scored], weights: Sequence[float]) -> list[dict[str, Any]]:
    """Per rule: hits against the target's tool and against gold (where gold names one)."""
    picks = [choose(record, weights) for record in records]  # every rule, once per request
    two_orders = bool(records) and all(record.reversed is not None for record in records)
    rows = []
    for rule in rules(weights, two_orders=two_orders):
        target = gold = gold_n = 0
        for record, picked in zip(records, picks, strict=True):
            pick = picked[rule]
            target += pick == record.target
            if record.gold is not None:
                gold_n += 1
                gold += pick == record.gold
        rows.append({"rule": rule, "target": target, "gold": gold, "gold_n": gold_n})
    return rows


def fingerprint(request: Mapping[str, Any]) -> str:
    """The request's fingerprint as a sidecar's ``training_requests.txt`` records it: the
    first 16 hex digits of the SHA-256 of its messages and tools as sorted-key JSON."""
    payload = json.dumps([request["messages"], request["tools"]], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def labelled(path: Path, exclude: set[str], limit: int | None) -> Iterable[Mapping[str, Any]]:
    """The label file's requests a choice is asked for (two or more tools, a target call
    naming one of them, not excluded), at most ``limit``."""
    taken = 0
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if limit is not None and taken >= limit:
                return
            request = json.loads(line)
            call = request.get("target_call")
            names = [tool["function"]["name"] for tool in request["tools"]]
            if not call or len(names) < 2 or call["name"] not in names:
                continue
            if exclude and fingerprint(request) in exclude:
                continue
            taken += 1
            yield request


def choice_requests(path: Path, exclude: set[str], limit: int | None) -> list[dict[str, Any]]:
    """The requests of a ``requests.jsonl`` draw that offer two or more tools and are not in
    ``exclude`` (fingerprints), in file order, at most ``limit``."""
    chosen: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if limit is not None and len(chosen) >= limit:
                break
            request = json.loads(line)
            if len(request["tools"]) < 2 or (exclude and fingerprint(request) in exclude):
                continue
            chosen.append(request)
    return chosen


def score_requests(
    sidecar: Any,
    requests: Iterable[Mapping[str, Any]],
    *,
    two_orders: bool = False,
    parameter_weight: float = PARAMETER_WEIGHT,
) -> list[Scored]:
    """Each request's name scores (``HFSidecar.tool_choice_scores``), the same under the
    content-free request (:data:`CONTENT_FREE`) and relevance (its
    parameters' words weighted ``parameter_weight``); with ``two_orders``, also the names'
    scores with the tools listed in the reverse order."""
    from ooo_agent.sidecar.base import SidecarRequest

    records = []
    for request in requests:
        messages, tools = request["messages"], request["tools"]
        scored = sidecar.tool_choice_scores(SidecarRequest(messages, tools))
        prior = sidecar.tool_choice_scores(SidecarRequest(CONTENT_FREE, tools))
        backwards = None
        if two_orders:
            reverse_scored = sidecar.tool_choice_scores(SidecarRequest(messages, tools[::-1]))
            backwards = reverse_scored[::-1]
        calls = request.get("calls") or []
        records.append(
            Scored(
                id=request["id"],
                names=[tool["function"]["name"] for tool in tools],
                scored=scored,
                prior=prior,
                relevance=tool_relevance(messages, tools, parameter_weight=parameter_weight),
                target=request["target_call"]["name"],
                gold=calls[0]["name"] if calls else None,
                reversed=backwards,
            )
        )
    return records


def _excluded(path: Path | None) -> set[str]:
    """The request fingerprints a ``training_requests.txt`` lists (``<fingerprint>\\t<id>``
    lines: ids alone can name different requests in different data draws)."""
    if path is None:
        return set()
    return {line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines() if line}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=None, help="label file (jsonl)")
    parser.add_argument(
        "--select", type=Path, default=None, help="a requests.jsonl draw to select from"
    )
    parser.add_argument(
        "--select-out", type=Path, default=None, help="where --select writes its requests"
    )
    parser.add_argument("--sidecar", default="smollm2-135m-sidecar", help="preset or folder")
    parser.add_argument("--exclude", type=Path, default=None, help="training_requests.txt")
    parser.add_argument("--limit", type=int, default=None, help="at most N requests")
    parser.add_argument("--weights", default="0.5,1,2,4", help="relevance weights to try")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument(
        "--parameter-weight",
        type=float,
        default=PARAMETER_WEIGHT,
        help="how much a word of a tool's parameters counts in its relevance (0: left out)",
    )
    parser.add_argument(
        "--reversed",
        action="store_true",
        help="also score the tools listed in the reverse order (the 'two orders' rules)",
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON report")
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",") if w.strip()]
    if args.select is not None:
        if args.select_out is None:
            parser.error("--select needs --select-out")
        chosen = choice_requests(args.select, _excluded(args.exclude), args.limit)
        args.select_out.parent.mkdir(parents=True, exist_ok=True)
        args.select_out.write_text("".join(json.dumps(r) + "\n" for r in chosen))
        print(f"{len(chosen)} requests with a choice written to {args.select_out}")
        return 0
    if args.labels is None:
        parser.error("--labels is required (or --select)")

    import torch

    from ooo_agent.models.presets import PRESETS, attach_adapter, load_base
    from ooo_agent.sidecar.hf import HFSidecar

    torch.set_num_threads(args.threads)
    if args.sidecar in PRESETS:
        sidecar = HFSidecar.from_preset(args.sidecar, dtype=torch.float32, num_threads=args.threads)
    else:  # an adapter folder on the embedded base, listing tools as the preset does
        model, tokenizer = load_base("smollm2-135m-instruct", dtype=torch.float32)
        model = attach_adapter(model, Path(args.sidecar), merge=True)
        sidecar = HFSidecar(model, tokenizer, num_threads=args.threads)
    requests = labelled(args.labels, _excluded(args.exclude), args.limit)
    records = score_requests(
        sidecar, requests, two_orders=args.reversed, parameter_weight=args.parameter_weight
    )
    rows = table(records, weights)
    n = len(records)
    print(f"{n} requests with a choice ({args.labels})")
    for row in rows:
        gold = f"{row['gold']}/{row['gold_n']}" if row["gold_n"] else "-"
        share = row["target"] / max(n, 1)
        print(f"{row['rule']:34s} target {row['target']:4d}/{n} {share:6.1%}  gold {gold}")
    if args.out is not None:
        report = {"labels": str(args.labels), "requests": n, "weights": weights, "rules": rows}
        report["parameter_weight"] = args.parameter_weight
        report["items"] = [record.__dict__ for record in records]
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
