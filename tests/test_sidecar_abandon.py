"""``sidecar_timeout`` bounds a sidecar that ignores cancellation (one blocking in a worker
thread): the call goes on without it, and the stats say the wave was abandoned."""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.formats import HermesFormat
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
HANG = 30.0
"""Seconds after which the blocked sidecar is released anyway (a guard, not a timing)."""


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers (read-only: the wave runs to pre-execute it)."""
    return a + b


class Blocking:
    """A sidecar whose wave blocks in a worker thread that cannot be cancelled."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        guard = threading.Timer(HANG, self.release.set)
        guard.daemon = True
        guard.start()

    def _block(self) -> None:
        self.entered.set()
        self.release.wait()

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        await anyio.to_thread.run_sync(self._block)  # not abandoned on cancel
        return Hint("add", {"a": 1, "b": 2}, complete=True)


class Slow:
    """A target that answers after the sidecar is inside its blocking thread, and a while."""

    format = HermesFormat()
    modes = ("vanilla",)

    def __init__(self, sidecar: Blocking) -> None:
        self.sidecar = sidecar

    async def generate(self, request: TargetRequest) -> Generation:
        await anyio.to_thread.run_sync(self.sidecar.entered.wait)
        await anyio.sleep(0.5)  # well past the 10 ms sidecar_timeout
        return Generation(CALL)


@pytest.mark.anyio
async def test_a_sidecar_blocking_past_its_timeout_is_abandoned() -> None:
    sidecar = Blocking()
    caller = FastToolCaller(Slow(sidecar), sidecar, mode="vanilla", sidecar_timeout=0.01)  # type: ignore[arg-type]
    result = await caller.call("What is 1 + 2?", [add])
    still_blocked = not sidecar.release.is_set()
    sidecar.release.set()
    assert still_blocked, "the call waited for the sidecar's thread"
    assert [r.value for r in result.results] == [3]
    assert result.stats.sidecar.status == "timeout"
    assert result.stats.sidecar.abandoned
    assert result.stats.sidecar.error == (
        "no answer within 0.01s; it ignored its cancellation and was abandoned"
    )


@pytest.mark.anyio
async def test_a_blocking_sidecar_is_abandoned_when_the_target_finishes_first() -> None:
    sidecar = Blocking()

    class AfterEntered(ReplayTarget):
        async def generate(self, request: TargetRequest) -> Generation:
            await anyio.to_thread.run_sync(sidecar.entered.wait)
            return await super().generate(request)

    caller = FastToolCaller(AfterEntered([CALL]), sidecar, mode="vanilla")  # type: ignore[arg-type]
    result = await caller.call("What is 1 + 2?", [add])
    still_blocked = not sidecar.release.is_set()
    sidecar.release.set()
    assert still_blocked, "the call waited for the sidecar's thread"
    assert [r.value for r in result.results] == [3]
    assert result.stats.sidecar.status == "late" and result.stats.sidecar.abandoned


@pytest.mark.anyio
async def test_a_sidecar_that_obeys_cancellation_is_not_abandoned() -> None:
    class Sleeps:
        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            await anyio.sleep(3600)
            return Hint()

    caller = FastToolCaller(ReplayTarget([CALL]), Sleeps(), mode="vanilla")  # type: ignore[arg-type]
    result = await caller.call("What is 1 + 2?", [add])
    assert [r.value for r in result.results] == [3]
    assert result.stats.sidecar.status == "late" and not result.stats.sidecar.abandoned
