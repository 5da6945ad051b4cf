"""Generated multi-tool training requests: business tools and plain requests with their calls.

About half the tools come from :mod:`ooo_agent.train.generated_science` (numeric arguments:
science, maths, units, loans, look-ups), the rest are the business tools below.

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

from ooo_agent.train._tool_schema import array_param as _a
from ooo_agent.train._tool_schema import param
from ooo_agent.train._tool_schema import pick as _pick
from ooo_agent.train._tool_schema import tool_schema as _tool
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_science import SCIENCE_DOMAINS, SCIENCE_GENERATORS, SCIENCE_TOOLS

__all__ = ["DOMAINS", "GENERATED_TOOLS", "NO_TOOL_ANSWER", "generate_requests"]

Args = dict[str, Any]

NO_TOOL_ANSWER = "Sorry, I can't do that with the tools I have."
"""The answer of a training row whose request no offered tool can serve."""


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return param("string", description, **extra)


def _i(description: str, **extra: Any) -> dict[str, Any]:
    return param("integer", description, **extra)


def _n(description: str, **extra: Any) -> dict[str, Any]:
    return param("number", description, **extra)


def _b(description: str, **extra: Any) -> dict[str, Any]:
    return param("boolean", description, **extra)


_CURRENCIES = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "INR", "MXN"]
_CARRIERS = ["ups", "fedex", "dhl", "usps"]
_PRIORITIES = ["low", "medium", "high", "urgent"]
_STAGES = ["prospect", "qualified", "proposal", "negotiation", "won", "lost"]
_TICKET_STATES = ["open", "pending", "resolved", "closed"]

GENERATED_TOOLS: dict[str, dict[str, Any]] = {
    t["function"]["name"]: t
    for t in [
        _tool(
            "get_order_status",
            "Look up the current status of a customer order.",
            {
                "order_id": _s("Order number, e.g. 'ORD-10293'."),
                "include_items": _b("Also return the line items. Default false."),
            },
            ["order_id"],
        ),
        _tool(
            "cancel_order",
            "Cancel an order that has not shipped yet.",
            {"order_id": _s("Order number."), "reason": _s("Why the customer cancels.")},
            ["order_id"],
        ),
        _tool(
            "issue_refund",
            "Refund all or part of an order to the original payment method.",
            {
                "order_id": _s("Order number."),
                "amount": _n("Amount to refund."),
                "currency": _s("ISO currency code.", enum=_CURRENCIES),
                "reason": _s("Reason shown on the credit note."),
            },
            ["order_id", "amount"],
        ),
        _tool(
            "search_catalog",
            "Search the product catalogue.",
            {
                "query": _s("Free-text search terms."),
                "category": _s("Product category."),
                "max_price": _n("Highest price to include."),
                "in_stock_only": _b("Only products in stock. Default false."),
            },
            ["query"],
        ),
        _tool(
            "get_product_info",
            "Get price, description and stock of one product by SKU.",
            {"sku": _s("Stock keeping unit, e.g. 'SKU-4471'.")},
            ["sku"],
        ),
        _tool(
            "create_calendar_event",
            "Add an event to the user's calendar.",
            {
                "title": _s("Event title."),
                "date": _s("Date, YYYY-MM-DD."),
                "start_time": _s("Start time, HH:MM (24 h)."),
                "duration_minutes": _i("Length in minutes. Default 30."),
                "attendees": _a("E-mail addresses of the attendees."),
            },
            ["title", "date", "start_time"],
        ),
        _tool(
            "list_calendar_events",
            "List the events on the user's calendar for one day.",
            {"date": _s("Date, YYYY-MM-DD.")},
            ["date"],
        ),
        _tool(
            "convert_money",
            "Convert an amount of money between two currencies.",
            {
                "amount": _n("Amount to convert."),
                "from_currency": _s("ISO code of the source currency."),
                "to_currency": _s("ISO code of the target currency."),
            },
            ["amount", "from_currency", "to_currency"],
        ),
        _tool(
            "current_conditions",
            "Current weather conditions in a city.",
            {
                "city": _s("City name, e.g. 'Lyon'."),
                "unit": _s("Temperature unit.", enum=["celsius", "fahrenheit"]),
            },
            ["city"],
        ),
        _tool(
            "get_weather_forecast",
            "Daily weather forecast for a city.",
            {"city": _s("City name."), "days": _i("Number of days, 1-10.")},
            ["city", "days"],
        ),
        _tool(
            "send_mail",
            "Send an e-mail from the user's account.",
            {
                "to": _s("Recipient e-mail address."),
                "subject": _s("Subject line."),
                "body": _s("Message text."),
                "cc": _s("Optional CC address."),
            },
            ["to", "subject", "body"],
        ),
        _tool(
            "search_inbox",
            "Search the user's mailbox.",
            {"query": _s("Search terms."), "unread_only": _b("Only unread messages.")},
            ["query"],
        ),
        _tool(
            "create_crm_contact",
            "Create a contact in the CRM.",
            {
                "full_name": _s("Contact's full name."),
                "email": _s("E-mail address."),
                "company": _s("Company name."),
                "phone": _s("Phone number."),
            },
            ["full_name", "email"],
        ),
        _tool(
            "update_deal_stage",
            "Move a sales deal to another pipeline stage.",
            {
                "deal_id": _s("Deal identifier, e.g. 'D-2291'."),
                "stage": _s("New stage.", enum=_STAGES),
            },
            ["deal_id", "stage"],
        ),
        _tool(
            "add_customer_note",
            "Attach a note to a customer record.",
            {"customer_id": _s("Customer identifier."), "note": _s("Note text.")},
            ["customer_id", "note"],
        ),
        _tool(
            "lookup_customer",
            "Find a customer record by e-mail address.",
            {"email": _s("Customer e-mail address.")},
            ["email"],
        ),
        _tool(
            "create_support_ticket",
            "Open a support ticket.",
            {
                "subject": _s("Short summary."),
                "description": _s("What happened."),
                "priority": _s("Ticket priority.", enum=_PRIORITIES),
            },
            ["subject", "description"],
        ),
        _tool(
            "update_ticket_status",
            "Change the status of a support ticket.",
            {
                "ticket_id": _s("Ticket number, e.g. 'TCK-5512'."),
                "status": _s("New status.", enum=_TICKET_STATES),
            },
            ["ticket_id", "status"],
        ),
        _tool(
            "check_inventory",
            "Units in stock for a SKU, optionally in one warehouse.",
            {"sku": _s("Stock keeping unit."), "warehouse": _s("Warehouse code.")},
            ["sku"],
        ),
        _tool(
            "adjust_stock",
            "Add or remove units of a SKU in a warehouse.",
            {
                "sku": _s("Stock keeping unit."),
                "quantity_change": _i("Units to add (positive) or remove (negative)."),
                "warehouse": _s("Warehouse code."),
            },
            ["sku", "quantity_change", "warehouse"],
        ),
        _tool(
            "create_shipment",
            "Create a shipping label for an order.",
            {
                "order_id": _s("Order number."),
                "carrier": _s("Carrier.", enum=_CARRIERS),
                "service_level": _s("Speed.", enum=["standard", "express", "overnight"]),
            },
            ["order_id", "carrier"],
        ),
        _tool(
            "track_package",
            "Where a parcel is now, by tracking number.",
            {"tracking_number": _s("Carrier tracking number.")},
            ["tracking_number"],
        ),
        _tool(
            "get_shipping_quote",
            "Price of shipping a parcel between two postcodes.",
            {
                "origin_zip": _s("Origin postcode."),
                "destination_zip": _s("Destination postcode."),
                "weight_kg": _n("Parcel weight in kilograms."),
            },
            ["origin_zip", "destination_zip", "weight_kg"],
        ),
        _tool(
            "book_meeting_room",
            "Reserve a meeting room.",
            {
                "room": _s("Room name."),
                "date": _s("Date, YYYY-MM-DD."),
                "start_time": _s("Start, HH:MM."),
                "end_time": _s("End, HH:MM."),
            },
            ["room", "date", "start_time", "end_time"],
        ),
        _tool(
            "translate_snippet",
            "Translate text into another language.",
            {"text": _s("Text to translate."), "target_language": _s("Language name.")},
            ["text", "target_language"],
        ),
        _tool(
            "get_stock_quote",
            "Latest share price for a ticker symbol.",
            {"symbol": _s("Ticker symbol, e.g. 'AAPL'.")},
            ["symbol"],
        ),
        _tool(
            "create_invoice",
            "Issue an invoice to a customer.",
            {
                "customer_id": _s("Customer identifier."),
                "amount": _n("Invoice total."),
                "currency": _s("ISO currency code."),
                "due_date": _s("Due date, YYYY-MM-DD."),
            },
            ["customer_id", "amount", "currency"],
        ),
        _tool(
            "set_reminder",
            "Remind the user of something at a given time.",
            {"message": _s("What to remind about."), "remind_at": _s("When, 'YYYY-MM-DD HH:MM'.")},
            ["message", "remind_at"],
        ),
        _tool(
            "apply_coupon",
            "Apply a discount code to a shopping cart.",
            {"cart_id": _s("Cart identifier."), "code": _s("Discount code.")},
            ["cart_id", "code"],
        ),
    ]
}

# -- value pools --------------------------------------------------------------------------

GENERATED_TOOLS.update(SCIENCE_TOOLS)  # numeric tools: generated_science.py

_CITIES = [
    "Lyon",
    "Toronto",
    "Osaka",
    "Nairobi",
    "Lisbon",
    "Denver",
    "Krakow",
    "Austin",
    "Melbourne",
    "Bergen",
    "Seville",
    "Hanoi",
    "Glasgow",
    "Porto",
    "Calgary",
    "Munich",
]
_NAMES = [
    "Maria Lopez",
    "Tom Becker",
    "Aisha Khan",
    "Jonas Berg",
    "Li Wei",
    "Sara Conti",
    "David Okafor",
    "Emma Novak",
    "Ravi Patel",
    "Chloe Martin",
    "Omar Haddad",
]
_COMPANIES = ["Northwind Foods", "Bluepeak Labs", "Cedar & Co", "Helix Robotics", "Orbit Media"]
_PRODUCTS = [
    "wireless earbuds",
    "standing desk",
    "espresso machine",
    "trail running shoes",
    "4k monitor",
    "ergonomic chair",
    "rain jacket",
    "mechanical keyboard",
    "yoga mat",
]
_CATEGORIES = ["electronics", "office", "kitchen", "sports", "outdoor", "home"]
_ROOMS = ["Atlas", "Boreal", "Cobalt", "Delta", "Everest"]
_WAREHOUSES = ["WH-EAST", "WH-WEST", "AMS-1", "LYS-2", "TOR-3"]
_LANGUAGES = ["French", "German", "Spanish", "Japanese", "Portuguese", "Italian", "Dutch"]
_SYMBOLS = ["AAPL", "MSFT", "NVDA", "ASML", "SAP", "TSLA", "SHOP", "AMZN"]
_PHRASES = [
    "Your order has shipped",
    "Thank you for your patience",
    "The meeting is moved",
    "Please find the contract attached",
    "We are closed on Monday",
]
_REASONS = [
    "item arrived damaged",
    "ordered the wrong size",
    "found it cheaper elsewhere",
    "delivery took too long",
    "duplicate order",
]
_ISSUES = [
    ("Login fails", "the app shows error 403 after entering the password"),
    ("Invoice missing", "the March invoice never arrived by e-mail"),
    ("Sync broken", "contacts stopped syncing with the phone since yesterday"),
    ("Late delivery", "the parcel is five days late and tracking is not updating"),
]
_EVENTS = [
    "Quarterly review",
    "Team lunch",
    "Dentist",
    "Client call with Helix",
    "1:1 with Tom",
    "Budget planning",
    "Product demo",
]
_NOTES = [
    "prefers phone calls in the morning",
    "asked for a volume discount",
    "renewal due in September",
    "interested in the premium plan",
]


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
    person = (name or rng.choice(_NAMES)).split()[0].lower()
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
    oid, reason = _order(rng), rng.choice(_REASONS)
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
        cur = rng.choice(_CURRENCIES)
        return _pick(
            rng,
            f"Refund {_fmt(amount)} {cur} on order {oid}.",
            f"Issue a refund of {_fmt(amount)} {cur} for {oid}.",
        ), {"order_id": oid, "amount": amount, "currency": cur}
    reason = rng.choice(_REASONS)
    return f"Refund {_fmt(amount)} for order {oid}, reason: {reason}.", {
        "order_id": oid,
        "amount": amount,
        "reason": reason,
    }


def _catalog(rng: random.Random) -> tuple[str, Args]:
    query = rng.choice(_PRODUCTS)
    roll = rng.random()
    if roll < 0.35:
        price = rng.choice([50, 100, 150, 200, 300, 500])
        return _pick(
            rng,
            f"Find {query} under {_fmt(price)}.",
            f"Search the catalogue for {query} with a max price of {_fmt(price)}.",
        ), {"query": query, "max_price": price}
    if roll < 0.6:
        cat = rng.choice(_CATEGORIES)
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
    title, date, start = rng.choice(_EVENTS), _date(rng), _time(rng)
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
    src, dst = rng.sample(_CURRENCIES, 2)
    return _pick(
        rng,
        f"How much is {_fmt(amount)} {src} in {dst}?",
        f"Convert {_fmt(amount)} {src} to {dst}.",
    ), {"amount": amount, "from_currency": src, "to_currency": dst}


def _weather(rng: random.Random) -> tuple[str, Args]:
    city = rng.choice(_CITIES)
    if rng.random() < 0.35:
        unit = rng.choice(["celsius", "fahrenheit"])
        return f"What's the weather in {city} right now, in {unit}?", {"city": city, "unit": unit}
    return _pick(rng, f"What's the weather like in {city}?", f"Is it raining in {city} now?"), {
        "city": city
    }


def _forecast(rng: random.Random) -> tuple[str, Args]:
    city, days = rng.choice(_CITIES), rng.randint(2, 7)
    return _pick(
        rng,
        f"Give me the {days}-day forecast for {city}.",
        f"What will the weather be in {city} over the next {days} days?",
    ), {"city": city, "days": days}


def _send_email(rng: random.Random) -> tuple[str, Args]:
    to, subject, body = _email(rng), rng.choice(_EVENTS), rng.choice(_PHRASES)
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
    name = rng.choice(_NAMES)
    args: Args = {"full_name": name, "email": _email(rng, name)}
    text = f"Add {name} ({args['email']}) to the CRM"
    if rng.random() < 0.5:
        args["company"] = rng.choice(_COMPANIES)
        text += rng.choice([f" from {args['company']}", f" as a contact at {args['company']}"])
    return text + ".", args


def _deal(rng: random.Random) -> tuple[str, Args]:
    deal, stage = f"D-{rng.randint(1000, 9999)}", rng.choice(_STAGES)
    return _pick(rng, f"Move deal {deal} to {stage}.", f"Deal {deal} is now {stage}, update it."), {
        "deal_id": deal,
        "stage": stage,
    }


def _note(rng: random.Random) -> tuple[str, Args]:
    cid, note = f"C-{rng.randint(100, 999)}", rng.choice(_NOTES)
    return f"Note on customer {cid}: {note}.", {"customer_id": cid, "note": note}


def _lookup(rng: random.Random) -> tuple[str, Args]:
    email = _email(rng)
    return _pick(rng, f"Who is {email}?", f"Pull up the customer record for {email}."), {
        "email": email
    }


def _ticket(rng: random.Random) -> tuple[str, Args]:
    subject, description = rng.choice(_ISSUES)
    args: Args = {"subject": subject, "description": description}
    text = f"Open a ticket '{subject}': {description}"
    if rng.random() < 0.5:
        args["priority"] = rng.choice(_PRIORITIES)
        text += f". Priority {args['priority']}"
    return text + ".", args


def _ticket_status(rng: random.Random) -> tuple[str, Args]:
    tid, status = f"TCK-{rng.randint(1000, 9999)}", rng.choice(_TICKET_STATES)
    return _pick(rng, f"Mark ticket {tid} as {status}.", f"Set {tid} to {status}."), {
        "ticket_id": tid,
        "status": status,
    }


def _inventory(rng: random.Random) -> tuple[str, Args]:
    sku = _sku(rng)
    if rng.random() < 0.5:
        wh = rng.choice(_WAREHOUSES)
        return f"How many {sku} do we have in {wh}?", {"sku": sku, "warehouse": wh}
    return _pick(rng, f"Check stock for {sku}.", f"Is {sku} in stock?"), {"sku": sku}


def _adjust(rng: random.Random) -> tuple[str, Args]:
    sku, wh, qty = _sku(rng), rng.choice(_WAREHOUSES), rng.randint(1, 200)
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
    oid, carrier = _order(rng), rng.choice(_CARRIERS)
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
    room, date, start = rng.choice(_ROOMS), _date(rng), _time(rng)
    end = f"{int(start[:2]) + 1:02d}:{start[3:]}"
    return f"Book the {room} room on {date} from {start} to {end}.", {
        "room": room,
        "date": date,
        "start_time": start,
        "end_time": end,
    }


def _translate(rng: random.Random) -> tuple[str, Args]:
    text, lang = rng.choice(_PHRASES), rng.choice(_LANGUAGES)
    return _pick(rng, f"Translate '{text}' into {lang}.", f"How do you say '{text}' in {lang}?"), {
        "text": text,
        "target_language": lang,
    }


def _stock(rng: random.Random) -> tuple[str, Args]:
    symbol = rng.choice(_SYMBOLS)
    return _pick(rng, f"What's {symbol} trading at?", f"Get the share price of {symbol}."), {
        "symbol": symbol
    }


def _invoice(rng: random.Random) -> tuple[str, Args]:
    cid, amount, cur = f"C-{rng.randint(100, 999)}", _money(rng), rng.choice(_CURRENCIES)
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

# Requests no offered tool serves, with a plain answer (general knowledge or a polite "no").
_NO_TOOL: list[tuple[str, str]] = [
    (
        "Tell me a joke about accountants.",
        "Why did the accountant break up with the calculator? It felt used for its numbers.",
    ),
    ("What is the capital of Canada?", "The capital of Canada is Ottawa."),
    ("How many days are there in a leap year?", "A leap year has 366 days."),
    ("Thanks, that's all for today!", "You're welcome! Have a great day."),
    ("What does CRM stand for?", "CRM stands for customer relationship management."),
    (
        "Write a two-line poem about the sea.",
        "The sea keeps time in silver lines,\nand folds the moon in its designs.",
    ),
    ("Hello! Who are you?", "Hello! I'm an assistant that can use the tools of this workspace."),
    ("What is 12 times 12?", "12 times 12 is 144."),
    ("Which planet is closest to the sun?", "Mercury is the planet closest to the sun."),
    (
        "Can you explain what an invoice is?",
        "An invoice is a document a seller sends a buyer listing goods or services and the amount due.",
    ),
]
_UNSUPPORTED: list[str] = [
    "Book me a flight to Rome next Friday.",
    "Order a pizza to my office.",
    "Play some jazz music.",
    "Call my mother.",
    "Reset my laptop password.",
    "Find me a hotel in Oslo for two nights.",
    "Turn off the lights in the kitchen.",
]

_OPENERS = ["", "", "", "Hi, ", "Please: ", "Quick one: ", "Hey! ", "Could you help? "]
_JOINERS = [" Also, ", " And ", " Then ", " After that, ", " Plus, "]


DOMAINS: dict[str, tuple[str, ...]] = {
    "orders": (
        "get_order_status",
        "cancel_order",
        "issue_refund",
        "create_shipment",
        "track_package",
        "get_shipping_quote",
        "apply_coupon",
    ),
    "catalog": (
        "search_catalog",
        "get_product_info",
        "check_inventory",
        "adjust_stock",
        "apply_coupon",
    ),
    "calendar": (
        "create_calendar_event",
        "list_calendar_events",
        "book_meeting_room",
        "set_reminder",
    ),
    "finance": ("convert_money", "get_stock_quote", "create_invoice", "issue_refund"),
    "weather": ("current_conditions", "get_weather_forecast", "list_calendar_events"),
    "mail": ("send_mail", "search_inbox", "translate_snippet", "set_reminder"),
    "crm": ("create_crm_contact", "update_deal_stage", "add_customer_note", "lookup_customer"),
    "support": (
        "create_support_ticket",
        "update_ticket_status",
        "lookup_customer",
        "add_customer_note",
    ),
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
        opener = rng.choice(_OPENERS)
        if roll < no_tool_share:
            tools = _offer(rng, [], _tool_count(rng))
            if rng.random() < 0.6:
                text, answer = rng.choice(_NO_TOOL)
            else:
                text = rng.choice(_UNSUPPORTED)
                answer = NO_TOOL_ANSWER
            requests.append(_request(index, opener + text, tools, [], answer))
            continue
        first = rng.choice(_GENERATORS)
        text, args = first.make(rng)
        calls = [(first.tool, args)]
        if roll < no_tool_share + parallel_share:
            second = rng.choice(_GENERATORS)
            text2, args2 = second.make(rng)
            text += rng.choice(_JOINERS) + _lower_first(text2)
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
