"""Generated long multi-turn sessions over several entity toolsets offered at once.

A session offers the tools of 3–5 entities of ``tables/agent_domains.json`` (a patient, a
course, a sensor…; those ``tables/agent_sessions.json`` lists), shuffled: each entity's find / details / action tools
(:func:`~ooo_agent.train.generated_domains.domain_tools`) and two or three of those
``tables/agent_sessions.json`` adds — a list tool (optionally filtered), an activity log and a
second action — 15–28 tools in all, about 1.7–3.5k tokens. The user then asks for 2–4
things in one conversation, each needing 1–3 calls (rows of about 2–4.2k tokens in all):

- ``lookup``: find by name, read by id, answer; ``info``: read by id, answer;
- ``act``: find by name, act on the id (or act by id), answer; ``lookup_act``: find, then
  read and act on the id in one step;
- ``compare``: two reads in one step, then which is higher; ``list``: a (filtered) list, then
  the names and ids; ``both``: a read and an action on entities of two domains in one step;
- ``ref_act``, ``ref_info``, ``ref_log``: an action, a read or the activity log of the entity
  an earlier turn found ("and put a hold on that one too"), by the id it was given.

Some look-ups start with the name passed as the id: the error result (naming the find tool
or not) is followed by the look-up and the right call; that mistaken call is history only,
never a row's move. No two consecutive calls of a session are identical.

Each assistant move — each step of calls and each turn's final answer — is a row whose
history holds the gold earlier moves and their results. Deterministic for a seed::

    requests = generate_session_requests(300, seed=5)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from ooo_agent.train._tool_schema import load_table, tool_schema
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_agent import _Convo, _Error, _join, _text, describe
from ooo_agent.train.generated_domains import (
    _ask,
    _entity,
    _id_param,
    _json_type,
    _label,
    _snake,
    _value,
    domain_tools,
    load_domains,
)

__all__ = [
    "REF_TURNS",
    "SESSION_TURNS",
    "generate_session_requests",
    "load_sessions",
    "session_tools",
]

SESSION_TURNS: dict[str, float] = {
    "lookup": 0.2,
    "info": 0.1,
    "act": 0.25,
    "lookup_act": 0.1,
    "compare": 0.1,
    "list": 0.12,
    "both": 0.13,
}
"""Share of each kind of turn that needs no earlier result (see the module docstring)."""

REF_TURNS: dict[str, float] = {"ref_act": 0.5, "ref_log": 0.3, "ref_info": 0.2}
"""Share of each kind of turn about the entity an earlier turn found."""

MAX_CHARS = 13_500
"""A session's tools and messages (as JSON and text) stay within about this many characters
(rows of at most about 4.2k SmolLM2 tokens): a third or fourth turn is added only while they
do, and a second turn past it is drawn again."""

MAX_TOOL_CHARS = 12_000
"""A session's tools (as JSON) stay within this many characters (about 3.5k tokens), so that
two turns fit under :data:`MAX_CHARS`: the largest toolsets offer five tools of some domains."""

Call = tuple[str, dict[str, Any]]
Step = tuple[list[Call], list[Any], bool]
"""The calls of one assistant move, their results, and whether the move is taught (a row)."""

_T = load_table("agent_sessions")
"""Per entity: the list, log and second-action tools and their phrasings."""

_ORDINALS = ("first", "second", "third", "fourth")


def load_sessions() -> dict[str, Any]:
    """The session table (``ooo_agent/train/tables/agent_sessions.json``)."""
    return _T


def _param(name: str, spec: Any) -> dict[str, Any]:
    if name == "date" or spec == "date":
        return {"type": "string", "description": "Date, YYYY-MM-DD."}
    out: dict[str, Any] = {"type": _json_type(spec), "description": f"The {_label(name)}."}
    if isinstance(spec, list):
        out["enum"] = list(spec)
    return out


def session_tools(domain: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The six tools of a domain the session table lists, as OpenAI dicts, keyed ``find`` /
    ``details`` / ``action`` (:func:`~ooo_agent.train.generated_domains.domain_tools`) and
    ``list`` / ``log`` / ``hold`` (``tables/agent_sessions.json``)."""
    own = domain_tools(domain)
    extra = _T["domains"][domain["noun"]]
    noun, plural, key = domain["noun"], extra["plural"], domain["key"]
    id_param = _id_param(domain)
    id_doc = {"type": "string", "description": f"The {noun}'s id, as {domain['find']} returns it."}
    limit = {"type": "integer", "description": "How many entries to return at most (default 10)."}
    paging: dict[str, dict[str, Any]] = {
        "sort_by": {
            "type": "string",
            "description": "The order of the entries (default newest).",
            "enum": ["newest", "oldest", key],
        },
        "offset": {"type": "integer", "description": "How many entries to skip (default 0)."},
    }
    since = {
        "type": "string",
        "description": "Only activity on or after this date, YYYY-MM-DD (default: 90 days ago).",
    }
    notify = {
        "type": "boolean",
        "description": "Whether the people who follow the " + noun + " are told (default true).",
    }
    hold = extra["hold"]
    listed: dict[str, Any] = {}
    which = f"each one's id and {_label(key)}"
    if extra["filter"]:
        name = extra["filter"]
        listed[name] = {
            **_param(name, domain["fields"][name]),
            "description": f"Only the {plural} of this {_label(name)}.",
        }
        which += f"; optionally only those of one {_label(name)}"
    return {
        **own,
        "list": tool_schema(
            f"list_{_snake(plural)}",
            f"List the {plural} on record, newest first, with {which}.",
            {**listed, "limit": limit, **paging},
            [],
        ),
        "log": tool_schema(
            f"{_snake(noun)}_activity_log",
            f"Recent activity on a {noun}, newest first: the date and what happened, by id.",
            {id_param: id_doc, "limit": limit, "since": since},
            [id_param],
        ),
        "hold": tool_schema(
            hold["name"],
            hold["description"],
            {
                id_param: id_doc,
                **{k: _param(k, v) for k, v in hold["extra"].items()},
                "notify": notify,
            },
            [id_param, *hold["extra"]],
        ),
    }


