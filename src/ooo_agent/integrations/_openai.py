"""OpenAI-shaped views of a :class:`~ooo_agent.calls.CallResult`, shared by the integrations.

Pure functions over plain data: no framework imports, so both the LangChain chat model and the
HTTP server describe a turn the same way (finish reason, usage, OoO statistics).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ooo_agent.calls import CallResult, CallStats, ToolCall, ToolResult
from ooo_agent.targets.base import check_tool_choice, normalize_tool_choice
from ooo_agent.tools import Toolset

__all__ = [
    "finish_reason",
    "keep_first_call",
    "normalize_tool_choice",
    "preexecuted_results",
    "stats_header",
    "stats_summary",
    "stats_to_dict",
    "tools_for_choice",
    "usage",
]


def stats_to_dict(stats: CallStats) -> dict[str, Any]:
    """Every statistic of one call as JSON-ready data (derived means included)."""
    data = dataclasses.asdict(stats)
    data["decode"]["decode_steps"] = stats.decode.decode_steps
    data["decode"]["mean_accepted"] = round(stats.decode.mean_accepted, 4)
    return data


def stats_summary(stats: CallStats) -> dict[str, Any]:
    """The few numbers worth a response header: small, flat, ASCII."""
    decode = stats.decode
    return {
        "mode": decode.mode,
        "total_s": round(stats.total_s, 4),
        "generate_s": round(stats.generate_s, 4),
        "forward_passes": decode.forward_passes,
        "new_tokens": decode.new_tokens,
        "mean_accepted": round(decode.mean_accepted, 3),
        "sidecar": stats.sidecar.status,
    }


def stats_header(stats: CallStats) -> str:
    """:func:`stats_summary` as compact JSON, for the ``x-ooo-stats`` header."""
    return json.dumps(stats_summary(stats), separators=(",", ":"), ensure_ascii=True)


def usage(result: CallResult) -> dict[str, int]:
    """OpenAI ``usage`` (prompt / completion / total tokens) of one turn."""
    prompt = result.stats.decode.prompt_tokens
    completion = result.stats.decode.new_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def finish_reason(result: CallResult) -> str:
    """``tool_calls`` when the turn produced valid calls, ``length`` when the token budget
    cut it, else ``stop``."""
    if result.calls:
        return "tool_calls"
    if result.stats.decode.finish_reason == "length":
        return "length"
    return "stop"


def tools_for_choice(toolset: Toolset, choice: str | Mapping[str, Any]) -> Toolset:
    """The tools the model may see under ``choice``: none for ``"none"`` (so it can only answer
    in text), the named one for a named choice, all of them otherwise.

    Raises ``ValueError`` for a named tool that is not in the toolset, or ``"required"`` /
    a named choice with no tools at all.
    """
    choice = check_tool_choice(choice, toolset.names)
    if choice == "none":
        return Toolset(strict=toolset.strict)
    if isinstance(choice, dict):
        return Toolset([toolset[choice["function"]["name"]]], strict=toolset.strict)
    return toolset


def keep_first_call(result: CallResult) -> CallResult:
    """Honour ``parallel_tool_calls=False``: keep only the first valid call of the turn."""
    if len(result.calls) > 1:
        result.calls = result.calls[:1]
    return result


def preexecuted_results(result: CallResult) -> list[tuple[ToolCall, ToolResult]]:
    """The verified calls of a turn that a speculative pre-execution answered successfully,
    each with its result, in call order.

    Only results of calls still in ``result.calls`` count (``keep_first_call`` may have dropped
    some), and only successful ones: a failed pre-execution is left for the framework or client
    to run the tool (read-only tools are safe to run again) and handle the error its own way.
    """
    by_id = {r.call_id: r for r in result.results if r.speculative and r.ok}
    return [(call, by_id[call.id]) for call in result.calls if call.id in by_id]
