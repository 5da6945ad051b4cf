"""Quickstart: declare tools, let a model call them, get validated results.

Runs on the embedded SmolLM2 tool-calling model when its adapter is installed, otherwise on
recorded outputs of that model (``ReplayTarget``), and says which on screen.
``OOO_AGENT_EXAMPLES_REPLAY=1`` plays the recorded outputs without loading the model.

    python examples/quickstart.py
"""

from __future__ import annotations

import anyio
from _common import FORCE_REPLAY_ENV, replay_forced

from ooo_agent import FastToolCaller, tool
from ooo_agent.targets.replay import ReplayTarget


@tool
def get_weather(city: str, unit: str = "celsius") -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: "celsius" or "fahrenheit".
    """
    return {"city": city, "temperature": 21, "unit": unit}


@tool
async def convert_currency(amount: float, source: str, target: str) -> float:
    """Convert money between currencies.

    Args:
        amount: How much money.
        source: ISO code of the currency to convert from.
        target: ISO code of the currency to convert to.
    """
    return round(amount * 1.08, 2)


RECORDED = [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    '<tool_call>\n{"name": "convert_currency", "arguments": {"amount": 120, "source": "EUR", "target": "USD"}}\n</tool_call>',
    '<tool_call>\n{"name": "get_forecast", "arguments": {"city": "Oslo", "days": 3}}\n</tool_call>',
]


def make_target() -> tuple[object, str]:
    if replay_forced():
        return ReplayTarget(RECORDED), f"recorded model outputs ({FORCE_REPLAY_ENV} is set)"
    try:
        from ooo_agent.targets.hf import HFTarget

        return HFTarget.from_preset("smollm2-135m-toolcall"), "embedded SmolLM2-135M tool-calling model"
    except Exception as exc:  # no hf extra, or the adapter is not installed
        return ReplayTarget(RECORDED), f"recorded model outputs (embedded model unavailable: {exc})"


async def main() -> None:
    target, what = make_target()
    print(f"target: {what}")
    caller = FastToolCaller(target)  # type: ignore[arg-type]
    for question in [
        "What's the weather in Paris?",
        "How much is 120 EUR in USD?",
        "Forecast for Oslo, next 3 days?",
    ]:
        result = await caller.call([{"role": "user", "content": question}], [get_weather, convert_currency])
        print(f"\n> {question}")
        for call, res in zip(result.calls, result.results, strict=False):
            print(f"  call   {call.name}({call.arguments}) -> {res.content()}")
        for error in result.errors:
            print(f"  error  {error.kind.value}: {error.message}")
        if not result.calls and not result.errors:
            print(f"  text   {result.text}")


if __name__ == "__main__":
    anyio.run(main)