@dataclass
class _Entity:
    domain: dict[str, Any]
    name: str
    ident: str
    fields: dict[str, Any]
    named: bool = False
    """Whether the conversation has its name (the user said it, or a result gave it)."""
    read: bool = False
    logged: bool = False
    done: set[str] = field(default_factory=set)

    @property
    def id_param(self) -> str:
        return _id_param(self.domain)

    @property
    def record(self) -> dict[str, Any]:
        return {self.id_param: self.ident, **self.fields}

    @property
    def who(self) -> str:
        """How an answer names it: ``the course Jazz Theory``, ``Ana Silva``, or by its id
        (``project PRJ-1234``) while the conversation has not seen its name."""
        noun = self.domain["noun"]
        if not self.named:
            return f"{noun} {self.ident}"
        return f"the {noun} {self.name}" if self.domain["key_kind"] == "name" else self.name


@dataclass
class _Turn:
    kind: str
    text: str
    steps: list[Step]
    answer: str
    focus: tuple[_Entity, int | None] | None
    """The entity a later turn may refer to, and its place in a listed result (or None)."""


class _Session:
    """One session's toolset and the entities drawn for it so far."""

    def __init__(self, rng: random.Random, domains: list[dict[str, Any]]) -> None:
        self.rng = rng
        self.domains = domains
        self.tools: dict[str, dict[str, dict[str, Any]]] = {}
        for domain in domains:
            tools = session_tools(domain)
            if rng.random() < 0.3:  # five tools of some domains, six of others
                del tools[rng.choice(["list", "log", "hold"])]
            self.tools[domain["noun"]] = tools
        while self._tool_chars() > MAX_TOOL_CHARS:  # room left for two turns at least
            full = [t for t in self.tools.values() if len(t) == 6]
            if not full:
                break
            del rng.choice(full)[rng.choice(["list", "log", "hold"])]
        self.offered = [t for tools in self.tools.values() for t in tools.values()]
        rng.shuffle(self.offered)
        self.names: set[tuple[str, str]] = set()
        self.ids: set[str] = set()

    def _tool_chars(self) -> int:
        return sum(len(json.dumps(t)) for tools in self.tools.values() for t in tools.values())

    def has(self, domain: dict[str, Any], key: str) -> bool:
        return key in self.tools[domain["noun"]]

    def name(self, domain: dict[str, Any], key: str) -> str:
        return str(self.tools[domain["noun"]][key]["function"]["name"])

    def names_left(self, domain: dict[str, Any]) -> int:
        if domain["key_kind"] != "name":
            return 12  # people and emails: plenty
        used = sum(1 for noun, _ in self.names if noun == domain["noun"])
        return len(domain["names"]) - used

    def entity(self, domain: dict[str, Any], *, named: bool = False) -> _Entity:
        """A new entity of ``domain`` whose name and id no other entity of the session has;
        ``named`` when the conversation will hold its name."""
        while True:
            name, ident, fields = _entity(self.rng, domain)
            if (domain["noun"], name) not in self.names and ident not in self.ids:
                self.names.add((domain["noun"], name))
                self.ids.add(ident)
                return _Entity(domain, name, ident, fields, named=named)


