"""Rows → token examples → length-grouped micro-batches.

A row is ``{"prompt": str, "completion": str}``: the prompt is already templated (generation
prompt included) and the completion is exactly what the model must write, end-of-turn marker
included. Prompt and completion are tokenized separately and concatenated, so the boundary
is exact; only completion tokens carry a loss.
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

    @property
    def completion_len(self) -> int:
        return len(self.input_ids) - self.prompt_len

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


def tokenize_rows(
    rows: Iterable[Mapping[str, Any]], tokenizer: Any, max_len: int
) -> tuple[list[Example], int]:
    """Tokenize rows; returns the examples and how many were skipped as longer than max_len."""
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
        examples.append(Example(ids, len(prompt_ids)))
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
