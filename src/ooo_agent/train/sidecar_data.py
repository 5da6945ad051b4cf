"""Training data for the sidecar: the target's own first valid calls, as OoO-Spec rows.

:func:`label_with_target` decodes each request with the trained target and keeps its first
call that validates against the request's tools; :func:`sidecar_rows` renders each labelled
request's rows (function index, one per (function, parameter), direct call) as
:class:`~ooo_agent.sidecar.hf.HFSidecar` asks them, keeping ``other_null_fraction`` of the
rows of tools the target did not call. Held-out requests are the tail of ``requests.jsonl``
(:func:`read_requests`). Why these labels: docs/sidecar.md ("Training data").

Command line (writes ``train.jsonl``/``eval.jsonl`` rows, the labelled requests and stats)::

    python -m ooo_agent.train.sidecar_data --requests runs/target-data/requests.jsonl \\
        --target-adapter runs/target/adapter --out runs/sidecar-data/
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ooo_agent.cli.options import add_constraint_options, constraint_options
from ooo_agent.errors import OooAgentError
from ooo_agent.sidecar.prompts import PromptTemplate, template_from_tokenizer
from ooo_agent.sidecar.rows import PROMPT_LAYOUTS, PromptLayout, label_rows
from ooo_agent.train._sidecar_labels import (
    LabelledRequest,
    LabellingTarget,
    gold_agreement,
    label_request,
    label_with_target,
    read_requests,
    request_fingerprint,
)
from ooo_agent.train.data import END_OF_TURN

__all__ = [
    "LabelledRequest",
    "LabellingTarget",
    "RowCounts",
    "build_sidecar_data",
    "label_request",
    "label_with_target",
    "main",
    "read_requests",
    "request_fingerprint",
    "sidecar_rows",
    "split_request_files",
    "split_requests",
]


# -- rows ----------------------------------------------------------------------------------


@dataclass
class RowCounts:
    """How many rows of each kind :func:`sidecar_rows` wrote, and the null rows it skipped."""

    by_kind: Counter[str] = field(default_factory=Counter)
    skipped_other_null: int = 0
    skipped_single_tool_index: int = 0

    def add(self, other: RowCounts) -> None:
        self.by_kind.update(other.by_kind)
        self.skipped_other_null += other.skipped_other_null
        self.skipped_single_tool_index += other.skipped_single_tool_index


def sidecar_rows(
    labelled: Iterable[LabelledRequest],
    tokenizer: Any,
    *,
    other_null_fraction: float = 0.25,
    direct_call: bool = True,
    end_of_turn: str = END_OF_TURN,
    seed: int = 0,
    template: PromptTemplate | None = None,
    counts: RowCounts | None = None,
    single_tool_index: bool = False,
    index_permutations: int = 0,
    permuted_direct: bool = False,
    layout: PromptLayout = "dialogue-first",
) -> list[dict[str, str]]:
    """``{"prompt", "completion"}`` rows for the trainer from labelled requests.

    The function-index row of a request offering a single tool is left out unless
    ``single_tool_index``: the wave never asks it.

    The prompt is the row's chat messages through ``tokenizer``'s chat template with the
    generation prompt (``template`` overrides it); the completion is the row's answer followed
    by ``end_of_turn``. Requests without a label are skipped. Rows of tools other than the
    labelled one (all ``null``) are kept with probability ``other_null_fraction`` (seeded);
    every other row is kept. ``counts`` (if given) is filled with what was written.

    ``index_permutations``: for a request offering several tools, up to that many extra
    function-index rows listing the same tools in other orders (seeded, distinct, none equal to
    the request's own order), each answered with the called tool's new index. The wave asks the
    row in whatever order the request lists its tools; without these rows a small sidecar
    learns the position (``0`` is the most frequent answer) rather than the tool.

    ``layout``: where the prompts put the dialogue (:data:`ooo_agent.sidecar.rows.PromptLayout`); the sidecar must be asked the
    same way.

    ``permuted_direct``: each reordered listing also gives a direct-call row (kind
    ``direct_call_permuted``, the same answer): the row whose start a scored tool choice
    (``WaveOptions.function_choice="scored"``) reads, seen with the tools in other orders.
    """
    return [
        row
        for _kind, row in _kinded_rows(
            labelled,
            tokenizer,
            other_null_fraction=other_null_fraction,
            direct_call=direct_call,
            end_of_turn=end_of_turn,
            seed=seed,
            template=template,
            counts=counts,
            single_tool_index=single_tool_index,
            index_permutations=index_permutations,
            permuted_direct=permuted_direct,
            layout=layout,
        )
    ]


def _kinded_rows(
    labelled: Iterable[LabelledRequest],
    tokenizer: Any,
    *,
    other_null_fraction: float = 0.25,
    direct_call: bool = True,
    end_of_turn: str = END_OF_TURN,
    seed: int = 0,
    template: PromptTemplate | None = None,
    counts: RowCounts | None = None,
    single_tool_index: bool = False,
    index_permutations: int = 0,
    permuted_direct: bool = False,
    layout: PromptLayout = "dialogue-first",
) -> list[tuple[str, dict[str, str]]]:
    """:func:`sidecar_rows`, each row with its kind (``function_index_permuted`` for the
    reordered copies)."""
    if not 0.0 <= other_null_fraction <= 1.0:
        raise ValueError(f"other_null_fraction must be in [0, 1], not {other_null_fraction!r}")
    render = template or template_from_tokenizer(tokenizer)
    rng = random.Random(seed)
    orders_rng = random.Random(f"tool-orders-{seed}")  # own stream: other rows stay the same
    tally = counts if counts is not None else RowCounts()
    rows: list[tuple[str, dict[str, str]]] = []
    for item in labelled:
        if item.call is None:
            continue
        names = item.request.tool_names
        selected = names.index(item.call[0]) if item.call[0] in names else None
        if selected is not None and len(names) > 1:
            for tools in _tool_orders(item.request.tools, index_permutations, orders_rng):
                for row, answer in label_rows(
                    item.request.messages, tools, item.call, layout=layout
                ):
                    if row.kind == "function_index" or (
                        row.kind == "direct_call" and permuted_direct
                    ):
                        kind = f"{row.kind}_permuted"
                        tally.by_kind[kind] += 1
                        rows.append(
                            (
                                kind,
                                {
                                    "prompt": render(row.messages),
                                    "completion": answer + end_of_turn,
                                },
                            )
                        )
        for row, answer in label_rows(
            item.request.messages,
            item.request.tools,
            item.call,
            layout=layout,
        ):
            if row.kind == "direct_call" and not direct_call:
                continue
            if row.kind == "function_index" and len(names) < 2 and not single_tool_index:
                # Never asked at inference (one tool: the index is known), and a pile of "0"
                # answers teaches the row to say "0" whatever the tools.
                tally.skipped_single_tool_index += 1
                continue
            other = row.kind == "argument_value" and row.function_index != selected
            if other and rng.random() >= other_null_fraction:
                tally.skipped_other_null += 1
                continue
            tally.by_kind[row.kind] += 1
            rows.append(
                (row.kind, {"prompt": render(row.messages), "completion": answer + end_of_turn})
            )
    return rows


def _tool_orders(
    tools: Sequence[Mapping[str, Any]], count: int, rng: random.Random
) -> list[list[Mapping[str, Any]]]:
    """Up to ``count`` distinct reorderings of ``tools``, none the original order."""
    if count <= 0:
        return []
    seen = {tuple(range(len(tools)))}
    orders: list[list[Mapping[str, Any]]] = []
    for _ in range(count * 10):  # few tools have few orders: stop trying after a while
        order = list(range(len(tools)))
        rng.shuffle(order)
        if tuple(order) in seen:
            continue
        seen.add(tuple(order))
        orders.append([tools[i] for i in order])
        if len(orders) == count:
            break
    return orders


# -- the data set ----------------------------------------------------------------------------


def split_requests(
    items: Sequence[LabelledRequest],
    *,
    held_out: int | None,
    eval_examples: int,
    seed: int,
) -> tuple[list[LabelledRequest], list[LabelledRequest]]:
    """``(train, eval)``: the last ``held_out`` requests when known, else ``eval_examples`` at
    random. Training requests equal to an evaluation one (same conversation and tools) are
    dropped, whatever their id."""
    if held_out is not None:
        cut = len(items) - held_out
        train, evaluation = list(items[:cut]), list(items[cut:])
    else:
        shuffled = list(items)
        random.Random(seed).shuffle(shuffled)
        evaluation, train = shuffled[:eval_examples], shuffled[eval_examples:]
    seen = {request_fingerprint(item.request) for item in evaluation}
    return [i for i in train if request_fingerprint(i.request) not in seen], evaluation


def split_request_files(
    paths: Sequence[str | os.PathLike[str]], *, eval_examples: int, seed: int
) -> tuple[list[LabelledRequest], list[LabelledRequest]]:
    """``(train, eval)`` of several ``requests.jsonl`` files, each split as
    :func:`split_requests` splits it (its own held-out tail when its ``stats.json`` gives one).

    The evaluation requests are the files' held-out ones in file order (the first file's come
    first, so a caller taking the first N keeps that file's held-out set); no request held out
    by any file is trained on. A request an earlier file already gave (same conversation and
    tools) is taken once; a later file's request whose id an earlier file used for another
    request gets ``~K`` appended (K: the file's position), so ids stay unique. One file: exactly
    :func:`split_requests`.
    """
    parts: list[tuple[list[LabelledRequest], list[LabelledRequest]]] = []
    for path in paths:
        items, held_out = read_requests(path)
        parts.append(
            split_requests(items, held_out=held_out, eval_examples=eval_examples, seed=seed)
        )
    held = {request_fingerprint(i.request) for _, evaluation in parts for i in evaluation}
    seen_before: set[str] = set()
    ids: dict[str, str] = {}
    train: list[LabelledRequest] = []
    evaluation_all: list[LabelledRequest] = []
    for position, (part_train, part_eval) in enumerate(parts):
        mine: set[str] = set()
        kept_eval: list[LabelledRequest] = []
        kept_train: list[LabelledRequest] = []
        for bucket, out in ((part_eval, kept_eval), (part_train, kept_train)):
            for item in bucket:
                key = request_fingerprint(item.request)
                if key in seen_before or (out is kept_train and key in held):
                    continue
                mine.add(key)
                owner = ids.setdefault(item.request.id, key)
                if owner != key and position > 0:
                    renamed = replace(item.request, id=f"{item.request.id}~{position}")
                    item = replace(item, request=renamed)
                out.append(item)
        seen_before |= mine
        evaluation_all.extend(kept_eval)
        train.extend(kept_train)
    return train, evaluation_all


def _token_count(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


_INDEX_KINDS = frozenset({"function_index", "function_index_permuted"})
_CHOICE_KINDS = _INDEX_KINDS | {"direct_call", "direct_call_permuted"}


def build_sidecar_data(
    out_dir: str | os.PathLike[str],
    train: Sequence[LabelledRequest],
    evaluation: Sequence[LabelledRequest],
    tokenizer: Any,
    *,
    other_null_fraction: float = 0.25,
    token_budget: int | None = None,
    seed: int = 0,
    index_permutations: int = 0,
    index_rows_first: bool = False,
    index_only: bool = False,
    permuted_direct: bool = False,
    choice_only: bool = False,
    layout: PromptLayout = "dialogue-first",
) -> dict[str, Any]:
    """Write the sidecar's rows and labelled requests to ``out_dir``; returns the stats.

    Files: ``train.jsonl`` / ``eval.jsonl`` (trainer rows), ``train_requests.jsonl`` (the
    labelled requests the rows come from), ``eval_requests.jsonl`` (every evaluation request,
    labelled or not: gold scoring still uses them), ``training_requests.txt`` (fingerprint and id
    of each training request, copied next to the adapter so evaluation can refuse them) and
    ``stats.json``. ``token_budget`` stops adding training requests past that many prompt +
    completion tokens.

    ``index_rows_first``: the function-index rows (and their reordered copies) of *every*
    labelled training request are taken first, and the budget's remainder goes to the other
    rows, request by request. Index rows are short (names only) and decide which tool's slots
    the hint carries; without this a budget spent on the argument rows of a few requests leaves
    a small sidecar too few tool choices to learn from.

    ``index_only``: the function-index rows (and their reordered copies) alone, in training and
    evaluation rows: an epoch that spends all its signal on choosing the tool, whose answer is
    one token among the thousands of argument-row tokens otherwise.

    ``choice_only``: the rows that choose the tool, function-index and direct-call ones (and
    their reordered copies, ``permuted_direct``), in training and evaluation rows: an epoch for
    a sidecar that picks its tool by scoring the direct-call answer's start.
    """
    if index_only and choice_only:
        raise ValueError("index_only and choice_only exclude each other")
    # The kinds of row kept (None: every kind).
    keep = _INDEX_KINDS if index_only else _CHOICE_KINDS if choice_only else None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = RowCounts()
    train_rows: list[dict[str, str]] = []
    used: dict[str, LabelledRequest] = {}
    total_tokens = 0
    with_all_rows = 0  # requests whose every row is in (the rest gave their index rows only)
    per_request: list[tuple[LabelledRequest, list[tuple[str, dict[str, str]]], RowCounts]] = []
    for index, item in enumerate(i for i in train if i.call is not None):
        item_counts = RowCounts()
        kinded = _kinded_rows(
            [item],
            tokenizer,
            other_null_fraction=other_null_fraction,
            direct_call=True,
            end_of_turn=END_OF_TURN,
            seed=seed + index,
            template=None,
            counts=item_counts,
            single_tool_index=False,
            index_permutations=index_permutations,
            permuted_direct=permuted_direct,
            layout=layout,
        )
        if keep is not None:
            kinded = [(kind, row) for kind, row in kinded if kind in keep]
            item_counts = RowCounts()
        per_request.append((item, kinded, item_counts))
    if index_rows_first:
        for item, kinded, _ in per_request:
            rows = [row for kind, row in kinded if kind in _INDEX_KINDS]
            cost = sum(_token_count(tokenizer, r["prompt"] + r["completion"]) for r in rows)
            if not rows or (token_budget is not None and total_tokens + cost > token_budget):
                continue
            counts.by_kind.update(kind for kind, _ in kinded if kind in _INDEX_KINDS)
            train_rows.extend(rows)
            used[request_fingerprint(item.request)] = item
            total_tokens += cost
    for item, kinded, item_counts in per_request:
        if index_rows_first:
            kinded = [(kind, row) for kind, row in kinded if kind not in _INDEX_KINDS]
        rows = [row for _, row in kinded]
        if not rows:
            continue  # index-only: a single-tool request has no row
        cost = sum(_token_count(tokenizer, r["prompt"] + r["completion"]) for r in rows)
        if token_budget is not None and total_tokens + cost > token_budget:
            break
        counts.by_kind.update(kind for kind, _ in kinded)  # index-first: its index rows above
        counts.skipped_other_null += item_counts.skipped_other_null
        counts.skipped_single_tool_index += item_counts.skipped_single_tool_index
        train_rows.extend(rows)
        used.setdefault(request_fingerprint(item.request), item)
        total_tokens += cost
        with_all_rows += 1
    used_items = list(used.values())
    random.Random(seed).shuffle(train_rows)  # the trainer sees a mix of requests and kinds
    eval_rows = [
        row
        for kind, row in _kinded_rows(
            evaluation,
            tokenizer,
            other_null_fraction=other_null_fraction,
            seed=seed,
            permuted_direct=permuted_direct,
            layout=layout,
        )
        if keep is None or kind in keep
    ]

    _write_jsonl(out / "train.jsonl", train_rows)
    _write_jsonl(out / "eval.jsonl", eval_rows)
    _write_jsonl(out / "train_requests.jsonl", (i.to_dict() for i in used_items))
    _write_jsonl(out / "eval_requests.jsonl", (i.to_dict() for i in evaluation))
    (out / "training_requests.txt").write_text(
        "".join(f"{request_fingerprint(i.request)}\t{i.request.id}\n" for i in used_items),
        encoding="utf-8",
    )
    problems = Counter(i.problem.split(":")[0] for i in [*train, *evaluation] if i.call is None)
    stats: dict[str, Any] = {
        "train_requests": len(used_items),
        "train_requests_all_rows": with_all_rows,
        "train_requests_labelled": sum(i.call is not None for i in train),
        "train_requests_unused": sum(i.call is not None for i in train) - len(used_items),
        "eval_requests": len(evaluation),
        "eval_requests_labelled": sum(i.call is not None for i in evaluation),
        "dropped": dict(problems),
        "train_rows": len(train_rows),
        "eval_rows": len(eval_rows),
        "rows_by_kind": dict(counts.by_kind),
        "skipped_other_null_rows": counts.skipped_other_null,
        "skipped_single_tool_index_rows": counts.skipped_single_tool_index,
        "other_null_fraction": other_null_fraction,
        "index_permutations": index_permutations,
        "index_rows_first": index_rows_first,
        "index_only": index_only,
        "layout": layout,
        "permuted_direct": permuted_direct,
        "choice_only": choice_only,
        "train_tokens": total_tokens,
        "target_vs_gold": {
            "train": gold_agreement(used_items),
            "eval": gold_agreement(evaluation),
        },
        "seed": seed,
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


# -- command line --------------------------------------------------------------------------


class _LabelLog:
    """Labels already computed (``labels.jsonl`` in the output folder), so an interrupted run
    resumes where it stopped instead of running the target again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[str, LabelledRequest] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    item = LabelledRequest.from_dict(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by the interruption
                self.known[request_fingerprint(item.request)] = item

    def record(self, item: LabelledRequest) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")


def _label_all(
    target: LabellingTarget, items: Sequence[LabelledRequest], log: _LabelLog, args: Any
) -> list[LabelledRequest]:
    out: list[LabelledRequest] = []
    for number, item in enumerate(items, 1):
        known = log.known.get(request_fingerprint(item.request))
        if known is not None:
            out.append(known)
            continue
        start = time.perf_counter()
        result = label_request(
            target,
            item.request,
            mode=args.mode,
            max_new_tokens=args.max_new_tokens,
            strict=not args.lenient,
        )
        log.record(result)
        out.append(result)
        verdict = "ok" if result.call is not None else result.problem[:70]
        seconds = time.perf_counter() - start
        print(
            f"[{number}/{len(items)}] {item.request.id:32s} {seconds:5.1f}s {verdict}", flush=True
        )
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m ooo_agent.train.sidecar_data``."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train.sidecar_data", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--requests",
        nargs="+",
        default=["runs/target-data/requests.jsonl"],
        help="one or more requests.jsonl files (python -m ooo_agent.train.data); with several, "
        "the first file's held-out requests are the evaluation set and no file's held-out "
        "request is trained on",
    )
    parser.add_argument("--target-adapter", required=True, help="the target's LoRA adapter folder")
    parser.add_argument("--base", default="smollm2-135m-instruct", help="embedded name or folder")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--limit", type=int, default=None, help="label at most N training requests")
    parser.add_argument("--eval-examples", type=int, default=40, help="held-out requests at most")
    parser.add_argument("--mode", default="toolspec", choices=("vanilla", "toolspec"))
    parser.add_argument(
        "--format",
        default="hermes-description-first",
        help="the call format the target is prompted in; label with the one it runs with "
        "(default: %(default)s, the embedded target's preset)",
    )
    add_constraint_options(parser.add_argument, scope="label with calls decoded so: ")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--other-null-fraction", type=float, default=0.25)
    parser.add_argument("--token-budget", type=int, default=None, help="training tokens at most")
    parser.add_argument(
        "--index-permutations",
        type=int,
        default=2,
        help="extra function-index rows per multi-tool request, tools reordered (default 2)",
    )
    parser.add_argument(
        "--index-rows-first",
        action="store_true",
        help="take every labelled request's function-index rows before spending the token "
        "budget on argument and direct-call rows",
    )
    parser.add_argument(
        "--index-only",
        action="store_true",
        help="function-index rows only (training and evaluation rows): an epoch that trains "
        "the choice of tool alone",
    )
    parser.add_argument(
        "--permuted-direct",
        action="store_true",
        help="each reordered listing (--index-permutations) also gives a direct-call row: the "
        "row a scored tool choice reads",
    )
    parser.add_argument(
        "--choice-only",
        action="store_true",
        help="function-index and direct-call rows only (training and evaluation rows): an "
        "epoch that trains the choice of tool for a scored choice",
    )
    parser.add_argument(
        "--layout",
        choices=PROMPT_LAYOUTS,
        default="dialogue-first",
        help="where the rows' prompts put the dialogue: dialogue-first (the published format) "
        "or tools-first (one tool listing, then the dialogue, then the question: what a "
        "prefix cache serves across requests and turns); the same labels either way, and the "
        "sidecar is then asked the same way (WaveOptions.layout; default: %(default)s)",
    )
    parser.add_argument("--lenient", action="store_true", help="accept calls needing type fixes")
    parser.add_argument(
        "--no-decontaminate", action="store_true", help="skip the BFCL evaluation-name filter"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default=None, help="ooo-agent cache root")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.train.sidecar_data``: label requests with the target, write rows."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except (OSError, ValueError, OooAgentError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from ooo_agent.train.data import decontaminate, evaluation_function_names

    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be at least 1")
    train, evaluation = split_request_files(
        args.requests, eval_examples=args.eval_examples, seed=args.seed
    )
    items = [*evaluation, *train]
    if not args.no_decontaminate:
        # Split first, filter after: the held-out tail stays the target's held-out requests.
        banned = evaluation_function_names(args.cache_dir)
        keep = {
            request_fingerprint(r) for r in decontaminate([i.request for i in items], banned)[0]
        }
        before = len(train) + len(evaluation)
        train = [i for i in train if request_fingerprint(i.request) in keep]
        evaluation = [i for i in evaluation if request_fingerprint(i.request) in keep]
        if len(train) + len(evaluation) < before:
            print(f"decontamination dropped {before - len(train) - len(evaluation)} requests")
    evaluation = evaluation[: args.eval_examples]
    train = train[: args.limit] if args.limit is not None else train
    target, tokenizer = _load_target(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = _LabelLog(out / "labels.jsonl")
    labelled_eval = _label_all(target, evaluation, log, args)
    labelled_train = _label_all(target, train, log, args)
    stats = build_sidecar_data(
        out,
        labelled_train,
        labelled_eval,
        tokenizer,
        other_null_fraction=args.other_null_fraction,
        token_budget=args.token_budget,
        seed=args.seed,
        index_permutations=args.index_permutations,
        index_rows_first=args.index_rows_first,
        index_only=args.index_only,
        permuted_direct=args.permuted_direct,
        choice_only=args.choice_only,
        layout=args.layout,
    )
    stats["target_format"] = args.format
    stats["target_decoding"] = constraint_options(args)
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(stats, indent=2))
    return 0


def _load_target(args: argparse.Namespace) -> tuple[Any, Any]:
    from ooo_agent.models.presets import attach_adapter, load_base
    from ooo_agent.targets.hf import HFTarget

    adapter = Path(args.target_adapter)
    if not (adapter / "adapter_config.json").is_file():
        raise ValueError(f"{adapter} is not a LoRA adapter folder (no adapter_config.json)")
    model, tokenizer = load_base(args.base, cache_dir=args.cache_dir)
    model = attach_adapter(model, adapter, merge=True)
    target = HFTarget(
        model, tokenizer, args.format, num_threads=args.threads, **constraint_options(args)
    )
    return target, tokenizer


if __name__ == "__main__":
    raise SystemExit(main())