# -- turns ---------------------------------------------------------------------------------


def _actions(session: _Session, entity: _Entity) -> list[str]:
    return [k for k in ("action", "hold") if session.has(entity.domain, k) and k not in entity.done]


def _action_spec(domain: dict[str, Any], key: str) -> dict[str, Any]:
    spec: dict[str, Any] = (
        domain["action"] if key == "action" else _T["domains"][domain["noun"]]["hold"]
    )
    return spec


def _act(
    session: _Session, entity: _Entity, key: str
) -> tuple[Call, dict[str, Any], dict[str, Any], str]:
    """``(call, extra arguments, result, answer)`` of an action on ``entity``."""
    rng = session.rng
    spec = _action_spec(entity.domain, key)
    extra = {k: _value(rng, v) for k, v in spec["extra"].items()}
    result = {k: _value(rng, v) for k, v in spec["result"].items()}
    entity.done.add(key)
    call = (session.name(entity.domain, key), {entity.id_param: entity.ident, **extra})
    facts = _join([f"the {_label(k)} is {_text(v)}" for k, v in result.items()])
    lead = rng.choice(["Done", "All set", "Done"])
    return call, extra, result, f"{lead} for {entity.who}: {facts}."


def _mistake(session: _Session, entity: _Entity, call: Call) -> Step:
    """``call`` with the entity's name where its id goes, and the error it gets."""
    domain, name = entity.domain, entity.name
    id_param, find = entity.id_param, session.name(entity.domain, "find")
    message = session.rng.choice(
        [
            f"unknown {id_param} '{name}'; use {find} to get it",
            f"no {domain['noun']} with id '{name}'",
            f"{id_param} '{name}' not found",
            f"invalid {id_param} '{name}': expected an id, not a {_label(domain['key'])}",
        ]
    )
    return [(call[0], {**call[1], id_param: name})], [_Error(message)], False


def _find(session: _Session, entity: _Entity) -> Step:
    domain = entity.domain
    found = {entity.id_param: entity.ident, domain["key"]: entity.name}
    return [(session.name(domain, "find"), {domain["key"]: entity.name})], [found], True


def _details(session: _Session, entity: _Entity) -> Call:
    entity.read = True
    return session.name(entity.domain, "details"), {entity.id_param: entity.ident}


def _answer_fields(
    rng: random.Random, who: str, fields: dict[str, Any], result: dict[str, Any]
) -> str:
    """An answer that states the asked fields first, then every other value of the result;
    ``who`` is written as given (an email keeps its case)."""
    if rng.random() < 0.3:
        return describe(rng, result, who)
    ordered = {**fields, **{k: v for k, v in result.items() if k not in fields}}
    facts = _join([f"the {_label(k)} is {_text(v)}" for k, v in ordered.items()])
    forms = [f"For {who}, {facts}."]
    if "@" not in who:
        forms.append(f"{who[:1].upper()}{who[1:]}: {facts}.")
    return rng.choice(forms)


def _pick_fields(rng: random.Random, entity: _Entity) -> dict[str, Any]:
    pick = rng.sample(list(entity.fields), rng.choice([1, 1, 2]))
    return {f: entity.fields[f] for f in pick}


