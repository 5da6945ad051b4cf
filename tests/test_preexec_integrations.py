"""Speculative pre-execution outside ``dispatch=True``: ``dispatch="speculated"``, the LangChain
model (+ its ``speculative_tools`` in LangGraph), the OpenAI-compatible server, and ``Agent.run``.

A fake slow target decodes for a while, a fake sidecar predicts a fixed call at once, and the
tools record when they start and finish, so "started before the target finished" and "ran once"
are measured, not assumed.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.agent import Agent
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

pytestmark = pytest.mark.anyio

TOOL_S = 0.25  # how long a tool runs
DECODE_S = 0.35  # how long the fake target decodes (longer: a correct speculation finishes first)
HINT_WAIT_S = 5.0  # how long past DECODE_S it waits for a wave that has not landed

STARTS: list[tuple[str, dict[str, Any], float]] = []
FINISHED: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    STARTS.clear()
    FINISHED.clear()


def call_text(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class SlowTarget(ReplayTarget):
    """Decodes for ``decode_s`` seconds, and past that until the sidecar's wave has landed
    (at most ``HINT_WAIT_S``), then answers with the next output; records when each generation
    ended.

    The fixed sidecars here answer in 0.01 s, but on a loaded machine the event loop can stall
    long enough for the target's timer to fire before the wave's task has even started; a
    real decode that short would then finish before any hint, and there would be nothing to
    pre-execute. Waiting for the wave keeps these tests about what happens once it lands."""

    def __init__(self, outputs: list[str], decode_s: float = DECODE_S) -> None:
        super().__init__(outputs)
        self.decode_s = decode_s
        self.ended_at: list[float] = []

    async def generate(self, request: TargetRequest) -> Generation:
        await anyio.sleep(self.decode_s)
        with anyio.move_on_after(HINT_WAIT_S):
            while request.hint_box is not None and not request.hint_box.snapshot().complete:
                await anyio.sleep(0.005)
        self.ended_at.append(time.perf_counter())
        return await super().generate(request)


class FixedSidecar:
    """Predicts one fixed call, at once, when the last message is the user's (a later turn,
    answering tool results, gets no prediction)."""

    def __init__(self, name: str, slots: dict[str, Any]) -> None:
        self.hint = Hint(name, slots, True)

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        await anyio.sleep(0.01)
        if request.messages[-1].get("role") != "user":
            box.finish()
            return Hint(None, {}, True)
        box.set_function(self.hint.function)
        for key, value in self.hint.slots.items():
            box.set_slot(key, value)
        box.finish()
        return self.hint


async def _slow_lookup(order_id: str) -> str:
    STARTS.append(("lookup", {"order_id": order_id}, time.perf_counter()))
    await anyio.sleep(TOOL_S)
    FINISHED.append(("lookup", {"order_id": order_id}))
    return f"order {order_id}: shipped"


async def _refund(order_id: str) -> str:
    STARTS.append(("refund", {"order_id": order_id}, time.perf_counter()))
    await anyio.sleep(0.01)
    return f"refunded {order_id}"


@tool(read_only=True)
async def lookup(order_id: str) -> str:
    """Read an order (slow API).

    Args:
        order_id: The order.
    """
    return await _slow_lookup(order_id)


@tool
async def refund(order_id: str) -> str:
    """Refund an order (has side effects).

    Args:
        order_id: The order.
    """
    return await _refund(order_id)


def starts(name: str) -> list[str]:
    return [s[1]["order_id"] for s in STARTS if s[0] == name]


# ------------------------------------------------------------------ dispatch="speculated"
async def test_speculated_returns_only_answered_calls_and_runs_nothing_else() -> None:
    text = call_text("lookup", order_id="A1") + "\n" + call_text("lookup", order_id="B2")
    target = SlowTarget([text])
    caller = FastToolCaller(target, FixedSidecar("lookup", {"order_id": "A1"}))
    result = await caller.call(
        [{"role": "user", "content": "?"}], [lookup, refund], dispatch="speculated"
    )
    assert [c.arguments["order_id"] for c in result.calls] == ["A1", "B2"]
    (answered,) = result.results
    assert answered.call_id == result.calls[0].id and answered.speculative
    assert answered.value == "order A1: shipped"
    assert starts("lookup") == ["A1"]  # B2 was left to whoever runs the tools
    assert STARTS[0][2] < target.ended_at[0]
    spec = result.stats.speculation
    assert (spec.started, spec.used, spec.discarded) == (1, 1, 0)


async def test_speculated_misprediction_is_cancelled_and_nothing_returned() -> None:
    target = SlowTarget([call_text("lookup", order_id="B2")], decode_s=0.1)
    caller = FastToolCaller(target, FixedSidecar("lookup", {"order_id": "A1"}))
    result = await caller.call([{"role": "user", "content": "?"}], [lookup], dispatch="speculated")
    assert result.calls and result.results == []
    assert starts("lookup") == ["A1"]
    await anyio.sleep(TOOL_S + 0.1)
    assert FINISHED == []  # cancelled mid-flight
    assert (result.stats.speculation.used, result.stats.speculation.discarded) == (0, 1)


async def test_speculated_never_starts_a_tool_that_is_not_read_only() -> None:
    target = SlowTarget([call_text("refund", order_id="A1")])
    caller = FastToolCaller(target, FixedSidecar("refund", {"order_id": "A1"}))
    result = await caller.call([{"role": "user", "content": "?"}], [refund], dispatch="speculated")
    assert result.calls and result.results == [] and STARTS == []
    assert result.stats.speculation.started == 0


async def test_dispatch_rejects_unknown_settings() -> None:
    caller = FastToolCaller(ReplayTarget(["hi"]))
    with pytest.raises(ValueError, match="speculated"):
        await caller.call([{"role": "user", "content": "?"}], [lookup], dispatch="speculative")  # type: ignore[arg-type]


# -------------------------------------------------------------------------- Agent.run
async def test_agent_run_preexecutes_a_read_only_tool_and_uses_its_result() -> None:
    target = SlowTarget([call_text("lookup", order_id="A1"), "Order A1 has shipped."])
    agent = Agent(FastToolCaller(target, FixedSidecar("lookup", {"order_id": "A1"})))
    run = await agent.run("Where is order A1?", [lookup, refund])
    assert run.final_text == "Order A1 has shipped."
    assert starts("lookup") == ["A1"]  # ran once, for both the speculation and the call
    assert STARTS[0][2] < target.ended_at[0]  # before the target had written the call
    (result,) = run.results
    assert result.speculative and result.value == "order A1: shipped"
    first = run.stats.turns[0].speculation
    assert (first.started, first.used, first.discarded) == (1, 1, 0)
    assert first.saved_s > TOOL_S / 2
    tool_messages = [m for m in run.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["order A1: shipped"]
    # The second turn saw the pre-executed result as the call's answer.
    assert target.requests[1].messages[-1]["content"] == "order A1: shipped"


# ---------------------------------------------------------------------------- LangChain
try:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool

    from ooo_agent.integrations.langchain import (
        OoOChatModel,
        PreexecutedResults,
        PreexecutedTool,
        is_read_only,
    )
except ImportError:  # the langchain extra is not installed
    HAVE_LANGCHAIN = False
else:
    HAVE_LANGCHAIN = True
    lc_lookup = StructuredTool.from_function(
        coroutine=_slow_lookup,
        name="lookup",
        description="Read an order (slow API).",
        metadata={"read_only": True},
    )
    lc_refund = StructuredTool.from_function(
        coroutine=_refund, name="refund", description="Refund an order (has side effects)."
    )

needs_langchain = pytest.mark.skipif(not HAVE_LANGCHAIN, reason="needs the langchain extra")


def lc_model(
    outputs: list[str], hint: tuple[str, dict[str, Any]]
) -> tuple[OoOChatModel, SlowTarget]:
    target = SlowTarget(outputs)
    caller = FastToolCaller(target, FixedSidecar(*hint))
    return OoOChatModel(caller=caller, model_name="slow"), target


def tool_node(tools: list[BaseTool]) -> Any:
    """A one-node LangGraph graph running LangGraph's ``ToolNode`` over ``tools``."""
    pytest.importorskip("langgraph")
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


