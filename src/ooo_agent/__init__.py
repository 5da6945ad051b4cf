"""ooo-agent: fast, safe LLM tool calling.

Declare tools with :func:`tool`, hand a model's turn to :class:`FastToolCaller`, get validated
calls dispatched to your functions. White-box targets decode calls with lossless tree
speculation (ToolSpec) joined by a sidecar model's out-of-order hints (OoO-Spec).

``import ooo_agent`` never imports torch: ``HFTarget``, ``HFSidecar`` and the other heavy
classes are loaded on first attribute access.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ooo_agent.agent import Agent, AgentResult
from ooo_agent.caller import DispatchMode, FastToolCaller
from ooo_agent.calls import (
    CallError,
    CallErrorKind,
    CallResult,
    CallStats,
    DecodeStats,
    ErrorDetail,
    RawCall,
    SidecarStats,
    SpeculationStats,
    ToolCall,
    ToolResult,
)
from ooo_agent.errors import (
    FormatError,
    ModelNotAvailableError,
    OooAgentError,
    RetryBudgetExceeded,
    SidecarError,
    TargetError,
    ToolDefinitionError,
    ToolsetError,
)
from ooo_agent.sidecar.base import Hint, HintBox, Sidecar, SidecarRequest
from ooo_agent.targets.base import Generation, Target, TargetRequest
from ooo_agent.tools import Tool, ToolContext, Toolset, tool
from ooo_agent.tools.dispatch import dispatch
from ooo_agent.tools.validation import canonical_arguments, validate_call, validate_calls

if TYPE_CHECKING:
    from ooo_agent.sidecar.hf import HFSidecar
    from ooo_agent.sidecar.openai import OpenAISidecar
    from ooo_agent.targets.hf import HFTarget
    from ooo_agent.targets.openai import OpenAITarget

__version__ = "0.1.0"

_LAZY = {
    "HFSidecar": "ooo_agent.sidecar.hf",
    "HFTarget": "ooo_agent.targets.hf",
    "OpenAISidecar": "ooo_agent.sidecar.openai",
    "OpenAITarget": "ooo_agent.targets.openai",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ooo_agent' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "Agent",
    "AgentResult",
    "CallError",
    "CallErrorKind",
    "CallResult",
    "CallStats",
    "DecodeStats",
    "DispatchMode",
    "ErrorDetail",
    "FastToolCaller",
    "FormatError",
    "Generation",
    "HFSidecar",
    "HFTarget",
    "Hint",
    "HintBox",
    "ModelNotAvailableError",
    "OooAgentError",
    "OpenAISidecar",
    "OpenAITarget",
    "RawCall",
    "RetryBudgetExceeded",
    "Sidecar",
    "SidecarError",
    "SidecarRequest",
    "SidecarStats",
    "SpeculationStats",
    "Target",
    "TargetError",
    "TargetRequest",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolResult",
    "Toolset",
    "ToolsetError",
    "__version__",
    "canonical_arguments",
    "dispatch",
    "tool",
    "validate_call",
    "validate_calls",
]
