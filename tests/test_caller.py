"""FastToolCaller: composition, sidecar fault handling and stats, on a replayed target."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import anyio.to_thread
import pytest

from ooo_agent import CallErrorKind, FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.rules import Rule, RuledTools, rules_named
from ooo_agent.targets.base import Generation, Mode, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

pytestmark = pytest.mark.anyio

CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


@tool(read_only=True)
def look_up(key: str) -> str:
    """Look a key up (read-only: the wave's hint may pre-execute it)."""
    return key.upper()


@tool
async def slow_echo(text: str) -> str:
    """Echo after a pause."""
    await anyio.sleep(0.05)
    return text


class SpeculativeReplay(ReplayTarget):
    """A replay target that claims every mode and records what the hint box held."""

    def __init__(self, outputs: list[str], steps: int = 5, step_s: float = 0.02) -> None:
        super().__init__(outputs, cycle=True)
        self.steps, self.step_s = steps, step_s
        self.seen: list[Hint] = []

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla", "toolspec", "ooo")

    async def generate(self, request: TargetRequest) -> Generation:
        box = request.hint_box
        for step in range(self.steps):
            if box is not None:
                box.mark_step(step)
                self.seen.append(box.snapshot())
            await anyio.sleep(self.step_s)
        return await super().generate(request)


class ScriptedSidecar:
    def __init__(self, behaviour: str, delay: float = 0.0) -> None:
        self.behaviour, self.delay = behaviour, delay
        self.started = self.finished = self.cancelled = 0

    async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
        self.started += 1
        try:
            await anyio.sleep(self.delay)
            if self.behaviour == "raise":
                raise RuntimeError("sidecar exploded")
            if self.behaviour == "garbage":
                return {"not": "a hint"}
            if self.behaviour == "unknown":
                return Hint("no_such_tool", {}, True)
            box.set_function("add")
            box.set_slot("a", 1)
            box.set_slot("b", 2)
            box.finish()
            self.finished += 1
            return box.snapshot()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


async def test_call_validates_and_dispatches() -> None:
    caller = FastToolCaller(ReplayTarget([CALL]))
    result = await caller.call([{"role": "user", "content": "1+2"}], [add])
    assert [c.name for c in result.calls] == ["add"]
    assert result.calls[0].arguments == {"a": 1, "b": 2}
    assert result.results[0].value == 3 and result.ok
    assert result.stats.total_s >= result.stats.generate_s > 0
    assert result.assistant_message()["tool_calls"][0]["function"]["name"] == "add"
    assert result.tool_messages()[0]["content"] == "3"


async def test_dispatch_false_returns_calls_only() -> None:
    result = await FastToolCaller(ReplayTarget([CALL])).call([], [add], dispatch=False)
    assert result.calls and not result.results


async def test_model_errors_are_values_not_exceptions() -> None:
    outputs = [
        '<tool_call>\n{"name": "mul", "arguments": {"a": 1}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": "x"}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, \n</tool_call>',
        "Just some prose, no call.",
    ]
    caller = FastToolCaller(ReplayTarget(outputs))
    kinds = []
    for _ in outputs:
        result = await caller.call([{"role": "user", "content": "?"}], [add])
        kinds.append([e.kind for e in result.errors])
        assert not result.results
    assert kinds[0] == [CallErrorKind.UNKNOWN_TOOL]
    assert kinds[1] and kinds[1][0] in (CallErrorKind.SCHEMA_VIOLATION, CallErrorKind.COERCION)
    assert kinds[2] and kinds[2][0] in (CallErrorKind.MALFORMED_JSON, CallErrorKind.MALFORMED_CALL)
    assert kinds[3] == []


async def test_default_mode_follows_target_and_sidecar() -> None:
    assert FastToolCaller(ReplayTarget([])).mode == "vanilla"
    assert FastToolCaller(SpeculativeReplay([])).mode == "toolspec"
    assert FastToolCaller(SpeculativeReplay([]), ScriptedSidecar("ok")).mode == "ooo"
    with pytest.raises(ValueError):
        FastToolCaller(ReplayTarget([]), mode="ooo")
    with pytest.raises(ValueError):
        FastToolCaller(SpeculativeReplay([]), mode="ooo")


async def test_hint_reaches_target_while_it_decodes() -> None:
    target = SpeculativeReplay([CALL], steps=6, step_s=0.03)
    sidecar = ScriptedSidecar("ok", delay=0.05)
    result = await FastToolCaller(target, sidecar).call([], [add])
    assert result.stats.sidecar.status == "ok"
    # The first steps ran before the hint landed, the last ones saw it.
    assert target.seen[0].function is None
    assert target.seen[-1].function == "add" and dict(target.seen[-1].slots) == {"a": 1, "b": 2}
    arrival = result.stats.sidecar.function_arrival_step
    assert arrival is not None and arrival > 0
    assert result.stats.sidecar.latency_s is not None and result.stats.sidecar.latency_s >= 0.05
    # What the wave predicted, for the caller to show or log.
    assert json.loads(result.stats.sidecar.predicted or "null") == {
        "name": "add",
        "arguments": {"a": 1, "b": 2},
    }


async def test_the_wave_request_says_whether_the_target_writes_named_optionals() -> None:
    class Recording(ScriptedSidecar):
        def __init__(self) -> None:
            super().__init__("ok")
            self.requests: list[SidecarRequest] = []

        async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
            self.requests.append(request)
            return await super().wave(request, box)

    seen = []
    for constrain in (None, True, False):
        target = SpeculativeReplay([CALL], steps=1, step_s=0.0)
        if constrain is not None:  # a target with rules of its own, all or none
            target.rules = rules_named(["mentioned", "values"] if constrain else [])  # type: ignore[attr-defined]
        sidecar = Recording()
        await FastToolCaller(target, sidecar).call([], [add])
        (request,) = sidecar.requests
        seen.append((request.named_optionals, request.value_conventions))
    # Unknown for a target without rules; its rules where it has them. Value conventions only
    # where the target is known to hold values to them.
    assert seen == [(None, False), (True, True), (False, False)]


async def test_the_target_and_the_wave_read_one_ruling_made_once() -> None:
    class Counted(Rule):
        name = "counted"
        runs = 0

        def rewrite(self, ruled: RuledTools, tools: Any) -> Any:
            Counted.runs += 1
            return [{**tools[0], "seen": True}]

    class Recording(ScriptedSidecar):
        def __init__(self) -> None:
            super().__init__("ok")
            self.ruled: list[Any] = []

        async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
            self.ruled.append(request.ruled and request.ruled.tools)
            return await super().wave(request, box)

    class Ruled(SpeculativeReplay):
        rules = (Counted(),)

        async def generate(self, request: Any) -> Any:
            read.append(request.ruled.tools)
            return await super().generate(request)

    read: list[Any] = []
    sidecar = Recording()
    await FastToolCaller(Ruled([CALL], steps=1, step_s=0.0), sidecar).call([], [add])
    assert Counted.runs == 1
    assert read == sidecar.ruled and read[0][0].to_openai()["seen"] is True


@pytest.mark.parametrize(
    ("behaviour", "delay", "status"),
    [("raise", 0.0, "error"), ("garbage", 0.0, "garbage"), ("unknown", 0.0, "garbage"), ("ok", 5.0, "late")],
)
async def test_sidecar_faults_change_nothing(behaviour: str, delay: float, status: str) -> None:
    plain = await FastToolCaller(SpeculativeReplay([CALL]), mode="toolspec").call([], [add])
    sidecar = ScriptedSidecar(behaviour, delay)
    started = time.perf_counter()
    result = await FastToolCaller(SpeculativeReplay([CALL]), sidecar).call([], [add])
    assert time.perf_counter() - started < 2.0, "the call waited for a hanging sidecar"
    assert result.raw_text == plain.raw_text and result.calls[0].arguments == plain.calls[0].arguments
    assert result.results[0].value == 3
    assert result.stats.sidecar.status == status
    assert result.stats.sidecar.predicted is None  # no hint formed (or none in time)
    assert 0.0 <= result.stats.sidecar.wait_s < 0.5  # joining the wave never blocks the call
    if behaviour == "ok":  # hung past the call: cancelled, no task left behind
        assert sidecar.cancelled == 1 and sidecar.finished == 0


class NoCallReplay(SpeculativeReplay):
    """A target that says, at its first step, that its answer holds no call, then goes on
    writing; in a worker thread (as ``HFTarget`` decodes) or on the event loop."""

    def __init__(self, *, in_thread: bool) -> None:
        super().__init__(["No tool fits that, sorry."], steps=1, step_s=0.0)
        self.in_thread = in_thread
        self.wave_gone = threading.Event()
        self.saw_wave_gone: bool | None = None

    async def generate(self, request: TargetRequest) -> Generation:
        box = request.hint_box
        assert box is not None  # told in every mode a wave runs

        def decode() -> None:
            box.report_no_call("declined: no tool fits")
            # The rest of the answer: the wave must be gone before it ends.
            self.saw_wave_gone = self.wave_gone.wait(5.0)

        await anyio.sleep(0.02)  # the wave is under way
        if self.in_thread:
            await anyio.to_thread.run_sync(decode)
        else:
            box.report_no_call("declined: no tool fits")
            with anyio.move_on_after(5.0):
                while not self.wave_gone.is_set():
                    await anyio.sleep(0.005)
            self.saw_wave_gone = self.wave_gone.is_set()
        return await super().generate(request)


class Endless:
    """A sidecar whose wave never ends by itself."""

    def __init__(self, target: NoCallReplay) -> None:
        self.target = target

    async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
        try:
            box.set_function("look_up")
            await anyio.sleep_forever()
        finally:
            self.target.wave_gone.set()


@pytest.mark.parametrize("in_thread", [True, False])
@pytest.mark.parametrize(("mode", "preexecute"), [("ooo", False), ("toolspec", True)])
async def test_the_wave_stops_when_the_target_says_no_call_will_come(
    in_thread: bool, mode: Mode, preexecute: bool
) -> None:
    target = NoCallReplay(in_thread=in_thread)
    caller = FastToolCaller(target, Endless(target), mode=mode, preexecute=preexecute)
    result = await caller.call([{"role": "user", "content": "Tell me a joke"}], [add, look_up])
    assert target.saw_wave_gone is True  # stopped while the target was still writing
    assert result.stats.sidecar.status == "stopped"
    assert result.stats.sidecar.error == "declined: no tool fits"
    assert result.stats.sidecar.predicted is None
    assert result.stats.speculation.started == 0
    assert result.text == "No tool fits that, sorry." and not result.calls


async def test_what_a_hint_started_is_dropped_when_no_call_will_come() -> None:
    looked_up: list[str] = []

    @tool(read_only=True)
    async def slow_look_up(key: str) -> str:
        """Look a key up, slowly."""
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            looked_up.append("cancelled")
            raise
        return key

    class QuickHint:
        async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
            box.set_function("slow_look_up")
            box.set_slot("key", "k1")
            box.finish()
            return box.snapshot()

    class LateNoCall(SpeculativeReplay):
        async def generate(self, request: TargetRequest) -> Generation:
            box = request.hint_box
            assert box is not None
            await anyio.sleep(0.05)  # the hint has landed and its tool started
            box.report_no_call("declined")
            with anyio.move_on_after(5.0):
                while not looked_up:
                    await anyio.sleep(0.005)
            self.cancelled_while_writing = bool(looked_up)
            return await super().generate(request)

    target = LateNoCall(["No call."], steps=0)
    caller = FastToolCaller(target, QuickHint(), mode="ooo", preexecute=True)
    result = await caller.call([{"role": "user", "content": "hi"}], [slow_look_up])
    assert target.cancelled_while_writing  # dropped at the report, not at the call's end
    assert result.stats.sidecar.status == "ok"  # the wave had finished before the report
    assert (result.stats.speculation.started, result.stats.speculation.discarded) == (1, 1)
    assert not result.calls and not result.results


def test_the_hint_box_tells_no_call_once() -> None:
    box = HintBox()
    heard: list[str] = []
    box.on_no_call(heard.append)
    box.on_no_call(lambda reason: 1 / 0)  # a listener's fault is ignored
    box.on_no_call(heard.append)
    assert box.no_call is None
    box.report_no_call("first")
    box.report_no_call("second")  # only the first report counts
    assert box.no_call == "first" and heard == ["first", "first"]
    box.on_no_call(heard.append)  # told at once, once it is known
    assert heard == ["first", "first", "first"]


async def test_sidecar_timeout_is_recorded() -> None:
    target = SpeculativeReplay([CALL], steps=10, step_s=0.02)
    caller = FastToolCaller(target, ScriptedSidecar("ok", delay=1.0), sidecar_timeout=0.05)
    result = await caller.call([], [add])
    assert result.stats.sidecar.status == "timeout"
    assert result.results[0].value == 3


async def test_no_threads_or_tasks_leak_after_many_calls() -> None:
    import asyncio

    before = threading.active_count()
    tasks_before = len(asyncio.all_tasks())
    sidecar = ScriptedSidecar("ok", delay=1.0)
    caller = FastToolCaller(SpeculativeReplay([CALL], steps=1, step_s=0.0), sidecar)
    for _ in range(5):
        result = await caller.call([], [add, slow_echo])
        assert result.stats.sidecar.status == "late"
    await anyio.sleep(0.05)
    # Every late wave was cancelled, no task outlives its call, and anyio's worker threads
    # are pooled: at most a couple may be kept idle.
    assert sidecar.cancelled == 5
    assert len(asyncio.all_tasks()) == tasks_before
    assert threading.active_count() <= before + 2


async def test_tools_asking_for_context_get_the_conversation_and_deps() -> None:
    from ooo_agent import ToolContext

    seen: list[ToolContext] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Report the caller's context."""
        seen.append(ctx)
        return ctx.deps["user"]

    caller = FastToolCaller(
        ReplayTarget(['<tool_call>\n{"name": "whoami", "arguments": {}}\n</tool_call>']), deps={"user": "ada"}
    )
    messages = [{"role": "user", "content": "who am I?"}]
    result = await caller.call(messages, [whoami])
    assert result.results[0].value == "ada"
    assert seen[0].call_id == result.calls[0].id and list(seen[0].messages) == messages
    assert "ctx" not in str(whoami.to_openai())