@needs_langchain
async def test_langchain_correct_hint_is_preexecuted_and_toolnode_reuses_it() -> None:
    model, target = lc_model([call_text("lookup", order_id="A1")], ("lookup", {"order_id": "A1"}))
    tools = model.speculative_tools([lc_lookup, lc_refund])
    assert isinstance(tools[0], PreexecutedTool) and tools[1] is lc_refund
    message = await model.bind_tools(tools).ainvoke("Where is order A1?")
    assert isinstance(message, AIMessage)
    (tool_call,) = message.tool_calls
    assert starts("lookup") == ["A1"] and STARTS[0][2] < target.ended_at[0]
    assert message.response_metadata["ooo_preexecuted"] == {tool_call["id"]: "order A1: shipped"}
    assert message.response_metadata["ooo_stats"]["speculation"]["used"] == 1
    assert len(model.preexecuted) == 1

    state = await tool_node(tools).ainvoke({"messages": [message]})
    answer = state["messages"][-1]
    assert isinstance(answer, ToolMessage)
    assert answer.content == "order A1: shipped" and answer.tool_call_id == tool_call["id"]
    assert starts("lookup") == ["A1"]  # answered from the pre-executed result, not run again
    assert len(model.preexecuted) == 0  # used once

    again = await tools[0].ainvoke({"order_id": "A1"})  # nothing kept now: the tool runs
    assert again == "order A1: shipped" and starts("lookup") == ["A1", "A1"]


