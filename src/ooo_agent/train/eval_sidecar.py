"""``ooo-agent eval-sidecar``: score a sidecar's waves on held-out requests.

Each request runs one real wave (:meth:`HFSidecar.run_wave_sync
<ooo_agent.sidecar.hf.HFSidecar.run_wave_sync>`: the function-index row and every slot row,
batched, greedy) and, unless ``--no-direct``, the direct-call row on its own. The answers are
scored (see :mod:`ooo_agent.train._sidecar_metrics` for the exact definitions) against

- ``target``: the target's own first valid call, written by
  ``python -m ooo_agent.train.sidecar_data`` into ``eval_requests.jsonl`` — what a hint must
  reproduce to be accepted whole;
- ``gold``: the request's gold call.

The seed adapter's card reports, against its teacher's labels: function index 96.3 %, argument
exact 86.1 %, null precision / recall 95.6 / 96.8 %, direct-call exact 54.2 %.

A sidecar is never scored on what it was trained on: when the adapter folder holds
``training_requests.txt`` (copied there by ``ooo-agent train sidecar``), requests listed there are
refused.

Example::

    ooo-agent eval-sidecar --sidecar adapters/smollm2-135m-sidecar \\
        --requests runs/sidecar-data/eval_requests.jsonl --out runs/sidecar/eval.json
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from rich.console import Console
from rich.table import Table

from ooo_agent.errors import DatasetError, ModelNotAvailableError, SidecarError
from ooo_agent.rules import RuledTools, rules_named
from ooo_agent.sidecar._wave import FunctionChoice, WaveOptions, WaveReport
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest
from ooo_agent.sidecar.rows import (
    PROMPT_LAYOUTS,
    PromptLayout,
    SemanticRow,
    build_wave_rows,
)
from ooo_agent.train._sidecar_labels import (
    Call,
    LabelledRequest,
    read_requests,
    request_fingerprint,
)
from ooo_agent.train._sidecar_metrics import (
    MISS_CLASSES,
    SidecarPrediction,
    SidecarScores,
    parse_answer,
    same_answer_value,
    score_predictions,
)

if TYPE_CHECKING:
    from ooo_agent.models.presets import SidecarDefaults

__all__ = [
    "DirectAnswer",
    "SidecarEvalReport",
    "SidecarPrediction",
    "SidecarScores",
    "WaveRunner",
    "add_arguments",
    "evaluate_sidecar",
    "hf_direct_answer",
    "label_sets",
    "parse_answer",
    "predict",
    "render_table",
    "run_from_args",
    "same_answer_value",
    "score_predictions",
]

LabelSet = Literal["target", "gold"]
DirectAnswer = Callable[[SemanticRow], str]
"""The raw answer to a direct-call row."""

TRAINING_LIST = "training_requests.txt"
"""Fingerprint and id of each training request, beside the adapter it trained."""


class WaveRunner(Protocol):
    """What scoring needs of a sidecar: a blocking wave (``HFSidecar`` has one)."""

    def run_wave_sync(
        self, request: SidecarRequest, box: HintBox, cancel: threading.Event | None = None
    ) -> WaveReport: ...


def predict(
    sidecar: WaveRunner,
    item: LabelledRequest,
    *,
    direct: DirectAnswer | None = None,
    value_conventions: bool = False,
) -> SidecarPrediction:
    """One wave (and the direct-call row, when ``direct`` is given) for ``item``'s request;
    ``value_conventions``: as beside a target that holds values to conventions
    (``SidecarRequest.ruled`` with the ``mentioned`` and ``values`` rules).

    A sidecar failure gives an empty prediction (every metric counts it wrong), not an error.
    """
    request = item.request
    # As beside the embedded target, whose rules are ``mentioned`` and ``values``.
    ruled = (
        RuledTools(request.messages, request.tools, rules_named(["mentioned", "values"]))
        if value_conventions
        else None
    )
    wave_request = SidecarRequest(request.messages, request.tools, ruled=ruled)
    try:
        report = sidecar.run_wave_sync(wave_request, HintBox())
        answer = None
        if direct is not None:
            options = getattr(sidecar, "options", None)
            layout: PromptLayout = getattr(options, "layout", "dialogue-first")
            row = build_wave_rows(
                request.messages,
                request.tools,
                direct_call=True,
                layout=layout,
            )[-1]
            answer = direct(row)
    except SidecarError:
        return SidecarPrediction(request.id, {}, Hint())
    return SidecarPrediction(
        request.id, dict(report.answers), report.hint, answer, round(report.latency_s, 3)
    )


def hf_direct_answer(sidecar: Any, *, max_new_tokens: int = 160) -> DirectAnswer:
    """Direct-call rows answered by an ``HFSidecar``'s model, with its own template."""

    def answer(row: SemanticRow) -> str:
        prompt = sidecar.generator.encode(sidecar.template(row.messages))
        results = sidecar.generator.generate([prompt], max_new_tokens=max_new_tokens)
        return str(results[0].text).strip()

    return answer


