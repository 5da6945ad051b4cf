"""LoRA training for the target and the sidecar (needs the ``hf`` extra: torch, peft).

Public API: :class:`TrainConfig`, :class:`TrainReport`, :func:`train_lora`, :func:`read_rows`.
The trainer (and with it torch) is imported on first use, so the light submodules of this
package (configs, row builders) stay importable without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ooo_agent.train._batches import read_rows
from ooo_agent.train.config import DEFAULT_TARGET_MODULES, TrainConfig, TrainReport

if TYPE_CHECKING:
    from ooo_agent.train.trainer import train_lora

__all__ = ["DEFAULT_TARGET_MODULES", "TrainConfig", "TrainReport", "read_rows", "train_lora"]


def __getattr__(name: str) -> Any:
    if name == "train_lora":
        from ooo_agent.train.trainer import train_lora

        return train_lora
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