@needs_langchain
async def test_langchain_wrong_hint_caches_nothing_and_the_tool_runs_once_via_toolnode() -> None:
    model, target = lc_model([call_text("lookup", order_id="B2")], ("lookup", {"order_id": "A1"}))
    target.decode_s = 0.1  # decoding ends while the mispredicted lookup still runs
    tools = model.speculative_tools([lc_lookup])
    message = await model.bind_tools(tools).ainvoke("Where is order B2?")
    assert "ooo_preexecuted" not in message.response_metadata
    assert len(model.preexecuted) == 0
    state = await tool_node(tools).ainvoke({"messages": [message]})
    assert state["messages"][-1].content == "order B2: shipped"
    assert starts("lookup") == ["A1", "B2"]  # the misprediction, then the real call once
    await anyio.sleep(TOOL_S + 0.1)
    assert ("lookup", {"order_id": "A1"}) not in FINISHED  # cancelled, never used


@needs_langchain
async def test_langchain_tool_without_read_only_is_never_started_early() -> None:
    model, target = lc_model([call_text("refund", order_id="A1")], ("refund", {"order_id": "A1"}))
    tools = model.speculative_tools([lc_lookup, lc_refund])
    message = await model.bind_tools(tools).ainvoke("Refund A1")
    assert STARTS == [] and "ooo_preexecuted" not in message.response_metadata
    assert message.response_metadata["ooo_stats"]["speculation"]["started"] == 0
    state = await tool_node(tools).ainvoke({"messages": [message]})
    assert state["messages"][-1].content == "refunded A1"
    assert starts("refund") == ["A1"] and STARTS[0][2] > target.ended_at[0]


@needs_langchain
async def test_langgraph_react_agent_with_speculative_tools_runs_the_tool_once() -> None:
    pytest.importorskip("langgraph")
    from langgraph.prebuilt import create_react_agent

    # Our own @tool(read_only=True) functions work too: converted to LangChain tools.
    model, target = lc_model(
        [call_text("lookup", order_id="A1"), "Order A1 has shipped."],
        ("lookup", {"order_id": "A1"}),
    )
    with warnings.catch_warnings():  # moved to langchain.agents, which is not installed here
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, model.speculative_tools([lookup, refund]))
    state = await agent.ainvoke({"messages": [HumanMessage("Where is order A1?")]})
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["order A1: shipped"]
    assert state["messages"][-1].content == "Order A1 has shipped."
    assert starts("lookup") == ["A1"] and STARTS[0][2] < target.ended_at[0]
    assert len(model.preexecuted) == 0


@needs_langchain
async def test_wrapped_tool_sync_invoke_answers_from_the_kept_result() -> None:
    results = PreexecutedResults()
    wrapped = PreexecutedTool.wrap(lc_lookup, results)
    results.put("lookup", {"order_id": "A1"}, "call_1", "kept answer")
    call = {"name": "lookup", "args": {"order_id": "A1"}, "id": "call_1", "type": "tool_call"}
    message = wrapped.invoke(call)
    assert isinstance(message, ToolMessage) and message.content == "kept answer"
    assert STARTS == [] and len(results) == 0


