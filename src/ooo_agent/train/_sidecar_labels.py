"""Labelling requests with the target's own first valid call (see ``sidecar_data``).

Kept apart from the row builder so that scoring a sidecar (``eval_sidecar``) can read labelled
requests without the data pipeline.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from ooo_agent.calls import CallError, RawCall
from ooo_agent.errors import DatasetError, OooAgentError
from ooo_agent.formats.base import ChatFormat
from ooo_agent.targets.base import Generation, Mode, TargetRequest
from ooo_agent.tools.validation import canonical_arguments, validate_call
from ooo_agent.train.examples import TrainRequest

__all__ = [
    "Call",
    "LabelledRequest",
    "LabellingTarget",
    "gold_agreement",
    "label_generation",
    "label_request",
    "label_with_target",
    "read_requests",
    "request_fingerprint",
    "same_call",
]

Call = tuple[str, dict[str, Any]]
"""``(function name, arguments)``."""


class LabellingTarget(Protocol):
    """What labelling needs of a target: its call format and one generation per request.

    :class:`~ooo_agent.targets.hf.HFTarget` (its blocking ``generate_sync`` is used when
    present) and any :class:`~ooo_agent.targets.base.Target` qualify.
    """

    @property
    def format(self) -> ChatFormat | None: ...

    async def generate(self, request: TargetRequest) -> Generation: ...


@dataclass(frozen=True)
class LabelledRequest:
    """A training request and the first call the target wrote for it (when it was valid).

    ``call`` is ``None`` when the target wrote no valid first call; ``problem`` says why.
    """

    request: TrainRequest
    call: Call | None
    text: str = ""
    """The target's raw output."""
    problem: str = ""

    @property
    def gold_call(self) -> Call | None:
        """The request's first gold call, if it has one."""
        return self.request.calls[0] if self.request.calls else None

    def to_dict(self) -> dict[str, Any]:
        """The request's JSON form plus ``target_call``, ``target_text`` and ``target_problem``."""
        data = self.request.to_dict()
        data["target_call"] = (
            {"name": self.call[0], "arguments": self.call[1]} if self.call is not None else None
        )
        data["target_text"] = self.text
        data["target_problem"] = self.problem
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LabelledRequest:
        """Inverse of :meth:`to_dict`; a plain request line gives ``call=None``."""
        raw = data.get("target_call")
        call = (str(raw["name"]), dict(raw["arguments"])) if isinstance(raw, Mapping) else None
        return cls(
            request=TrainRequest.from_dict(data),
            call=call,
            text=str(data.get("target_text", "")),
            problem=str(data.get("target_problem", "")),
        )


