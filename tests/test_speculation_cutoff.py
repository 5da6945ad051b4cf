"""Speculation ends the moment the target shows where it is going: a decline or its first call
naming another tool cancels the runs, and a run not started by then never starts."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.calls import SpeculationStats
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.tools import Toolset
from ooo_agent.tools.speculation import Speculator

GUARD = 10.0
"""Seconds a test target waits for a cancellation that should come at once (a hang guard)."""

started: list[str] = []
cancelled: list[str] = []
finished: list[str] = []


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up (slowly)."""
    started.append(f"lookup:{key}")
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        cancelled.append(f"lookup:{key}")
        raise
    finished.append(f"lookup:{key}")
    return key


@tool(read_only=True)
async def other(key: str) -> str:
    """Another read-only tool."""
    started.append(f"other:{key}")
    return key


TOOLS = Toolset([lookup, other])
OTHER_CALL = '<tool_call>\n{"name": "other", "arguments": {"key": "z"}}\n</tool_call>'


@pytest.fixture(autouse=True)
def _fresh() -> None:
    started.clear()
    cancelled.clear()
    finished.clear()


class Fast:
    """A sidecar predicting ``lookup(key="k")`` at once."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        box.set_function("lookup")
        box.set_slot("key", "k")
        box.finish()
        return box.snapshot()


@pytest.mark.anyio
@pytest.mark.parametrize("stop", ["discard", "close", "keep_only"])
async def test_a_run_cut_off_before_it_started_never_starts(stop: str) -> None:
    stats = SpeculationStats()
    async with anyio.create_task_group() as group:
        speculator = Speculator(TOOLS, group, stats=stats)
        assert speculator.offer(Hint("lookup", {"key": "k"}, complete=True))
        # The cut-off lands before the queued run had a turn.
        if stop == "discard":
            speculator.discard()
        elif stop == "close":
            speculator.close()
        else:
            speculator.keep_only("other")
        await anyio.sleep(0.01)
        speculator.discard()
    assert started == []
    assert stats.started == 1


@pytest.mark.anyio
async def test_nothing_starts_after_close_and_only_the_named_tool_after_keep_only() -> None:
    async with anyio.create_task_group() as group:
        named = Speculator(TOOLS, group)
        named.keep_only("other")
        assert not named.offer(Hint("lookup", {"key": "k"}, complete=True))
        assert named.offer(Hint("other", {"key": "z"}, complete=True))
        closed = Speculator(TOOLS, group)
        closed.close()
        assert not closed.offer(Hint("other", {"key": "y"}, complete=True))
    assert started == ["other:z"]


@pytest.mark.anyio
async def test_keep_only_cancels_a_running_speculation_of_another_tool() -> None:
    stats = SpeculationStats()
    async with anyio.create_task_group() as group:
        speculator = Speculator(TOOLS, group, stats=stats)
        assert speculator.offer(Hint("lookup", {"key": "k"}, complete=True))
        while not started:
            await anyio.sleep(0)
        speculator.keep_only("other")
    # The group ended: the run was cancelled, not awaited for its hour.
    assert started == cancelled == ["lookup:k"] and finished == []
    assert stats.discarded == 1


@pytest.mark.anyio
async def test_the_target_naming_another_tool_cancels_the_speculation_at_once() -> None:
    seen: dict[str, bool] = {}

    class NamesOther(ReplayTarget):
        """Writes ``other``'s call; reports the name once the speculation runs (as
        ``HFTarget``'s drafter does when the name is written), then checks it was cut off."""

        async def generate(self, request: TargetRequest) -> Generation:
            box = request.hint_box
            assert box is not None
            with anyio.move_on_after(GUARD):
                while not started:
                    await anyio.sleep(0)
            box.report_target_function("other")
            with anyio.move_on_after(GUARD):
                while not cancelled:
                    await anyio.sleep(0)
            seen["cut_off_while_decoding"] = cancelled == ["lookup:k"]
            return await super().generate(request)

    caller = FastToolCaller(NamesOther([OTHER_CALL]), Fast(), mode="vanilla")  # type: ignore[arg-type]
    result = await caller.call("Use the other tool on z", TOOLS)
    assert seen == {"cut_off_while_decoding": True}
    assert started == ["lookup:k", "other:z"] and finished == []
    assert [(r.name, r.value) for r in result.results] == [("other", "z")]
    assert result.stats.speculation.discarded == 1 and result.stats.speculation.used == 0


@pytest.mark.anyio
async def test_a_declining_target_with_a_fast_sidecar_runs_no_tool() -> None:
    class Declines(ReplayTarget):
        """Declines at its first token, once the sidecar's hint is in (``HFTarget``'s decline
        policy reports it through the box the same way)."""

        async def generate(self, request: TargetRequest) -> Generation:
            box = request.hint_box
            assert box is not None
            with anyio.move_on_after(GUARD):
                while box.finished_at is None:
                    await anyio.sleep(0)
            box.report_no_call("the target declined")
            return await super().generate(request)

    caller = FastToolCaller(Declines(["I cannot look that up."]), Fast(), mode="vanilla")  # type: ignore[arg-type]
    result = await caller.call("Look up k", TOOLS)
    assert result.calls == [] and result.text == "I cannot look that up."
    assert started == [] and result.stats.speculation.started == 0


@pytest.mark.slow
def test_the_embedded_target_writing_another_tool_cancels_the_speculation_mid_decode(
    embedded: tuple[object, object],
) -> None:
    """``HFTarget`` in ``ooo`` mode reports its call's name from the decode thread as soon as
    it is written: the speculation of the sidecar's other tool is cancelled while the target is
    still writing the arguments, not after its answer."""
    pytest.importorskip("torch")
    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = embedded
    order: list[str] = []

    class Recorded(HFTarget):
        async def generate(self, request: TargetRequest) -> Generation:
            generation = await super().generate(request)
            order.append("target answered")
            return generation

    @tool(read_only=True)
    async def get_weather(city: str) -> str:
        """Current weather for a city.

        Args:
            city: The city name.
        """
        return f"sunny in {city}"

    @tool(read_only=True)
    async def find_hotel(city: str) -> str:
        """Find a hotel in a city.

        Args:
            city: The city name.
        """
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            order.append("find_hotel cancelled")
            raise
        return "never"

    class PredictsHotel:
        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            box.set_function("find_hotel")
            box.set_slot("city", "Paris")
            box.finish()
            return box.snapshot()

    target = Recorded(model, tokenizer, "hermes")
    caller = FastToolCaller(target, PredictsHotel(), mode="ooo", max_new_tokens=64)  # type: ignore[arg-type]

    async def main() -> Any:
        return await caller.call("What is the weather in Paris?", [get_weather, find_hotel])

    result = anyio.run(main)
    assert [(c.name, c.arguments) for c in result.calls] == [("get_weather", {"city": "Paris"})]
    assert result.stats.sidecar.function_arrival_step == 0
    assert order == ["find_hotel cancelled", "target answered"]
    assert [r.value for r in result.results] == ["sunny in Paris"]