@needs_langchain
def test_preexecuted_results_are_single_use_bounded_and_expire() -> None:
    results = PreexecutedResults(max_entries=2, ttl_s=None)
    results.put("f", {"a": 1.0, "b": [1]}, "c1", "one")
    assert results.take("f", {"b": [1], "a": 1}) == ("one",)  # canonical equality
    assert results.take("f", {"a": 1, "b": [1]}) is None  # used once
    for i in range(3):
        results.put("f", {"i": i}, None, i)
    assert len(results) == 2 and results.take("f", {"i": 0}) is None  # oldest dropped
    results.put("f", {"i": 1}, "mine", "for me")
    assert results.take("f", {"i": 1}, "mine") == ("for me",)  # the call's own entry first
    expiring = PreexecutedResults(ttl_s=0.0)
    expiring.put("f", {}, None, 1)
    time.sleep(0.01)
    assert expiring.take("f", {}) is None


@needs_langchain
def test_read_only_detection() -> None:
    assert is_read_only(lc_lookup) and not is_read_only(lc_refund)
    assert is_read_only(lookup) and not is_read_only(refund)
    artifact = StructuredTool.from_function(
        coroutine=_slow_lookup,
        name="lookup",
        description="d",
        metadata={"read_only": True},
        response_format="content_and_artifact",
    )
    assert not is_read_only(artifact)  # the artifact could not be kept


# ------------------------------------------------------------------------------- server
try:
    import httpx
    import openai

    from ooo_agent.integrations.server import create_app
except ImportError:  # the server extra (or the openai client) is not installed
    HAVE_SERVER = False
else:
    HAVE_SERVER = True

needs_server = pytest.mark.skipif(not HAVE_SERVER, reason="needs the server extra and openai")

MODEL = "test-model"