def request_fingerprint(request: TrainRequest) -> str:
    """A short hash of a request's conversation and tools (ids can differ between sources)."""
    payload = json.dumps([request.messages, request.tools], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# -- labelling -----------------------------------------------------------------------------


def _generate(target: LabellingTarget, request: TargetRequest) -> Generation:
    blocking = getattr(target, "generate_sync", None)
    if callable(blocking):
        generation = blocking(request)
        if not isinstance(generation, Generation):
            raise TypeError(f"generate_sync returned {type(generation).__name__}")
        return generation
    return anyio.run(target.generate, request)


def _first_call(fmt: ChatFormat | None, generation: Generation) -> RawCall | str:
    """The first call of a generation, or why there is none."""
    if generation.raw_calls is not None:
        calls = list(generation.raw_calls)
    else:
        if fmt is None:
            return "the target has no call format and returned no structured calls"
        parsed = fmt.parse(generation.text)
        calls = list(parsed.calls)
        if parsed.errors and (not calls or _error_first(generation.text, calls[0], parsed.errors)):
            # A malformed block before the first parsed call: that call is not what the
            # target's output starts with, so it cannot be the hint's label.
            return f"unparseable: {parsed.errors[0].message.splitlines()[0]}"
    return calls[0] if calls else "no call"


def _error_first(text: str, call: RawCall, errors: Sequence[CallError]) -> bool:
    """Whether a parse error comes before ``call`` in ``text`` (unknown positions: yes)."""
    at = text.find(call.raw) if call.raw else -1
    if at < 0:
        return True
    for error in errors:
        where = text.find(error.raw) if error.raw else -1
        if where < at:  # before the call, or not found
            return True
    return False


def _written_arguments(raw: RawCall, validated: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the target wrote them (decoded JSON), else the validated ones."""
    arguments = raw.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = None
    return dict(arguments) if isinstance(arguments, Mapping) else dict(validated)


def label_request(
    target: LabellingTarget,
    request: TrainRequest,
    *,
    mode: Mode = "toolspec",
    max_new_tokens: int = 192,
    strict: bool = True,
) -> LabelledRequest:
    """Run ``target`` on ``request`` and keep its first call when it validates.

    Never raises for a bad generation: a target error, an output without a call or an invalid
    call gives ``call=None`` and a ``problem``.
    """
    target_request = TargetRequest(
        messages=request.messages, tools=request.tools, mode=mode, max_new_tokens=max_new_tokens
    )
    try:
        generation = _generate(target, target_request)
    except (OooAgentError, ValueError, TypeError) as exc:
        return LabelledRequest(request, None, problem=f"target failed: {exc}")
    return label_generation(request, generation, target.format, strict=strict)


def label_generation(
    request: TrainRequest,
    generation: Generation,
    fmt: ChatFormat | None,
    *,
    strict: bool = True,
) -> LabelledRequest:
    """Label ``request`` with the first valid call of a generation already made (parsed with
    ``fmt`` unless the generation carries structured calls)."""
    first = _first_call(fmt, generation)
    if isinstance(first, str):
        return LabelledRequest(request, None, generation.text, first)
    outcome = validate_call(first, request.tools, strict=strict)
    if isinstance(outcome, CallError):
        problem = f"invalid call: {outcome.message.splitlines()[0]}"
        return LabelledRequest(request, None, generation.text, problem)
    call = (outcome.name, _written_arguments(first, outcome.arguments))
    return LabelledRequest(request, call, generation.text)


def label_with_target(
    target: LabellingTarget,
    requests: Iterable[TrainRequest],
    *,
    mode: Mode = "toolspec",
    max_new_tokens: int = 192,
    strict: bool = True,
    keep_failed: bool = False,
    on_result: Callable[[LabelledRequest], None] | None = None,
) -> list[LabelledRequest]:
    """Label every request with the target's own first valid call (see :func:`label_request`).

    Requests without a valid call are dropped unless ``keep_failed`` (an evaluation set keeps
    them: they can still be scored against gold). ``on_result`` sees every outcome.

    Example::

        target = HFTarget(model, tokenizer, "hermes")
        labelled = label_with_target(target, requests)
        rows = sidecar_rows(labelled, tokenizer)
    """
    labelled: list[LabelledRequest] = []
    for request in requests:
        result = label_request(
            target, request, mode=mode, max_new_tokens=max_new_tokens, strict=strict
        )
        if on_result is not None:
            on_result(result)
        if result.call is not None or keep_failed:
            labelled.append(result)
    return labelled


def gold_agreement(labelled: Sequence[LabelledRequest]) -> dict[str, Any]:
    """How often the target's label equals the gold call (name; name and arguments)."""
    pairs = [(i.call, i.gold_call) for i in labelled if i.call is not None and i.gold_call]
    same_name = sum(ours[0] == gold[0] for ours, gold in pairs if ours and gold)
    exact = sum(same_call(ours, gold) for ours, gold in pairs)
    n = len(pairs)
    return {
        "n": n,
        "name": round(same_name / n, 4) if n else None,
        "exact": round(exact / n, 4) if n else None,
    }


def same_call(a: Call | None, b: Call | None) -> bool:
    """Same function and the same arguments (compared as canonical JSON: ``1`` equals ``1.0``)."""
    if a is None or b is None:
        return False
    return a[0] == b[0] and canonical_arguments(a[1]) == canonical_arguments(b[1])


def read_requests(path: str | os.PathLike[str]) -> tuple[list[LabelledRequest], int | None]:
    """Requests from a ``requests.jsonl`` (labelled or not), and the held-out count.

    ``python -m ooo_agent.train.data`` writes its training requests first and its ``eval_rows``
    held-out requests last; when the ``stats.json`` beside the file agrees with the line count,
    that count is returned so the sidecar is evaluated on the requests the target never saw.
    """
    source = Path(path)
    try:
        lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
        items = [LabelledRequest.from_dict(json.loads(line)) for line in lines]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"cannot read requests from {source}: {exc}") from exc
    held_out = None
    stats_path = source.parent / "stats.json"
    if stats_path.is_file():
        try:
            stats = json.loads(stats_path.read_text(encoding="utf-8"))
            train_rows, eval_rows = int(stats["train_rows"]), int(stats["eval_rows"])
        except (ValueError, KeyError, TypeError):
            train_rows, eval_rows = -1, -1
        if eval_rows >= 0 and train_rows + eval_rows == len(items):
            held_out = eval_rows
    return items, held_out
