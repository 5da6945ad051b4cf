"""Score a target model (plus LoRA adapter) on BFCL: parse rate, function name, AST accuracy.

Greedy generation, one request at a time, prompt rendered by the call format exactly as in
training (``HermesFormat`` + the tokenizer's chat template). For each item:

- **parsed**: the output holds no malformed call, and at least one call when one is expected;
- **name**: the called function names equal the expected ones;
- **ast**: the calls pass :func:`ooo_agent.bench.ast_check.check`; a failure is classed
  (``failure``: ``malformed`` when the output does not parse, else the check's kind — ``name``,
  ``missing_required``, ``missing_optional``, ``value``, ``type``, ...), counted per category.

Command line (writes a JSON report)::

    python -m ooo_agent.train.eval_target --adapter runs/target/adapter \\
        --categories simple_python,multiple --out runs/target/eval.json

Two reports of the same items, side by side (rates, failure classes, and how many items each
flag gained and lost, item by item)::

    python -m ooo_agent.train.eval_target --compare old.json new.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ooo_agent.bench.ast_check import check, names_match
from ooo_agent.bench.datasets import BenchItem, load_bfcl, load_jsonl
from ooo_agent.cli.options import (
    add_constraint_options,
    add_decline_option,
    constrained,
    constraint_options,
)
from ooo_agent.errors import DatasetError
from ooo_agent.formats.base import ChatFormat
from ooo_agent.targets.base import Mode

__all__ = [
    "CategoryScore",
    "ItemScore",
    "TargetEvalReport",
    "classify_failures",
    "compare_reports",
    "engine_generator",
    "evaluate_items",
    "hf_generator",
    "labelled_line",
    "main",
    "score_output",
]

Generate = Callable[[BenchItem], "tuple[str, int] | tuple[str, int, bool]"]
"""``item -> (output text, new tokens[, declined])``: one greedy answer to the item's request;
``declined`` (default False) when the target answered without a call by its decline policy
(``HFTarget(decline_below=...)``): the output then holds no call, whatever it quotes."""


@dataclass
class ItemScore:
    """One request's outcome."""

    id: str
    category: str
    output: str
    parsed: bool
    name: bool
    ast: bool
    reason: str = ""
    failure: str = ""
    """Why ``ast`` failed: ``malformed`` (unparseable output) or the AST check's kind."""
    new_tokens: int = 0
    seconds: float = 0.0
    declined: bool = False
    """The target declined to call (its decline policy): scored as an answer with no call."""


@dataclass
class CategoryScore:
    """Rates over one category (fractions in [0, 1])."""

    n: int = 0
    parse_rate: float = 0.0
    name_accuracy: float = 0.0
    ast_accuracy: float = 0.0
    mean_new_tokens: float = 0.0
    mean_seconds: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    """AST failures by class (:attr:`ItemScore.failure`), most frequent first."""
    declined: int = 0
    """Items the target declined to call (:attr:`ItemScore.declined`)."""


@dataclass
class TargetEvalReport:
    """Per-category scores and every item's outcome."""

    categories: dict[str, CategoryScore] = field(default_factory=dict)
    items: list[ItemScore] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_output(
    item: BenchItem, text: str, fmt: ChatFormat, *, declined: bool = False
) -> ItemScore:
    """Parse ``text`` with ``fmt`` and score it against ``item``'s gold answer; ``declined``:
    the target declined to call, so ``text`` holds no call (as ``FastToolCaller`` reads it)."""
    parsed = fmt.parse(text)
    calls = [] if declined else [(c.name, c.arguments) for c in parsed.calls]
    errors = [] if declined else parsed.errors
    parse_ok = not errors and (bool(calls) or not item.gold)
    if errors:
        ast_ok, reason, failure = False, errors[0].message, "malformed"
    else:
        result = check(calls, item)
        ast_ok, reason, failure = result.ok, result.reason, result.kind
    return ItemScore(
        id=item.id,
        category=item.category,
        output=text,
        parsed=parse_ok,
        name=names_match(calls, item),
        ast=ast_ok,
        reason=reason,
        failure="" if ast_ok else failure or "other",
        declined=declined,
    )