@tool(read_only=True)
async def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: City name.
    """
    STARTS.append(("get_weather", {"order_id": city}, time.perf_counter()))
    await anyio.sleep(TOOL_S)
    FINISHED.append(("get_weather", {"order_id": city}))
    return f"sunny in {city}"


@tool
async def book_table(city: str) -> str:
    """Book a table (has side effects).

    Args:
        city: City name.
    """
    STARTS.append(("book_table", {"order_id": city}, time.perf_counter()))
    return "booked"


CLIENT_TOOLS = [get_weather.to_openai(), book_table.to_openai()]


def server_client(
    outputs: list[str], hint: tuple[str, dict[str, Any]], decode_s: float = DECODE_S
) -> tuple[Any, SlowTarget]:
    target = SlowTarget(outputs, decode_s)
    caller = FastToolCaller(target, FixedSidecar(*hint))
    app = create_app(caller, model_name=MODEL, server_tools=[get_weather, book_table])
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server")
    client = openai.AsyncOpenAI(
        base_url="http://server/v1", api_key="x", http_client=http, max_retries=0
    )
    return client, target


async def ask(client: Any, tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
    return await client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=tools or CLIENT_TOOLS,
        **kwargs,
    )


@needs_server
async def test_server_preexecutes_a_registered_read_only_tool() -> None:
    client, target = server_client(
        [call_text("get_weather", city="Paris")] * 2, ("get_weather", {"city": "Paris"})
    )
    completion = await ask(client)
    message = completion.choices[0].message
    (tool_call,) = message.tool_calls
    assert tool_call.function.name == "get_weather"
    # The official client keeps the extension field reachable.
    assert (message.model_extra or {})["ooo_tool_results"] == [
        {"tool_call_id": tool_call.id, "content": "sunny in Paris"}
    ]
    assert starts("get_weather") == ["Paris"] and STARTS[0][2] < target.ended_at[0]
    assert (completion.model_extra or {})["ooo"]["stats"]["speculation"]["used"] == 1

    # Streaming: the results come in the final chunk's delta.
    stream = await ask(client, stream=True)
    chunks = [chunk async for chunk in stream]
    final = chunks[-1].choices[0]
    assert final.finish_reason == "tool_calls"
    ids = [tc.id for c in chunks for tc in (c.choices[0].delta.tool_calls or []) if tc.id]
    assert (final.delta.model_extra or {})["ooo_tool_results"] == [
        {"tool_call_id": ids[0], "content": "sunny in Paris"}
    ]
    assert all(
        "ooo_tool_results" not in (c.choices[0].delta.model_extra or {}) for c in chunks[:-1]
    )


@needs_server
async def test_server_wrong_hint_returns_nothing() -> None:
    client, _ = server_client(
        [call_text("get_weather", city="Oslo")], ("get_weather", {"city": "Paris"}), decode_s=0.1
    )
    completion = await ask(client)
    message = completion.choices[0].message
    assert json.loads(message.tool_calls[0].function.arguments) == {"city": "Oslo"}
    assert "ooo_tool_results" not in (message.model_extra or {})
    assert starts("get_weather") == ["Paris"]  # the speculation; the real call is the client's
    await anyio.sleep(TOOL_S + 0.1)
    assert FINISHED == []  # cancelled


@needs_server
async def test_server_never_starts_a_tool_that_is_not_read_only() -> None:
    client, _ = server_client(
        [call_text("book_table", city="Paris")], ("book_table", {"city": "Paris"})
    )
    completion = await ask(client)
    message = completion.choices[0].message
    assert message.tool_calls[0].function.name == "book_table"
    assert STARTS == [] and "ooo_tool_results" not in (message.model_extra or {})


@needs_server
async def test_server_does_not_preexecute_when_the_client_schema_differs() -> None:
    client, _ = server_client(
        [call_text("get_weather", city="Paris")], ("get_weather", {"city": "Paris"})
    )
    changed = json.loads(json.dumps(CLIENT_TOOLS))
    changed[0]["function"]["parameters"]["properties"]["unit"] = {"type": "string"}
    completion = await ask(client, tools=changed)
    message = completion.choices[0].message
    assert message.tool_calls and STARTS == []
    assert "ooo_tool_results" not in (message.model_extra or {})


@needs_server
async def test_server_without_server_tools_is_unchanged() -> None:
    target = SlowTarget([call_text("get_weather", city="Paris")], decode_s=0.05)
    app = create_app(
        FastToolCaller(target, FixedSidecar("get_weather", {"city": "Paris"})), model_name=MODEL
    )
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://server")
    client = openai.AsyncOpenAI(
        base_url="http://server/v1", api_key="x", http_client=http, max_retries=0
    )
    message = (await ask(client)).choices[0].message
    assert message.tool_calls and STARTS == []
    assert "ooo_tool_results" not in (message.model_extra or {})


SERVE_TOOLS_MODULE = '''
from ooo_agent.tools import tool


@tool(read_only=True)
async def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: City name.
    """
    return f"sunny in {city}"
'''


@needs_server
async def test_serve_command_preexecutes_its_server_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ooo-agent serve --server-tools MODULE:ATTR`` end to end: the embedded target's default
    sidecar (a fake here) predicts the call, the module's read-only tool runs early, and the
    result the target confirms comes back in ``ooo_tool_results``."""
    from ooo_agent.cli import build_parser
    from ooo_agent.integrations import _serve

    (tmp_path / "serve_e2e_tools.py").write_text(SERVE_TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(_serve.API_KEY_ENV, raising=False)
    target = SlowTarget([call_text("get_weather", city="Paris")])
    sidecars: list[str] = []

    def load_sidecar(name: str) -> FixedSidecar:
        sidecars.append(name)
        return FixedSidecar("get_weather", {"city": "Paris"})

    monkeypatch.setattr(_serve, "load_preset_target", lambda name: target)
    monkeypatch.setattr(_serve, "load_preset_sidecar", load_sidecar)
    argv = ["serve", "--model-name", MODEL, "--server-tools", "serve_e2e_tools:get_weather"]
    built = _serve.build_app(build_parser().parse_args(argv))
    assert sidecars == ["smollm2-135m-sidecar"]

    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=built.app), base_url="http://server")
    client = openai.AsyncOpenAI(
        base_url="http://server/v1", api_key="x", http_client=http, max_retries=0
    )
    completion = await ask(client, tools=built.server_tools.to_openai())
    message = completion.choices[0].message
    (tool_call,) = message.tool_calls
    assert (message.model_extra or {})["ooo_tool_results"] == [
        {"tool_call_id": tool_call.id, "content": "sunny in Paris"}
    ]
    assert (completion.model_extra or {})["ooo"]["stats"]["speculation"]["used"] == 1
