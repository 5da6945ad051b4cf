"""Resumable checkpoints: trainable weights + optimizer + scheduler + RNG + step.

Each checkpoint is one folder ``checkpoints/step-000120/state.pt`` written into a temporary
folder and renamed into place, so a run killed while saving leaves the previous checkpoint
intact and never a half one.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["latest_checkpoint", "load_checkpoint", "save_checkpoint"]

_NAME = re.compile(r"^step-(\d+)$")
_STATE = "state.pt"


def _checkpoints(root: Path) -> list[tuple[int, Path]]:
    found = []
    if root.is_dir():
        for child in root.iterdir():
            match = _NAME.match(child.name)
            if match and (child / _STATE).is_file():
                found.append((int(match.group(1)), child))
    return sorted(found)


def latest_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint folder under ``root``, if any."""
    found = _checkpoints(root)
    return found[-1][1] if found else None


def save_checkpoint(root: Path, step: int, state: dict[str, Any], keep: int) -> Path:
    """Write ``state`` as checkpoint ``step`` and prune all but the newest ``keep``."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=root))
    try:
        torch.save(state, tmp / _STATE)
        if final.exists():  # a re-run over the same step (resume after a crash): replace it
            shutil.rmtree(final)
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for _, old in _checkpoints(root)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(folder: Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only)."""
    state: dict[str, Any] = torch.load(folder / _STATE, map_location="cpu", weights_only=True)
    return state