def evaluate_items(
    items: Sequence[BenchItem],
    generate: Generate,
    fmt: ChatFormat,
    *,
    on_item: Callable[[ItemScore], None] | None = None,
) -> TargetEvalReport:
    """Generate and score every item; ``on_item`` sees each outcome as it lands."""
    report = TargetEvalReport()
    for item in items:
        start = time.perf_counter()
        output = generate(item)
        text, new_tokens = output[0], output[1]
        declined = bool(output[2]) if len(output) > 2 else False
        score = score_output(item, text, fmt, declined=declined)
        score.new_tokens, score.seconds = new_tokens, round(time.perf_counter() - start, 3)
        report.items.append(score)
        if on_item is not None:
            on_item(score)
    for category in dict.fromkeys(s.category for s in report.items):
        scores = [s for s in report.items if s.category == category]
        n = len(scores)
        report.categories[category] = CategoryScore(
            n=n,
            parse_rate=round(sum(s.parsed for s in scores) / n, 4),
            name_accuracy=round(sum(s.name for s in scores) / n, 4),
            ast_accuracy=round(sum(s.ast for s in scores) / n, 4),
            mean_new_tokens=round(sum(s.new_tokens for s in scores) / n, 1),
            mean_seconds=round(sum(s.seconds for s in scores) / n, 3),
            failures=dict(Counter(s.failure for s in scores if not s.ast).most_common()),
            declined=sum(s.declined for s in scores),
        )
    return report


_FLAGS = ("parsed", "name", "ast")
_RATES = {"parsed": "parse_rate", "name": "name_accuracy", "ast": "ast_accuracy"}