def _lookup(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    entity = session.entity(domain, named=True)
    asked = _pick_fields(rng, entity)
    text = _ask(rng, domain["noun"], entity.who, list(asked))
    read = _details(session, entity)
    steps: list[Step] = [_find(session, entity), ([read], [entity.record], True)]
    if rng.random() < 0.3:
        steps.insert(0, _mistake(session, entity, read))
    answer = _answer_fields(rng, entity.who, asked, entity.record)
    return _Turn("lookup", text, steps, answer, (entity, None))


def _info(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    entity = session.entity(domain)
    asked = _pick_fields(rng, entity)
    who = f"{domain['noun']} {entity.ident}"
    text = _ask(rng, domain["noun"], who, list(asked))
    steps: list[Step] = [([_details(session, entity)], [entity.record], True)]
    return _Turn(
        "info", text, steps, _answer_fields(rng, who, asked, entity.record), (entity, None)
    )


def _act_turn(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    by_id = rng.random() < 0.3  # by id: one step
    entity = session.entity(domain, named=not by_id)
    key = rng.choice(_actions(session, entity))
    spec = _action_spec(domain, key)
    call, extra, result, answer = _act(session, entity, key)
    if by_id:
        text = spec["verb_id"].format(id=entity.ident, **extra)
        return _Turn("act", text, [([call], [result], True)], answer, (entity, None))
    steps: list[Step] = [_find(session, entity), ([call], [result], True)]
    if rng.random() < 0.4:
        steps.insert(0, _mistake(session, entity, call))
    text = spec["verb"].format(name=entity.name, **extra)
    return _Turn("act", text, steps, answer, (entity, None))


def _lookup_act(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    entity = session.entity(domain, named=True)
    asked = _pick_fields(rng, entity)
    key = rng.choice(_actions(session, entity))
    spec = _action_spec(domain, key)
    call, extra, result, done = _act(session, entity, key)
    verb = spec["verb"].format(name=entity.name, **extra)
    text = (
        _ask(rng, domain["noun"], entity.who, list(asked)) + " Then " + verb[:1].lower() + verb[1:]
    )
    read = _details(session, entity)
    steps: list[Step] = [_find(session, entity), ([read, call], [entity.record, result], True)]
    answer = _answer_fields(rng, entity.who, asked, entity.record) + " " + done
    return _Turn("lookup_act", text, steps, answer, (entity, None))


def _compare(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    noun = domain["noun"]
    a, b = session.entity(domain), session.entity(domain)
    numeric = [
        f for f, v in a.fields.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    name = rng.choice(numeric)
    while b.fields[name] == a.fields[name]:
        b.fields[name] = _value(rng, domain["fields"][name])
    text = rng.choice(
        [
            f"Which {noun} has the higher {_label(name)}, {a.ident} or {b.ident}?",
            f"Compare the {_label(name)} of {noun} {a.ident} and {noun} {b.ident}: which is higher?",
        ]
    )
    calls = [_details(session, a), _details(session, b)]
    hi, lo = (a, b) if a.fields[name] > b.fields[name] else (b, a)
    answer = (
        f"{noun.capitalize()} {hi.ident} has the higher {_label(name)}: "
        f"{_text(hi.fields[name])} against {_text(lo.fields[name])} for {lo.ident}."
    )
    return _Turn("compare", text, [(calls, [a.record, b.record], True)], answer, None)


def _list(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    extra = _T["domains"][domain["noun"]]
    plural, key, id_param = extra["plural"], domain["key"], _id_param(domain)
    count = min(rng.randint(2, 4), session.names_left(domain))
    arguments: dict[str, Any] = {}
    which = ""
    if extra["filter"] and rng.random() < 0.75:
        column = extra["filter"]
        value = rng.choice(domain["fields"][column])
        arguments[column] = value
        which = f" with {_label(column)} {value}"
        text = rng.choice(
            [
                f"Which {plural} have {_label(column)} {value}?",
                f"List the {plural} whose {_label(column)} is {value}.",
            ]
        )
    else:
        arguments["limit"] = count
        text = rng.choice(
            [f"List {count} of our {plural}.", f"Show me the latest {count} {plural} on record."]
        )
    entities = [session.entity(domain, named=True) for _ in range(count)]
    shared = {k: v for k, v in arguments.items() if k != "limit"}
    for entity in entities:
        entity.fields.update(shared)
    listed = [{id_param: e.ident, key: e.name, **shared} for e in entities]
    call = (session.name(domain, "list"), arguments)
    answer = (
        f"I found {count} {plural}{which}: "
        + _join([f"{e.name} ({e.ident})" for e in entities])
        + "."
    )
    place = rng.randrange(count)
    return _Turn("list", text, [([call], [listed], True)], answer, (entities[place], place))


def _both(session: _Session, domain: dict[str, Any]) -> _Turn:
    rng = session.rng
    other = rng.choice([d for d in session.domains if d is not domain and session.names_left(d)])
    a, b = session.entity(domain), session.entity(other)
    asked = _pick_fields(rng, a)
    who = f"{domain['noun']} {a.ident}"
    key = rng.choice(_actions(session, b))
    call, extra, result, done = _act(session, b, key)
    verb = _action_spec(other, key)["verb_id"].format(id=b.ident, **extra)
    text = _ask(rng, domain["noun"], who, list(asked)) + " Also, " + verb[:1].lower() + verb[1:]
    calls = [_details(session, a), call]
    if rng.random() < 0.5:
        calls.reverse()
        results = [result, a.record]
    else:
        results = [a.record, result]
    answer = _answer_fields(rng, who, asked, a.record) + " " + done
    return _Turn("both", text, [(calls, results, True)], answer, None)


def _ref(rng: random.Random, entity: _Entity, place: int | None) -> str:
    noun = entity.domain["noun"]
    if place is not None:
        return rng.choice(
            [f"the {_ORDINALS[place]} one", f"the {_ORDINALS[place]} {noun} on that list"]
        )
    return rng.choice([f"that {noun}", f"the same {noun}", "that one"])


def _ref_act(session: _Session, entity: _Entity, place: int | None) -> _Turn:
    rng = session.rng
    key = rng.choice(_actions(session, entity))
    call, extra, result, answer = _act(session, entity, key)
    ref = _ref(rng, entity, place)
    spec = _T["domains"][entity.domain["noun"]]
    template = spec["action_ref"] if key == "action" else spec["hold"]["verb_ref"]
    text = template.format(ref=ref, **extra)
    return _Turn(
        "ref_act", text[:1].upper() + text[1:], [([call], [result], True)], answer, (entity, place)
    )


def _ref_info(session: _Session, entity: _Entity, place: int | None) -> _Turn:
    rng = session.rng
    asked = _pick_fields(rng, entity)
    text = _ask(rng, entity.domain["noun"], _ref(rng, entity, place), list(asked))
    steps: list[Step] = [([_details(session, entity)], [entity.record], True)]
    answer = _answer_fields(rng, entity.who, asked, entity.record)
    return _Turn("ref_info", text, steps, answer, (entity, place))


def _ref_log(session: _Session, entity: _Entity, place: int | None) -> _Turn:
    rng = session.rng
    ref = _ref(rng, entity, place)
    arguments: dict[str, Any] = {entity.id_param: entity.ident}
    count = rng.randint(1, 3)
    if rng.random() < 0.4:
        count = rng.randint(2, 3)
        arguments["limit"] = count
        text = f"Show me the last {count} entries of the activity log of {ref}."
    else:
        text = rng.choice(
            [f"Has anything happened with {ref} lately?", f"What's the recent activity on {ref}?"]
        )
    events = rng.sample(_T["domains"][entity.domain["noun"]]["events"], count)
    dates = sorted((_value(rng, "date") for _ in events), reverse=True)
    log = [{"date": d, "event": e} for d, e in zip(dates, events, strict=True)]
    entity.logged = True
    answer = (
        f"Recent activity for {entity.who}: "
        + "; ".join(f"{d}: {e}" for d, e in zip(dates, events, strict=True))
        + "."
    )
    call = (session.name(entity.domain, "log"), arguments)
    return _Turn("ref_log", text, [([call], [log], True)], answer, (entity, place))


_NEW = {
    "lookup": _lookup,
    "info": _info,
    "act": _act_turn,
    "lookup_act": _lookup_act,
    "compare": _compare,
    "list": _list,
    "both": _both,
}
_REF = {"ref_act": _ref_act, "ref_info": _ref_info, "ref_log": _ref_log}


def _ref_kinds(session: _Session, entity: _Entity) -> list[str]:
    kinds = []
    if _actions(session, entity):
        kinds.append("ref_act")
    if session.has(entity.domain, "log") and not entity.logged:
        kinds.append("ref_log")
    if not entity.read:
        kinds.append("ref_info")
    return kinds


def _next_turn(session: _Session, focus: tuple[_Entity, int | None] | None, *, ref: bool) -> _Turn:
    rng = session.rng
    if ref and focus is not None:
        kinds = _ref_kinds(session, focus[0])
        if kinds:
            kind = rng.choices(kinds, [REF_TURNS[k] for k in kinds])[0]
            return _REF[kind](session, *focus)
    while True:
        kind = rng.choices(list(SESSION_TURNS), list(SESSION_TURNS.values()))[0]
        domain = rng.choice(session.domains)
        if kind == "list" and not session.has(domain, "list"):
            continue
        if session.names_left(domain) < 2:
            continue
        if kind == "both" and not any(
            session.names_left(d) for d in session.domains if d is not domain
        ):
            continue
        return _NEW[kind](session, domain)


# -- sessions ------------------------------------------------------------------------------


def _chars(turn: _Turn) -> int:
    """About the characters ``turn`` adds to a session's prompt."""
    size = len(turn.text) + len(turn.answer)
    for calls, results, _ in turn.steps:
        size += len(json.dumps(calls)) + sum(len(json.dumps(r, default=str)) for r in results)
    return size + 60 * (2 + 2 * len(turn.steps))


def _session_rows(rng: random.Random, index: int) -> list[TrainRequest]:
    offered = [d for d in load_domains()["domains"] if d["noun"] in _T["domains"]]
    domains = rng.sample(offered, rng.choice([3, 4, 4, 5, 5]))
    session = _Session(rng, domains)
    turns = rng.randint(2, 4)
    convo: _Convo | None = None
    focus: tuple[_Entity, int | None] | None = None
    referred = False
    rows: list[TrainRequest] = []
    size = sum(len(json.dumps(t)) for t in session.offered)

    def row(kind: str, calls: list[Call], answer: str) -> None:
        assert convo is not None
        rows.append(
            TrainRequest(
                id=f"session_{index}_{len(rows)}",
                messages=[dict(m) for m in convo.messages],
                tools=session.offered,
                calls=list(calls),
                answer=answer,
                source=f"sessions+{kind}",
            )
        )

    for number in range(turns):
        last = number == turns - 1
        ref = number > 0 and (rng.random() < 0.5 or (last and not referred))
        turn = _next_turn(session, focus, ref=ref)
        for _ in range(5):  # a second turn past the limit is drawn again, a few times at most
            if number != 1 or size + _chars(turn) <= MAX_CHARS:
                break
            turn = _next_turn(session, focus, ref=ref)
        if number >= 2 and size + _chars(turn) > MAX_CHARS:
            break  # a third or fourth turn only while the prompt stays within the limit
        size += _chars(turn)
        referred = referred or turn.kind.startswith("ref_")
        if convo is None:
            convo = _Convo(rng, turn.text)
        else:
            convo.messages.append({"role": "user", "content": turn.text})
        for calls, results, taught in turn.steps:
            if taught:
                row(turn.kind, calls, "")
            convo.calls(calls, results)
        row(turn.kind, [], turn.answer)
        convo.messages.append({"role": "assistant", "content": turn.answer})
        focus = turn.focus
    return rows


def generate_session_requests(count: int, *, seed: int = 0) -> list[TrainRequest]:
    """Every row of ``count`` generated sessions (see the module docstring), in session
    order; a session's rows share its offered tools. Same seed, same list."""
    if count < 0:
        raise ValueError("count must be >= 0")
    rng = random.Random(seed)
    rows: list[TrainRequest] = []
    for index in range(count):
        rows += _session_rows(rng, index)
    return rows
