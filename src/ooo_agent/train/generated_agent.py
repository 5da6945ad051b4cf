"""Generated whole agent turns: calls, their results, and the assistant's next move.

Single-turn rows teach the first call. An agent also needs what comes after it: each row here
is a conversation that already holds the assistant's calls and the ``tool`` messages with
their results (dicts, lists, numbers, strings, errors), and its answer is the next move:

- ``answer``: a plain-text answer that states the result's values;
- ``chain``: the next call, where the task needs another step (look up, then act), and after
  its result the final answer;
- ``compare``: two calls for a request that asks about two things ("warmer in Oslo or
  Madrid?"), then an answer that compares their results;
- ``error``: an error result, answered by a corrected call (when the error names the fix) or
  an apology that says what went wrong;
- ``follow_up``: a finished exchange, then a new request: the next call.

The tools and requests are :mod:`ooo_agent.train.generated`'s; results are made by
per-tool builders from the call's own arguments. Rows are rendered like every other row
(:func:`ooo_agent.train.data.target_row`). Deterministic for a seed::

    requests = generate_agent_requests(400, seed=11)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from ooo_agent.train._tool_schema import load_table
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated import _GENERATORS, _offer, _tool_count

__all__ = ["AGENT_KINDS", "describe", "generate_agent_requests", "tool_result"]

Args = dict[str, Any]
Call = tuple[str, Args]

AGENT_KINDS: dict[str, float] = {
    "answer": 0.36,
    "chain": 0.26,
    "compare": 0.14,
    "error": 0.12,
    "follow_up": 0.12,
}
"""Share of each kind of row (see the module docstring)."""

_T = load_table("agent")
"""Value pools and comparison questions (``tables/agent.json``)."""


def _id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(1000, 99999)}"


def _price(rng: random.Random) -> float:
    return round(rng.uniform(4, 900), 2)


def _day(rng: random.Random) -> str:
    return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# -- results -------------------------------------------------------------------------------


def _order_result(rng: random.Random, a: Args) -> Any:
    status = rng.choice(["processing", "shipped", "delivered", "on hold"])
    out: Args = {"order_id": a["order_id"], "status": status, "total": _price(rng)}
    if status == "shipped":
        out["carrier"] = rng.choice(["ups", "fedex", "dhl"])
        out["tracking_number"] = f"1Z{rng.randint(10**7, 10**8 - 1)}"
    if a.get("include_items"):
        out["items"] = rng.sample(["desk lamp", "USB-C cable", "notebook", "mug", "chair"], 2)
    return out


def _weather_result(rng: random.Random, a: Args) -> Any:
    unit = a.get("unit", "celsius")
    temp = rng.randint(-8, 34) if unit == "celsius" else rng.randint(18, 95)
    return {
        "city": a["city"],
        "temperature": temp,
        "unit": unit,
        "conditions": rng.choice(["sunny", "cloudy", "light rain", "snow", "windy"]),
    }


def _forecast_result(rng: random.Random, a: Args) -> Any:
    days = max(1, min(int(a.get("days", 3)), 4))
    return [
        {"day": i + 1, "high": rng.randint(0, 30), "conditions": rng.choice(["sun", "rain"])}
        for i in range(days)
    ]


def _catalog_result(rng: random.Random, a: Args) -> Any:
    found = []
    for _ in range(rng.randint(1, 3)):
        found.append(
            {"sku": f"SKU-{rng.randint(1000, 9999)}", "name": a["query"], "price": _price(rng)}
        )
    return found


RESULTS: dict[str, Callable[[random.Random, Args], Any]] = {
    "get_order_status": _order_result,
    "cancel_order": lambda r, a: {"order_id": a["order_id"], "cancelled": True},
    "issue_refund": lambda r, a: {
        "refund_id": _id(r, "RF"),
        "amount": a["amount"],
        "currency": a.get("currency", "USD"),
        "status": "processed",
    },
    "search_catalog": _catalog_result,
    "get_product_info": lambda r, a: {
        "sku": a["sku"],
        "name": r.choice(["standing desk", "desk lamp", "wireless mouse", "monitor arm"]),
        "price": _price(r),
        "currency": "USD",
    },
    "create_calendar_event": lambda r, a: {"event_id": _id(r, "EV"), "created": True},
    "list_calendar_events": lambda r, a: [
        {"title": t, "start_time": f"{r.randint(8, 17):02d}:00"}
        for t in r.sample(["standup", "design review", "1:1 with Ana", "budget sync"], 2)
    ],
    "convert_money": lambda r, a: {
        "amount": round(float(a["amount"]) * r.uniform(0.5, 1.6), 2),
        "currency": a["to_currency"],
    },
    "current_conditions": _weather_result,
    "get_weather_forecast": _forecast_result,
    "send_mail": lambda r, a: {"message_id": _id(r, "MSG"), "sent": True},
    "search_inbox": lambda r, a: [
        {
            "from": f"{r.choice(_T['first_names']).lower()}@example.com",
            "subject": f"About {a['query']}",
            "received": _day(r),
        }
    ],
    "create_crm_contact": lambda r, a: {"contact_id": _id(r, "CT"), "created": True},
    "update_deal_stage": lambda r, a: {"deal_id": a["deal_id"], "stage": a["stage"]},
    "add_customer_note": lambda r, a: {"note_id": _id(r, "NOTE"), "saved": True},
    "lookup_customer": lambda r, a: {
        "customer_id": _id(r, "CUS"),
        "name": r.choice(_T["first_names"]) + " " + r.choice(["Silva", "Berg", "Okafor", "Moreau"]),
        "tier": r.choice(["basic", "gold", "platinum"]),
    },
    "create_support_ticket": lambda r, a: {"ticket_id": _id(r, "TCK"), "status": "open"},
    "update_ticket_status": lambda r, a: {"ticket_id": a["ticket_id"], "status": a["status"]},
    "check_inventory": lambda r, a: {
        "sku": a["sku"],
        "available": r.randint(0, 250),
        "warehouse": a.get("warehouse", r.choice(["WH-EAST", "WH-WEST"])),
    },
    "adjust_stock": lambda r, a: {"sku": a["sku"], "new_quantity": r.randint(0, 300)},
    "create_shipment": lambda r, a: {
        "shipment_id": _id(r, "SHP"),
        "tracking_number": f"1Z{r.randint(10**7, 10**8 - 1)}",
    },
    "track_package": lambda r, a: {
        "status": r.choice(["in transit", "out for delivery", "delivered"]),
        "location": r.choice(_T["streets"]),
        "estimated_delivery": _day(r),
    },
    "get_shipping_quote": lambda r, a: {
        "price": _price(r),
        "currency": "USD",
        "days": r.randint(1, 7),
    },
    "book_meeting_room": lambda r, a: {"booking_id": _id(r, "BK"), "confirmed": True},
    "translate_snippet": lambda r, a: r.choice(
        ["Bonjour à tous", "Hallo zusammen", "Hola a todos"]
    ),
    "get_stock_quote": lambda r, a: {
        "symbol": a["symbol"],
        "price": _price(r),
        "currency": "USD",
        "change_percent": round(r.uniform(-4, 4), 2),
    },
    "create_invoice": lambda r, a: {"invoice_id": _id(r, "INV"), "status": "sent"},
    "set_reminder": lambda r, a: {"reminder_id": _id(r, "RM"), "scheduled": True},
    "apply_coupon": lambda r, a: {"cart_id": a["cart_id"], "discount": _price(r) / 10},
}
"""Per tool: ``(rng, arguments) -> result`` as the tool would return it."""


def tool_result(rng: random.Random, name: str, args: Args) -> Any:
    """A realistic result of calling ``name`` with ``args`` (a number for numeric tools)."""
    make = RESULTS.get(name)
    if make is not None:
        value = make(rng, args)
        if isinstance(value, dict) and "discount" in value:
            value["discount"] = round(value["discount"], 2)
        return value
    if name in ("music.songs_by_artist",):
        return [f"Song {rng.randint(1, 99)}", f"Song {rng.randint(100, 199)}"]
    if name in ("recipes.find_dishes",):
        return [{"dish": "stir fry", "calories": rng.randint(300, 700)}]
    if name in ("history.event_date_lookup",):
        return {
            "date": f"{rng.randint(1500, 1990)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        }
    if name in ("sports.team_season_record",):
        return {"wins": rng.randint(10, 60), "losses": rng.randint(10, 60)}
    return rng.choice([rng.randint(2, 5000), round(rng.uniform(0.5, 2000), 2)])


# -- answers -------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e6 else str(value)
    if isinstance(value, list):
        return _join([_text(v) for v in value])
    if isinstance(value, dict):
        return ", ".join(f"{_label(k)} {_text(v)}" for k, v in value.items())
    return str(value)


def _label(key: str) -> str:
    return key.replace("_", " ")


def _join(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def describe(rng: random.Random, value: Any, subject: str = "") -> str:
    """A plain-text answer that states every value of ``value`` (a tool's result)."""
    lead = rng.choice(["", "Done. ", "Here's what I found. "])
    about = f" for {subject}" if subject else ""
    if isinstance(value, dict):
        facts = _join([f"the {_label(k)} is {_text(v)}" for k, v in value.items()])
        return lead + rng.choice(
            [
                f"Result{about}: {facts}.",
                f"{facts[:1].upper()}{facts[1:]}.",
                f"I checked{about}: {facts}.",
            ]
        )
    if isinstance(value, list):
        if not value:
            return lead + f"I found nothing{about}."
        items = [_text(v) for v in value]
        noun = "result" if len(items) == 1 else "results"
        return lead + f"I found {len(items)} {noun}{about}: " + "; ".join(items) + "."
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return lead + rng.choice([f"The result is {_text(value)}.", f"It comes to {_text(value)}."])
    return lead + rng.choice([f"The result{about} is: {value}", f"Here it is{about}: {value}"])


def _subject(args: Args) -> str:
    for value in args.values():
        if isinstance(value, str) and len(value) <= 40:
            return value
    return ""


# -- conversation pieces --------------------------------------------------------------------


class _Convo:
    """Messages built up turn by turn, with OpenAI-shaped calls and tool results."""

    def __init__(self, rng: random.Random, text: str) -> None:
        self.rng = rng
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        self.called: list[str] = []

    def calls(self, calls: Sequence[Call], results: Sequence[Any]) -> None:
        ids = [f"call_{self.rng.randint(10**5, 10**6 - 1)}" for _ in calls]
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)},
                    }
                    for i, (n, a) in zip(ids, calls, strict=True)
                ],
            }
        )
        for i, result in zip(ids, results, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": i, "content": _content(result)})
        self.called += [n for n, _ in calls]


def _content(result: Any) -> str:
    """What the runtime writes into a tool message (``ToolResult.content``)."""
    if isinstance(result, _Error):
        return f"Error: {result.message}"
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False)


