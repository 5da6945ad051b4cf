"""Six ordinary business tools and sixteen plain requests: the multi-tool check of a new user.

An agent offers all of its tools at once. This set is what a developer would try first: six
``@tool`` functions written the usual way (orders, refunds, catalogue search, calendar,
currency, weather — names and schemas of our own, not those of the generated training data)
and sixteen plain requests, each with the call it should produce. Every request offers all six
tools.

Write the set as BFCL-shaped JSON lines (gold: acceptable values per argument, ``""`` = may be
absent) and score the embedded target on it::

    python benchmarks/business_tools.py --out bench-out/business16.jsonl
    python -m ooo_agent.train.eval_target --adapter adapters/smollm2-135m-toolcall \\
        --data bench-out/business16.jsonl --engine toolspec --out bench-out/business16-eval.json

or run every mode on it: ``ooo-agent bench --data bench-out/business16.jsonl --n 16``.
"""

from __future__ import annotations

import argparse
from typing import Any, Literal

from ooo_agent import tool
from ooo_agent.bench.datasets import BenchItem, save_jsonl
from ooo_agent.tools import Toolset


@tool(read_only=True)
def find_order(order_number: str) -> dict[str, Any]:
    """Find an order and return its status and items.

    Args:
        order_number: The order number, e.g. "A-1042".
    """
    return {"order_number": order_number, "status": "shipped"}


@tool
def refund_payment(order_number: str, amount: float, reason: str = "") -> dict[str, Any]:
    """Refund money to the customer for an order.

    Args:
        order_number: The order to refund.
        amount: How much to refund, in the order's currency.
        reason: Why the refund is given.
    """
    return {"refunded": amount}


@tool(read_only=True)
def search_products(query: str, max_price: float | None = None) -> list[str]:
    """Search the product catalogue.

    Args:
        query: What to look for.
        max_price: Only products at or below this price.
    """
    return [query]


@tool
def schedule_meeting(title: str, date: str, time: str, duration_minutes: int = 30) -> str:
    """Put a meeting in the calendar.

    Args:
        title: What the meeting is about.
        date: The day, YYYY-MM-DD.
        time: The start time, HH:MM (24 h).
        duration_minutes: How long it lasts.
    """
    return "scheduled"


@tool(read_only=True)
def convert_currency(amount: float, from_currency: str, to_currency: str) -> float:
    """Convert an amount of money between currencies.

    Args:
        amount: The amount to convert.
        from_currency: ISO code of the currency to convert from, e.g. "USD".
        to_currency: ISO code of the currency to convert to.
    """
    return amount


@tool(read_only=True)
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Current weather in a city.

    Args:
        city: The city name.
        unit: Temperature unit.
    """
    return {"city": city}


TOOLS = [
    find_order,
    refund_payment,
    search_products,
    schedule_meeting,
    convert_currency,
    get_weather,
]

Gold = dict[str, list[Any]]

REQUESTS: list[tuple[str, str, Gold]] = [
    ("Where is my order A-1042?", "find_order", {"order_number": ["A-1042"]}),
    (
        "Can you check the status of order B-77310 for me?",
        "find_order",
        {"order_number": ["B-77310"]},
    ),
    (
        "Please refund 25 dollars on order A-1042, the item arrived damaged.",
        "refund_payment",
        {
            "order_number": ["A-1042"],
            "amount": [25, 25.0],
            "reason": ["", "the item arrived damaged", "item arrived damaged", "damaged"],
        },
    ),
    (
        "Refund 12.50 for order C-5521.",
        "refund_payment",
        {"order_number": ["C-5521"], "amount": [12.5], "reason": [""]},
    ),
    (
        "Do you sell wireless headphones?",
        "search_products",
        {"query": ["wireless headphones", "headphones"], "max_price": [""]},
    ),
    (
        "Find me a yoga mat under 30 euros.",
        "search_products",
        {"query": ["yoga mat"], "max_price": [30, 30.0]},
    ),
    (
        "Schedule a meeting called Budget review on 2026-12-15 at 14:00.",
        "schedule_meeting",
        {
            "title": ["Budget review"],
            "date": ["2026-12-15"],
            "time": ["14:00"],
            "duration_minutes": ["", 30],
        },
    ),
    (
        "Book a 60 minute team sync on 2027-01-08 at 09:30.",
        "schedule_meeting",
        {
            "title": ["team sync", "Team sync"],
            "date": ["2027-01-08"],
            "time": ["09:30"],
            "duration_minutes": [60],
        },
    ),
    (
        "How much is 100 USD in EUR?",
        "convert_currency",
        {"amount": [100, 100.0], "from_currency": ["USD"], "to_currency": ["EUR"]},
    ),
    (
        "Convert 2500 Japanese yen to British pounds.",
        "convert_currency",
        {"amount": [2500, 2500.0], "from_currency": ["JPY"], "to_currency": ["GBP"]},
    ),
    (
        "What's the weather like in Lisbon?",
        "get_weather",
        {"city": ["Lisbon"], "unit": ["", "celsius"]},
    ),
    (
        "Is it cold in Chicago right now? Give me fahrenheit.",
        "get_weather",
        {"city": ["Chicago"], "unit": ["fahrenheit"]},
    ),
    ("Has order D-9001 shipped yet?", "find_order", {"order_number": ["D-9001"]}),
    (
        "I'd like my money back for order E-3141: refund 80.",
        "refund_payment",
        {"order_number": ["E-3141"], "amount": [80, 80.0], "reason": [""]},
    ),
    (
        "Show me running shoes up to 120.",
        "search_products",
        {"query": ["running shoes"], "max_price": [120, 120.0]},
    ),
    (
        "Weather in Osaka in celsius please.",
        "get_weather",
        {"city": ["Osaka"], "unit": ["celsius", ""]},
    ),
]


def build_items() -> list[BenchItem]:
    """The sixteen requests, each offering all six tools."""
    tools = Toolset(TOOLS).to_openai()
    return [
        BenchItem(
            id=f"business_{index}",
            category="business",
            messages=[{"role": "user", "content": text}],
            tools=tools,
            gold=[{name: gold}],
        )
        for index, (text, name, gold) in enumerate(REQUESTS)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-out/business16.jsonl")
    args = parser.parse_args(argv)
    path = save_jsonl(build_items(), args.out)
    print(f"wrote {len(REQUESTS)} requests to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
