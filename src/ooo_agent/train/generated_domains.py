"""Generated agent conversations over entity toolsets: find by name, read by id, act.

Each domain of ``tables/agent_domains.json`` is one entity (a patient, a course, a sensor…)
with three tools: ``find`` (a name or email → the entity's id), ``details`` (an id → fields)
and an action (an id plus extra arguments). A conversation is one of

- ``info``: the fields of an entity named by its id — read, then answer;
- ``lookup``: the fields of an entity named by its name — find, read, then answer;
- ``act``: an action on an entity named by its name — find, act, then answer (or by id: act,
  then answer); sometimes the first attempt passes the name as the id, and the error result
  is followed by the look-up;
- ``compare``: which of two entities has more of a numeric field — both reads in one turn,
  then the answer that compares them.

Final answers state every value of the last result, the asked ones first.

A row is one stage of a conversation: the messages so far (calls and their ``tool`` results)
and the assistant's next move (a call or the final answer), so one conversation teaches every
step. Tool names, fields and phrasings vary by domain; results are drawn from the table's
value specs. Deterministic for a seed::

    requests = generate_domain_requests(300, seed=3)
"""

from __future__ import annotations

import random
from typing import Any

from ooo_agent.train._tool_schema import load_table
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated_agent import _Convo, _Error, _join, _text, describe

__all__ = ["DOMAIN_KINDS", "domain_tools", "generate_domain_requests", "load_domains"]

DOMAIN_KINDS: dict[str, float] = {"info": 0.25, "lookup": 0.3, "act": 0.3, "compare": 0.15}
"""Share of each kind of conversation (see the module docstring)."""

Call = tuple[str, dict[str, Any]]


def load_domains() -> dict[str, Any]:
    """The domain table (``ooo_agent/train/tables/agent_domains.json``)."""
    return load_table("agent_domains")


def _value(rng: random.Random, spec: Any) -> Any:
    people = load_domains()["people"]
    if isinstance(spec, list):
        return rng.choice(spec)
    kind, _, rest = str(spec).partition(":")
    if kind in ("int", "float"):
        low, _, high = rest.rpartition("-") if rest.count("-") > 1 else rest.partition("-")
        lo, hi = float(low), float(high)
        return rng.randint(int(lo), int(hi)) if kind == "int" else round(rng.uniform(lo, hi), 1)
    if kind == "date":
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "id":
        return f"{rest}-{rng.randint(1000, 9999)}"
    if kind == "person":
        return rng.choice(people)
    if kind == "email":
        first, last = rng.choice(people).lower().split()
        return f"{first}.{last}@{rng.choice(['corp.example', 'mail.example', 'uni.example'])}"
    raise ValueError(f"unknown value spec {spec!r}")


def _label(key: str) -> str:
    """``weight_kg`` -> ``weight in kg``, ``battery_percent`` -> ``battery percent``."""
    for unit in ("kg", "c"):
        if key.endswith("_" + unit):
            return (
                key[: -len(unit) - 1].replace("_", " ")
                + f" in {unit.upper() if unit == 'c' else unit}"
            )
    return key.replace("_", " ")


def _snake(noun: str) -> str:
    return noun.replace(" ", "_")


def _id_param(domain: dict[str, Any]) -> str:
    return f"{_snake(domain['noun'])}_id"


def _json_type(spec: Any) -> str:
    if isinstance(spec, list):
        value = spec[0]
        if isinstance(value, bool):
            return "boolean"
        return (
            "integer"
            if isinstance(value, int)
            else "number"
            if isinstance(value, float)
            else "string"
        )
    return {"int": "integer", "float": "number"}.get(str(spec).partition(":")[0], "string")


