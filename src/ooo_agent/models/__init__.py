"""The embedded default models and the named presets (base model + LoRA adapter, the request
rules a target decodes under, the ``WaveOptions`` a sidecar runs with).

Importing this package is cheap (no torch); loading a model needs the ``hf`` extra.

Example::

    from ooo_agent.models import load_preset
    model, tokenizer = load_preset("smollm2-135m-toolcall")
"""

from __future__ import annotations

from ooo_agent.models._cache import CACHE_ENV, cache_root, models_dir
from ooo_agent.models.presets import (
    ADAPTERS_ENV,
    PRESETS,
    ConstraintOptions,
    Preset,
    SidecarDefaults,
    TargetDefaults,
    adapter_dir,
    adapters_root,
    attach_adapter,
    get_preset,
    load_base,
    load_preset,
    load_tokenizer,
    sidecar_dtype,
    sidecar_options,
    sidecar_wave_defaults,
    target_call_again_below,
    target_constraints,
    target_decline_below,
    target_defaults,
    target_format,
)
from ooo_agent.models.smollm2 import (
    GGUF_FILENAME,
    SMOLLM2_NAME,
    ensure_smollm2,
    load_smollm2,
    locate_gguf,
    smollm2_dir,
)

__all__ = [
    "ADAPTERS_ENV",
    "CACHE_ENV",
    "GGUF_FILENAME",
    "PRESETS",
    "SMOLLM2_NAME",
    "ConstraintOptions",
    "Preset",
    "SidecarDefaults",
    "TargetDefaults",
    "adapter_dir",
    "adapters_root",
    "attach_adapter",
    "cache_root",
    "ensure_smollm2",
    "get_preset",
    "load_base",
    "load_preset",
    "load_smollm2",
    "load_tokenizer",
    "locate_gguf",
    "models_dir",
    "sidecar_dtype",
    "sidecar_options",
    "sidecar_wave_defaults",
    "smollm2_dir",
    "target_call_again_below",
    "target_constraints",
    "target_decline_below",
    "target_defaults",
    "target_format",
]
