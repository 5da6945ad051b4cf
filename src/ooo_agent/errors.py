"""The exceptions ooo-agent raises.

Errors that concern a single model-produced call (unknown tool, malformed JSON, schema
violation) are *values* (:class:`ooo_agent.CallError`), never exceptions: the caller keeps
working and reports them. Exceptions are for misuse of the API and for failures the caller
cannot turn into a result.

Tree::

    OooAgentError
    ├── ToolDefinitionError      a @tool function, model or schema that cannot be a tool
    ├── ToolsetError             duplicate names, unknown tool looked up by the program
    ├── FormatError              a chat/call format asked to do something it cannot
    ├── TargetError              a target model or endpoint failed (HTTP error, bad response)
    ├── SidecarError             a sidecar failed (only raised by sidecar APIs used directly)
    ├── ModelNotAvailableError   a preset / model file cannot be obtained
    ├── DatasetError             a benchmark / training data set cannot be obtained or read
    └── RetryBudgetExceeded      an agent's per-tool retry budget ran out
"""

from __future__ import annotations

__all__ = [
    "DatasetError",
    "FormatError",
    "ModelNotAvailableError",
    "OooAgentError",
    "RetryBudgetExceeded",
    "SidecarError",
    "TargetError",
    "ToolDefinitionError",
    "ToolsetError",
]


class OooAgentError(Exception):
    """Base class of every exception raised by ooo-agent."""


class ToolDefinitionError(OooAgentError, TypeError):
    """A function, pydantic model or schema cannot be turned into a tool."""


class ToolsetError(OooAgentError, KeyError):
    """A toolset was built or queried wrongly (duplicate names, unknown name)."""

    def __str__(self) -> str:  # KeyError quotes its message; we don't want that
        return str(self.args[0]) if self.args else ""


class FormatError(OooAgentError, ValueError):
    """A call format cannot render or parse what it was given."""


class TargetError(OooAgentError, RuntimeError):
    """The target model or endpoint failed to produce an answer."""


class SidecarError(OooAgentError, RuntimeError):
    """A sidecar backend failed."""


class ModelNotAvailableError(OooAgentError, RuntimeError):
    """A model preset or file cannot be obtained (offline, not installed, unknown name)."""


class DatasetError(OooAgentError, RuntimeError):
    """A benchmark or training data set cannot be obtained, or a file of one is malformed."""


class RetryBudgetExceeded(OooAgentError, RuntimeError):
    """An agent gave a tool more failed attempts than its retry budget allows."""
