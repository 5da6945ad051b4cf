"""Named training recipes for ``ooo-agent train --recipe`` and the data folders they read.

A recipe is a set of defaults for ``ooo-agent train`` options; an option given on the
command line still wins. The ``cpu-*`` recipes are the ones the shipped SmolLM2-135M adapters
were trained with on a 2-core CPU: the seed recipe (LoRA r 32 / alpha 64 / dropout 0.05,
cosine LR after 5 % warmup, 1 epoch) in fp32 on 2 threads, peak LR 2e-4 (a few hundred
optimizer steps; the seed's 1e-4 over so few steps under-trains a 135M model), micro-batches
of 4, max length 1024, a checkpoint every 20 steps, plain log lines instead of a live
progress bar.

A data folder (``--data DIR``) holds ``train.jsonl``, ``eval.jsonl`` and ``stats.json``, as
written by the role's builder (:data:`DATA_BUILDERS`); :data:`DATA_DESCRIBERS` turn its
``stats.json`` into the model card's data section.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "DATA_BUILDERS",
    "DATA_DESCRIBERS",
    "RECIPES",
    "Recipe",
    "describe_sidecar_data",
    "describe_target_data",
]


@dataclass(frozen=True)
class Recipe:
    """Defaults for ``ooo-agent train`` options (keyed by their ``argparse`` dest)."""

    role: str
    """The adapter role the recipe is for (``target`` / ``sidecar``)."""
    summary: str
    values: Mapping[str, Any]


_CPU = {
    "r": 32,
    "alpha": 64,
    "dropout": 0.05,
    "lr": 2e-4,
    "epochs": 1,
    "batch": 4,
    "warmup": 0.05,
    "max_len": 1024,
    "dtype": "float32",
    "device": "cpu",
    "threads": 2,
    "save_every": 20,
    "log_every": 1,
    "progress": False,
}

RECIPES: Mapping[str, Recipe] = MappingProxyType(
    {
        "cpu-target": Recipe(
            role="target",
            summary="the embedded target's CPU run: effective batch 8 (4 x 2), every eval row",
            values=MappingProxyType({**_CPU, "accum": 2, "max_eval": None}),
        ),
        "cpu-sidecar": Recipe(
            role="sidecar",
            summary=(
                "the embedded sidecar's CPU run: effective batch 16 (4 x 4), 2 epochs, "
                "200 eval rows"
            ),
            values=MappingProxyType({**_CPU, "accum": 4, "epochs": 2, "max_eval": 200}),
        ),
    }
)
"""The named recipes; ``max_eval`` ``None`` keeps every held-out row."""


def describe_target_data(stats: Mapping[str, Any]) -> str:
    """The card's data text for a folder written by ``python -m ooo_agent.train.data``."""
    return (
        "Tool-calling rows in the Hermes format: BFCL live categories (gold answers, "
        "decontaminated against every evaluation function name) plus generated "
        f"multi-tool business requests. Stats: {json.dumps(stats.get('by_source', {}))}."
    )


def describe_sidecar_data(stats: Mapping[str, Any]) -> str:
    """The card's data text for a folder written by ``python -m ooo_agent.train.sidecar_data``."""
    agreement = stats.get("target_vs_gold", {}).get("train", {})
    index_first = (
        f"Function-index rows of all {stats.get('train_requests')} labelled requests came first; "
        f"argument and direct-call rows of the first {stats.get('train_requests_all_rows')} "
        "filled the rest of the token budget. "
        if stats.get("index_rows_first")
        else ""
    )
    return (
        "OoO-Spec semantic rows (function index, argument value or null, direct call) for "
        "requests from the target's training data (BFCL live + generated multi-tool requests, "
        "decontaminated against every BFCL evaluation function name), labelled with the "
        "embedded target's own first valid call (strict validation), not the gold answer. "
        f"Rows by kind: {json.dumps(stats.get('rows_by_kind', {}))}; null rows of tools the "
        f"target did not call kept with probability {stats.get('other_null_fraction')}; "
        f"{stats.get('index_permutations', 0)} extra function-index row(s) per multi-tool "
        f"request with the tools listed in another order. {index_first}"
        f"Target label equals gold on {agreement.get('exact')} of training requests "
        f"(same function: {agreement.get('name')})."
    )


DATA_DESCRIBERS: Mapping[str, Callable[[Mapping[str, Any]], str]] = MappingProxyType(
    {"target": describe_target_data, "sidecar": describe_sidecar_data}
)
"""Role → the describer of its data folder's ``stats.json``."""

DATA_BUILDERS: Mapping[str, str] = MappingProxyType(
    {
        "target": "python -m ooo_agent.train.data",
        "sidecar": "python -m ooo_agent.train.sidecar_data",
    }
)
"""Role → the command that writes its data folder."""
