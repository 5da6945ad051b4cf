"""Generated look-up requests whose optional arguments are named in the request text.

The commonest way a small tool-calling model fails a single-tool request is not the tool or
a required value: it drops the optional argument the user asked for — "with details",
"including human impact", "sorted by importance", "using the Darwin model", "top five",
"for the next month", "in California" — or writes a rate of "5%" as ``5.0`` where the
function takes a fraction. These requests teach exactly that: look-up and analysis tools
(built from a subject, a verb and a pool of optional modifiers, so names and schemas vary),
each request naming a random subset of the modifiers (sometimes none), and the call carrying
exactly the modifiers named, with the value in the form the schema asks for.

Deterministic for a seed::

    requests = generate_modifier_requests(300, seed=5)

Source name ``modifiers`` (``python -m ooo_agent.train.data --modifiers N``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ooo_agent.train._tool_schema import load_table, param, python_tool
from ooo_agent.train.examples import TrainRequest

__all__ = ["MODIFIERS", "SUBJECTS", "generate_modifier_requests"]

Args = dict[str, Any]

_T = load_table("modifiers")
"""Subjects, optional arguments and phrasings (``tables/modifiers.json``)."""


@dataclass(frozen=True)
class Modifier:
    """An optional argument and the ways a request names it.

    ``make(rng, subject)`` returns ``(phrase, value)``: the words to add to the request and
    the value the call must carry; ``schema`` is the parameter's JSON schema.
    """

    name: str
    schema: dict[str, Any]
    make: Callable[[random.Random, Subject], tuple[str, Any]]


@dataclass(frozen=True)
class Subject:
    """What a family of tools looks up: the required argument and what it can include."""

    noun: str
    key: str
    key_description: str
    values: tuple[str, ...]
    extras: tuple[str, ...]
    """What an ``include_*`` flag can add (``"human impact"`` → ``include_human_impact``)."""
    phrases: tuple[str, ...] = ("the {noun} {v}", "{v}")
    """How a request names the subject (``{v}`` its value, ``{noun}`` the noun)."""
    modifiers: tuple[str, ...] = ()
    """Names of :data:`MODIFIERS` this subject's tools may take (besides ``include_*``)."""


SUBJECTS: tuple[Subject, ...] = tuple(
    Subject(
        s["noun"],
        s["key"],
        s["key_description"],
        tuple(s["values"]),
        tuple(s["extras"]),
        phrases=tuple(s["phrases"]),
        modifiers=tuple(s["modifiers"]),
    )
    for s in _T["subjects"]
)


def _bool_phrase(rng: random.Random, what: str) -> tuple[str, bool]:
    words = _T["include"]
    if rng.random() < 0.12:
        return rng.choice(words["without"]).format(what=what), False
    return rng.choice(words["with"]).format(what=what), True


# Makers: ``(rng, the modifier's table entry) -> (phrase, value)``, by the entry's ``kind``.
Spec = dict[str, Any]


def _choice(rng: random.Random, spec: Spec) -> tuple[str, Any]:
    value = rng.choice(spec["values"])
    return rng.choice(spec["phrases"]).format(v=value), value


def _flag(rng: random.Random, spec: Spec) -> tuple[str, bool]:
    return rng.choice(spec["phrases"]), True


def _in_range(rng: random.Random, spec: Spec) -> tuple[str, int]:
    low, high = spec["range"]
    value = rng.randint(low, high)
    return rng.choice(spec["phrases"]).format(v=value), value


def _count(rng: random.Random, spec: Spec) -> tuple[str, int]:
    """A number of results, written as a word (``five``) or in digits."""
    key = rng.choice(list(spec["numbers"]))
    word = spec["numbers"][key] if rng.random() < 0.6 else key
    return rng.choice(spec["phrases"]).format(v=word), int(key)


def _number(rng: random.Random, spec: Spec) -> tuple[str, int | float]:
    value = rng.choice(spec["values"])
    phrase = rng.choice(spec["phrases"]).format(v=value)
    return phrase, int(value) if float(value).is_integer() else float(value)


def _one_item(rng: random.Random, spec: Spec) -> tuple[str, list[Any]]:
    value = rng.choice(spec["values"])
    return rng.choice(spec["phrases"]).format(v=value), [value]


def _named(rng: random.Random, spec: Spec) -> tuple[str, Any]:
    phrase, value = rng.choice(spec["named"])
    return phrase, value


def _days(rng: random.Random, spec: Spec) -> tuple[str, int]:
    if rng.random() < 0.3:
        return _named(rng, spec)
    return _choice(rng, spec)


def _floors(rng: random.Random, spec: Spec) -> tuple[str, list[int]]:
    low, high = spec["range"]
    floors = sorted(rng.sample(range(low, high + 1), rng.choice(spec["counts"])))
    text = ", ".join(map(str, floors[:-1])) + " and " + str(floors[-1])
    return spec["phrase"].format(v=text), floors


