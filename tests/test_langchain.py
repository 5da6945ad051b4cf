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

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool as lc_tool

from ooo_agent import FastToolCaller
from ooo_agent.integrations.langchain import (
    OoOChatModel,
    run_sync,
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
    from langgraph.prebuilt import create_react_agent as factory

    with warnings.catch_warnings():  # moved to langchain.agents, which is not installed here
        warnings.simplefilter("ignore")
        return factory(model, tools)


def test_langgraph_react_agent_completes_two_tool_task() -> None:
    model, target = model_over(
        [call("add", a=2, b=3), call("multiply", a=5, b=4), "(2 + 3) * 4 = 20"]
    )
    # Pre-bound: exercises LangGraph's check that the bound tools match the agent's tools.
    agent = create_react_agent(model.bind_tools([add, multiply]), [add, multiply])
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
    agent = create_react_agent(model, [add, multiply])
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
    assert target.requests[0].tools == []


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
    agent = create_react_agent(model.bind_tools([add, multiply]), [add, multiply])
    state = agent.invoke(
        {"messages": [HumanMessage("Use the tools: add 2 and 3, then multiply the sum by 4.")]},
        {"recursion_limit": 8},
    )
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages, "the embedded model made no tool call"


def test_toolset_from_langchain_classmethod_hook() -> None:
    from ooo_agent import Toolset

    toolset = Toolset.from_langchain([add, multiply])
    assert toolset.names == ("add", "multiply")
    assert asyncio.run(toolset["multiply"].invoke({"a": 6, "b": 7})) == 42
