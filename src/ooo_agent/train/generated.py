"""Generated multi-tool training requests: business tools and plain requests with their calls.

About half the tools come from :mod:`ooo_agent.train.generated_science` (numeric arguments:
science, maths, units, loans, look-ups), the rest are the business tools of
``tables/business.json``, with their value pools and phrasings.

BFCL's live data teaches the call syntax, but few of its requests offer several plausible
tools. These requests do: each offers 2–6 realistic tools (orders, refunds, catalogue,
calendar, currency, weather, e-mail, CRM, tickets, inventory, shipping, …) with the right one
among them, asks in varied words, and puts every argument value in the request text, so the
model learns to pick the tool and copy values. Some ask for two things at once (two calls),
and some fit no offered tool: their answer is plain text, so the model also learns when
not to call.

Deterministic for a seed::

    requests = generate_requests(600, seed=7)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ooo_agent.train._tool_schema import load_table, table_tools
from ooo_agent.train._tool_schema import pick as _pick
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_science import SCIENCE_DOMAINS, SCIENCE_GENERATORS, SCIENCE_TOOLS

__all__ = ["DOMAINS", "GENERATED_TOOLS", "NO_TOOL_ANSWER", "generate_requests"]

Args = dict[str, Any]

NO_TOOL_ANSWER = "Sorry, I can't do that with the tools I have."
"""The answer of a training row whose request no offered tool can serve."""


_T = load_table("business")
"""Tools, domains, value pools and phrasings (``tables/business.json``)."""

GENERATED_TOOLS: dict[str, dict[str, Any]] = table_tools(_T["tools"])
GENERATED_TOOLS.update(SCIENCE_TOOLS)  # numeric tools: generated_science.py


@dataclass(frozen=True)
class _Gen:
    """Picks values and phrasing for one tool: ``rng -> (request text, arguments)``."""

    tool: str
    make: Callable[[random.Random], tuple[str, Args]]


def _date(rng: random.Random) -> str:
    return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(7, 19):02d}:{rng.choice(['00', '15', '30', '45'])}"


def _order(rng: random.Random) -> str:
    return f"ORD-{rng.randint(10000, 99999)}"


def _sku(rng: random.Random) -> str:
    return f"SKU-{rng.randint(1000, 9999)}"


def _money(rng: random.Random) -> int | float:
    """A whole amount stays an integer (``50``, not ``50.0``): the call copies what the user
    wrote, and a model taught to write ``50.0`` writes ``2.0`` into ``integer`` slots too."""
    return rng.choice([rng.randint(5, 500), round(rng.uniform(5, 900), 2)])


def _email(rng: random.Random, name: str | None = None) -> str:
    person = (name or rng.choice(_T["names"])).split()[0].lower()
    domain = rng.choice(["example.com", "acme.io", "mail.net", "northwind.co"])
    return f"{person}@{domain}"


def _fmt(amount: float) -> str:
    return str(int(amount)) if amount == int(amount) else f"{amount:.2f}"


def _order_status(rng: random.Random) -> tuple[str, Args]:
    oid = _order(rng)
    if rng.random() < 0.3:
        return _pick(
            rng,
            f"Where is order {oid}? Show me the items too.",
            f"Give me the status and line items of {oid}.",
        ), {"order_id": oid, "include_items": True}
    return _pick(
        rng,
        f"What's the status of order {oid}?",
        f"Has {oid} shipped yet?",
        f"Check order {oid} for me.",
    ), {"order_id": oid}


def _cancel(rng: random.Random) -> tuple[str, Args]:
    oid, reason = _order(rng), rng.choice(_T["reasons"])
    if rng.random() < 0.5:
        return _pick(
            rng,
            f"Cancel order {oid}, the customer says: {reason}.",
            f"Please cancel {oid} because {reason}.",
        ), {"order_id": oid, "reason": reason}
    return _pick(rng, f"Cancel order {oid}.", f"I need {oid} cancelled."), {"order_id": oid}


def _refund(rng: random.Random) -> tuple[str, Args]:
    oid, amount = _order(rng), _money(rng)
    if rng.random() < 0.5:
        cur = rng.choice(_T["currencies"])
        return _pick(
            rng,
            f"Refund {_fmt(amount)} {cur} on order {oid}.",
            f"Issue a refund of {_fmt(amount)} {cur} for {oid}.",
        ), {"order_id": oid, "amount": amount, "currency": cur}
    reason = rng.choice(_T["reasons"])
    return f"Refund {_fmt(amount)} for order {oid}, reason: {reason}.", {
        "order_id": oid,
        "amount": amount,
        "reason": reason,
    }


def _catalog(rng: random.Random) -> tuple[str, Args]:
    query = rng.choice(_T["products"])
    roll = rng.random()
    if roll < 0.35:
        price = rng.choice([50, 100, 150, 200, 300, 500])
        return _pick(
            rng,
            f"Find {query} under {_fmt(price)}.",
            f"Search the catalogue for {query} with a max price of {_fmt(price)}.",
        ), {"query": query, "max_price": price}
    if roll < 0.6:
        cat = rng.choice(_T["categories"])
        return f"Search for {query} in the {cat} category, only items in stock.", {
            "query": query,
            "category": cat,
            "in_stock_only": True,
        }
    return _pick(rng, f"Do we sell {query}?", f"Show me {query} from the catalogue."), {
        "query": query
    }


def _product(rng: random.Random) -> tuple[str, Args]:
    sku = _sku(rng)
    return _pick(
        rng,
        f"What does {sku} cost?",
        f"Get me the product details for {sku}.",
        f"Describe product {sku}.",
    ), {"sku": sku}


def _event(rng: random.Random) -> tuple[str, Args]:
    title, date, start = rng.choice(_T["events"]), _date(rng), _time(rng)
    args: Args = {"title": title, "date": date, "start_time": start}
    text = _pick(
        rng,
        f"Put '{title}' on my calendar on {date} at {start}",
        f"Schedule {title} for {date} at {start}",
    )
    if rng.random() < 0.4:
        args["duration_minutes"] = rng.choice([15, 30, 45, 60, 90])
        text += f" for {args['duration_minutes']} minutes"
    if rng.random() < 0.3:
        args["attendees"] = [_email(rng), _email(rng)]
        text += f", invite {args['attendees'][0]} and {args['attendees'][1]}"
    return text + ".", args


def _list_events(rng: random.Random) -> tuple[str, Args]:
    date = _date(rng)
    return _pick(rng, f"What's on my calendar on {date}?", f"List my meetings for {date}."), {
        "date": date
    }


def _convert(rng: random.Random) -> tuple[str, Args]:
    amount = _money(rng)
    src, dst = rng.sample(_T["currencies"], 2)
    return _pick(
        rng,
        f"How much is {_fmt(amount)} {src} in {dst}?",
        f"Convert {_fmt(amount)} {src} to {dst}.",
    ), {"amount": amount, "from_currency": src, "to_currency": dst}


def _weather(rng: random.Random) -> tuple[str, Args]:
    city = rng.choice(_T["cities"])
    if rng.random() < 0.35:
        unit = rng.choice(["celsius", "fahrenheit"])
        return f"What's the weather in {city} right now, in {unit}?", {"city": city, "unit": unit}
    return _pick(rng, f"What's the weather like in {city}?", f"Is it raining in {city} now?"), {
        "city": city
    }


def _forecast(rng: random.Random) -> tuple[str, Args]:
    city, days = rng.choice(_T["cities"]), rng.randint(2, 7)
    return _pick(
        rng,
        f"Give me the {days}-day forecast for {city}.",
        f"What will the weather be in {city} over the next {days} days?",
    ), {"city": city, "days": days}


def _send_email(rng: random.Random) -> tuple[str, Args]:
    to, subject, body = _email(rng), rng.choice(_T["events"]), rng.choice(_T["phrases"])
    args: Args = {"to": to, "subject": subject, "body": body}
    text = f"Email {to} with the subject '{subject}' saying '{body}'"
    if rng.random() < 0.25:
        args["cc"] = _email(rng)
        text += f", cc {args['cc']}"
    return text + ".", args


def _search_inbox(rng: random.Random) -> tuple[str, Args]:
    query = rng.choice(["invoice", "contract", "Helix", "refund", "offsite"])
    if rng.random() < 0.4:
        return f"Find unread emails about {query}.", {"query": query, "unread_only": True}
    return f"Search my inbox for {query}.", {"query": query}


def _contact(rng: random.Random) -> tuple[str, Args]:
    name = rng.choice(_T["names"])
    args: Args = {"full_name": name, "email": _email(rng, name)}
    text = f"Add {name} ({args['email']}) to the CRM"
    if rng.random() < 0.5:
        args["company"] = rng.choice(_T["companies"])
        text += rng.choice([f" from {args['company']}", f" as a contact at {args['company']}"])
    return text + ".", args


def _deal(rng: random.Random) -> tuple[str, Args]:
    deal, stage = f"D-{rng.randint(1000, 9999)}", rng.choice(_T["stages"])
    return _pick(rng, f"Move deal {deal} to {stage}.", f"Deal {deal} is now {stage}, update it."), {
        "deal_id": deal,
        "stage": stage,
    }


def _note(rng: random.Random) -> tuple[str, Args]:
    cid, note = f"C-{rng.randint(100, 999)}", rng.choice(_T["notes"])
    return f"Note on customer {cid}: {note}.", {"customer_id": cid, "note": note}


def _lookup(rng: random.Random) -> tuple[str, Args]:
    email = _email(rng)
    return _pick(rng, f"Who is {email}?", f"Pull up the customer record for {email}."), {
        "email": email
    }


def _ticket(rng: random.Random) -> tuple[str, Args]:
    subject, description = rng.choice(_T["issues"])
    args: Args = {"subject": subject, "description": description}
    text = f"Open a ticket '{subject}': {description}"
    if rng.random() < 0.5:
        args["priority"] = rng.choice(_T["priorities"])
        text += f". Priority {args['priority']}"
    return text + ".", args


def _ticket_status(rng: random.Random) -> tuple[str, Args]:
    tid, status = f"TCK-{rng.randint(1000, 9999)}", rng.choice(_T["ticket_states"])
    return _pick(rng, f"Mark ticket {tid} as {status}.", f"Set {tid} to {status}."), {
        "ticket_id": tid,
        "status": status,
    }


def _inventory(rng: random.Random) -> tuple[str, Args]:
    sku = _sku(rng)
    if rng.random() < 0.5:
        wh = rng.choice(_T["warehouses"])
        return f"How many {sku} do we have in {wh}?", {"sku": sku, "warehouse": wh}
    return _pick(rng, f"Check stock for {sku}.", f"Is {sku} in stock?"), {"sku": sku}


def _adjust(rng: random.Random) -> tuple[str, Args]:
    sku, wh, qty = _sku(rng), rng.choice(_T["warehouses"]), rng.randint(1, 200)
    if rng.random() < 0.5:
        return f"Add {qty} units of {sku} to {wh}.", {
            "sku": sku,
            "quantity_change": qty,
            "warehouse": wh,
        }
    return f"Remove {qty} units of {sku} from {wh}, they were damaged.", {
        "sku": sku,
        "quantity_change": -qty,
        "warehouse": wh,
    }


def _shipment(rng: random.Random) -> tuple[str, Args]:
    oid, carrier = _order(rng), rng.choice(_T["carriers"])
    if rng.random() < 0.5:
        level = rng.choice(["standard", "express", "overnight"])
        return f"Ship {oid} with {carrier}, {level}.", {
            "order_id": oid,
            "carrier": carrier,
            "service_level": level,
        }
    return f"Create a {carrier} label for order {oid}.", {"order_id": oid, "carrier": carrier}


def _track(rng: random.Random) -> tuple[str, Args]:
    number = f"1Z{rng.randint(10**9, 10**10 - 1)}"
    return _pick(rng, f"Where is parcel {number}?", f"Track {number} please."), {
        "tracking_number": number
    }


def _quote(rng: random.Random) -> tuple[str, Args]:
    origin, dest = str(rng.randint(10000, 99999)), str(rng.randint(10000, 99999))
    weight = rng.choice([0.5, 1, 2, 2.5, 4, 7.5, 12])
    return f"How much to ship a {_fmt(weight)} kg box from {origin} to {dest}?", {
        "origin_zip": origin,
        "destination_zip": dest,
        "weight_kg": weight,
    }


def _room(rng: random.Random) -> tuple[str, Args]:
    room, date, start = rng.choice(_T["rooms"]), _date(rng), _time(rng)
    end = f"{int(start[:2]) + 1:02d}:{start[3:]}"
    return f"Book the {room} room on {date} from {start} to {end}.", {
        "room": room,
        "date": date,
        "start_time": start,
        "end_time": end,
    }


def _translate(rng: random.Random) -> tuple[str, Args]:
    text, lang = rng.choice(_T["phrases"]), rng.choice(_T["languages"])
    return _pick(rng, f"Translate '{text}' into {lang}.", f"How do you say '{text}' in {lang}?"), {
        "text": text,
        "target_language": lang,
    }


def _stock(rng: random.Random) -> tuple[str, Args]:
    symbol = rng.choice(_T["symbols"])
    return _pick(rng, f"What's {symbol} trading at?", f"Get the share price of {symbol}."), {
        "symbol": symbol
    }


def _invoice(rng: random.Random) -> tuple[str, Args]:
    cid, amount, cur = f"C-{rng.randint(100, 999)}", _money(rng), rng.choice(_T["currencies"])
    args: Args = {"customer_id": cid, "amount": amount, "currency": cur}
    text = f"Invoice customer {cid} for {_fmt(amount)} {cur}"
    if rng.random() < 0.5:
        args["due_date"] = _date(rng)
        text += f", due {args['due_date']}"
    return text + ".", args


def _reminder(rng: random.Random) -> tuple[str, Args]:
    message = rng.choice(["call the bank", "renew the domain", "send the report", "water plants"])
    when = f"{_date(rng)} {_time(rng)}"
    return f"Remind me to {message} at {when}.", {"message": message, "remind_at": when}


def _coupon(rng: random.Random) -> tuple[str, Args]:
    cart, code = f"CART-{rng.randint(100, 999)}", rng.choice(["SPRING20", "WELCOME10", "VIP5"])
    return f"Apply code {code} to cart {cart}.", {"cart_id": cart, "code": code}


_GENERATORS: list[_Gen] = [
    _Gen(name, make)
    for name, make in [
        ("get_order_status", _order_status),
        ("cancel_order", _cancel),
        ("issue_refund", _refund),
        ("search_catalog", _catalog),
        ("get_product_info", _product),
        ("create_calendar_event", _event),
        ("list_calendar_events", _list_events),
        ("convert_money", _convert),
        ("current_conditions", _weather),
        ("get_weather_forecast", _forecast),
        ("send_mail", _send_email),
        ("search_inbox", _search_inbox),
        ("create_crm_contact", _contact),
        ("update_deal_stage", _deal),
        ("add_customer_note", _note),
        ("lookup_customer", _lookup),
        ("create_support_ticket", _ticket),
        ("update_ticket_status", _ticket_status),
        ("check_inventory", _inventory),
        ("adjust_stock", _adjust),
        ("create_shipment", _shipment),
        ("track_package", _track),
        ("get_shipping_quote", _quote),
        ("book_meeting_room", _room),
        ("translate_snippet", _translate),
        ("get_stock_quote", _stock),
        ("create_invoice", _invoice),
        ("set_reminder", _reminder),
        ("apply_coupon", _coupon),
        *SCIENCE_GENERATORS,
    ]
]

DOMAINS: dict[str, tuple[str, ...]] = {
    **{name: tuple(members) for name, members in _T["domains"].items()},
    **SCIENCE_DOMAINS,
}
"""Tools a real workspace offers together. Distractors come from the needed tool's domain
first: choosing between ``current_conditions`` and ``get_weather_forecast``, or
``cancel_order`` and ``issue_refund``, is what an agent must learn — an unrelated
distractor teaches little."""


def _offer(
    rng: random.Random, needed: list[str], total: int, same_domain: float = 0.75
) -> list[dict[str, Any]]:
    """The needed tools plus distractors, shuffled: with probability ``same_domain`` the
    distractors are drawn first from the needed tools' domains, the rest at random."""
    others = [n for n in GENERATED_TOOLS if n not in needed]
    want = max(0, total - len(needed))
    chosen: list[str] = []
    if needed and rng.random() < same_domain:
        near = sorted(
            {
                n
                for members in DOMAINS.values()
                if set(members) & set(needed)
                for n in members
                if n not in needed
            }
        )
        chosen = rng.sample(near, min(want, len(near)))
    rest = [n for n in others if n not in chosen]
    chosen += rng.sample(rest, want - len(chosen))
    names = needed + chosen
    rng.shuffle(names)
    return [GENERATED_TOOLS[n] for n in names]


