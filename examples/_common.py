"""Shared by the examples: pick the model they run on, and say which on screen.

The examples run on the embedded SmolLM2-135M tool-calling model when it can be loaded
(``HFTarget.from_preset("smollm2-135m-toolcall")``: the ``hf`` extra and the trained adapter).
Otherwise they replay recorded outputs of that model with a ``ReplayTarget`` — everything after
the model (parsing, validation, dispatch, the agent loop, the server) still runs for real.

Set ``OOO_AGENT_EXAMPLES_REPLAY=1`` to skip the model and replay (fast, deterministic: CI).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ooo_agent.targets.base import Target, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

PRESET = "smollm2-135m-toolcall"
FORCE_REPLAY_ENV = "OOO_AGENT_EXAMPLES_REPLAY"


def replay_forced() -> bool:
    """True when the environment asks the examples to skip the embedded model."""
    return os.environ.get(FORCE_REPLAY_ENV, "").strip().lower() in ("1", "true", "yes")


def load_embedded() -> tuple[Target | None, str]:
    """The embedded target, or None and why it is unavailable."""
    if replay_forced():
        return None, f"{FORCE_REPLAY_ENV} is set"
    try:
        from ooo_agent.targets.hf import HFTarget

        return HFTarget.from_preset(PRESET), f"embedded model {PRESET}"
    except Exception as exc:  # no hf extra, no adapter, no model file: all mean "replay"
        return None, f"{type(exc).__name__}: {exc}"


def make_target(recorded: Sequence[str] | Callable[[TargetRequest], str]) -> tuple[Target, bool]:
    """The embedded target if it loads, else a ReplayTarget over ``recorded``.

    Prints which one runs. Returns ``(target, is_embedded)``.
    """
    target, reason = load_embedded()
    if target is not None:
        print(f"[target] {reason}")
        return target, True
    print(f"[target] replaying recorded model outputs (embedded model unavailable: {reason})")
    outputs = recorded if callable(recorded) else list(recorded)
    return ReplayTarget(outputs), False


def tool_call(name: str, arguments: str) -> str:
    """A recorded call as the embedded model writes it (Hermes format)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'
