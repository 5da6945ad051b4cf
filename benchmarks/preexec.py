"""Agent-turn latency with and without speculative pre-execution of read-only tools.

One run, one model (the embedded tool-calling target, toolspec decoding, 1 torch thread),
requests interleaved across three conditions, each on its own target instance over the same
weights (no condition's retrieval memory sees another's output):

* ``off``     — no pre-execution: the tool starts when the target's call is validated;
* ``correct`` — a sidecar hint equal to the call the target will write (taken from an untimed
  pre-pass, like the bench's oracle) arrives ``--hint-delay`` s after the request; the
  read-only tool starts then;
* ``wrong``   — the same function with a wrong argument: the speculation is cancelled and the
  verified call dispatched normally (the cost of a misprediction).

Turn latency is ``CallResult.stats.total_s``: request arrival → dispatched results.

    python benchmarks/preexec.py --tool-latency 0.3 --repeat 3 --out preexec.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import anyio

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool

REQUESTS = [
    "What is the status of my order A1002?",
    "Can you check where order B2001 is?",
    "How much is 250 US dollars in euros?",
    "Convert 99 GBP to USD please.",
    "What's the weather like in Lisbon right now?",
    "Is it cold in Oslo today?",
]


def make_tools(latency: float) -> list[Any]:
    @tool(read_only=True)
    async def get_order_status(order_id: str) -> dict[str, str]:
        """Look up the status of a customer order.

        Args:
            order_id: The order identifier, e.g. "A1001".
        """
        await anyio.sleep(latency)
        return {"order_id": order_id, "status": "shipped"}

    @tool(read_only=True)
    async def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
        """Convert an amount of money from one currency to another.

        Args:
            amount: The amount to convert.
            from_currency: Three-letter ISO code of the source currency.
            to_currency: Three-letter ISO code of the target currency.
        """
        await anyio.sleep(latency)
        return {"amount": round(amount * 0.9, 2), "currency": to_currency}

    @tool(read_only=True)
    async def get_weather(city: str) -> dict[str, Any]:
        """Get the current weather in a city.

        Args:
            city: The city name, e.g. "Paris".
        """
        await anyio.sleep(latency)
        return {"city": city, "temperature": 12}

    return [get_order_status, convert_currency, get_weather]


class FixedHint:
    """A sidecar whose wave answers with a given hint after a delay."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.hint = Hint()

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        await anyio.sleep(self.delay)
        box.set_function(self.hint.function)
        for key, value in self.hint.slots.items():
            box.set_slot(key, value)
        box.finish()
        return self.hint


def wrong(arguments: dict[str, Any]) -> dict[str, Any]:
    """The same call with its first argument changed."""
    changed = dict(arguments)
    key = next(iter(changed))
    value = changed[key]
    changed[key] = value + 1 if isinstance(value, (int, float)) else f"{value}-X"
    return changed


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from ooo_agent.models import load_preset
    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = load_preset("smollm2-135m-toolcall")
    tools = make_tools(args.tool_latency)
    conditions = ("off", "correct", "wrong")
    sidecars = {c: FixedHint(args.hint_delay) for c in conditions}
    callers = {
        c: FastToolCaller(
            HFTarget(model, tokenizer, num_threads=args.threads),
            sidecars[c],
            mode="toolspec",
            preexecute=c != "off",
        )
        for c in conditions
    }
    # Untimed pre-pass: the call the target writes for each request (greedy, lossless).
    reference = FastToolCaller(HFTarget(model, tokenizer, num_threads=args.threads), mode="vanilla")
    expected: dict[str, Any] = {}
    for request in REQUESTS:
        result = await reference.call([{"role": "user", "content": request}], tools, dispatch=False)
        expected[request] = result.calls[0] if result.calls else None
    records: list[dict[str, Any]] = []
    for round_ in range(args.repeat + 1):  # round 0 is warm-up
        for i, request in enumerate(REQUESTS):
            call = expected[request]
            if call is None:
                continue
            sidecars["correct"].hint = Hint(call.name, call.arguments, True)
            sidecars["wrong"].hint = Hint(call.name, wrong(call.arguments), True)
            order = conditions[i % 3 :] + conditions[: i % 3]
            for condition in order:
                messages = [{"role": "user", "content": request}]
                result = await callers[condition].call(messages, tools)
                if round_ == 0:
                    continue
                records.append(
                    {
                        "request": request,
                        "condition": condition,
                        "turn_s": result.stats.total_s,
                        "generate_s": result.stats.generate_s,
                        "dispatch_s": result.stats.dispatch_s,
                        "speculation": vars(result.stats.speculation),
                        "calls": [c.name for c in result.calls],
                        "raw_text": result.raw_text,
                    }
                )
    summary: dict[str, Any] = {"tool_latency_s": args.tool_latency, "hint_delay_s": args.hint_delay}
    for condition in conditions:
        turns = [r["turn_s"] for r in records if r["condition"] == condition]
        summary[condition] = {"n": len(turns), "mean_turn_s": statistics.mean(turns), "median_turn_s": statistics.median(turns)}
    base = summary["off"]["mean_turn_s"]
    summary["saved_with_correct_hint_s"] = base - summary["correct"]["mean_turn_s"]
    summary["slowdown_with_wrong_hint"] = summary["wrong"]["mean_turn_s"] / base - 1
    # Pre-execution never changes what the model says: one output per request, whatever the hint.
    summary["identical_outputs"] = all(
        len({r["raw_text"] for r in records if r["request"] == request}) <= 1 for request in REQUESTS
    )
    return {"summary": summary, "records": records}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool-latency", type=float, default=0.3)
    parser.add_argument("--hint-delay", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    report = anyio.run(run, args)
    print(json.dumps(report["summary"], indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
