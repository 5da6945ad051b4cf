"""A LangChain agent (``langchain.agents.create_agent``, on LangGraph) with ``OoOChatModel``:
LangGraph runs the loop and the tools, our caller produces each model turn (validated calls,
speculative decoding on the embedded model).

    python examples/langgraph_agent.py
"""

from __future__ import annotations

from _common import make_target, tool_call
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from ooo_agent import FastToolCaller
from ooo_agent.integrations.langchain import OoOChatModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


# The embedded model's turns for this question, in order.
RECORDED = [
    tool_call("add", '{"a": 2, "b": 3}'),
    tool_call("multiply", '{"a": 5, "b": 4}'),
    "(2 + 3) * 4 = 20",
]


def main() -> None:
    target, _ = make_target(RECORDED)
    model = OoOChatModel(caller=FastToolCaller(target), model_name="smollm2-135m-toolcall")
    agent = create_agent(model, [add, multiply])  # binds the tools to the model itself

    question = "What is (2 + 3) * 4? Use the tools."
    print(f"> {question}")
    state = agent.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": 10})
    for message in state["messages"][1:]:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"call {call['name']}({call['args']})")
        elif isinstance(message, ToolMessage):
            print(f"tool {message.name} -> {message.content}")
    final = state["messages"][-1]
    print(f"answer: {final.content}")
    usage = final.usage_metadata or {}
    print(f"[done] messages={len(state['messages'])} last_turn_tokens={usage.get('output_tokens', 0)}")


if __name__ == "__main__":
    main()