def domain_tools(domain: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The domain's three tools as OpenAI dicts, keyed ``find`` / ``details`` / ``action``."""
    noun, key = domain["noun"], domain["key"]
    id_param = _id_param(domain)
    action = domain["action"]
    extra = {
        name: {"type": _json_type(spec), "description": f"The {_label(name)}."}
        for name, spec in action["extra"].items()
    }
    for name in extra:
        if name == "date":
            extra[name]["description"] = "Date, YYYY-MM-DD."

    def fn(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                },
            },
        }

    id_doc = {"type": "string", "description": f"The {noun}'s id, as {domain['find']} returns it."}
    return {
        "find": fn(
            domain["find"],
            f"Look up a {noun} by {_label(key)}; returns the {noun}'s id.",
            {key: {"type": "string", "description": f"The {noun}'s {_label(key)}."}},
        ),
        "details": fn(
            domain["details"],
            f"The {noun}'s {_join([_label(f) for f in domain['fields']])}, by id.",
            {id_param: id_doc},
        ),
        "action": fn(
            action["name"],
            action["verb_id"].split(" {")[0].rstrip(".") + f" (a {noun}, by id).",
            {id_param: id_doc, **extra},
        ),
    }


def _entity(rng: random.Random, domain: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """A name, an id and the fields of one entity."""
    kind = domain["key_kind"]
    name = (
        rng.choice(domain["names"])
        if kind == "name"
        else _value(rng, "email" if kind == "email" else "person")
    )
    ident = _value(rng, domain["id"])
    return name, ident, {f: _value(rng, spec) for f, spec in domain["fields"].items()}


def _ask(rng: random.Random, noun: str, who: str, fields: list[str]) -> str:
    what = _join([f"the {_label(f)}" for f in fields])
    return rng.choice(
        [
            f"What is {what} of {who}?",
            f"Can you tell me {what} of {who}?",
            f"I need {what} of {who}.",
            f"Check {what} of {who} for me.",
            f"What's {what} for {who}?",
        ]
    )


def _answer_fields(
    rng: random.Random, who: str, fields: dict[str, Any], result: dict[str, Any]
) -> str:
    """An answer that states the asked fields first, then every other value of the result."""
    if rng.random() < 0.3:
        return describe(rng, result, who)
    ordered = {**fields, **{k: v for k, v in result.items() if k not in fields}}
    facts = _join([f"the {_label(k)} is {_text(v)}" for k, v in ordered.items()])
    return rng.choice([f"For {who}, {facts}.", f"{who[:1].upper()}{who[1:]}: {facts}."])


def _conversation(
    rng: random.Random, domain: dict[str, Any], kind: str
) -> tuple[str, list[tuple[list[Call], list[Any]]], str, list[str]]:
    """``(request, steps, final answer, tools needed)``: each step is the calls of one
    assistant turn and their results."""
    noun = domain["noun"]
    tools = domain_tools(domain)
    find, details, action = (tools[k]["function"]["name"] for k in ("find", "details", "action"))
    id_param = _id_param(domain)
    name, ident, fields = _entity(rng, domain)
    record = {id_param: ident, **fields}
    pick = rng.sample(list(fields), rng.choice([1, 1, 2]))
    asked = {f: fields[f] for f in pick}
    if kind == "compare":
        numeric = [
            f for f, v in fields.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        field_name = rng.choice(numeric)
        other = dict(fields)
        other_id = _value(rng, domain["id"])
        while other[field_name] == fields[field_name]:
            other[field_name] = _value(rng, domain["fields"][field_name])
        text = rng.choice(
            [
                f"Which {noun} has the higher {_label(field_name)}, {ident} or {other_id}?",
                f"Compare the {_label(field_name)} of {noun} {ident} and {noun} {other_id}: which is higher?",
            ]
        )
        results = [record, {id_param: other_id, **other}]
        calls = [(details, {id_param: ident}), (details, {id_param: other_id})]
        a, b = (ident, fields[field_name]), (other_id, other[field_name])
        hi, lo = (a, b) if a[1] > b[1] else (b, a)
        answer = (
            f"{noun.capitalize()} {hi[0]} has the higher {_label(field_name)}: {_text(hi[1])} "
            f"against {_text(lo[1])} for {lo[0]}."
        )
        return text, [(calls, results)], answer, [details]
    found = {id_param: ident, domain["key"]: name}
    if kind == "info":
        who = f"{noun} {ident}"
        text = _ask(rng, noun, who, pick)
        return (
            text,
            [([(details, {id_param: ident})], [record])],
            _answer_fields(rng, who, asked, record),
            [details],
        )
    if kind == "lookup":
        who = f"the {noun} {name}" if domain["key_kind"] == "name" else name
        text = _ask(rng, noun, who, pick)
        lookup: list[tuple[list[Call], list[Any]]] = [
            ([(find, {domain["key"]: name})], [found]),
            ([(details, {id_param: ident})], [record]),
        ]
        return text, lookup, _answer_fields(rng, who, asked, record), [find, details]
    spec = domain["action"]
    extra = {k: _value(rng, v) for k, v in spec["extra"].items()}
    result = {k: _value(rng, v) for k, v in spec["result"].items()}
    act_call = (action, {id_param: ident, **extra})
    done = rng.choice(["Done", "All set", "Done"])
    answer = (
        f"{done}: " + _join([f"the {_label(k)} is {_text(v)}" for k, v in result.items()]) + "."
    )
    if rng.random() < 0.3:  # by id: one step
        return spec["verb_id"].format(id=ident, **extra), [([act_call], [result])], answer, [action]
    text = spec["verb"].format(name=name, **extra)
    steps: list[tuple[list[Call], list[Any]]] = [
        ([(find, {domain["key"]: name})], [found]),
        ([act_call], [result]),
    ]
    if rng.random() < 0.25:  # acted on the name as if it were the id: the error says to look up
        error = _Error(f"unknown {id_param} '{name}'; use {find} to get it")
        steps.insert(0, ([(action, {id_param: name, **extra})], [error]))
    return text, steps, answer, [find, action]


def generate_domain_requests(count: int, *, seed: int = 0) -> list[TrainRequest]:
    """``count`` rows, each one stage of a generated conversation (kinds by
    :data:`DOMAIN_KINDS`), offering the domain's needed tools plus tools of other domains
    (2–5 in all). Same seed, same list."""
    if count < 0:
        raise ValueError("count must be >= 0")
    rng = random.Random(seed)
    domains = load_domains()["domains"]
    kinds = list(DOMAIN_KINDS)
    weights = [DOMAIN_KINDS[k] for k in kinds]
    out: list[TrainRequest] = []
    for index in range(count):
        domain = rng.choice(domains)
        kind = rng.choices(kinds, weights)[0]
        text, steps, answer, needed = _conversation(rng, domain, kind)
        own = domain_tools(domain)
        by_name = {t["function"]["name"]: t for t in own.values()}
        offered = [by_name[n] for n in dict.fromkeys(needed)]
        spare = [t for t in own.values() if t["function"]["name"] not in needed]
        others = [d for d in domains if d is not domain]
        pool = spare + [t for d in rng.sample(others, 2) for t in domain_tools(d).values()]
        offered += rng.sample(pool, max(0, rng.randint(2, 5) - len(offered)))
        rng.shuffle(offered)
        # A mistaken first step (its result an error) is history only, never a row's answer.
        first = 1 if isinstance(steps[0][1][0], _Error) else 0
        stage = rng.randrange(first, len(steps) + 1)
        convo = _Convo(rng, text)
        for calls, results in steps[:stage]:
            convo.calls(calls, results)
        calls = steps[stage][0] if stage < len(steps) else []
        out.append(
            TrainRequest(
                id=f"domain_{kind}_{index}",
                messages=convo.messages,
                tools=offered,
                calls=list(calls),
                answer="" if calls else answer,
                source=f"agent+domain_{kind}",
            )
        )
    return out