def compare_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Two reports (as written by ``--out``) over the same items, per category.

    For each category both reports scored: ``n`` (items in both), each flag's rate in the old
    and the new report over those items, how many items the flag ``gained`` (false -> true)
    and ``lost``, and both reports' failure classes. Items in only one report are counted in
    ``unmatched``. Raises ``ValueError`` when the reports share no item.
    """
    old_items = {str(i["id"]): i for i in old.get("items", [])}
    new_items = {str(i["id"]): i for i in new.get("items", [])}
    result: dict[str, Any] = {}
    for item_id, item in new_items.items():
        before = old_items.get(item_id)
        if before is None:
            continue
        entry = result.setdefault(
            str(item["category"]),
            {"n": 0, **{f: {"old": 0, "new": 0, "gained": 0, "lost": 0} for f in _FLAGS}},
        )
        entry["n"] += 1
        for flag in _FLAGS:
            was, now = bool(before[flag]), bool(item[flag])
            entry[flag]["old"] += was
            entry[flag]["new"] += now
            entry[flag]["gained"] += now and not was
            entry[flag]["lost"] += was and not now
        for side, data in (("old", before), ("new", item)):
            if not data["ast"]:
                failures = entry.setdefault(f"failures_{side}", Counter())
                failures[str(data.get("failure") or "unclassified")] += 1
    if not result:
        raise ValueError("the two reports share no item")
    for entry in result.values():
        for flag in _FLAGS:
            for side in ("old", "new"):
                entry[flag][side] = round(entry[flag][side] / entry["n"], 4)
        for side in ("old", "new"):
            entry[f"failures_{side}"] = dict(entry.get(f"failures_{side}", Counter()).most_common())
    return {"categories": result, "unmatched": len(old_items.keys() ^ new_items.keys())}


def classify_failures(
    report: Mapping[str, Any], *, cache_dir: str | os.PathLike[str] | None = None
) -> int:
    """Fill in ``failure`` on the failed items of a report written before it was recorded.

    Each such item of a BFCL category is re-scored from its stored output (the same check);
    others are left as they are. Returns how many items were classified.
    """
    from ooo_agent.bench.datasets import BFCL_CATEGORIES
    from ooo_agent.formats.hermes import HermesFormat

    missing = [i for i in report.get("items", []) if not i.get("ast") and not i.get("failure")]
    by_category: dict[str, dict[str, BenchItem]] = {}
    fmt = HermesFormat()
    done = 0
    for entry in missing:
        category = str(entry.get("category", ""))
        if category not in BFCL_CATEGORIES:
            continue
        if category not in by_category:
            by_category[category] = {i.id: i for i in load_bfcl(category, cache_dir=cache_dir)}
        item = by_category[category].get(str(entry["id"]))
        if item is not None:
            declined = bool(entry.get("declined", False))
            entry["failure"] = score_output(
                item, str(entry["output"]), fmt, declined=declined
            ).failure
            done += 1
    return done


def _print_comparison(comparison: Mapping[str, Any]) -> None:
    for category, entry in comparison["categories"].items():
        print(f"{category} ({entry['n']} items in both reports)")
        for flag in _FLAGS:
            f = entry[flag]
            print(
                f"  {_RATES[flag]:14s} {f['old']:7.2%} -> {f['new']:7.2%}"
                f"   gained {f['gained']:3d}, lost {f['lost']:3d}"
            )
        for side in ("old", "new"):
            print(f"  AST failures ({side}): {json.dumps(entry[f'failures_{side}'])}")
    if comparison["unmatched"]:
        print(f"{comparison['unmatched']} items are in only one of the reports (not compared)")


def hf_generator(
    model: Any, tokenizer: Any, fmt: ChatFormat, *, max_new_tokens: int = 160
) -> Generate:
    """Greedy generation with a transformers model, stopping at the end of the turn."""
    import torch

    end_ids = [tokenizer.eos_token_id]
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        end_ids.append(im_end)

    def generate(item: BenchItem) -> tuple[str, int]:
        messages = fmt.render_messages(item.messages, item.tools)
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        input_ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids
        with torch.inference_mode():
            output = model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=[i for i in end_ids if i is not None],
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        new = output[0, input_ids.shape[1] :]
        # Keep special tokens: a format's own markers may be special in some vocabularies.
        text = tokenizer.decode(new, skip_special_tokens=False)
        for marker in ("<|im_end|>", tokenizer.eos_token or ""):
            if marker and marker in text:
                text = text.split(marker, 1)[0]
        return text, int(new.shape[0])

    return generate


def engine_generator(
    target: Any, *, mode: Mode = "toolspec", max_new_tokens: int = 160
) -> Generate:
    """Greedy generation through an :class:`~ooo_agent.targets.hf.HFTarget`'s own decoder.

    ``toolspec`` is lossless (token-identical to greedy decoding, a tested property) and about
    twice as fast as ``model.generate`` on this model, so full-category evaluations are cheap.
    """
    from ooo_agent.targets.base import TargetRequest

    def generate(item: BenchItem) -> tuple[str, int, bool]:
        request = TargetRequest(
            messages=item.messages, tools=item.tools, mode=mode, max_new_tokens=max_new_tokens
        )
        generation = target.generate_sync(request)
        stats = generation.stats
        return str(generation.text), int(stats.new_tokens), bool(stats.declined)

    return generate


def labelled_line(
    item: BenchItem, output: str, fmt: ChatFormat, *, declined: bool = False
) -> dict[str, Any]:
    """One line for ``--labels-out``: the item as a request with its gold calls and the
    target's first valid call (what ``ooo-agent eval-sidecar`` scores a sidecar against;
    none where the target ``declined``)."""
    from ooo_agent.bench.ast_check import gold_calls
    from ooo_agent.targets.base import Generation
    from ooo_agent.train._sidecar_labels import label_generation
    from ooo_agent.train.examples import TrainRequest

    request = TrainRequest(
        id=item.id,
        messages=item.messages,
        tools=item.tools,
        calls=gold_calls(item),
        source=item.category,
    )
    generation = Generation(text=output, raw_calls=[] if declined else None)
    return label_generation(request, generation, fmt).to_dict()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.train.eval_target``: score the embedded target on BFCL."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train.eval_target", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--adapter", default=None, help="LoRA adapter folder (none: base model)")
    parser.add_argument("--categories", default="simple_python,multiple")
    parser.add_argument(
        "--data", default=None, help="a JSONL file of items instead of BFCL categories"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N items per category")
    parser.add_argument("--offset", type=int, default=0, help="skip the first N items")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--out", default=None, help="JSON report path")
    parser.add_argument(
        "--engine",
        default="generate",
        choices=("generate", "vanilla", "toolspec"),
        help="transformers' generate, or the project's decoder (toolspec: lossless, faster)",
    )
    parser.add_argument(
        "--format",
        default="hermes",
        help="the call format the prompts are rendered in (default hermes; the embedded "
        "target's preset prompts with hermes-description-first)",
    )
    add_constraint_options(parser.add_argument, scope="with --engine vanilla/toolspec: ")
    add_decline_option(parser.add_argument, scope="with --engine vanilla/toolspec: ")
    parser.add_argument(
        "--labels-out",
        default=None,
        help="also write each request with the target's first valid call (JSONL), "
        "for scoring a sidecar on these held-out requests",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("OLD", "NEW"),
        default=None,
        help="compare two JSON reports of the same items (nothing is generated)",
    )
    parser.add_argument("--cache-dir", default=None)
    args = parser.parse_args(argv)
    args.command_line = shlex.join(
        ["python", "-m", "ooo_agent.train.eval_target", *(sys.argv[1:] if argv is None else argv)]
    )
    if constrained(args) and args.engine == "generate":
        parser.error("--rules and --constrain-* need --engine vanilla or toolspec")
    if args.decline_below is not None and args.engine == "generate":
        parser.error("--decline-below needs --engine vanilla or toolspec")
    if args.compare:
        try:
            old, new = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare)
            for report_data in (old, new):
                classify_failures(report_data, cache_dir=args.cache_dir)
            _print_comparison(compare_reports(old, new))
        except (OSError, ValueError, KeyError, TypeError, DatasetError) as exc:
            print(
                f"error: cannot compare {args.compare[0]} and {args.compare[1]}: {exc}",
                file=sys.stderr,
            )
            return 1
        return 0

    import torch

    from ooo_agent.formats import get_format
    from ooo_agent.models.presets import attach_adapter
    from ooo_agent.models.smollm2 import load_smollm2

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load_smollm2(args.cache_dir)
    if args.adapter:
        model = attach_adapter(model, args.adapter, merge=True)
    fmt = get_format(args.format)
    items: list[BenchItem] = []
    sources = (
        [load_jsonl(args.data)]
        if args.data
        else [load_bfcl(c.strip(), cache_dir=args.cache_dir) for c in args.categories.split(",")]
    )
    for loaded in sources:
        chosen = loaded[args.offset :]
        items += chosen[: args.limit] if args.limit is not None else chosen

    def show(score: ItemScore) -> None:
        flags = "".join(
            c if ok else "-"
            for c, ok in zip("PNA", (score.parsed, score.name, score.ast), strict=True)
        )
        print(f"{score.id:28s} {flags} {score.seconds:6.1f}s {score.reason[:70]}", flush=True)

    if args.engine == "generate":
        generate = hf_generator(model, tokenizer, fmt, max_new_tokens=args.max_new_tokens)
    else:
        from ooo_agent.targets.hf import HFTarget

        target = HFTarget(
            model,
            tokenizer,
            fmt,
            num_threads=args.threads,
            **constraint_options(args),
            decline_below=args.decline_below,
        )
        generate = engine_generator(target, mode=args.engine, max_new_tokens=args.max_new_tokens)
    report = evaluate_items(items, generate, fmt, on_item=show)
    if args.labels_out:
        by_id = {item.id: item for item in items}
        Path(args.labels_out).parent.mkdir(parents=True, exist_ok=True)
        with Path(args.labels_out).open("w", encoding="utf-8") as handle:
            for item_score in report.items:
                line = labelled_line(
                    by_id[item_score.id], item_score.output, fmt, declined=item_score.declined
                )
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    report.config = {
        "adapter": os.fspath(args.adapter) if args.adapter else None,
        "categories": args.categories if not args.data else None,
        "data": args.data,
        "limit": args.limit,
        "offset": args.offset,
        "max_new_tokens": args.max_new_tokens,
        "engine": args.engine,
        **constraint_options(args),
        "decline_below": args.decline_below,
        "format": fmt.name,
        "command": args.command_line,
    }
    for category, score in report.categories.items():
        print(f"{category}: {json.dumps(asdict(score))}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
