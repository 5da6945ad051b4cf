"""Scoring a sidecar's wave answers against labelled calls (the seed card's offline metrics).

For each request, the labels come from :func:`ooo_agent.sidecar.rows.label_rows` applied to the
label call, so a metric compares exactly the answer the adapter was trained to give:

- **function index**: the function-index answer names the labelled tool. Only requests offering
  two or more tools count: with one tool the wave does not ask (the answer is known). Beside
  it, how often each position is labelled and answered, and the **position baseline**: the
  rate of always answering the most frequent labelled position (a sidecar near it has learned
  a position, not the tools);
- **argument exact**: over the labelled function's slots, the predicted JSON value equals the
  label (``null`` included; ``1`` equals ``1.0``); **argument value exact** counts only the
  slots whose label is a value;
- **null precision / recall**: over every argument row asked, "predicted null" against "label
  null" (an answer that is not JSON counts as a non-null prediction);
- **direct-call exact**: the direct-call row's JSON object has the label's name and arguments;
- **hint exact**: the assembled hint (function + non-null slots that passed the slot check) is
  the label call with its null arguments left out — the hint a drafter would get.

Each argument-exact miss is also given one class (:data:`MISS_CLASSES`, checked in that order):
``not_json`` (the answer does not parse), ``null_for_value`` (``null`` where the label has a
value), ``value_for_null`` (a value where the label leaves the argument out), ``wrong_type``
(a value the parameter's schema refuses: :func:`~ooo_agent.sidecar.slots.slot_checker`),
``case_only`` (strings that differ in case alone) and ``other_value``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from ooo_agent.sidecar.base import Hint
from ooo_agent.sidecar.rows import label_rows, parse_function_index, parse_slot_value
from ooo_agent.sidecar.slots import SlotCheck, slot_checker
from ooo_agent.tools.validation import canonical_arguments
from ooo_agent.train._sidecar_labels import Call
from ooo_agent.train.examples import TrainRequest

__all__ = [
    "MISS_CLASSES",
    "NOT_JSON",
    "ItemScore",
    "Rate",
    "SidecarPrediction",
    "SidecarScores",
    "parse_answer",
    "same_answer_value",
    "score_predictions",
]

MISS_CLASSES = (
    "not_json",
    "null_for_value",
    "value_for_null",
    "wrong_type",
    "case_only",
    "other_value",
)
"""Why an argument row missed its label (module docstring), in the order they are checked."""


@dataclass
class SidecarPrediction:
    """What a sidecar answered for one request."""

    id: str
    answers: dict[str, str]
    """Raw answer of every row asked, by row key (``function``, ``<index>.<param>``)."""
    hint: Hint
    direct: str | None = None
    """The direct-call row's raw answer (``None``: not asked)."""
    seconds: float = 0.0
    """The wave's latency (the direct-call row excluded)."""


@dataclass
class Rate:
    """``hits`` out of ``n``; ``value`` is ``None`` when nothing was scored."""

    hits: int = 0
    n: int = 0

    def add(self, hit: bool) -> None:
        self.hits += int(hit)
        self.n += 1

    @property
    def value(self) -> float | None:
        return round(self.hits / self.n, 4) if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "hits": self.hits, "n": self.n}


@dataclass
class ItemScore:
    """One request's outcome against one label (``None``: the metric did not apply)."""

    id: str
    function: bool | None = None
    argument_hits: int = 0
    argument_n: int = 0
    direct: bool | None = None
    hint: bool = False


@dataclass
class SidecarScores:
    """Every metric over one label set (see the module docstring)."""

    requests: int = 0
    function_index: Rate = field(default_factory=Rate)
    argument_exact: Rate = field(default_factory=Rate)
    argument_value_exact: Rate = field(default_factory=Rate)
    null_precision: Rate = field(default_factory=Rate)
    null_recall: Rate = field(default_factory=Rate)
    direct_call_exact: Rate = field(default_factory=Rate)
    hint_exact: Rate = field(default_factory=Rate)
    mean_wave_seconds: float = 0.0
    items: list[ItemScore] = field(default_factory=list)
    index_labels: Counter[str] = field(default_factory=Counter)
    """How often each tool position is the label of a scored function-index row."""
    index_answers: Counter[str] = field(default_factory=Counter)
    """How often each position was answered (``"?"``: not a valid index)."""
    argument_misses: Counter[str] = field(default_factory=Counter)
    """Argument-exact misses by class (:data:`MISS_CLASSES`)."""

    @property
    def position_baseline(self) -> Rate:
        """The function-index rate of always answering the most frequent labelled position."""
        return Rate(max(self.index_labels.values(), default=0), sum(self.index_labels.values()))

    RATES: ClassVar[tuple[str, ...]] = (
        "function_index",
        "argument_exact",
        "argument_value_exact",
        "null_precision",
        "null_recall",
        "direct_call_exact",
        "hint_exact",
    )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"requests": self.requests}
        data.update({name: getattr(self, name).to_dict() for name in self.RATES})
        data["function_index_positions"] = {
            "label": dict(sorted(self.index_labels.items())),
            "answer": dict(sorted(self.index_answers.items())),
            "baseline": self.position_baseline.to_dict(),
        }
        data["argument_misses"] = {c: self.argument_misses[c] for c in MISS_CLASSES}
        data["mean_wave_seconds"] = self.mean_wave_seconds
        data["items"] = [asdict(item) for item in self.items]
        return data


