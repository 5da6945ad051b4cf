"""OoOChatModel with the real langchain-core and LangGraph packages."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from pydantic import BaseModel, Field

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")
pytest.importorskip("langchain.agents")

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool as lc_tool

from ooo_agent import FastToolCaller
from ooo_agent import tool as ooo_tool
from ooo_agent.integrations.langchain import (
    OoOChatModel,
    run_sync,
    to_langchain_tools,
    to_openai_messages,
    toolset_from_langchain,
)
from ooo_agent.targets.base import TargetRequest
from ooo_agent.targets.replay import ReplayTarget


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@lc_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@lc_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def model_over(outputs: list[str]) -> tuple[OoOChatModel, ReplayTarget]:
    target = ReplayTarget(outputs)
    return OoOChatModel(caller=FastToolCaller(target), model_name="replay"), target


def create_react_agent(model: Any, tools: list[Any]) -> Any:
    """LangGraph's deprecated factory, still used by many; the pre-bound model path."""
    from langgraph.prebuilt import create_react_agent as factory

    with warnings.catch_warnings():  # deprecated for langchain.agents.create_agent
        warnings.simplefilter("ignore")
        return factory(model, tools)


def create_agent(model: Any, tools: list[Any]) -> Any:
    """LangChain 1.x's agent factory (the documented path), on LangGraph."""
    from langchain.agents import create_agent as factory

    return factory(model, tools)


def test_langgraph_react_agent_completes_two_tool_task() -> None:
    model, _ = model_over(
        [call("add", a=2, b=3), call("multiply", a=5, b=4), "(2 + 3) * 4 = 20"]
    )
    # Pre-bound: exercises LangGraph's check that the bound tools match the agent's tools.
    agent = create_react_agent(model.bind_tools([add, multiply]), [add, multiply])
    state = agent.invoke({"messages": [HumanMessage("What is (2 + 3) * 4?")]})
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["5", "20"]
    assert state["messages"][-1].content == "(2 + 3) * 4 = 20"


def test_create_agent_completes_two_tool_task() -> None:
    model, target = model_over(
        [call("add", a=2, b=3), call("multiply", a=5, b=4), "(2 + 3) * 4 = 20"]
    )
    agent = create_agent(model, [add, multiply])
    state = agent.invoke({"messages": [HumanMessage("What is (2 + 3) * 4?")]})
    messages = state["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["5", "20"]
    assert messages[-1].content == "(2 + 3) * 4 = 20"
    # The model's second turn received the first tool result as an OpenAI tool message.
    second = target.requests[1].messages
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "5"
    assert second[-2]["tool_calls"][0]["function"]["name"] == "add"


def test_langgraph_agent_binds_tools_itself_async() -> None:
    model, _ = model_over([call("add", a=1, b=1), "2"])
    agent = create_agent(model, [add, multiply])
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage("1+1")]}))
    assert state["messages"][-1].content == "2"


def test_langgraph_rejects_mismatched_binding() -> None:
    model, _ = model_over([])
    with pytest.raises(ValueError, match=r"must match|Missing tools"):
        create_react_agent(model.bind_tools([add]), [add, multiply])


class Weather(BaseModel):
    """Current weather in a city."""

    city: str = Field(description="City name")


def weather_fn(city: str) -> str:
    """Current weather in a city."""
    return city