def label_sets(
    items: Sequence[LabelledRequest], which: Sequence[LabelSet]
) -> dict[str, dict[str, Call]]:
    """``{label set: {request id: call}}`` for the label sets asked."""
    sets: dict[str, dict[str, Call]] = {}
    for name in which:
        calls = {i.request.id: i.call if name == "target" else i.gold_call for i in items}
        sets[name] = {rid: call for rid, call in calls.items() if call is not None}
    return sets


@dataclass
class SidecarEvalReport:
    """Scores by label set, every prediction, and the run's settings."""

    scores: dict[str, SidecarScores] = field(default_factory=dict)
    predictions: list[SidecarPrediction] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scores": {name: s.to_dict() for name, s in self.scores.items()},
            "predictions": [asdict(p) for p in self.predictions],
            "config": self.config,
        }


def evaluate_sidecar(
    sidecar: WaveRunner,
    items: Sequence[LabelledRequest],
    *,
    labels: Sequence[LabelSet] = ("target", "gold"),
    direct: DirectAnswer | None = None,
    on_prediction: Callable[[int, SidecarPrediction], None] | None = None,
    value_conventions: bool = False,
) -> SidecarEvalReport:
    """Run a wave per request that has a label in ``labels``; score it against each set
    (``value_conventions``: :func:`predict`)."""
    sets = label_sets(items, labels)
    wanted = [i for i in items if any(i.request.id in calls for calls in sets.values())]
    report = SidecarEvalReport()
    for number, item in enumerate(wanted, 1):
        prediction = predict(sidecar, item, direct=direct, value_conventions=value_conventions)
        report.predictions.append(prediction)
        if on_prediction is not None:
            on_prediction(number, prediction)
    requests = {i.request.id: i.request for i in wanted}
    for name, calls in sets.items():
        report.scores[name] = score_predictions(report.predictions, requests, calls)
    return report


def render_table(report: SidecarEvalReport) -> Table:
    """The metrics as a rich table, one column per label set."""
    names = list(report.scores)
    table = Table("metric", *(f"vs {n}" for n in names), title="sidecar offline quality")
    table.add_row("requests", *(str(report.scores[n].requests) for n in names))
    for metric in SidecarScores.RATES:
        cells = []
        for name in names:
            rate = getattr(report.scores[name], metric)
            cells.append("–" if rate.value is None else f"{rate.value:.1%} ({rate.hits}/{rate.n})")
        table.add_row(metric.replace("_", " "), *cells)
        if metric == "argument_exact":
            for kind in MISS_CLASSES:
                counts = [report.scores[n].argument_misses[kind] for n in names]
                if any(counts):
                    table.add_row(f"  miss: {kind.replace('_', ' ')}", *map(str, counts))
        if metric == "function_index":
            baselines = [report.scores[n].position_baseline for n in names]
            table.add_row(
                "  always the commonest position",
                *("–" if b.value is None else f"{b.value:.1%} ({b.hits}/{b.n})" for b in baselines),
            )
    table.add_row("mean wave s", *(f"{report.scores[n].mean_wave_seconds:.3f}" for n in names))
    return table


