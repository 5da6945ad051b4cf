"""`tool_choice`: let the model choose, forbid calls, require one, or name the tool.

The embedded target decodes under the choice (and the caller holds any target's calls to it);
each request is sent with `"auto"` and then with another choice, side by side.

    python examples/tool_choice.py
"""

from __future__ import annotations

from typing import Any

import anyio
from _common import make_target, tool_call
from quickstart import convert_currency, get_weather  # the same two tools

from ooo_agent import FastToolCaller
from ooo_agent.targets.base import TargetRequest, chosen_tool, normalize_tool_choice

REQUESTS: list[tuple[str, Any]] = [
    ("What's the weather in Paris?", "none"),
    ("I have 120 EUR for the trip.", "convert_currency"),
    ("Paris, please.", "get_weather"),
]

RECORDED = {  # what the embedded model writes for each (request, choice)
    ("What's the weather in Paris?", "auto"): tool_call("get_weather", '{"city": "Paris"}'),
    ("What's the weather in Paris?", "none"): "The weather in Paris is: CELESTIAL.",
    ("I have 120 EUR for the trip.", "auto"): tool_call(
        "convert_currency", '{"amount": 120, "source": "EUR", "target": "USD"}'
    ),
    ("I have 120 EUR for the trip.", "convert_currency"): tool_call(
        "convert_currency", '{"amount": 120, "source": "EUR", "target": "USD"}'
    ),
    ("Paris, please.", "auto"): tool_call("get_weather", '{"city": "Paris"}'),
    ("Paris, please.", "get_weather"): tool_call("get_weather", '{"city": "Paris"}'),
}


def recorded(request: TargetRequest) -> str:
    choice = normalize_tool_choice(request.tool_choice)
    key = chosen_tool(choice) or str(choice)
    return RECORDED[(str(request.messages[-1]["content"]), key)]


async def main() -> None:
    target, _ = make_target(recorded)
    caller = FastToolCaller(target)
    for question, choice in REQUESTS:
        print(f"\n> {question}")
        for each in ("auto", choice):
            result = await caller.call(
                [{"role": "user", "content": question}],
                [get_weather, convert_currency],
                tool_choice=each,
            )
            said = [
                f"{c.name}({c.arguments}) -> {r.content()}"
                for c, r in zip(result.calls, result.results, strict=False)
            ]
            said += [f"refused {e.kind.value}: {e.message}" for e in result.errors]
            print(f"  tool_choice={each!r:20} {'; '.join(said) or 'text: ' + repr(result.text)}")


if __name__ == "__main__":
    anyio.run(main)
