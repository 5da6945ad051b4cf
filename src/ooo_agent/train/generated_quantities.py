"""Generated requests whose numbers must be converted: percentages and written-out amounts.

People write "a discount rate of 10%", "$2,000,000", "213 million"; Python finance and
statistics functions take ``0.1``, ``2000000`` and ``213000000``. A small model copies what it
reads — ``10``, ``2`` (the digits before the first comma), ``213`` — and the call is wrong
although it looks right. These tools are typed and described the way such functions usually
are ("The discount rate.", an ``integer`` amount), and each request states its numbers the way
people do. The call carries the converted value:

- a rate given in percent (``7%``, ``7 percent``) is a decimal fraction (``0.07``), unless the
  parameter's description asks for percent ("Tax rate in percent, e.g. 8.25"): then it stays
  ``8.25``. Both kinds are offered side by side, so the description decides, not the habit;
- an amount written with thousands separators, a ``$``, or as "N million" / "N billion" /
  "Nk" is the whole number (``2000000``).

Requests offer the needed tool among others of the same field (choosing between a deposit's
interest and an investment's growth is part of the task) and sometimes one unrelated tool.
Source ``quantities``; the function names are our own (a test keeps them out of the
evaluation categories).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from ooo_agent.train._tool_schema import load_table, table_tools
from ooo_agent.train._tool_schema import pick as _pick
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated import GENERATED_TOOLS

__all__ = ["QUANTITY_TOOLS", "amount_text", "generate_quantity_requests", "percent_text"]

Args = dict[str, Any]
Make = Callable[[random.Random], tuple[str, Args]]


_T = load_table("quantities")
"""Tools and value pools (``tables/quantities.json``)."""

QUANTITY_TOOLS: dict[str, Any] = table_tools(_T["tools"], python=True)


def _number(value: float) -> str:
    """``5`` for 5.0, ``4.5`` for 4.5: how people write a figure."""
    return str(int(value)) if float(value).is_integer() else str(value)


def percent_text(rng: random.Random, percent: float) -> str:
    """``7%``, ``7 percent`` or ``7 per cent``."""
    figure = _number(percent)
    return rng.choice([f"{figure}%", f"{figure}%", f"{figure} percent", f"{figure} per cent"])


def _fraction(percent: float) -> float:
    return round(percent / 100, 6)


def amount_text(rng: random.Random, amount: int, *, dollars: bool = True) -> str:
    """``amount`` as people write it: ``$2,000,000``, ``2 million dollars``, ``$2.5M``,
    ``$40k``, ``5,000 dollars`` or plain ``5000`` (``dollars=False``: no currency)."""
    forms = [f"{amount:,}", f"{amount:,}"]
    for unit, size in (("billion", 10**9), ("million", 10**6)):
        if amount >= size and (amount * 10) % size == 0:
            forms += [f"{_number(amount / size)} {unit}"] * 3
            if dollars:
                forms.append(f"{_number(amount / size)}{unit[0].upper()}")
            break
    else:
        if dollars and amount >= 1000 and amount % 1000 == 0:
            forms.append(f"{amount // 1000}k")
        forms.append(str(amount))
    text = rng.choice(forms)
    if not dollars:
        return text
    return f"${text}" if rng.random() < 0.7 else f"{text} dollars"


def _money(rng: random.Random, low: int, high: int, step: int) -> int:
    return rng.randrange(low, high + 1, step)


def _npv(rng: random.Random) -> tuple[str, Args]:
    flows = [_money(rng, 100, 5000, 100) for _ in range(rng.randint(3, 5))]
    pct = rng.choice(_T["percents"])
    args: Args = {"cash_flows": flows, "discount_rate": _fraction(pct)}
    listed = "[" + ", ".join(map(str, flows)) + "]"
    text = _pick(
        rng,
        f"Find the net present value of the cash flows {listed} at a discount rate of "
        f"{percent_text(rng, pct)}",
        f"What is the NPV of yearly cash flows {listed}, discounted at {percent_text(rng, pct)}",
    )
    if rng.random() < 0.5:
        args["initial_outlay"] = _money(rng, 1000, 20000, 500)
        text += f", with an initial investment of {amount_text(rng, args['initial_outlay'])}"
    return text + "?", args


def _projected(rng: random.Random) -> tuple[str, Args]:
    amount, pct, years = (
        _money(rng, 1000, 50000, 500),
        rng.choice(_T["percents"]),
        rng.randint(2, 30),
    )
    return _pick(
        rng,
        f"What will a {amount_text(rng, amount)} investment be worth in {years} years if it "
        f"grows {percent_text(rng, pct)} a year?",
        f"Project the value of investing {amount_text(rng, amount)} for {years} years with an "
        f"expected annual growth rate of {percent_text(rng, pct)}.",
        f"I put {amount_text(rng, amount)} into a fund returning {percent_text(rng, pct)} "
        f"annually. How much will I have after {years} years?",
    ), {"amount": amount, "growth_rate": _fraction(pct), "years": years}


def _deposit(rng: random.Random) -> tuple[str, Args]:
    deposit, pct, years = (
        _money(rng, 500, 100000, 500),
        rng.choice(_T["percents"]),
        rng.randint(1, 20),
    )
    args: Args = {"deposit": deposit, "interest_rate": _fraction(pct), "years": years}
    text = _pick(
        rng,
        f"How much interest does a deposit of {amount_text(rng, deposit)} earn in {years} "
        f"years at an annual interest rate of {percent_text(rng, pct)}",
        f"Calculate the interest on {amount_text(rng, deposit)} in a savings account paying "
        f"{percent_text(rng, pct)} a year for {years} years",
    )
    if rng.random() < 0.4:
        args["compounding"] = rng.choice(["quarterly", "monthly", "daily"])
        text += f", compounded {args['compounding']}"
    return text + ".", args


def _equity(rng: random.Random) -> tuple[str, Args]:
    income = rng.choice([1, 2, 3, 5, 8, 12, 25]) * 10**6 + rng.choice([0, 0, 500_000])
    equity = income * rng.choice([4, 5, 8, 10])
    args: Args = {"net_income": income, "equity": equity}
    text = (
        f"Calculate the return on equity for a company with a net income of "
        f"{amount_text(rng, income)} and shareholders' equity of {amount_text(rng, equity)}"
    )
    if rng.random() < 0.4:
        args["dividends"] = _money(rng, 100_000, 900_000, 50_000)
        text += f", having paid {amount_text(rng, args['dividends'])} in dividends"
    return text + ".", args


def _per_share(rng: random.Random) -> tuple[str, Args]:
    payout = rng.choice([5, 10, 20, 50, 75, 120]) * 10**6
    shares = rng.choice([10, 40, 100, 250, 500]) * 10**6
    return _pick(
        rng,
        f"What's the dividend per share of a company with {amount_text(rng, shares, dollars=False)} "
        f"outstanding shares and a total dividend payout of {amount_text(rng, payout)}?",
        f"A company pays out {amount_text(rng, payout)} in dividends over "
        f"{amount_text(rng, shares, dollars=False)} shares. Dividend per share?",
    ), {"total_payout": payout, "shares": shares}


def _density(rng: random.Random) -> tuple[str, Args]:
    country = rng.choice(_T["countries"])
    population = rng.choice([38, 83, 126, 129, 213, 1400, 110, 220]) * 10**6
    area = rng.choice([357_000, 1_000_000, 1_973_000, 8_500_000, 9_985_000, 3_287_000])
    return _pick(
        rng,
        f"Calculate the population density of {country} if the population is "
        f"{amount_text(rng, population, dollars=False)} and the land area is "
        f"{amount_text(rng, area, dollars=False)} square kilometers.",
        f"{country} has {amount_text(rng, population, dollars=False)} people on "
        f"{amount_text(rng, area, dollars=False)} km2. How dense is it?",
    ), {"country": country, "population": population, "area": area}


def _sales_tax(rng: random.Random) -> tuple[str, Args]:
    price: float | int = round(rng.uniform(5, 900), 2)
    price = int(price) if float(price).is_integer() else price
    pct = rng.choice([5, 6.25, 7, 7.5, 8.25, 8.875, 10, 20])
    return _pick(
        rng,
        f"How much sales tax is due on a ${price} purchase at {percent_text(rng, pct)}?",
        f"Compute the tax on an item priced at {price} dollars with a {percent_text(rng, pct)} "
        f"tax rate.",
    ), {"price": price, "tax_rate": pct}


def _loan_interest(rng: random.Random) -> tuple[str, Args]:
    principal, years = _money(rng, 5000, 400_000, 5000), rng.choice([3, 5, 10, 15, 20, 30])
    pct = rng.choice(_T["percents"])
    return _pick(
        rng,
        f"How much interest will I pay in total on a {amount_text(rng, principal)} loan at "
        f"{percent_text(rng, pct)} over {years} years?",
        f"Total interest on borrowing {amount_text(rng, principal)} for {years} years at an "
        f"annual rate of {percent_text(rng, pct)}.",
    ), {"principal": principal, "annual_rate_percent": pct, "years": years}


_GENERATORS: list[tuple[str, Make]] = [
    ("investments.discounted_value", _npv),
    ("investments.projected_value", _projected),
    ("bank.deposit_interest", _deposit),
    ("company.equity_return", _equity),
    ("company.payout_per_share", _per_share),
    ("geo.people_per_km2", _density),
    ("retail.tax_on_price", _sales_tax),
    ("loans.total_interest_paid", _loan_interest),
]


def generate_quantity_requests(
    count: int, *, seed: int = 0, foreign_share: float = 0.3
) -> list[TrainRequest]:
    """``count`` single-call requests offering 2–4 of these tools (the needed one among
    them); a ``foreign_share`` of them also offer one unrelated tool of
    :mod:`ooo_agent.train.generated`. Same seed, same list."""
    if count < 0 or not 0 <= foreign_share <= 1:
        raise ValueError("count must be >= 0 and foreign_share within [0, 1]")
    rng = random.Random(seed)
    names = sorted(QUANTITY_TOOLS)
    foreign = sorted(GENERATED_TOOLS)
    requests = []
    for index in range(count):
        needed, make = rng.choice(_GENERATORS)
        text, args = make(rng)
        others = rng.sample([n for n in names if n != needed], rng.randint(1, 3))
        tools = [QUANTITY_TOOLS[n] for n in [needed, *others]]
        if rng.random() < foreign_share:
            tools.append(GENERATED_TOOLS[rng.choice(foreign)])
        rng.shuffle(tools)
        requests.append(
            TrainRequest(
                id=f"quantities_{index}",
                messages=[{"role": "user", "content": text}],
                tools=tools,
                calls=[(needed, args)],
                answer="",
                source="quantities",
            )
        )
    return requests
