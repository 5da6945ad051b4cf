"""`ooo-agent demo`: the SDK end to end on the embedded default model.

Registers a few ordinary business tools, sends plain requests through `FastToolCaller` (the
last one no tool serves: the target declines to call), and
shows each call, its validation, the dispatched result, the model's plain-text answer that uses
that result (a second turn on the same conversation), and — on the embedded model — vanilla vs
toolspec vs ooo side by side (target forward passes, wall-clock time from the request's arrival,
both turns).
Without the embedded model (no `hf` extra or no adapter yet) it replays recorded outputs of that
model and says so.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

import anyio
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ooo_agent.agent import turn_messages
from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import CallResult
from ooo_agent.targets.base import Mode, Target
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.tools import Tool, tool

__all__ = ["DEMO_REQUESTS", "demo_tools", "run_demo"]

_ORDERS = {"A1001": "shipped", "A1002": "processing", "B2001": "delivered"}


@tool(read_only=True)
def get_order_status(order_id: str) -> dict[str, str]:
    """Look up the status of a customer order.

    Args:
        order_id: The order identifier, e.g. "A1001".
    """
    return {"order_id": order_id, "status": _ORDERS.get(order_id, "unknown")}


@tool
def refund_order(order_id: str, amount: float, reason: str = "customer request") -> dict[str, Any]:
    """Refund all or part of an order.

    Args:
        order_id: The order identifier.
        amount: Amount to refund, in the order's currency.
        reason: Why the refund is issued.
    """
    return {"order_id": order_id, "refunded": amount, "reason": reason}


@tool(read_only=True)
def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    """Convert an amount of money from one currency to another.

    Args:
        amount: The amount to convert.
        from_currency: Three-letter ISO code of the source currency.
        to_currency: Three-letter ISO code of the target currency.
    """
    rates = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0}
    rate = rates.get(to_currency.upper(), 1.0) / rates.get(from_currency.upper(), 1.0)
    return {"amount": round(amount * rate, 2), "currency": to_currency.upper()}


@tool(read_only=True)
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Get the current weather in a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: Temperature unit.
    """
    temperature = random.Random(city).randint(-5, 30)
    if unit == "fahrenheit":
        temperature = round(temperature * 9 / 5 + 32)
    return {"city": city, "temperature": temperature, "unit": unit}


def demo_tools() -> list[Tool]:
    return [get_order_status, refund_order, convert_currency, get_weather]


DEMO_REQUESTS = [
    "What is the status of my order A1002?",
    "How much is 250 US dollars in euros?",
    "What's the weather like in Lisbon right now?",
    "Please refund 19.99 on order B2001, the item arrived damaged.",
    "Has order D-9001 shipped yet?",
    "Thanks, that's all for today!",  # no tool serves it: the target declines (decline_below)
]

RECORDED = [
    "<tool_call>\n{\"name\": \"get_order_status\", \"arguments\": {\"order_id\": \"A1002\"}}\n</tool_call>",
    "Done. I found the status is processing.",
    "<tool_call>\n{\"name\": \"convert_currency\", \"arguments\": {\"amount\": 250, \"from_currency\": \"USD\", \"to_currency\": \"EUR\"}}\n</tool_call>",
    "Here's what I found. The amount is 230.0 and the currency is EUR.",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lisbon\"}}\n</tool_call>",
    "Result for Lisbon: the city is Lisbon and the temperature is -5.",
    "<tool_call>\n{\"name\": \"get_order_status\", \"arguments\": {\"order_id\": \"B2001\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"convert_currency\", \"arguments\": {\"amount\": 19.99, \"from_currency\": \"dollars\", \"to_currency\": \"pounds\"}}\n</tool_call>",
    "Done. The order id is B2001, the status is delivered, the amount is 19.99 and the currency is Pounds.",
    "<tool_call>\n{\"name\": \"get_order_status\", \"arguments\": {\"order_id\": \"D-9001\"}}\n</tool_call>",
    "Done. I checked for order D-9001: the order id is D-9001 and the status is unknown.",
    "I'm sorry for your loss. That was a pleasure. I hope you're well.",
]
"""What the embedded model (``HFTarget.from_preset()``, mode ``toolspec``) wrote for
:data:`DEMO_REQUESTS`: each call, then the answer that follows its result (a request no tool
serves is answered at once; the 135M model's words there are poor)."""


def _load_embedded(console: Console) -> tuple[dict[Mode, Target], Any] | None:
    """One target per mode over the same weights, so that no mode's memory (retrieval of
    earlier outputs, prefix cache, learned draft rates) ever sees another mode's answer."""
    try:
        from ooo_agent.models import (
            load_preset,
            target_constraints,
            target_decline_below,
            target_format,
        )
        from ooo_agent.targets.hf import HFTarget

        model, tokenizer = load_preset("smollm2-135m-toolcall")
        fmt = target_format("smollm2-135m-toolcall")
        decline_below = target_decline_below("smollm2-135m-toolcall")
        constraints = target_constraints("smollm2-135m-toolcall")
    except Exception as exc:
        console.print(f"[yellow]Embedded model unavailable ({exc}).[/]")
        return None
    # Calls may only name the offered tools, and their arguments only the tool's parameters
    # (required ones included, and the optional ones the request names; values of the
    # declared types, written as the tool and the request say: a rate stated in percent as a
    # fraction, "City, State" where asked, amounts whole), in every mode alike (the modes stay
    # token-identical to constrained greedy decoding); no call where the target's first token
    # gives one less than the preset's threshold: the preset's defaults, as
    # HFTarget.from_preset() decodes.
    targets: dict[Mode, Target] = {
        mode: HFTarget(
            model,
            tokenizer,
            fmt,
            num_threads=1,
            decline_below=decline_below,
            **constraints,
        )
        for mode in ("vanilla", "toolspec", "ooo")
    }
    sidecar = None
    try:
        from ooo_agent.sidecar.hf import HFSidecar

        sidecar = HFSidecar.from_preset("smollm2-135m-sidecar")
    except Exception as exc:
        console.print(f"[yellow]Embedded sidecar unavailable ({exc}); mode ooo is skipped.[/]")
        del targets["ooo"]
    return targets, sidecar