def _tool_count(rng: random.Random) -> int:
    """2–6 tools, mostly 2–4: each schema costs ~120 prompt tokens of a small model's budget."""
    return rng.choices([2, 3, 4, 5, 6], weights=[30, 35, 22, 9, 4])[0]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def generate_requests(
    count: int, *, seed: int = 0, parallel_share: float = 0.2, no_tool_share: float = 0.12
) -> list[TrainRequest]:
    """``count`` requests: single calls, two-call requests (``parallel_share``) and requests
    no offered tool fits (``no_tool_share``), each offering 2–6 tools. Same seed, same list."""
    if count < 0 or not 0 <= parallel_share <= 1 or not 0 <= no_tool_share <= 1:
        raise ValueError("count must be >= 0 and the shares within [0, 1]")
    rng = random.Random(seed)
    requests: list[TrainRequest] = []
    for index in range(count):
        roll = rng.random()
        opener = rng.choice(_T["openers"])
        if roll < no_tool_share:
            tools = _offer(rng, [], _tool_count(rng))
            if rng.random() < 0.6:
                text, answer = rng.choice(_T["no_tool"])
            else:
                text = rng.choice(_T["unsupported"])
                answer = NO_TOOL_ANSWER
            requests.append(_request(index, opener + text, tools, [], answer))
            continue
        first = rng.choice(_GENERATORS)
        text, args = first.make(rng)
        calls = [(first.tool, args)]
        if roll < no_tool_share + parallel_share:
            second = rng.choice(_GENERATORS)
            text2, args2 = second.make(rng)
            text += rng.choice(_T["joiners"]) + _lower_first(text2)
            calls.append((second.tool, args2))
        needed = list(dict.fromkeys(name for name, _ in calls))
        tools = _offer(rng, needed, max(len(needed) + 1, _tool_count(rng)))
        requests.append(_request(index, opener + text, tools, calls, ""))
    return requests


def _request(
    index: int, text: str, tools: list[dict[str, Any]], calls: list[tuple[str, Args]], answer: str
) -> TrainRequest:
    return TrainRequest(
        id=f"generated_{index}",
        messages=[{"role": "user", "content": text}],
        tools=tools,
        calls=calls,
        answer=answer,
        source="generated",
    )
