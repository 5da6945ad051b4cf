"""Plain data that flows through a call: tool calls, errors, results and statistics.

Everything here is a frozen or plain dataclass with no behaviour beyond conversions, so
targets, sidecars, the caller and integrations can share it without importing each other.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "CallError",
    "CallErrorKind",
    "CallResult",
    "CallStats",
    "DecodeStats",
    "ErrorDetail",
    "RawCall",
    "SidecarStats",
    "SpeculationStats",
    "ToolCall",
    "ToolResult",
    "new_call_id",
]


def new_call_id() -> str:
    """A fresh id in OpenAI's shape (``call_`` + 24 hex characters)."""
    return "call_" + uuid.uuid4().hex[:24]


@dataclass(frozen=True)
class RawCall:
    """A call as the model wrote it, before validation.

    ``arguments`` is the JSON text (or an already-decoded object, as black-box APIs and
    parsers that decoded the whole call give it); ``raw`` is the source text when known.
    """

    name: str
    arguments: str | dict[str, Any] | Any
    id: str | None = None
    raw: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """A validated call: a known tool and arguments that satisfy its schema."""

    id: str
    name: str
    arguments: dict[str, Any]

    def arguments_json(self) -> str:
        """Compact JSON of the arguments, as OpenAI's ``function.arguments`` carries them."""
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))

    def to_openai(self) -> dict[str, Any]:
        """``{"id", "type": "function", "function": {"name", "arguments"}}``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json()},
        }


class CallErrorKind(str, Enum):
    """Why a model-produced call was rejected."""

    UNKNOWN_TOOL = "unknown_tool"
    MALFORMED_JSON = "malformed_json"
    SCHEMA_VIOLATION = "schema_violation"
    COERCION = "coercion"
    MALFORMED_CALL = "malformed_call"
    TOOL_CHOICE = "tool_choice"
    """The call (or its absence) breaks the request's ``tool_choice``."""
    MARKUP = "markup"
    """The reply holds the format's own markup outside a call (a tool-result echo, a stray
    call tag): not an answer, and not a call that could be read."""


@dataclass(frozen=True)
class ErrorDetail:
    """One problem inside a call's arguments, located by a JSON path (``$.items[2].qty``)."""

    path: str
    message: str


@dataclass(frozen=True)
class CallError:
    """A call the model attempted that cannot be dispatched, and why.

    ``message`` is written for the model: it is what a retry turn sends back.
    """

    kind: CallErrorKind
    message: str
    name: str | None = None
    call_id: str | None = None
    details: tuple[ErrorDetail, ...] = ()
    raw: str | None = None

    def to_message(self) -> dict[str, Any]:
        """A ``tool`` message (when the call had an id) or a ``user`` retry message."""
        if self.call_id is not None:
            return {"role": "tool", "tool_call_id": self.call_id, "content": self.message}
        return {"role": "user", "content": self.message}