NOT_JSON = object()
"""An answer that is not JSON: never equal to a label, never a null prediction."""


def parse_answer(answer: str) -> Any:
    """A row's answer as a value (:data:`NOT_JSON` when it does not parse)."""
    try:
        return parse_slot_value(answer)
    except ValueError:
        return NOT_JSON


def same_answer_value(a: Any, b: Any) -> bool:
    """Whether two parsed answers are the same value (``1`` equals ``1.0``)."""
    if a is NOT_JSON or b is NOT_JSON:
        return False
    return canonical_arguments({"v": a}) == canonical_arguments({"v": b})


def _direct_matches(answer: str, call: Call) -> bool:
    try:
        data = json.loads(answer.strip())
    except ValueError:
        return False
    if not isinstance(data, Mapping):
        return False
    arguments = data.get("parameters", data.get("arguments"))
    if data.get("name") != call[0] or not isinstance(arguments, Mapping):
        return False
    return canonical_arguments(arguments) == canonical_arguments(call[1])


def _hint_matches(hint: Hint, call: Call) -> bool:
    if hint.function != call[0]:
        return False
    expected = {k: v for k, v in call[1].items() if v is not None}
    return canonical_arguments(hint.slots) == canonical_arguments(expected)


def _miss_class(predicted: Any, expected: Any, wrong_type: bool) -> str:
    """The class of an argument-row miss (:data:`MISS_CLASSES`)."""
    if predicted is NOT_JSON:
        return "not_json"
    if predicted is None:
        return "null_for_value"
    if expected is None:
        return "value_for_null"
    if wrong_type:
        return "wrong_type"
    same_letters = (
        isinstance(predicted, str)
        and isinstance(expected, str)
        and predicted.casefold() == expected.casefold()
    )
    return "case_only" if same_letters else "other_value"


def _score_one(
    prediction: SidecarPrediction,
    request: TrainRequest,
    call: Call,
    scores: SidecarScores,
    check: SlotCheck,
) -> ItemScore:
    item = ItemScore(prediction.id)
    selected = request.tool_names.index(call[0]) if call[0] in request.tool_names else None
    for row, label in label_rows(request.messages, request.tools, call):
        answer = prediction.answers.get(row.key)
        if row.kind == "function_index":
            if len(request.tools) >= 2 and answer is not None:
                index = parse_function_index(answer, len(request.tools))
                item.function = index == int(label)
                scores.function_index.add(item.function)
                scores.index_labels[label] += 1
                scores.index_answers["?" if index is None else str(index)] += 1
        elif row.kind == "argument_value" and answer is not None:
            predicted, expected = parse_answer(answer), parse_answer(label)
            if predicted is None:
                scores.null_precision.add(expected is None)
            if expected is None:
                scores.null_recall.add(predicted is None)
            if row.function_index == selected:
                hit = same_answer_value(predicted, expected)
                if not hit:
                    wrong = (
                        predicted not in (None, NOT_JSON)
                        and row.function_index is not None
                        and row.param is not None
                        and check(row.function_index, row.param, predicted) is not None
                    )
                    scores.argument_misses[_miss_class(predicted, expected, wrong)] += 1
                scores.argument_exact.add(hit)
                item.argument_hits += int(hit)
                item.argument_n += 1
                if expected is not None:
                    scores.argument_value_exact.add(hit)
    if prediction.direct is not None:
        item.direct = _direct_matches(prediction.direct, call)
        scores.direct_call_exact.add(item.direct)
    item.hint = _hint_matches(prediction.hint, call)
    scores.hint_exact.add(item.hint)
    return item


def score_predictions(
    predictions: Sequence[SidecarPrediction],
    requests: Mapping[str, TrainRequest],
    labels: Mapping[str, Call],
) -> SidecarScores:
    """Score every prediction whose request has a label in ``labels`` (by request id).

    Example::

        scores = score_predictions(predictions, {r.id: r for r in requests}, target_labels)
        scores.function_index.value, scores.null_recall.value
    """
    scores = SidecarScores()
    seconds: list[float] = []
    for prediction in predictions:
        call = labels.get(prediction.id)
        request = requests.get(prediction.id)
        if call is None or request is None:
            continue
        check = slot_checker(request.tools)
        scores.items.append(_score_one(prediction, request, call, scores, check))
        seconds.append(prediction.seconds)
    scores.requests = len(scores.items)
    scores.mean_wave_seconds = round(sum(seconds) / len(seconds), 3) if seconds else 0.0
    return scores
