"""The agent loop: the model calls tools, sees their results, and answers.

Streams the run's events (turn start, tool call, tool result, rejected call, final answer) the
way a UI would show them, then prints the result's summary.

    python examples/agent_loop.py
"""

from __future__ import annotations

import anyio
from _common import make_target, tool_call

from ooo_agent import FastToolCaller, tool
from ooo_agent.agent import (
    Agent,
    FinalAnswer,
    ToolCallEvent,
    ToolResultEvent,
    TurnStart,
    ValidationErrorEvent,
)

STOCK = {"apples": 12, "pears": 0, "plums": 31}


@tool(read_only=True)
def check_stock(item: str) -> int:
    """How many units of an item are in stock.

    Args:
        item: The item name, e.g. "apples".
    """
    return STOCK.get(item.lower(), 0)


@tool
def place_order(item: str, quantity: int) -> str:
    """Order more units of an item from the supplier.

    Args:
        item: The item name.
        quantity: How many units to order (at least 1).
    """
    if quantity < 1:
        raise ValueError("quantity must be at least 1")
    return f"ordered {quantity} {item}"


# What the embedded model wrote for this conversation (one model turn per entry). The second
# entry is a real slip — a quantity as words — which the validator rejects and the agent sends
# back as a retry.
RECORDED = [
    tool_call("check_stock", '{"item": "pears"}'),
    tool_call("place_order", '{"item": "pears", "quantity": "twenty"}'),
    tool_call("place_order", '{"item": "pears", "quantity": 20}'),
    "Pears were out of stock, so I ordered 20 more.",
]


async def main() -> None:
    target, _ = make_target(RECORDED)
    agent = Agent(FastToolCaller(target), max_turns=6, max_retries=2)
    question = "Check whether we have pears in stock; if not, order 20."
    print(f"> {question}")
    async for event in agent.stream(question, [check_stock, place_order]):
        if isinstance(event, TurnStart):
            print(f"-- turn {event.turn}")
        elif isinstance(event, ToolCallEvent):
            print(f"   call    {event.call.name}({event.call.arguments_json()})")
        elif isinstance(event, ToolResultEvent):
            print(f"   result  {event.result.name} -> {event.result.content()}")
        elif isinstance(event, ValidationErrorEvent):
            print(f"   reject  {event.error.message} ({event.retries_left} retries left)")
        elif isinstance(event, FinalAnswer):
            result = event.result
            print(f"answer: {result.final_text}")
            print(
                f"[done] stop_reason={result.stop_reason} turns={result.turns} "
                f"calls={len(result.calls)} rejected={len(result.errors)} "
                f"forward_passes={result.stats.forward_passes}"
            )


if __name__ == "__main__":
    anyio.run(main)