@dataclass(frozen=True)
class ToolResult:
    """What a dispatched call returned, or the error it ended with."""

    call_id: str
    name: str
    value: Any = None
    error: str | None = None
    error_type: str | None = None
    elapsed_s: float = 0.0
    speculative: bool = False
    """True when the result came from a speculative pre-execution that the target confirmed."""

    @property
    def ok(self) -> bool:
        return self.error is None

    def content(self) -> str:
        """The text a model sees as the tool's answer."""
        if self.error is not None:
            return f"Error: {self.error}"
        if isinstance(self.value, str):
            return self.value
        try:
            return json.dumps(self.value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(self.value)

    def to_message(self) -> dict[str, Any]:
        """``{"role": "tool", "tool_call_id", "content"}``."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content()}


@dataclass
class DecodeStats:
    """What the target did for one call (all times in seconds)."""

    mode: str = "vanilla"
    prompt_tokens: int = 0
    prefill_tokens: int = 0
    """Prompt tokens actually run through the model (less than ``prompt_tokens`` on prefix reuse)."""
    cached_tokens: int = 0
    """Prompt tokens whose KV came from the target's prefix cache (``prompt_tokens -
    prefill_tokens`` on ``HFTarget``; :mod:`ooo_agent.decoding.prefix_cache`)."""
    cache_diverged_at: int | None = None
    """Prompt position where the best cached entry's tokens first differed from the prompt (an
    earlier turn rendered otherwise than the model wrote it, another question on the same
    tools); None when an entry was wholly a prefix of the prompt, or nothing was cached."""
    new_tokens: int = 0
    forward_passes: int = 0
    """Target forward passes for this call, the prefill included."""
    accepted_lengths: list[int] = field(default_factory=list)
    """Tokens committed by each decode step (accepted draft tokens + the target's own token)."""
    accepted_by_drafter: dict[str, int] = field(default_factory=dict)
    """Accepted draft tokens by the drafter that proposed them."""
    tree_nodes: list[int] = field(default_factory=list)
    prefill_s: float = 0.0
    decode_s: float = 0.0
    draft_s: float = 0.0
    finish_reason: str = ""
    constrained_tokens: int = 0
    """Tokens where constrained decoding (``HFTarget(constrain_names=True)`` /
    ``constrain_json=True``) wrote another token than the model's argmax, to keep a call's
    function name among the offered tools or its JSON well-formed."""
    call_probability: float | None = None
    """The target's probability, at its first token, of opening a call (set when it was asked:
    ``HFTarget(decline_below=...)``)."""
    declined: bool = False
    """The target answered without a call because ``call_probability`` was below its
    ``decline_below`` (``HFTarget``)."""

    @property
    def decode_steps(self) -> int:
        return len(self.accepted_lengths)

    @property
    def mean_accepted(self) -> float:
        """Mean tokens committed per decode step (1.0 for plain greedy)."""
        steps = self.accepted_lengths
        return sum(steps) / len(steps) if steps else 0.0


@dataclass
class SidecarStats:
    """What the sidecar did for one call."""

    status: str = "off"
    """``off`` (no wave) | ``running`` (only while the call is in progress) | ``ok`` |
    ``error`` | ``timeout`` | ``garbage`` | ``late`` (the target finished first; the wave was
    cancelled) | ``stopped`` (the target said its answer holds no call, so the wave was
    stopped; ``error`` says why)."""
    latency_s: float | None = None
    """From the request's arrival to the wave's last answer (None if it never finished)."""
    function_arrival_step: int | None = None
    """First target decode step whose drafts could use the predicted function (0: it landed
    before the first draft; ``k + 1``: it landed while step ``k`` was being verified)."""
    slot_arrival_steps: dict[str, int] = field(default_factory=dict)
    """The same, per slot value."""
    hint_tokens_accepted: int = 0
    function_from_target: bool = False
    """The hint's function is the one the target wrote, which the sidecar's index row had not
    named (it named another tool, or had not answered yet; ``WaveOptions.follow_target``)."""
    wait_s: float = 0.0
    """Time the target spent waiting for the sidecar: ~0 by design."""
    abandoned: bool = False
    """The wave ignored its cancellation (timed out, or the target had finished): it was left
    running in the background, its thread detached and its answer ignored; the call did not
    wait for it."""
    predicted: str | None = None
    """The wave's final hint as JSON, ``{"name": …, "arguments": {…}}`` (the slots it predicted
    a value for; ``name`` null when it chose no tool); None when the wave formed no hint."""
    dropped_slots: dict[str, str] = field(default_factory=dict)
    """Slot values dropped as invalid (not clean JSON data: NaN, a lone surrogate, ...), with
    the reason; ``function`` for a function name that is not clean text."""
    hint_dropped: str | None = None
    """Why the target's drafters gave the hint up mid-call (it could not be rendered or
    encoded); the call went on without it. None when the hint was used throughout."""
    error: str | None = None
    """Why the wave gave no hint: its fault, a timeout, or (``stopped``) the target's reason."""
    cached_tokens: int = 0
    """The wave's shared-prompt tokens (listing, conversation) whose KV came from the
    sidecar's prefix cache (in-process sidecars; ``HFSidecar.prefix_cache``)."""
    prefill_tokens: int = 0
    """The wave's shared-prompt tokens run through the sidecar's model (once per batch of
    rows, not per row): the new part of the prompt when the cache held the rest."""
    row_tokens: int = 0
    """Each row's own prompt tokens (its question) run after the shared part, all rows."""
    prefill_s: float = 0.0
    """The wave's time running shared-prompt tokens."""
    choice_s: float = 0.0
    """The wave's time choosing the tool (name scores, or a function-index row run first),
    prefill aside."""
    rows_s: float = 0.0
    """The wave's time answering argument rows, prefill aside."""


@dataclass
class SpeculationStats:
    """Speculative pre-execution of read-only tools for one call."""

    started: int = 0
    used: int = 0
    discarded: int = 0
    saved_s: float = 0.0


@dataclass
class CallStats:
    """Timings and counters of one :meth:`FastToolCaller.call`, from the request's arrival."""

    total_s: float = 0.0
    generate_s: float = 0.0
    validate_s: float = 0.0
    dispatch_s: float = 0.0
    decode: DecodeStats = field(default_factory=DecodeStats)
    sidecar: SidecarStats = field(default_factory=SidecarStats)
    speculation: SpeculationStats = field(default_factory=SpeculationStats)


@dataclass
class CallResult:
    """The outcome of one model turn: validated calls, their results, rejected calls, text."""

    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    errors: list[CallError] = field(default_factory=list)
    text: str = ""
    """Assistant text outside the calls (the whole answer when the model did not call a tool)."""
    raw_text: str = ""
    """The model's complete output."""
    stats: CallStats = field(default_factory=CallStats)

    @property
    def ok(self) -> bool:
        """True when no call was rejected and every dispatched call succeeded."""
        return not self.errors and all(r.ok for r in self.results)

    def assistant_message(self) -> dict[str, Any]:
        """The OpenAI-shaped assistant message for this turn (content + tool_calls)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [c.to_openai() for c in self.calls]
        return message

    def tool_messages(self) -> list[dict[str, Any]]:
        """Tool messages for the results, in call order, then retry messages for errors."""
        return [r.to_message() for r in self.results] + [e.to_message() for e in self.errors]
