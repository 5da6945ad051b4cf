"""Rows → token examples → length-grouped micro-batches.

A row is ``{"prompt": str, "completion": str}``: the prompt is already templated (generation
prompt included) and the completion is exactly what the model must write, end-of-turn marker
included. Prompt and completion are tokenized separately and concatenated, so the boundary
is exact; only completion tokens carry a loss.

A run may weigh some completion tokens more (``key_weight``): those of a call's JSON keys and
of the ``,`` / ``}`` / ``]`` that end each value (:func:`decision_spans`) — where the model
decides which argument comes next, or that none does. Every other completion token weighs 1.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "IGNORE_INDEX",
    "Example",
    "decision_spans",
    "plan_epoch",
    "read_rows",
    "rows_fingerprint",
    "tokenize_rows",
]

IGNORE_INDEX = -100


@dataclass(frozen=True)
class Example:
    """One tokenized row: ``input_ids`` = prompt ids + completion ids."""

    input_ids: tuple[int, ...]
    prompt_len: int
    weights: tuple[float, ...] | None = None
    """Loss weight of each completion token (``None``: all 1)."""

    @property
    def completion_len(self) -> int:
        return len(self.input_ids) - self.prompt_len

    @property
    def weight_sum(self) -> float:
        """The completion tokens' summed loss weight (their count when unweighted)."""
        return float(self.completion_len) if self.weights is None else float(sum(self.weights))

    def labels(self) -> list[int]:
        """``IGNORE_INDEX`` on prompt tokens, the token itself on completion tokens."""
        return [IGNORE_INDEX] * self.prompt_len + list(self.input_ids[self.prompt_len :])


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """Read a JSONL file of ``{"prompt", "completion"}`` rows (blank lines are skipped)."""
    rows: list[dict[str, str]] = []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from exc
            rows.append(_checked_row(row, f"{path}:{line_no}"))
    return rows


def _checked_row(row: Any, where: str) -> dict[str, str]:
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: a row must be an object with 'prompt' and 'completion'")
    prompt, completion = row.get("prompt"), row.get("completion")
    if not isinstance(prompt, str) or not isinstance(completion, str):
        raise ValueError(f"{where}: 'prompt' and 'completion' must both be strings")
    if not completion:
        raise ValueError(f"{where}: 'completion' is empty; there is nothing to learn")
    return {"prompt": prompt, "completion": completion}


def rows_fingerprint(rows: Sequence[Mapping[str, str]]) -> str:
    """A short hash of the rows, to refuse resuming a run on different data."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row["prompt"], row["completion"]]).encode("utf-8"))
    return digest.hexdigest()[:16]


def decision_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of every JSON object key (quotes included) and of every
    ``,`` / ``}`` / ``]`` outside strings inside a ``{...}`` in ``text``: the tokens after
    which, or at which, the writer decides what comes next (another argument or element, or
    the end). Text outside braces (a format's markers, prose) has none. Strings are read with
    their escapes, so a ``}`` or a ``"`` inside a value is never taken for structure."""
    spans: list[tuple[int, int]] = []
    depth, i, n = 0, 0, len(text)
    while i < n:
        char = text[i]
        if char == '"' and depth > 0:
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
            after = end
            while after < n and text[after] in " \t\r\n":
                after += 1
            if after < n and text[after] == ":":
                spans.append((i, end))
            i = end
            continue
        if char == "{":
            depth += 1
        elif char in ",}]" and depth > 0:
            spans.append((i, i + 1))
            if char == "}":
                depth -= 1
        i += 1
    return spans


def _decision_weights(
    tokenizer: Any, completion: str, ids: Sequence[int], weight: float
) -> tuple[float, ...]:
    """``weight`` for each completion token that overlaps a :func:`decision_spans` span."""
    encoded = tokenizer(completion, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    if list(encoded["input_ids"]) != list(ids):
        raise ValueError("the tokenizer's offsets do not match its tokens for this completion")
    marked = bytearray(len(completion))
    for start, end in decision_spans(completion):
        marked[start:end] = b"\x01" * (end - start)
    return tuple(weight if any(marked[start:end]) else 1.0 for start, end in offsets)


def tokenize_rows(
    rows: Iterable[Mapping[str, Any]], tokenizer: Any, max_len: int, key_weight: float = 1.0
) -> tuple[list[Example], int]:
    """Tokenize rows; returns the examples and how many were skipped as longer than max_len.

    ``key_weight`` other than 1 gives each example per-token weights (:func:`decision_spans`);
    it needs a tokenizer that reports offsets (a "fast" one)."""
    examples: list[Example] = []
    skipped = 0
    for index, raw in enumerate(rows):
        row = _checked_row(raw, f"row {index}")
        prompt_ids = tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(row["completion"], add_special_tokens=False)["input_ids"]
        if not completion_ids:
            raise ValueError(f"row {index}: the completion tokenizes to nothing")
        ids = tuple(int(t) for t in [*prompt_ids, *completion_ids])
        if len(ids) > max_len:
            skipped += 1  # truncating would cut the completion or the instructions: drop it
            continue
        weights = None
        if key_weight != 1.0:
            weights = _decision_weights(tokenizer, row["completion"], completion_ids, key_weight)
        examples.append(Example(ids, len(prompt_ids), weights))
    return examples, skipped


def plan_epoch(
    lengths: Sequence[int], batch_size: int, seed: int, epoch: int, group_by_length: bool
) -> list[list[int]]:
    """The micro-batches (lists of example indices) of one epoch, deterministic in its inputs.

    With ``group_by_length`` the shuffled indices are cut into windows of 64 batches, each
    window is sorted by length and chunked, and the chunks are shuffled again: batches hold
    similar lengths (little padding) while the order stays random.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    if not group_by_length:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    window = batch_size * 64
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda i: lengths[i], reverse=True)
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def accumulation_groups(batches: Sequence[list[int]], grad_accum: int) -> Iterator[list[list[int]]]:
    """Consecutive micro-batches, ``grad_accum`` at a time (the last group may be shorter)."""
    for start in range(0, len(batches), grad_accum):
        yield list(batches[start : start + grad_accum])