# -- command line --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``eval-sidecar`` options (light: no torch import)."""
    parser.add_argument(
        "--sidecar", required=True, help="LoRA adapter folder or preset name (smollm2-135m-sidecar)"
    )
    parser.add_argument(
        "--base", default="smollm2-135m-instruct", help="base model under an adapter folder"
    )
    parser.add_argument(
        "--requests", required=True, type=Path, help="eval_requests.jsonl (or requests.jsonl)"
    )
    parser.add_argument(
        "--labels", choices=("target", "gold", "both"), default="both", help="default: %(default)s"
    )
    parser.add_argument("--n", type=int, default=None, help="score the first N requests")
    parser.add_argument("--out", required=True, type=Path, help="JSON report path")
    parser.add_argument("--no-direct", action="store_true", help="skip the direct-call row")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="per wave row")
    parser.add_argument("--direct-max-new-tokens", type=int, default=160)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument(
        "--prefix-cache-bytes",
        type=int,
        default=None,
        metavar="N",
        help="memory for the wave prompts' prefixes kept between requests "
        "(HFSidecar(prefix_cache_bytes=N); 0: none, every wave runs its whole prompt; "
        "default: the sidecar's)",
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        choices=("auto", "float32", "bfloat16"),
        help="the sidecar's precision (default auto: what HFSidecar uses here, bfloat16 on a "
        "CPU or GPU with native bf16 kernels, else float32)",
    )
    parser.add_argument(
        "--function-choice",
        choices=("auto", "index", "scored"),
        default="auto",
        help="index: the function-index row's answer; scored: the tool name the sidecar finds "
        "likeliest to start a direct call (WaveOptions.function_choice); auto (default): the preset's own "
        "choice (scored for the embedded sidecar), else index",
    )
    parser.add_argument(
        "--relevance-weight",
        type=float,
        default=None,
        metavar="W",
        help="with a scored choice, W times the log-softmax of each tool's "
        "lexical relevance to the request is added to the sidecar's name scores "
        "(WaveOptions.relevance_weight); 0: the sidecar's scores alone; default: the preset's "
        "own (2 for the embedded sidecar) with its own choice, else 0",
    )
    parser.add_argument(
        "--relevance-parameter-weight",
        type=float,
        default=None,
        metavar="W",
        help="in that relevance, how much a word of a tool's parameter names and descriptions "
        "counts (WaveOptions.relevance_parameter_weight; default 0.5; 0: the parameters left "
        "out)",
    )
    parser.add_argument(
        "--layout",
        choices=("auto", *PROMPT_LAYOUTS),
        default="auto",
        help="where the rows' prompts put the dialogue, as the adapter was trained "
        "(WaveOptions.layout: dialogue-first or tools-first); auto (default): the preset's "
        "own, else dialogue-first",
    )
    steers = {
        "--required-values": "a required parameter's row may not answer null "
        "(WaveOptions.required_values)",
        "--mentioned-values": "an optional parameter's row the request names may not answer "
        "null (WaveOptions.mentioned_values)",
        "--typed-values": "each argument row is held to its parameter's schema (type, enum, "
        "array elements; WaveOptions.typed_values)",
        "--unnamed-nulls": "an optional parameter the request does not name is answered null "
        "without asking its row (WaveOptions.unnamed_nulls)",
        "--whole-words": "a typed row copies the request's words whole, never stopping or "
        "slipping inside one, with no space before a string and the dates the request states "
        "(WaveOptions.whole_words)",
        "--request-case": "a string the sidecar capitalises where the request writes it in "
        "lower case takes the request's case (WaveOptions.request_case)",
        "--joint-values": "the chosen tool's numbers, and each string that repeats an earlier "
        "one, are written again one after another in its call, each reading the values before "
        "it (WaveOptions.joint_values; with typed values)",
    }
    for flag, effect in steers.items():
        parser.add_argument(
            flag,
            choices=("auto", "on", "off"),
            default="auto",
            help=f"on: {effect}; auto (default): the preset's own setting, else off",
        )
    parser.add_argument(
        "--value-conventions",
        action="store_true",
        help="run each wave as beside a target decoding with constrain_values (labels from "
        "eval_target --constrain-values): a typed-values sidecar holds its argument rows to the "
        "same conventions (SidecarRequest.ruled)",
    )
    parser.add_argument("--cache-dir", default=None, help="ooo-agent cache root")
    trained = parser.add_mutually_exclusive_group()
    trained.add_argument(
        "--exclude-trained",
        action="store_true",
        help="leave out requests the adapter trained on (its training_requests.txt) and say "
        "how many, instead of refusing to score",
    )
    trained.add_argument(
        "--only-trained",
        action="store_true",
        help="score only the requests the adapter trained on: how well it fits its own "
        "training requests, to set beside a held-out score (memorised, or read?)",
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``ooo-agent eval-sidecar``; errors are ooo-agent exceptions the CLI prints."""
    if args.n is not None and args.n < 1:
        raise DatasetError("--n must be at least 1")
    try:
        # refuse impossible flags before loading anything
        WaveOptions(**wave_fields(args), relevance_parameter_weight=_parameter_weight(args))
    except ValueError as exc:
        raise SidecarError(f"eval-sidecar: {exc}") from None
    items, _ = read_requests(args.requests)
    items = items[: args.n] if args.n is not None else items
    which: list[LabelSet] = ["target", "gold"] if args.labels == "both" else [args.labels]
    if args.labels == "target" and not any(i.call is not None for i in items):
        raise DatasetError(
            f"no request in {args.requests} has a target label; write them with "
            "'python -m ooo_agent.train.sidecar_data' and pass its eval_requests.jsonl"
        )
    sidecar, adapter = _load_sidecar(args)
    console = Console(soft_wrap=True)
    excluded = 0
    only_trained = args.only_trained
    trained = set(_trained_ids(items, adapter)) if args.exclude_trained or only_trained else set()
    if only_trained:
        items = [i for i in items if i.request.id in trained]
        if not items:
            raise DatasetError(f"no request in {args.requests} trained this sidecar")
        console.print(f"scoring only the {len(items)} request(s) this sidecar trained on")
    elif trained:
        kept = [i for i in items if i.request.id not in trained]
        excluded = len(items) - len(kept)
        if not kept:
            raise DatasetError(f"every request in {args.requests} trained this sidecar")
        console.print(f"left out {excluded} request(s) this sidecar trained on")
        items = kept
    else:
        _refuse_training_requests(items, adapter)

    def show(number: int, p: SidecarPrediction) -> None:
        slots = json.dumps(dict(p.hint.slots), ensure_ascii=False)[:60]
        console.print(f"[{number}] {p.id:32s} {p.seconds:6.2f}s {p.hint.function} {slots}")

    direct = (
        None
        if args.no_direct
        else hf_direct_answer(sidecar, max_new_tokens=args.direct_max_new_tokens)
    )
    report = evaluate_sidecar(
        sidecar,
        items,
        labels=which,
        direct=direct,
        on_prediction=show,
        value_conventions=args.value_conventions,
    )
    report.config = {
        "sidecar": args.sidecar,
        "base": args.base if adapter is not None else None,
        "requests": str(args.requests),
        "n": args.n,
        "labels": which,
        "max_new_tokens": args.max_new_tokens,
        "direct_call": not args.no_direct,
        **wave_fields(args),
        "relevance_parameter_weight": sidecar.options.relevance_parameter_weight,
        "value_conventions": args.value_conventions,
        "excluded_trained": excluded,
        "only_trained": only_trained,
    }
    console.print(render_table(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    console.print(f"report written to {args.out}")
    return 0


def wave_fields(args: argparse.Namespace) -> SidecarDefaults:
    """The sidecar's ``WaveOptions`` fields from ``--function-choice``, ``--relevance-weight``,
    ``--required-values``, ``--mentioned-values`` and ``--typed-values``; each
    ``auto`` (or absent weight) is the preset's own setting
    (:func:`~ooo_agent.models.presets.sidecar_wave_defaults`), else the method as published."""
    from ooo_agent.models.presets import sidecar_wave_defaults

    fields = sidecar_wave_defaults(args.sidecar)
    if args.function_choice != "auto":
        fields["function_choice"] = cast(FunctionChoice, args.function_choice)
    if args.relevance_weight is not None:
        fields["relevance_weight"] = args.relevance_weight
    elif fields["function_choice"] == "index":
        fields["relevance_weight"] = 0.0  # the function-index row gives no scores to add it to
    if getattr(args, "layout", "auto") != "auto":
        fields["layout"] = cast(PromptLayout, args.layout)
    if args.required_values != "auto":
        fields["required_values"] = args.required_values == "on"
    if args.mentioned_values != "auto":
        fields["mentioned_values"] = args.mentioned_values == "on"
    if args.typed_values != "auto":
        fields["typed_values"] = args.typed_values == "on"
    if args.unnamed_nulls != "auto":
        fields["unnamed_nulls"] = args.unnamed_nulls == "on"
    if args.whole_words != "auto":
        fields["whole_words"] = args.whole_words == "on"
    if args.request_case != "auto":
        fields["request_case"] = args.request_case == "on"
    if args.joint_values != "auto":
        fields["joint_values"] = args.joint_values == "on"
    fields["joint_values"] = fields["joint_values"] and fields["typed_values"]
    return fields


def _parameter_weight(args: argparse.Namespace) -> float:
    """``--relevance-parameter-weight``, else ``WaveOptions``' default."""
    from ooo_agent.sidecar.relevance import PARAMETER_WEIGHT

    weight = getattr(args, "relevance_parameter_weight", None)
    return PARAMETER_WEIGHT if weight is None else float(weight)


def _load_sidecar(args: argparse.Namespace) -> tuple[Any, Path | None]:
    """The ``HFSidecar`` and its adapter folder (``None`` for a hub or adapter-less preset)."""
    import torch

    from ooo_agent.models.presets import (
        PRESETS,
        adapter_dir,
        attach_adapter,
        load_base,
        sidecar_dtype,
    )
    from ooo_agent.sidecar.hf import HFSidecar

    # Every row is asked (the parallel schedule): argument rows are scored against the target's
    # function even when the sidecar picked another one.
    options = {
        "num_threads": args.threads,
        "max_new_tokens": args.max_new_tokens,
        "prefix_cache_bytes": args.prefix_cache_bytes,
        "options": WaveOptions(
            schedule="parallel",
            **wave_fields(args),
            relevance_parameter_weight=_parameter_weight(args),
        ),
    }
    dtype = sidecar_dtype("cpu") if args.dtype == "auto" else getattr(torch, args.dtype)
    preset = PRESETS.get(args.sidecar)
    if preset is not None:
        folder = adapter_dir(preset.name) if preset.adapter and not preset.from_hub else None
        return HFSidecar.from_preset(preset.name, dtype=dtype, **options), folder
    folder = Path(args.sidecar)
    if not (folder / "adapter_config.json").is_file():
        known = ", ".join(sorted(PRESETS))
        raise ModelNotAvailableError(
            f"--sidecar {args.sidecar!r} is neither a LoRA adapter folder (no "
            f"adapter_config.json) nor a preset ({known})"
        )
    model, tokenizer = load_base(args.base, cache_dir=args.cache_dir, dtype=dtype)
    model = attach_adapter(model, folder, merge=True)
    return HFSidecar(model, tokenizer, **options), folder


def _trained_ids(items: Sequence[LabelledRequest], adapter: Path | None) -> list[str]:
    """Ids of the requests in ``items`` that the adapter's ``training_requests.txt`` lists."""
    listing = adapter / TRAINING_LIST if adapter is not None else None
    if listing is None or not listing.is_file():
        return []
    trained = {line.split("\t")[0] for line in listing.read_text(encoding="utf-8").splitlines()}
    return [i.request.id for i in items if request_fingerprint(i.request) in trained]


def _refuse_training_requests(items: Sequence[LabelledRequest], adapter: Path | None) -> None:
    listing = adapter / TRAINING_LIST if adapter is not None else None
    seen = _trained_ids(items, adapter)
    if seen:
        raise DatasetError(
            f"{len(seen)} of the requests (first: {seen[0]!r}) trained this sidecar "
            f"(listed in {listing}); score it on held-out requests only"
        )