def _show(console: Console, request: str, result: CallResult) -> None:
    console.print(f"\n[bold]> {request}[/]")
    for call, res in zip(result.calls, result.results, strict=False):
        status = "[green]ok[/]" if res.ok else f"[red]{res.error}[/]"
        console.print(f"  [cyan]{call.name}[/]({call.arguments}) validated → {status} {res.content()}")
    for error in result.errors:
        console.print(f"  [red]rejected[/] {error.kind.value}: {error.message}")
    decode = result.stats.decode
    if decode.declined and decode.call_probability is not None:
        console.print(
            f"  [yellow]declined to call[/] (a call's first token at {decode.call_probability:.1%},"
            " below the preset's threshold)"
        )
    if not result.calls and not result.errors:
        console.print(f"  text: {result.text!r}")
    if decode.constrained_tokens and not decode.declined:  # declining changes a token too
        changed = decode.constrained_tokens
        console.print(f"  [dim]constrained decoding changed {changed} token(s) of the call[/]")


def _show_answer(console: Console, answer: CallResult) -> None:
    """The model's next turn after the results: its plain-text answer (or what went wrong)."""
    if answer.errors:
        for error in answer.errors:
            console.print(f"  [red]answer rejected[/] {error.kind.value}: {escape(error.message)}")
    elif answer.calls:
        console.print(f"  [yellow]another call instead of an answer:[/] {answer.calls[0].name}")
    else:
        console.print(f"  answer: {answer.text!r}")


async def _turn(caller: FastToolCaller, request: str, tools: list[Tool]) -> tuple[CallResult, CallResult | None]:
    """The request's call (validated and dispatched), then the answer that uses its result."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    result = await caller.call(messages, tools)
    if not result.results:
        return result, None
    return result, await caller.call([*messages, *turn_messages(result)], tools)


def _show_hint(console: Console, result: CallResult) -> None:
    """What the sidecar predicted in the ``ooo`` run, and how much of it the target took."""
    sidecar = result.stats.sidecar
    if sidecar.status == "stopped":
        console.print(f"  [dim]sidecar: wave stopped early ({escape(sidecar.error or 'no call')})[/]")
        return
    if sidecar.predicted is None:
        why = f": {sidecar.error}" if sidecar.error else ""
        console.print(f"  [dim]sidecar: no finished hint ({sidecar.status}{escape(why)})[/]")
        return
    step = sidecar.function_arrival_step
    if step is None:
        when = "no tool in time for a draft"
    else:
        when = "before the first draft" if step == 0 else f"by decode step {step}"
    console.print(
        f"  [dim]sidecar hint ({when}): {escape(sidecar.predicted)} — "
        f"{sidecar.hint_tokens_accepted} token(s) of the call taken from it[/]"
    )


async def _run(console: Console, requests: Sequence[str]) -> int:
    loaded = _load_embedded(console)
    tools = demo_tools()
    if loaded is None:
        console.print(
            "[bold yellow]Replaying recorded outputs of the embedded model[/] "
            "(parsing, validation and dispatch are real; no model runs)."
        )
        caller = FastToolCaller(ReplayTarget(RECORDED))
        for request in requests:
            result, answer = await _turn(caller, request, tools)
            _show(console, request, result)
            if answer is not None:
                _show_answer(console, answer)
        return 0
    targets, sidecar = loaded
    console.print(
        "Decoding with calls constrained to the offered tools and their schemas "
        "and the optional parameters a request names, values as the tool and the request say "
        "(HFTarget(constrain_names=True, constrain_mentioned=True, constrain_values=True)), "
        "and no call where the target is not sure one is wanted "
        f"(decline_below={getattr(targets['vanilla'], 'decline_below', None)}), in every mode."
    )
    callers = {mode: FastToolCaller(target, sidecar, mode=mode) for mode, target in targets.items()}
    table = Table(title="Same model, same run: vanilla vs toolspec vs ooo (time from arrival)")
    table.add_column("request")
    for mode in callers:
        table.add_column(f"{mode}\nforwards / s", justify="right")
    table.add_column("identical")
    for request in requests:
        outputs = {mode: await _turn(caller, request, tools) for mode, caller in callers.items()}
        first, answer = outputs["vanilla"]
        _show(console, request, first)
        if "ooo" in outputs:
            _show_hint(console, outputs["ooo"][0])
        if answer is not None:
            _show_answer(console, answer)
        same = len({tuple(r.raw_text for r in pair if r) for pair in outputs.values()}) == 1
        cells = [
            f"{sum(r.stats.decode.forward_passes for r in pair if r)} / "
            f"{sum(r.stats.total_s for r in pair if r):.2f}"
            for pair in outputs.values()
        ]
        table.add_row(request[:40], *cells, "[green]yes[/]" if same else "[red]NO[/]")
    console.print(table)
    return 0


def run_demo(requests: Sequence[str] = DEMO_REQUESTS) -> int:
    """Run the demo; returns a process exit code."""
    console = Console()
    return anyio.run(_run, console, requests)
