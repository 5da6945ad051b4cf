"""Agent tasks with executable tools, scored by task success.

Two sources:

- :func:`held_out_tasks`: the project's own generated tasks on toolsets no training row ever
  offers (IT operations, HR, a library, a fleet): one-step look-ups and actions, two-step
  tasks (look up, then act on what was found) and comparisons (two look-ups, one answer).
  Tools return deterministic data, so the answer's key values are known.
- :func:`bfcl_multi_turn_tasks`: BFCL ``multi_turn_base``, its toolset classes executed from
  the ``bfcl-eval`` wheel; a turn is right when the toolsets' state after it equals the state
  the gold calls leave (BFCL's state check), and its gold calls were all made.

A task is done when every needed call was made with its key arguments and the final answer
(the run ending on text) states every key value of the results.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ooo_agent.tools import Tool, tool

__all__ = [
    "AgentTask",
    "NeededCall",
    "bfcl_multi_turn_tasks",
    "held_out_tasks",
    "held_out_tools",
    "needed_calls_made",
]


@dataclass(frozen=True)
class NeededCall:
    """A call the task needs: the tool and the arguments that must have these values."""

    name: str
    arguments: Mapping[str, Any]

    def made_by(self, name: str, arguments: Mapping[str, Any]) -> bool:
        return name == self.name and all(
            _same(arguments.get(k), v) for k, v in self.arguments.items()
        )


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, str) and isinstance(got, str):
        return got.strip().lower() == want.strip().lower()
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return abs(float(got) - float(want)) < 1e-6
    return bool(got == want)


@dataclass
class AgentTask:
    """One task: its user turns, a fresh toolset per run, and how it is scored."""

    id: str
    source: str
    steps: int
    """Tool calls the task needs (over all its turns)."""
    turns: list[str]
    """The user's messages, one per turn."""
    make_tools: Callable[[], list[Tool]]
    needed: list[list[NeededCall]] = field(default_factory=list)
    """Per turn, the calls it needs."""
    answer_values: list[str] = field(default_factory=list)
    """Text the final answer must hold (held-out tasks; empty for BFCL)."""
    check_turn: Callable[[int, list[Tool]], bool] | None = None
    """BFCL: after turn ``i`` on these tools, does the state equal the gold calls' state?"""