class _Error:
    def __init__(self, message: str) -> None:
        self.message = message


# -- kinds ----------------------------------------------------------------------------------


def _single(rng: random.Random) -> tuple[str, Call]:
    gen = rng.choice(_GENERATORS)
    text, args = gen.make(rng)
    return text, (gen.tool, args)


def _answer_row(rng: random.Random) -> tuple[_Convo, list[Call], str]:
    text, call = _single(rng)
    convo = _Convo(rng, text)
    result = tool_result(rng, *call)
    convo.calls([call], [result])
    return convo, [], describe(rng, result, _subject(call[1]))


def _follow_up_row(rng: random.Random) -> tuple[_Convo, list[Call], str]:
    convo, _, answer = _answer_row(rng)
    convo.messages.append({"role": "assistant", "content": answer})
    text, call = _single(rng)
    convo.messages.append({"role": "user", "content": text})
    return convo, [call], ""


_Chain = Callable[[random.Random], tuple[str, Call, Any, Callable[[Any], Call], str]]
"""``rng -> (request, first call, its result, result -> second call, the answer's subject)``."""


def _chain_track(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    oid = _id(rng, "ORD")
    text = rng.choice(
        [f"Where is the package for order {oid} right now?", f"Track the shipment of {oid}."]
    )
    first = {
        "order_id": oid,
        "status": "shipped",
        "carrier": rng.choice(["ups", "dhl"]),
        "tracking_number": f"1Z{rng.randint(10**7, 10**8 - 1)}",
    }
    return (
        text,
        ("get_order_status", {"order_id": oid}),
        first,
        (lambda r: ("track_package", {"tracking_number": r["tracking_number"]})),
        oid,
    )


def _chain_note(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    email = f"{rng.choice(_T['first_names']).lower()}@example.com"
    note = rng.choice(["asked for a callback", "renewal due in May", "prefers email"])
    text = f"Add the note '{note}' to the customer account of {email}."
    first = tool_result(rng, "lookup_customer", {"email": email})
    return (
        text,
        ("lookup_customer", {"email": email}),
        first,
        (lambda r: ("add_customer_note", {"customer_id": r["customer_id"], "note": note})),
        email,
    )


def _chain_invoice(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    email = f"{rng.choice(_T['first_names']).lower()}@example.com"
    amount, cur = rng.randint(50, 2000), rng.choice(["USD", "EUR", "GBP"])
    text = f"Invoice the customer {email} for {amount} {cur}."
    first = tool_result(rng, "lookup_customer", {"email": email})
    return (
        text,
        ("lookup_customer", {"email": email}),
        first,
        (
            lambda r: (
                "create_invoice",
                {"customer_id": r["customer_id"], "amount": amount, "currency": cur},
            )
        ),
        email,
    )


def _chain_stock(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    symbol = rng.choice(["AAPL", "MSFT", "NVDA", "SAP", "TSLA", "AMZN"])
    to = rng.choice(["EUR", "GBP", "JPY", "CHF"])
    text = f"What is one {symbol} share worth in {to}?"
    first = tool_result(rng, "get_stock_quote", {"symbol": symbol})
    return (
        text,
        ("get_stock_quote", {"symbol": symbol}),
        first,
        (
            lambda r: (
                "convert_money",
                {"amount": r["price"], "from_currency": "USD", "to_currency": to},
            )
        ),
        symbol,
    )


def _chain_stock_check(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    query = rng.choice(["desk lamp", "standing desk", "usb-c hub", "office chair", "webcam"])
    text = f"Find a {query} in the catalog and check how many we have in stock."
    first = [{"sku": f"SKU-{rng.randint(1000, 9999)}", "name": query, "price": _price(rng)}]
    return (
        text,
        ("search_catalog", {"query": query}),
        first,
        (lambda r: ("check_inventory", {"sku": r[0]["sku"]})),
        query,
    )


def _chain_refund(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    oid = _id(rng, "ORD")
    text = f"Refund order {oid} in full."
    first = {"order_id": oid, "status": "delivered", "total": _price(rng), "currency": "USD"}
    return (
        text,
        ("get_order_status", {"order_id": oid}),
        first,
        (
            lambda r: (
                "issue_refund",
                {"order_id": oid, "amount": r["total"], "currency": r["currency"]},
            )
        ),
        oid,
    )


def _chain_reply(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    topic = rng.choice(["invoice 332", "the Q3 budget", "the offsite", "contract renewal"])
    body = rng.choice(["Thanks, I will look into it today.", "Received, thank you!"])
    text = f"Find the mail about {topic} and reply to its sender: '{body}'"
    first = tool_result(rng, "search_inbox", {"query": topic})
    return (
        text,
        ("search_inbox", {"query": topic}),
        first,
        (
            lambda r: (
                "send_mail",
                {"to": r[0]["from"], "subject": "Re: " + r[0]["subject"], "body": body},
            )
        ),
        topic,
    )


def _chain_price(rng: random.Random) -> tuple[str, Call, Any, Callable[[Any], Call], str]:
    sku = f"SKU-{rng.randint(1000, 9999)}"
    to = rng.choice(["EUR", "GBP", "CAD", "AUD"])
    text = f"How much does {sku} cost in {to}?"
    first = tool_result(rng, "get_product_info", {"sku": sku})
    return (
        text,
        ("get_product_info", {"sku": sku}),
        first,
        (
            lambda r: (
                "convert_money",
                {"amount": r["price"], "from_currency": "USD", "to_currency": to},
            )
        ),
        sku,
    )


_CHAINS: list[_Chain] = [
    _chain_track,
    _chain_note,
    _chain_invoice,
    _chain_stock,
    _chain_stock_check,
    _chain_refund,
    _chain_reply,
    _chain_price,
]


def _chain_row(rng: random.Random, finish: bool) -> tuple[_Convo, list[Call], str, list[str]]:
    text, first, result, then, subject = rng.choice(_CHAINS)(rng)
    convo = _Convo(rng, text)
    convo.calls([first], [result])
    second = then(result)
    if not finish:
        return convo, [second], "", [first[0], second[0]]
    result2 = tool_result(rng, *second)
    convo.calls([second], [result2])
    return convo, [], describe(rng, result2, subject), [first[0], second[0]]


def _compare_row(rng: random.Random, finish: bool) -> tuple[_Convo, list[Call], str, list[str]]:
    tool, arg, question, key = rng.choice(_T["compare"])
    if arg == "city":
        a, b = rng.sample(_T["cities"], 2)
    elif arg == "symbol":
        a, b = rng.sample(["AAPL", "MSFT", "NVDA", "SAP", "TSLA", "AMZN", "ASML"], 2)
    else:
        a, b = (f"SKU-{rng.randint(1000, 9999)}" for _ in range(2))
    calls = [(tool, {arg: a}), (tool, {arg: b})]
    convo = _Convo(rng, question.format(a=a, b=b))
    if not finish:
        return convo, calls, "", [tool]
    results = [tool_result(rng, n, x) for n, x in calls]
    while results[0][key] == results[1][key]:
        results[1][key] += 1
    convo.calls(calls, results)
    hi, lo = (0, 1) if results[0][key] > results[1][key] else (1, 0)
    names = (a, b)
    unit = {"temperature": " degrees", "price": " USD", "available": " units"}[key]
    answer = (
        f"{names[hi]} is higher on {_label(key)}: {_text(results[hi][key])}{unit} against "
        f"{_text(results[lo][key])}{unit} for {names[lo]}."
    )
    if key == "temperature":
        answer = (
            f"It is warmer in {names[hi]}: {results[hi]['temperature']} degrees "
            f"{results[hi]['unit']} against {results[lo]['temperature']} in {names[lo]}."
        )
    return convo, [], answer, [tool]


def _error_row(rng: random.Random) -> tuple[_Convo, list[Call], str, list[str]]:
    if rng.random() < 0.5:
        # The error names the fix: the next move is the corrected call.
        city = rng.choice(_T["cities"])
        typo = city[:-1] + city[-1] * 2 if rng.random() < 0.5 else city.lower()[:-1]
        convo = _Convo(rng, f"What's the weather in {typo}?")
        convo.calls(
            [("current_conditions", {"city": typo})],
            [_Error(f"unknown city '{typo}'. Did you mean '{city}'?")],
        )
        return convo, [("current_conditions", {"city": city})], "", ["current_conditions"]
    text, call = _single(rng)
    convo = _Convo(rng, text)
    reason = rng.choice(
        [
            f"{_subject(call[1]) or 'the record'} was not found",
            "the service is temporarily unavailable",
            "permission denied for this account",
        ]
    )
    convo.calls([call], [_Error(reason)])
    answer = rng.choice(
        [
            f"Sorry, I couldn't complete that: {reason}.",
            f"That didn't work — the tool reported: {reason}.",
        ]
    )
    return convo, [], answer, [call[0]]


def generate_agent_requests(count: int, *, seed: int = 0) -> list[TrainRequest]:
    """``count`` agent rows mixed by :data:`AGENT_KINDS`, each offering 2–6 tools among
    which every tool its conversation calls. Same seed, same list."""
    if count < 0:
        raise ValueError("count must be >= 0")
    rng = random.Random(seed)
    kinds = list(AGENT_KINDS)
    weights = [AGENT_KINDS[k] for k in kinds]
    out: list[TrainRequest] = []
    for index in range(count):
        kind = rng.choices(kinds, weights)[0]
        if kind == "answer":
            convo, calls, answer = _answer_row(rng)
            needed = convo.called
        elif kind == "follow_up":
            convo, calls, answer = _follow_up_row(rng)
            needed = convo.called + [n for n, _ in calls]
        elif kind == "chain":
            convo, calls, answer, needed = _chain_row(rng, finish=rng.random() < 0.5)
        elif kind == "compare":
            convo, calls, answer, needed = _compare_row(rng, finish=rng.random() < 0.7)
        else:
            convo, calls, answer, needed = _error_row(rng)
        names = list(dict.fromkeys(needed))
        tools = _offer(rng, names, max(len(names) + 1, _tool_count(rng)))
        out.append(
            TrainRequest(
                id=f"agent_{kind}_{index}",
                messages=convo.messages,
                tools=tools,
                calls=calls,
                answer=answer,
                source=f"agent+{kind}",
            )
        )
    return out