def test_bind_tools_accepts_every_tool_kind_in_openai_shape() -> None:
    model, _ = model_over([])
    openai_dict = {"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}
    bound = model.bind_tools([add, Weather, weather_fn, openai_dict], tool_choice="any")
    tools = bound.kwargs["tools"]  # type: ignore[attr-defined]
    assert [t["type"] for t in tools] == ["function"] * 4
    assert [t["function"]["name"] for t in tools] == ["add", "Weather", "weather_fn", "echo"]
    assert bound.kwargs["tool_choice"] == "required"  # type: ignore[attr-defined]
    named = model.bind_tools([add], tool_choice="add")
    assert named.kwargs["tool_choice"] == {"type": "function", "function": {"name": "add"}}  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not a bound tool"):
        model.bind_tools([add], tool_choice="multiply")


def test_ai_message_carries_calls_invalid_calls_and_usage() -> None:
    model, _ = model_over([call("add", a=1, b=2) + "\n" + call("add", a="x", b=2)])
    message = model.bind_tools([add]).invoke("1+2")
    assert isinstance(message, AIMessage)
    assert len(message.tool_calls) == 1
    tc = message.tool_calls[0]
    assert (tc["name"], tc["args"], tc["type"]) == ("add", {"a": 1, "b": 2}, "tool_call")
    assert tc["id"]
    assert len(message.invalid_tool_calls) == 1
    assert message.invalid_tool_calls[0]["error"]
    assert message.usage_metadata is not None
    assert set(message.usage_metadata) >= {"input_tokens", "output_tokens", "total_tokens"}
    assert message.response_metadata["finish_reason"] == "tool_calls"
    assert "decode" in message.response_metadata["ooo_stats"]


def test_model_does_not_dispatch() -> None:
    ran: list[int] = []

    @lc_tool
    def record(x: int) -> int:
        """Record x."""
        ran.append(x)
        return x

    model, _ = model_over([call("record", x=1)])
    message = model.bind_tools([record]).invoke("go")
    assert message.tool_calls and ran == []


def test_tool_choice_none_hides_tools_from_the_target() -> None:
    def responder(request: TargetRequest) -> str:
        return "plain text" if not request.tools else call("add", a=1, b=1)

    target = ReplayTarget(responder)
    model = OoOChatModel(caller=FastToolCaller(target))
    message = model.bind_tools([add], tool_choice="none").invoke("hi")
    assert message.content == "plain text" and not message.tool_calls
    assert target.requests[0].tools == ()


def test_parallel_tool_calls_false_keeps_one_call() -> None:
    model, _ = model_over([call("add", a=1, b=1) + "\n" + call("add", a=2, b=2)])
    message = model.bind_tools([add], parallel_tool_calls=False).invoke("go")
    assert len(message.tool_calls) == 1


def test_sync_invoke_works_inside_a_running_loop() -> None:
    model, _ = model_over(["hello"])

    async def inside() -> Any:
        return model.invoke("hi")  # sync API called from async code

    assert asyncio.run(inside()).content == "hello"


def test_run_sync_outside_and_inside_a_loop() -> None:
    async def answer() -> int:
        return 42

    assert run_sync(answer()) == 42

    async def nested() -> int:
        return run_sync(answer())

    assert asyncio.run(nested()) == 42


def test_stop_sequences_cut_plain_text() -> None:
    model, _ = model_over(["one STOP two"])
    assert model.invoke("x", stop=["STOP"]).content == "one "


def test_message_conversion_keeps_tool_history() -> None:
    history = [
        SystemMessage("sys"),
        HumanMessage("1+1"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 1}, "id": "c1", "type": "tool_call"}]),
        ToolMessage("2", tool_call_id="c1"),
    ]
    converted = to_openai_messages(history)
    assert [m["role"] for m in converted] == ["system", "user", "assistant", "tool"]
    assert converted[2]["tool_calls"][0]["function"]["name"] == "add"
    assert json.loads(converted[2]["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 1}
    assert converted[3] == {"role": "tool", "tool_call_id": "c1", "content": "2"}


def test_toolset_from_langchain_dispatches_through_our_validator() -> None:
    from ooo_agent.agent import Agent

    toolset = toolset_from_langchain([add, multiply])
    assert toolset.names == ("add", "multiply")
    target = ReplayTarget([call("add", a="x", b=1), call("add", a=3, b=4), "7"])
    result = asyncio.run(Agent(FastToolCaller(target)).run("3+4", toolset))
    assert result.errors and result.errors[0].name == "add"  # rejected before LangChain ran
    assert [r.value for r in result.results] == [7]


@pytest.mark.slow
def test_langgraph_agent_with_embedded_model() -> None:
    from ooo_agent.errors import ModelNotAvailableError

    try:
        from ooo_agent.targets.hf import HFTarget

        target = HFTarget.from_preset("smollm2-135m-toolcall")
    except (ImportError, ModelNotAvailableError) as exc:  # no `hf` extra, or no model files
        pytest.skip(f"embedded tool-calling model unavailable: {exc}")
    model = OoOChatModel(caller=FastToolCaller(target), max_new_tokens=96)
    agent = create_agent(model, [add, multiply])
    state = agent.invoke(
        {"messages": [HumanMessage("Use the tools: add 2 and 3, then multiply the sum by 4.")]},
        {"recursion_limit": 8},
    )
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages, "the embedded model made no tool call"


# --------------------------------------------------------------- issue 53: as users expect


@ooo_tool
async def async_add(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


@ooo_tool
def explode(x: int) -> int:
    """Fail on purpose."""
    raise RuntimeError(f"no stock for item {x}")


def tool_call_message(name: str, **arguments: Any) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": name, "args": arguments, "id": "c1", "type": "tool_call"}]
    )


def run_tool_node(tools: list[Any], name: str, *, run: str = "ainvoke", **arguments: Any) -> Any:
    """The ToolMessage LangGraph's ``ToolNode`` (in a one-node graph) answers a call with."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    state = {"messages": [tool_call_message(name, **arguments)]}
    out = app.invoke(state) if run == "invoke" else asyncio.run(app.ainvoke(state))
    message = out["messages"][-1]
    assert isinstance(message, ToolMessage)
    return message


def test_tool_node_awaits_an_async_ooo_tool_given_as_it_is() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" fails the test
        # ToolNode converts our Tool with LangChain's own @tool conversion.
        message = run_tool_node([async_add], "async_add", a=2, b=3)
    assert message.content == "5" and message.status == "success"


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_to_langchain_tools_runs_async_tools_sync_and_async(run: str) -> None:
    message = run_tool_node(to_langchain_tools([async_add]), "async_add", run=run, a=2, b=3)
    assert (message.content, message.status, message.tool_call_id) == ("5", "success", "c1")


def test_tool_exception_becomes_an_error_tool_message_in_create_agent() -> None:
    model, target = model_over([call("explode", x=7), "Item 7 is out of stock."])
    agent = create_agent(model, to_langchain_tools([explode]))
    state = agent.invoke({"messages": [HumanMessage("order item 7")]})  # does not raise
    (tool_message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert tool_message.status == "error"
    assert tool_message.content == "Error: no stock for item 7"
    assert state["messages"][-1].content == "Item 7 is out of stock."
    # The model's next turn saw the error as the tool's answer.
    assert target.requests[1].messages[-1]["content"] == "Error: no stock for item 7"


def test_converted_tool_reports_invalid_arguments_and_timeouts_as_errors() -> None:
    @ooo_tool(timeout=0.01)
    async def slow(x: int) -> int:
        """Never answers in time."""
        await asyncio.sleep(5)
        return x

    tools = to_langchain_tools([async_add, slow])
    bad = run_tool_node(tools, "async_add", a="x", b=1)
    assert bad.status == "error" and bad.content.startswith("Error: ")
    assert "valid integer" in bad.content
    late = run_tool_node(tools, "slow", x=1)
    assert (late.status, late.content) == ("error", "Error: timed out after 0.01s")


def test_create_agent_path_emits_no_deprecation_warning() -> None:
    model, _ = model_over([call("add", a=1, b=1), "2"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = create_agent(model, to_langchain_tools([add, async_add]))
        state = agent.invoke({"messages": [HumanMessage("1+1")]})
    assert state["messages"][-1].content == "2"
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert deprecations == [], [str(w.message) for w in deprecations]


def merged(chunks: list[Any]) -> Any:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


TURN = "Adding. " + call("add", a=1, b=2) + "\n" + call("multiply", a=3, b=4) + "\n" + call("add", a="x", b=2)


@pytest.mark.parametrize("api", ["stream", "astream"])
def test_stream_yields_chunks_that_merge_into_the_invoke_message(api: str) -> None:
    from langchain_core.messages import AIMessageChunk

    model, _ = model_over([TURN, TURN])
    bound = model.bind_tools([add, multiply])
    expected = bound.invoke("go")

    async def collect() -> list[Any]:
        return [c async for c in bound.astream("go")]

    chunks = list(bound.stream("go")) if api == "stream" else asyncio.run(collect())
    assert len(chunks) >= 4 and all(isinstance(c, AIMessageChunk) for c in chunks)
    assert chunks[0].content == "Adding."
    streamed = [c.tool_call_chunks for c in chunks if c.tool_call_chunks]
    assert [[(p["index"], p["name"]) for p in parts] for parts in streamed] == [
        [(0, "add")],
        [(1, "multiply")],
    ]
    total = merged(chunks)
    assert total.content == expected.content
    assert [(c["name"], c["args"]) for c in total.tool_calls] == [
        (c["name"], c["args"]) for c in expected.tool_calls
    ]
    assert total.invalid_tool_calls == []  # not re-parsed into a valid-looking call
    rejected = total.response_metadata["ooo_invalid_tool_calls"]
    assert [(c["name"], c["args"]) for c in rejected] == [
        (c["name"], c["args"]) for c in expected.invalid_tool_calls
    ]
    assert rejected[0]["error"]
    assert total.usage_metadata == expected.usage_metadata
    assert total.response_metadata["finish_reason"] == "tool_calls"


def test_agent_streams_the_model_turn_as_message_chunks() -> None:
    model, _ = model_over([call("add", a=2, b=3), "5"])
    agent = create_agent(model, [add])
    seen: list[Any] = []
    for item, _meta in agent.stream({"messages": [HumanMessage("2+3")]}, stream_mode="messages"):
        seen.append(item)
    call_parts = [p for m in seen for p in getattr(m, "tool_call_chunks", [])]
    assert [(p["name"], json.loads(p["args"])) for p in call_parts] == [("add", {"a": 2, "b": 3})]
    tool_results = [m.content for m in seen if isinstance(m, ToolMessage)]
    assert tool_results == ["5"]