def needed_calls_made(needed: Sequence[NeededCall], calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """Whether every needed call is among ``calls`` (``(name, arguments)``)."""
    return all(any(n.made_by(name, args) for name, args in calls) for n in needed)


# -- held-out toolsets ---------------------------------------------------------------------

_SERVICES = {
    "checkout": ("eu-west-1", "degraded", 4.2, 6),
    "search-api": ("us-east-2", "healthy", 0.3, 12),
    "billing": ("eu-central-1", "down", 31.5, 4),
    "auth-gateway": ("ap-south-1", "healthy", 0.8, 8),
    "media-worker": ("us-west-2", "degraded", 7.9, 10),
}
_HOSTS = {"checkout": "web-07", "search-api": "web-12", "billing": "app-03",
          "auth-gateway": "edge-02", "media-worker": "batch-05"}  # fmt: skip
_EMPLOYEES = {
    "lena.park@corp.example": ("E-2041", "Lena Park", 14),
    "omar.haddad@corp.example": ("E-1187", "Omar Haddad", 3),
    "sofia.ricci@corp.example": ("E-3302", "Sofia Ricci", 22),
    "tomas.novak@corp.example": ("E-0954", "Tomas Novak", 9),
}
_BOOKS = {
    "the left hand of darkness": ("978-0441478125", 2),
    "dune": ("978-0441013593", 0),
    "middlemarch": ("978-0141439549", 5),
    "the remains of the day": ("978-0679731726", 1),
}
_TRUCKS = {"TR-11": ("Lyon", 62), "TR-24": ("Hamburg", 18), "TR-37": ("Porto", 91),
           "TR-45": ("Krakow", 40)}  # fmt: skip


def held_out_tools() -> list[Tool]:
    """Fresh executable tools of the held-out domains (their state is per call of this)."""
    restarted: list[str] = []

    @tool(read_only=True)
    def get_service_health(service: str) -> dict[str, Any]:
        """Report the health of a deployed service.

        Args:
            service: The service name, e.g. "checkout".
        """
        if service not in _SERVICES:
            raise ValueError(f"no service named {service!r}")
        region, status, error_rate, replicas = _SERVICES[service]
        return {"service": service, "status": status, "error_rate_percent": error_rate,
                "replicas": replicas, "region": region}  # fmt: skip

    @tool
    def restart_service(service: str, region: str) -> dict[str, Any]:
        """Restart every replica of a service in one region.

        Args:
            service: The service name.
            region: The cloud region the service runs in, e.g. "eu-west-1".
        """
        if service not in _SERVICES or _SERVICES[service][0] != region:
            raise ValueError(f"{service!r} does not run in {region!r}")
        restarted.append(service)
        return {"service": service, "region": region, "restart_id": f"rs-{len(service) * 7919 % 9000 + 1000}"}

    @tool(read_only=True)
    def find_service_host(service: str) -> dict[str, str]:
        """Find the primary host a service runs on.

        Args:
            service: The service name.
        """
        if service not in _HOSTS:
            raise ValueError(f"no service named {service!r}")
        return {"service": service, "host": _HOSTS[service]}

    @tool(read_only=True)
    def get_host_disk_usage(host: str) -> dict[str, Any]:
        """Disk usage of a host.

        Args:
            host: The host name, e.g. "web-07".
        """
        used = sum(map(ord, host)) % 60 + 35
        return {"host": host, "disk_used_percent": used}

    @tool(read_only=True)
    def find_employee(email: str) -> dict[str, str]:
        """Find an employee record by work email.

        Args:
            email: The employee's work email address.
        """
        if email not in _EMPLOYEES:
            raise ValueError(f"no employee with email {email!r}")
        employee_id, name, _ = _EMPLOYEES[email]
        return {"employee_id": employee_id, "name": name}

    @tool(read_only=True)
    def get_leave_balance(employee_id: str) -> dict[str, Any]:
        """Days of paid leave an employee has left this year.

        Args:
            employee_id: The employee id, e.g. "E-1234".
        """
        for found_id, _, days in _EMPLOYEES.values():
            if found_id == employee_id:
                return {"employee_id": employee_id, "days_left": days}
        raise ValueError(f"no employee {employee_id!r}")

    @tool(read_only=True)
    def lookup_book(title: str) -> dict[str, Any]:
        """Look a book up in the library catalogue by title.

        Args:
            title: The book's title.
        """
        key = title.strip().lower()
        if key not in _BOOKS:
            raise ValueError(f"no book titled {title!r}")
        isbn, copies = _BOOKS[key]
        return {"title": title, "isbn": isbn, "copies_available": copies}

    @tool
    def hold_book(isbn: str, member_id: str) -> dict[str, str]:
        """Place a hold on a book for a library member.

        Args:
            isbn: The book's ISBN.
            member_id: The member's card number.
        """
        return {"isbn": isbn, "member_id": member_id, "hold_id": f"H-{int(isbn[-4:]) + 17}"}

    @tool(read_only=True)
    def locate_truck(truck_id: str) -> dict[str, Any]:
        """Where a delivery truck is and how full its fuel tank is.

        Args:
            truck_id: The truck's fleet id, e.g. "TR-11".
        """
        if truck_id not in _TRUCKS:
            raise ValueError(f"no truck {truck_id!r}")
        city, fuel = _TRUCKS[truck_id]
        return {"truck_id": truck_id, "city": city, "fuel_percent": fuel}

    return [get_service_health, restart_service, find_service_host, get_host_disk_usage,
            find_employee, get_leave_balance, lookup_book, hold_book, locate_truck]  # fmt: skip


def _offer(rng: random.Random, needed: Sequence[str]) -> Callable[[], list[Tool]]:
    """A factory of the needed tools plus 1–3 others of the held-out set, in a fixed order."""
    names = [t.name for t in held_out_tools()]
    others = [n for n in names if n not in needed]
    chosen = list(dict.fromkeys(needed)) + rng.sample(others, rng.randint(1, 3))
    rng.shuffle(chosen)

    def make() -> list[Tool]:
        by_name = {t.name: t for t in held_out_tools()}
        return [by_name[n] for n in chosen]

    return make


def _n(name: str, **arguments: Any) -> NeededCall:
    return NeededCall(name, arguments)


def _one_step(rng: random.Random) -> tuple[str, list[NeededCall], list[str]]:
    kind = rng.randrange(5)
    if kind == 0:
        service = rng.choice(list(_SERVICES))
        _, status, rate, _ = _SERVICES[service]
        return (rng.choice([f"How is the {service} service doing?",
                            f"Is {service} healthy right now?"]),
                [_n("get_service_health", service=service)], [status, f"{rate:g}"])  # fmt: skip
    if kind == 1:
        email = rng.choice(list(_EMPLOYEES))
        employee_id, _, _ = _EMPLOYEES[email]
        return (f"What is the employee id of {email}?", [_n("find_employee", email=email)],
                [employee_id])  # fmt: skip
    if kind == 2:
        title = rng.choice(list(_BOOKS))
        return (f"How many copies of '{title}' can be borrowed right now?",
                [_n("lookup_book", title=title)], [str(_BOOKS[title][1])])  # fmt: skip
    if kind == 3:
        truck = rng.choice(list(_TRUCKS))
        city, fuel = _TRUCKS[truck]
        return (f"Where is truck {truck} and how much fuel does it have?",
                [_n("locate_truck", truck_id=truck)], [city, str(fuel)])  # fmt: skip
    service = rng.choice(list(_SERVICES))
    region = _SERVICES[service][0]
    return (f"Restart {service} in {region}.", [_n("restart_service", service=service, region=region)],
            [f"rs-{len(service) * 7919 % 9000 + 1000}"])  # fmt: skip


def _two_step(rng: random.Random) -> tuple[str, list[NeededCall], list[str]]:
    kind = rng.randrange(4)
    if kind == 0:
        email = rng.choice(list(_EMPLOYEES))
        employee_id, _, days = _EMPLOYEES[email]
        return (f"How many days of leave does {email} have left?",
                [_n("find_employee", email=email), _n("get_leave_balance", employee_id=employee_id)],
                [str(days)])  # fmt: skip
    if kind == 1:
        service = rng.choice(list(_SERVICES))
        host = _HOSTS[service]
        used = sum(map(ord, host)) % 60 + 35
        return (f"How full is the disk of the host that runs {service}?",
                [_n("find_service_host", service=service), _n("get_host_disk_usage", host=host)],
                [str(used)])  # fmt: skip
    if kind == 2:
        title = rng.choice(list(_BOOKS))
        member = f"M-{rng.randint(100, 999)}"
        isbn = _BOOKS[title][0]
        return (f"Put a hold on '{title}' for member {member}.",
                [_n("lookup_book", title=title), _n("hold_book", isbn=isbn, member_id=member)],
                [f"H-{int(isbn[-4:]) + 17}"])  # fmt: skip
    service = rng.choice(list(_SERVICES))
    region = _SERVICES[service][0]
    return (f"Look up where {service} runs and restart it there.",
            [_n("get_service_health", service=service),
             _n("restart_service", service=service, region=region)],
            [f"rs-{len(service) * 7919 % 9000 + 1000}"])  # fmt: skip


def _compare(rng: random.Random) -> tuple[str, list[NeededCall], list[str]]:
    if rng.random() < 0.5:
        a, b = rng.sample(list(_SERVICES), 2)
        worse = a if _SERVICES[a][2] > _SERVICES[b][2] else b
        return (f"Which has the higher error rate, {a} or {b}?",
                [_n("get_service_health", service=a), _n("get_service_health", service=b)],
                [worse])  # fmt: skip
    a, b = rng.sample(list(_TRUCKS), 2)
    fuller = a if _TRUCKS[a][1] > _TRUCKS[b][1] else b
    return (f"Which truck has more fuel, {a} or {b}?",
            [_n("locate_truck", truck_id=a), _n("locate_truck", truck_id=b)], [fuller])  # fmt: skip


def held_out_tasks(n: int = 40, *, seed: int = 0) -> list[AgentTask]:
    """``n`` tasks: 40 % one step, 40 % two steps, 20 % comparisons. Same seed, same list."""
    rng = random.Random(seed)
    tasks: list[AgentTask] = []
    for index in range(n):
        roll = index % 5
        make = _one_step if roll < 2 else _two_step if roll < 4 else _compare
        text, needed, values = make(rng)
        tasks.append(
            AgentTask(
                id=f"held_out_{index}",
                source="held_out",
                steps=len(needed),
                turns=[text],
                make_tools=_offer(rng, [c.name for c in needed]),
                needed=[needed],
                answer_values=values,
            )
        )
    return tasks


# -- BFCL multi-turn -------------------------------------------------------------------------

_CLASSES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
_SOURCE_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


def _bfcl_class(name: str) -> Any:
    from ooo_agent.bench.datasets import bfcl_wheel

    wheel = str(bfcl_wheel())
    if wheel not in sys.path:
        sys.path.append(wheel)  # the wheel's pure-Python toolset classes, read by zipimport
    return getattr(importlib.import_module(f"{_SOURCE_PACKAGE}.{_CLASSES[name]}"), name)


def _instances(entry: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name in entry["involved_classes"]:
        instance = _bfcl_class(name)()
        config = copy.deepcopy(entry["initial_config"].get(name, {}))
        instance._load_scenario(config)
        out[name] = instance
    return out


def _gold_call(text: str, methods: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    node = ast.parse(text.strip(), mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    arguments = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
    if node.args:
        params = [p for p in inspect.signature(methods[name]).parameters]
        for param, value in zip(params, node.args, strict=False):
            arguments[param] = ast.literal_eval(value)
    return name, arguments


def _state(instances: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: {k: repr(v) for k, v in vars(instance).items() if not k.startswith("_")}
        for name, instance in instances.items()
    }


def bfcl_multi_turn_tasks(n: int | None = None) -> list[AgentTask]:
    """BFCL ``multi_turn_base`` (first ``n``): executable toolsets, gold state per turn."""
    from ooo_agent.bench.datasets import functions_to_tools, load_multi_turn

    entries, gold, docs = load_multi_turn("multi_turn_base", limit=n)
    tasks = []
    for entry in entries:
        excluded = set(entry.get("excluded_function", []))
        functions = [
            f
            for cls in entry["involved_classes"]
            for f in docs[_CLASSES[cls]]
            if f["name"] not in excluded
        ]
        schemas = functions_to_tools(functions, "python")
        turns_gold: list[list[str]] = gold[str(entry["id"])]
        instances: dict[str, Any] = {}

        def make_tools(entry: Mapping[str, Any] = entry, schemas: list[Any] = schemas,
                       box: dict[str, Any] = instances) -> list[Tool]:  # fmt: skip
            box.clear()
            box.update(_instances(entry))
            methods = {m: getattr(i, m) for i in box.values() for m in dir(i) if not m.startswith("_")}
            return [Tool.from_openai(s, methods[s["function"]["name"]]) for s in schemas]

        def check_turn(turn: int, tools: list[Tool], entry: Mapping[str, Any] = entry,
                       turns_gold: list[list[str]] = turns_gold,
                       box: dict[str, Any] = instances) -> bool:  # fmt: skip
            reference = _instances(entry)
            methods = {m: getattr(i, m) for i in reference.values() for m in dir(i) if not m.startswith("_")}
            for done in turns_gold[: turn + 1]:
                for text in done:
                    name, arguments = _gold_call(text, methods)
                    methods[name](**arguments)
            return _state(reference) == _state(box)

        probe = _instances(entry)
        methods = {m: getattr(i, m) for i in probe.values() for m in dir(i) if not m.startswith("_")}
        needed = [
            [NeededCall(*_gold_call(text, methods)) for text in turn] for turn in turns_gold
        ]
        tasks.append(
            AgentTask(
                id=str(entry["id"]),
                source="multi_turn_base",
                steps=sum(len(t) for t in turns_gold),
                turns=[m["content"] for turn in entry["question"] for m in turn if m["role"] == "user"],
                make_tools=make_tools,
                needed=needed,
                check_turn=check_turn,
            )
        )
    return tasks
