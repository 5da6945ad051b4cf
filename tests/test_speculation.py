"""Speculative pre-execution: only read-only tools, only on an exact validated match."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

pytestmark = pytest.mark.anyio

STARTS: list[tuple[str, dict[str, Any], float]] = []
FINISHED: list[tuple[str, dict[str, Any]]] = []


@tool(read_only=True)
async def lookup(order_id: str, amount: float = 0.0) -> dict[str, Any]:
    """Read an order (slow API).

    Args:
        order_id: The order.
        amount: Some number.
    """
    STARTS.append(("lookup", {"order_id": order_id, "amount": amount}, time.perf_counter()))
    await anyio.sleep(0.3)
    FINISHED.append(("lookup", {"order_id": order_id, "amount": amount}))
    if order_id == "boom":
        raise RuntimeError("lookup failed")
    return {"order_id": order_id, "status": "shipped"}


@tool
async def refund(order_id: str) -> str:
    """Refund an order (has side effects).

    Args:
        order_id: The order.
    """
    STARTS.append(("refund", {"order_id": order_id}, time.perf_counter()))
    await anyio.sleep(0.05)
    return "refunded"


def call_text(name: str, args: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


class SlowTarget(ReplayTarget):
    """Decodes for ``decode_s`` seconds, then returns the recorded text; records when it ended."""

    def __init__(self, outputs: list[str], decode_s: float = 0.4) -> None:
        super().__init__(outputs)
        self.decode_s = decode_s
        self.ended_at = 0.0

    async def generate(self, request: TargetRequest) -> Generation:
        await anyio.sleep(self.decode_s)
        self.ended_at = time.perf_counter()
        return await super().generate(request)


class FixedSidecar:
    def __init__(self, name: str, slots: dict[str, Any], delay: float = 0.01) -> None:
        self.hint = Hint(name, slots, True)
        self.delay = delay

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        await anyio.sleep(self.delay)
        box.set_function(self.hint.function)
        for key, value in self.hint.slots.items():
            box.set_slot(key, value)
        box.finish()
        return self.hint


@pytest.fixture(autouse=True)
def _clear() -> None:
    STARTS.clear()
    FINISHED.clear()


async def run(output: str, sidecar: FixedSidecar, decode_s: float = 0.4, **kw: Any) -> Any:
    target = SlowTarget([output], decode_s)
    caller = FastToolCaller(target, sidecar, **kw)
    result = await caller.call([{"role": "user", "content": "?"}], [lookup, refund])
    return target, result


async def test_correct_hint_runs_the_tool_during_decoding_and_uses_it() -> None:
    target, result = await run(call_text("lookup", '{"order_id": "A1"}'), FixedSidecar("lookup", {"order_id": "A1"}))
    assert len(STARTS) == 1 and STARTS[0][2] < target.ended_at  # started before the call existed
    assert result.results[0].speculative and result.results[0].value["status"] == "shipped"
    assert result.results[0].call_id == result.calls[0].id
    spec = result.stats.speculation
    assert (spec.started, spec.used, spec.discarded) == (1, 1, 0)
    assert spec.saved_s >= 0.25
    assert result.stats.dispatch_s < 0.1  # nothing left to wait for


async def test_tool_without_read_only_is_never_started_early() -> None:
    target, result = await run(call_text("refund", '{"order_id": "A1"}'), FixedSidecar("refund", {"order_id": "A1"}))
    assert [s[0] for s in STARTS] == ["refund"]
    assert STARTS[0][2] >= target.ended_at
    assert not result.results[0].speculative and result.stats.speculation.started == 0


async def test_misprediction_is_cancelled_and_never_seen() -> None:
    # Decoding ends while the mispredicted lookup (0.3 s) is still running.
    _, result = await run(
        call_text("lookup", '{"order_id": "B2"}'), FixedSidecar("lookup", {"order_id": "A1"}), decode_s=0.1
    )
    assert [s[1]["order_id"] for s in STARTS] == ["A1", "B2"]
    await anyio.sleep(0.4)
    assert ("lookup", {"order_id": "A1", "amount": 0.0}) not in FINISHED  # cancelled mid-flight
    assert [r.value["order_id"] for r in result.results] == ["B2"]
    assert not result.results[0].speculative
    assert "A1" not in str(result.tool_messages()) and "A1" not in str(result.assistant_message())
    spec = result.stats.speculation
    assert (spec.started, spec.used, spec.discarded) == (1, 0, 1)


async def test_speculative_exception_hidden_unless_the_same_call_is_verified() -> None:
    _, wrong = await run(call_text("lookup", '{"order_id": "A1"}'), FixedSidecar("lookup", {"order_id": "boom"}))
    assert wrong.results[0].ok and wrong.results[0].value["order_id"] == "A1"
    _, same = await run(call_text("lookup", '{"order_id": "boom"}'), FixedSidecar("lookup", {"order_id": "boom"}))
    assert not same.results[0].ok and "lookup failed" in (same.results[0].error or "")
    assert same.results[0].speculative


@pytest.mark.parametrize(
    ("hinted", "written", "matches"),
    [
        ({"amount": 1, "order_id": "A1"}, '{"order_id": "A1", "amount": 1.0}', True),
        ({"order_id": "A1", "amount": 2}, '{"amount": 2, "order_id": "A1"}', True),
        ({"order_id": "A1", "amount": 2}, '{"order_id": "A1", "amount": 3}', False),
        ({"order_id": "A1"}, '{"order_id": "a1"}', False),
    ],
)
async def test_equality_is_on_canonical_validated_arguments(
    hinted: dict[str, Any], written: str, matches: bool
) -> None:
    _, result = await run(call_text("lookup", written), FixedSidecar("lookup", hinted))
    assert result.results[0].speculative is matches
    assert result.stats.speculation.used == int(matches)


async def test_parallel_calls_match_a_speculation_at_most_once() -> None:
    text = call_text("lookup", '{"order_id": "A1"}') + "\n" + call_text("lookup", '{"order_id": "A1"}')
    # Changed: identical calls of a turn now run once and share the result (dispatch's
    # dedupe), so the speculation answers both and nothing else runs.
    _, result = await run(text, FixedSidecar("lookup", {"order_id": "A1"}))
    assert [r.speculative for r in result.results] == [True, True]
    assert len({r.call_id for r in result.results}) == 2
    assert len(STARTS) == 1
    # A tool that opts out of dedupe: the speculation answers one call; the other runs.
    STARTS.clear()
    lookup_each = tool(name="lookup", read_only=True, dedupe=False)(lookup.__wrapped__)
    caller = FastToolCaller(SlowTarget([text]), FixedSidecar("lookup", {"order_id": "A1"}))
    result = await caller.call([{"role": "user", "content": "?"}], [lookup_each, refund])
    assert [r.speculative for r in result.results] == [True, False]
    assert len({r.call_id for r in result.results}) == 2
    assert len(STARTS) == 2


async def test_incomplete_or_invalid_hint_starts_nothing() -> None:
    await run(call_text("lookup", '{"order_id": "A1"}'), FixedSidecar("lookup", {"amount": 3}))
    await run(call_text("lookup", '{"order_id": "A1"}'), FixedSidecar("lookup", {"order_id": 5, "x": 1}))
    assert len(STARTS) == 2 and all(s[1]["order_id"] == "A1" for s in STARTS)


async def test_preexecute_can_be_switched_off() -> None:
    _, result = await run(
        call_text("lookup", '{"order_id": "A1"}'), FixedSidecar("lookup", {"order_id": "A1"}), preexecute=False
    )
    assert result.stats.speculation.started == 0 and not result.results[0].speculative


async def test_dispatch_false_never_preexecutes() -> None:
    target = SlowTarget([call_text("lookup", '{"order_id": "A1"}')])
    caller = FastToolCaller(target, FixedSidecar("lookup", {"order_id": "A1"}))
    result = await caller.call([], [lookup], dispatch=False)
    assert not STARTS and result.stats.speculation.started == 0