def _rate(rng: random.Random, spec: Spec) -> tuple[str, float]:
    """A rate given in percent; the value is a fraction when ``spec["decimal"]``."""
    pct = rng.choice(_T["rates"]["percents"])
    text = rng.choice(_T["rates"]["phrases"]).format(v=pct)
    return text, round(pct / 100, 4) if spec["decimal"] else pct


_MAKERS: dict[str, Callable[[random.Random, Spec], tuple[str, Any]]] = {
    "choice": _choice,
    "flag": _flag,
    "range": _in_range,
    "count": _count,
    "number": _number,
    "list": _one_item,
    "named": _named,
    "days": _days,
    "floors": _floors,
    "rate": _rate,
}
"""Makers by a modifier entry's ``kind``."""


def _modifier(name: str, spec: Spec) -> Modifier:
    maker = _MAKERS[spec["kind"]]
    return Modifier(name, spec["schema"], lambda rng, subject: maker(rng, spec))


MODIFIERS: dict[str, Modifier] = {
    name: _modifier(name, spec) for name, spec in _T["modifiers"].items()
}
"""Optional arguments by name. ``rate`` / ``rate_percent`` both become a parameter named
``interest_rate``: its description says which form the function takes (a tool asking for
``rate`` takes one of the two, at random)."""


def _modifiers(rng: random.Random, subject: Subject) -> list[str]:
    """The subject's optional arguments, ``rate`` resolved to one of its two forms."""
    return [
        ("rate" if rng.random() < 0.6 else "rate_percent") if m == "rate" else m
        for m in subject.modifiers
    ]


def _schema(subject: Subject, verb: int, modifiers: list[str]) -> dict[str, Any]:
    template, description = _T["verbs"][verb]
    name = template.format(n=subject.noun.replace(" ", "_"))
    kind = "integer" if all(v.isdigit() for v in subject.values) else "string"
    props: dict[str, Any] = {subject.key: param(kind, subject.key_description)}
    for extra in subject.extras:
        props["include_" + extra.replace(" ", "_")] = param(
            "boolean", f"Whether to include the {extra}. Default false."
        )
    for mod in modifiers:
        props[_T["param_names"].get(mod, mod)] = MODIFIERS[mod].schema
    return python_tool(name, description.format(noun=subject.noun), props, [subject.key])


def _one(rng: random.Random, index: int) -> tuple[TrainRequest, Subject]:
    subject = rng.choice(SUBJECTS)
    mods = _modifiers(rng, subject)
    verb = rng.randrange(len(_T["verbs"]))
    tool = _schema(subject, verb, mods)
    value = rng.choice(subject.values)
    key_value: Any = int(value) if value.isdigit() else value
    subject_text = rng.choice(subject.phrases).format(v=value, noun=subject.noun)
    text = rng.choice(_T["openers"]) + rng.choice(_T["asks"]).format(subject=subject_text)
    args: Args = {subject.key: key_value}
    # Name a random subset of the optional arguments (none for a quarter of the requests).
    pool = [("include", e) for e in subject.extras] + [("mod", m) for m in mods]
    named = [] if rng.random() < 0.25 else rng.sample(pool, rng.randint(1, min(3, len(pool))))
    phrases = []
    for kind, what in named:
        if kind == "include":
            phrase, flag = _bool_phrase(rng, what)
            args["include_" + what.replace(" ", "_")] = flag
        else:
            phrase, mvalue = MODIFIERS[what].make(rng, subject)
            args[_T["param_names"].get(what, what)] = mvalue
        phrases.append(phrase)
    if phrases:
        text += " " + ", ".join(phrases)
    text = text[:1].upper() + text[1:] + ("?" if text.startswith(("Could", "Can")) else ".")
    order = list(tool["function"]["parameters"]["properties"])
    ordered = {k: args[k] for k in order if k in args}
    request = TrainRequest(
        id=f"modifiers_{index}",
        messages=[{"role": "user", "content": text}],
        tools=[tool],
        calls=[(tool["function"]["name"], ordered)],
        source="modifiers",
    )
    return request, subject


def generate_modifier_requests(
    count: int, *, seed: int = 0, distractor_share: float = 0.3
) -> list[TrainRequest]:
    """``count`` single-call requests; a ``distractor_share`` of them also offer one or two
    tools of other subjects. Same seed, same list."""
    if count < 0 or not 0 <= distractor_share <= 1:
        raise ValueError("count must be >= 0 and distractor_share within [0, 1]")
    rng = random.Random(seed)
    requests = []
    for index in range(count):
        request, subject = _one(rng, index)
        if rng.random() < distractor_share:
            others = [s for s in SUBJECTS if s is not subject]
            tools = list(request.tools)
            for other in rng.sample(others, rng.choice([1, 2])):
                tools.append(
                    _schema(other, rng.randrange(len(_T["verbs"])), _modifiers(rng, other))
                )
            rng.shuffle(tools)
            request = TrainRequest(
                request.id, request.messages, tools, request.calls, source="modifiers"
            )
        requests.append(request)
    return requests
