"""OoO-Spec sidecars: a small model predicting a call's function and argument slots in one wave.

* :class:`HFSidecar` — in-process (transformers + peft), one batched generation per wave with
  the rows' shared prefix computed once (extra ``hf``);
* :class:`OpenAISidecar` — over an OpenAI-compatible ``/v1/completions`` server (vLLM with the
  adapter as a LoRA module, or ``ooo-agent serve-sidecar``);
* :mod:`ooo_agent.sidecar.rows` — the semantic-row prompts the adapter was trained on;
* :func:`tool_relevance` — the request's own words as a prior on the tool choice
  (``WaveOptions.relevance_weight``).

``HFSidecar`` is loaded on first attribute access, so importing this package stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ooo_agent.sidecar._wave import FunctionChoice, WaveOptions, WaveReport
from ooo_agent.sidecar.base import Hint, HintBox, Sidecar, SidecarRequest
from ooo_agent.sidecar.openai import OpenAISidecar
from ooo_agent.sidecar.prompts import PromptTemplate, chatml_prompt, template_from_tokenizer
from ooo_agent.sidecar.relevance import tool_relevance
from ooo_agent.sidecar.rows import SemanticRow, assemble_hint, build_wave_rows
from ooo_agent.sidecar.slots import SlotCheck, normalize_schema, slot_checker

if TYPE_CHECKING:
    from ooo_agent.sidecar.batch import SharedPrefixGenerator
    from ooo_agent.sidecar.hf import HFSidecar

_LAZY = {
    "HFSidecar": "ooo_agent.sidecar.hf",
    "SharedPrefixGenerator": "ooo_agent.sidecar.batch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ooo_agent.sidecar' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "FunctionChoice",
    "HFSidecar",
    "Hint",
    "HintBox",
    "OpenAISidecar",
    "PromptTemplate",
    "SemanticRow",
    "SharedPrefixGenerator",
    "Sidecar",
    "SidecarRequest",
    "SlotCheck",
    "WaveOptions",
    "WaveReport",
    "assemble_hint",
    "build_wave_rows",
    "chatml_prompt",
    "normalize_schema",
    "slot_checker",
    "template_from_tokenizer",
    "tool_relevance",
]
