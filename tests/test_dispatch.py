"""dispatch(): concurrency, threads for sync tools, timeouts, errors, barriers, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anyio
import pytest

from ooo_agent.calls import ToolCall
from ooo_agent.tools import Tool, Toolset, tool
from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.dispatch import dispatch

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def call(name: str, call_id: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id or f"call_{name}", name=name, arguments=arguments)


@tool
async def nap(seconds: float, label: str = "") -> str:
    await anyio.sleep(seconds)
    return label or "slept"


@tool
def block(seconds: float) -> str:
    time.sleep(seconds)  # a blocking library call
    return "blocked"


@tool
def explode(message: str) -> str:
    raise ValueError(message)


async def test_parallel_async_tools_overlap() -> None:
    started = time.perf_counter()
    results = await dispatch(
        [call("nap", "a", seconds=0.2, label="A"), call("nap", "b", seconds=0.2, label="B")],
        [nap],
    )
    elapsed = time.perf_counter() - started
    assert elapsed < 0.35
    assert [(r.call_id, r.value) for r in results] == [("a", "A"), ("b", "B")]
    assert all(r.ok and r.elapsed_s >= 0.2 for r in results)


async def test_sync_tools_run_in_threads_and_do_not_block_the_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        started = time.perf_counter()
        results = await dispatch([call("block", "x", seconds=0.3), call("block", "y", seconds=0.3)],
                                 [block])
        elapsed = time.perf_counter() - started
        group.cancel_scope.cancel()
    assert [r.value for r in results] == ["blocked", "blocked"]
    assert elapsed < 0.55  # the two blocking calls ran side by side
    assert ticks >= 8  # the loop kept running while both threads blocked


async def test_exceptions_become_results_and_others_still_run() -> None:
    results = await dispatch(
        [call("explode", "e", message="bad input"), call("nap", "n", seconds=0.01)],
        [explode, nap],
    )
    assert (results[0].error, results[0].error_type, results[0].ok) == (
        "bad input", "ValueError", False
    )
    assert results[1].ok and results[1].value == "slept"


async def test_timeouts_become_results() -> None:
    release = threading.Event()

    @tool(timeout=0.1)
    async def slow_async() -> str:
        await anyio.sleep(5)
        return "late"

    @tool(timeout=0.1)
    def slow_sync() -> str:
        release.wait(5)
        return "late"

    started = time.perf_counter()
    try:
        results = await dispatch([call("slow_async"), call("slow_sync")], [slow_async, slow_sync])
    finally:
        release.set()  # let the abandoned worker thread finish
    assert time.perf_counter() - started < 1.0
    for result in results:
        assert (result.error, result.error_type) == ("timed out after 0.1s", "TimeoutError")


async def test_default_timeout_and_a_tool_own_timeout_error() -> None:
    @tool
    async def own_timeout() -> str:
        raise TimeoutError("upstream took too long")

    results = await dispatch(
        [call("nap", seconds=1.0), call("own_timeout")], [nap, own_timeout], default_timeout=0.05
    )
    assert results[0].error == "timed out after 0.05s"
    assert (results[1].error, results[1].error_type) == ("upstream took too long", "TimeoutError")


async def test_sequential_tool_is_a_barrier() -> None:
    events: list[tuple[str, str, float]] = []

    @tool
    async def work(label: str) -> str:
        events.append(("start", label, time.perf_counter()))
        await anyio.sleep(0.05)
        events.append(("end", label, time.perf_counter()))
        return label

    @tool(sequential=True)
    async def commit(label: str) -> str:
        return await work(label)

    calls = [call("work", "1", label="a"), call("work", "2", label="b"),
             call("commit", "3", label="SEQ"), call("work", "4", label="c"),
             call("work", "5", label="d")]
    results = await dispatch(calls, [work, commit])
    assert [r.value for r in results] == ["a", "b", "SEQ", "c", "d"]
    order = [(kind, label) for kind, label, _ in events]
    seq_start, seq_end = order.index(("start", "SEQ")), order.index(("end", "SEQ"))
    assert seq_end == seq_start + 1  # nothing ran while it ran
    assert {label for _, label in order[:seq_start]} == {"a", "b"}  # everything before finished
    assert {label for _, label in order[seq_end + 1 :]} == {"c", "d"}  # nothing after started
    assert order[:2] == [("start", "a"), ("start", "b")]  # the others still overlap


async def test_cancellation_leaves_no_task_running() -> None:
    started: list[str] = []
    cancelled: list[str] = []
    finished: list[str] = []

    @tool
    async def wait(label: str) -> str:
        started.append(label)
        try:
            await anyio.sleep(5)
        except anyio.get_cancelled_exc_class():
            cancelled.append(label)
            raise
        finished.append(label)
        return label

    tasks_before = len(asyncio.all_tasks())
    with anyio.move_on_after(0.1) as scope:
        await dispatch([call("wait", "a", label="a"), call("wait", "b", label="b")], [wait])
    assert scope.cancelled_caught
    await anyio.sleep(0.05)
    assert sorted(started) == sorted(cancelled) == ["a", "b"]
    assert finished == []
    assert len(asyncio.all_tasks()) == tasks_before


async def test_unknown_and_schema_only_tools_and_call_order() -> None:
    schema_only = Tool.from_openai({"name": "remote", "parameters": {}})
    results = await dispatch(
        [call("remote", "r"), call("ghost", "g"), call("nap", "n", seconds=0.0)],
        Toolset([schema_only, nap]),
    )
    assert [r.call_id for r in results] == ["r", "g", "n"]
    assert results[0].error == "tool has no handler"
    assert results[1].error is not None and "ghost" in results[1].error
    assert results[2].ok
    assert await dispatch([], [nap]) == []


async def test_context_factory_and_default_context() -> None:
    @tool
    async def whoami(ctx: ToolContext) -> tuple[str, str, int]:
        return ctx.call_id, ctx.tool_name, len(ctx.messages)

    messages = [{"role": "user", "content": "hi"}]

    def factory(c: ToolCall) -> ToolContext:
        return ToolContext(call_id=c.id, tool_name=c.name, messages=messages)

    with_factory = await dispatch([call("whoami", "c1")], [whoami], context_factory=factory)
    assert with_factory[0].value == ("c1", "whoami", 1)
    default = await dispatch([call("whoami", "c2")], [whoami])
    assert default[0].value == ("c2", "whoami", 0)

    def broken(c: ToolCall) -> ToolContext:
        raise RuntimeError("no context today")

    failed = await dispatch([call("whoami", "c3")], [whoami], context_factory=broken)
    assert (failed[0].error, failed[0].error_type) == ("no context today", "RuntimeError")


async def test_bound_method_tools_dispatch() -> None:
    class Store:
        def __init__(self) -> None:
            self.items: list[str] = []

        @tool
        def put(self, item: str) -> int:
            self.items.append(item)
            return len(self.items)

        @tool
        async def count(self) -> int:
            return len(self.items)

    store = Store()
    results = await dispatch(
        [call("put", "p", item="x"), call("count", "c")], [store.put, store.count]
    )
    assert results[0].value == 1 and results[1].ok and store.items == ["x"]
