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

from ooo_agent.train._tool_schema import param, python_tool
from ooo_agent.train.examples import TrainRequest

__all__ = ["MODIFIERS", "SUBJECTS", "generate_modifier_requests"]

Args = dict[str, Any]

_NUMBER_WORDS = {
    2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
    10: "ten", 12: "twelve", 15: "fifteen", 20: "twenty",
}  # fmt: skip


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


SUBJECTS: tuple[Subject, ...] = (
    Subject("museum", "museum_name", "Full name of the museum.",
            ("Louvre Museum", "British Museum", "Prado Museum", "Uffizi Gallery", "Rijksmuseum"),
            ("opening hours", "ticket prices", "current exhibitions"),
            phrases=("the {v}",),
            modifiers=("detailed", "language", "date")),
    Subject("species", "species", "Scientific or common name of the species.",
            ("Homo sapiens", "African elephant", "Bengal tiger", "Emperor penguin", "Gray wolf"),
            ("habitat", "diet", "human impact", "population trend"),
            phrases=("the species {v}", "{v}", "the {v} population"),
            modifiers=("model", "years", "region", "detailed")),
    Subject("company", "company", "Company name or ticker symbol.",
            ("Tesla", "Microsoft", "Nestle", "Toyota", "Siemens", "Unilever"),
            ("financials", "executives", "history", "competitors"),
            phrases=("the company {v}", "{v}"),
            modifiers=("country", "year", "detailed", "sort_by")),
    Subject("court case", "case_number", "The case number of the court case.",
            ("CV-2020-4417", "445-XYZ", "2019-LA-0083", "88213-B"),
            ("verdict", "judge", "parties", "filings"),
            phrases=("the court case with number {v}", "case {v}"),
            modifiers=("court_location", "year", "detailed")),
    Subject("property", "address", "Street address of the property.",
            ("12 Oak Lane", "450 Pine Street", "9 Harbor Road", "77 Elm Avenue"),
            ("owner", "tax history", "sale history"),
            phrases=("the property at {v}", "the house at {v}"),
            modifiers=("county", "state", "detailed")),
    Subject("restaurant", "city", "City to search in.",
            ("Tokyo", "Lisbon", "Chicago", "Seoul", "Toronto"),
            ("reviews", "opening hours", "menu"),
            phrases=("restaurants in {v}", "places to eat in {v}"),
            modifiers=("cuisine", "top", "min_rating", "sort_by", "dietary")),
    Subject("forest", "location", "Name of the forest or park.",
            ("Black Forest", "Yosemite National Park", "Amazon Rainforest", "Sherwood Forest"),
            ("human impact", "wildlife", "fire risk"),
            phrases=("the growth of the {v}", "the {v}"),
            modifiers=("years", "model", "detailed")),
    Subject("concert", "location", "City where the events take place.",
            ("Berlin", "Austin", "Melbourne", "Nashville", "Dublin"),
            ("ticket prices", "venue details"),
            phrases=("upcoming concerts in {v}", "concerts in {v}"),
            modifiers=("genre", "days_ahead", "top", "sort_by")),
    Subject("building", "building_id", "Identifier of the building.",
            ("B2210", "HQ-7", "T-300", "C1044"),
            ("floor plans", "maintenance records"),
            phrases=("the structure of building {v}", "building {v}"),
            modifiers=("mode", "floors", "detailed")),
    Subject("historical event", "topic", "The subject of the historical events.",
            ("Buddhism", "the Roman Empire", "the Silk Road", "Islam", "the Ming dynasty"),
            ("key figures", "sources"),
            phrases=("major historical events of {v}", "the history of {v}"),
            modifiers=("century", "top", "sort_by", "region")),
    Subject("video game", "game", "Title of the game.",
            ("Stardew Valley", "Hades", "Minecraft", "Celeste", "Portal 2"),
            ("ratings", "achievements", "player statistics"),
            phrases=("the game {v}", "{v}"),
            modifiers=("platform", "region", "username")),
    Subject("city", "city", "Name of the city.",
            ("Vienna", "Osaka", "Denver", "Cape Town", "Montreal"),
            ("population", "landmarks", "air quality"),
            phrases=("the weather in {v}", "{v}"),
            modifiers=("unit", "days_ahead", "detailed", "language")),
    Subject("investment", "principal", "The amount invested.",
            ("2500", "10000", "750", "40000"),
            ("tax effects", "inflation adjustment"),
            phrases=("an investment of ${v}", "${v} invested"),
            modifiers=("rate", "years", "compounding")),
    Subject("hospital", "location", "City and state, e.g. 'Denver, CO'.",
            ("Boston, MA", "Austin, TX", "Seattle, WA", "Phoenix, AZ"),
            ("visiting hours", "ratings"),
            phrases=("a hospital near {v}", "hospitals around {v}"),
            modifiers=("radius", "department", "top")),
)  # fmt: skip


def _bool_phrase(rng: random.Random, what: str) -> tuple[str, bool]:
    if rng.random() < 0.12:
        return rng.choice([f"without the {what}", f"excluding {what}", f"but no {what}"]), False
    return rng.choice(
        [f"including {what}", f"with {what}", f"and include the {what}", f"along with the {what}",
         f"also showing the {what}", f"with {what} included"]
    ), True  # fmt: skip


def _count_phrase(rng: random.Random) -> tuple[str, int]:
    n = rng.choice(list(_NUMBER_WORDS))
    word = _NUMBER_WORDS[n] if rng.random() < 0.6 else str(n)
    return rng.choice(
        [f"showing the top {word}", f"and return {word} results", f"limited to the best {word}"]
    ), n


def _days_phrase(rng: random.Random) -> tuple[str, int]:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice([("in the upcoming month", 30), ("for the next week", 7),
                           ("over the next two weeks", 14), ("for the coming weekend", 3)])  # fmt: skip
    n = rng.choice([2, 3, 5, 10, 21])
    return rng.choice([f"for the next {n} days", f"within {n} days", f"in the coming {n} days"]), n


def _rate(rng: random.Random, decimal: bool) -> tuple[str, float]:
    pct = rng.choice([2, 3, 4, 5, 6, 7, 8, 2.5, 3.5, 4.5])
    text = rng.choice([f"at {pct}%", f"with a rate of {pct}%", f"at {pct} percent a year"])
    return text, round(pct / 100, 4) if decimal else pct


def _choice(
    options: tuple[str, ...], *templates: str
) -> Callable[[random.Random, Subject], tuple[str, Any]]:
    def make(rng: random.Random, subject: Subject) -> tuple[str, Any]:
        value = rng.choice(options)
        return rng.choice(templates).format(v=value), value

    return make


MODIFIERS: dict[str, Modifier] = {
    m.name: m
    for m in [
        Modifier("detailed", param("boolean", "Whether to return detailed information. Default false."),
                 lambda rng, s: (rng.choice(["in detail", "with full details", "with details",
                                             "give me detailed information"]), True)),
        Modifier("language", param("string", "Language of the answer. Default English."),
                 _choice(("French", "Spanish", "German", "Japanese"), "in {v}", "answer in {v}")),
        Modifier("date", param("string", "Date in YYYY-MM-DD format. Default today."),
                 _choice(("2024-05-01", "2025-11-12", "2023-07-30"), "on {v}", "for {v}")),
        Modifier("model", param("string", "Model used for the prediction. Default 'Darwin'."),
                 _choice(("Darwin", "Lamarck", "logistic", "ARIMA", "Monte Carlo"),
                         "using the {v} model", "with the {v} model", "based on the {v} model")),
        Modifier("years", param("integer", "How many years ahead. Default 10."),
                 lambda rng, s: (lambda n: (rng.choice([f"for the next {n} years", f"over {n} years",
                                                        f"{n} years ahead"]), n))(rng.choice([3, 5, 20, 50, 100]))),
        Modifier("region", param("string", "Region to restrict to. Default 'global'."),
                 _choice(("Europe", "Asia", "Africa", "South America"), "in {v}", "only in {v}")),
        Modifier("country", param("string", "Country to restrict to. Default 'USA'."),
                 _choice(("Germany", "Japan", "Brazil", "Canada", "India"), "in {v}", "for {v}")),
        Modifier("year", param("integer", "Year of interest. Default the current year."),
                 lambda rng, s: (lambda y: (rng.choice([f"for {y}", f"in {y}", f"as of {y}"]), y))(
                     rng.randint(1995, 2024))),
        Modifier("sort_by", param("string", "Order of the results. Default 'relevance'.",
                                  enum=["relevance", "importance", "date", "rating", "popularity", "price"]),
                 _choice(("importance", "date", "rating", "popularity", "price"),
                         "sorted by {v}", "sort by {v}", "ordered by {v}", "ranked by {v}")),
        Modifier("court_location", param("string", "City of the court. Default all courts."),
                 _choice(("Los Angeles", "Houston", "Miami", "Denver"), "filed in {v}", "in the {v} court")),
        Modifier("county", param("string", "County of the property."),
                 _choice(("Santa Clara", "King", "Cook", "Travis"), "in {v} county", "in {v} County")),
        Modifier("state", param("string", "US state. Default 'California'."),
                 _choice(("Texas", "New York", "Florida", "Ohio", "Oregon"), "in {v}", "in the state of {v}")),
        Modifier("cuisine", param("string", "Type of food. Default any."),
                 _choice(("Thai", "Italian", "Mexican", "Korean", "Indian"), "serving {v} food", "{v} places")),
        Modifier("top", param("integer", "Number of results to return. Default 3."),
                 lambda rng, s: _count_phrase(rng)),
        Modifier("min_rating", param("number", "Minimum average rating out of 5. Default 0."),
                 (lambda rng, s: (lambda r: (rng.choice(
                     [f"rated above {r}", f"with ratings over {r}", f"with a rating of at least {r}"]),
                     int(r) if float(r).is_integer() else float(r)))(rng.choice(["4", "4.5", "3.5"])))),
        Modifier("dietary", {"type": "array", "items": {"type": "string"},
                             "description": "Dietary requirements. Default none."},
                 lambda rng, s: (lambda d: (rng.choice([f"with a {d} menu", f"offering {d} options"]), [d]))(
                     rng.choice(["vegan", "gluten-free", "halal", "vegetarian"]))),
        Modifier("genre", param("string", "Music genre. Default all genres."),
                 _choice(("rock", "jazz", "hip hop", "classical"), "{v} concerts", "of {v} music")),
        Modifier("days_ahead", param("integer", "How many days ahead to look. Default 7."),
                 lambda rng, s: _days_phrase(rng)),
        Modifier("mode", param("string", "Analysis mode, 'static' or 'dynamic'. Default 'static'.",
                               enum=["static", "dynamic"]),
                 _choice(("static", "dynamic"), "as a {v} analysis", "in {v} mode", "using {v} analysis")),
        Modifier("floors", {"type": "array", "items": {"type": "integer"},
                            "description": "Floors to include. Default all."},
                 lambda rng, s: (lambda f: (f"for floors {', '.join(map(str, f[:-1]))} and {f[-1]}", f))(
                     sorted(rng.sample(range(1, 12), rng.choice([2, 3]))))),
        Modifier("century", param("integer", "Century, e.g. 16 for the 16th century. Default all."),
                 lambda rng, s: (lambda c: (rng.choice([f"in the {c}th century", f"during the {c}th century"]), c))(
                     rng.randint(11, 19))),
        Modifier("platform", param("string", "Gaming platform. Default 'PC'."),
                 _choice(("Switch", "PlayStation 5", "Xbox", "PC"), "on {v}", "for {v}")),
        Modifier("username", param("string", "Player name. Default the signed-in user."),
                 _choice(("Sam", "nova_92", "Kira"), "for user '{v}'", "for player {v}")),
        Modifier("unit", param("string", "Temperature unit. Default 'celsius'."),
                 _choice(("celsius", "fahrenheit"), "in {v}", "with temperatures in {v}")),
        Modifier("rate", param("number", "The annual interest rate as a decimal, e.g. 0.05."),
                 lambda rng, s: _rate(rng, True)),
        Modifier("rate_percent", param("number", "The annual interest rate in percent, e.g. 4.5."),
                 lambda rng, s: _rate(rng, False)),
        Modifier("compounding", param("integer", "Times interest compounds per year. Default 1."),
                 (lambda rng, s: rng.choice(
                     [("compounded monthly", 12), ("compounded quarterly", 4), ("compounded daily", 365)]))),
        Modifier("radius", param("integer", "Search radius in kilometers. Default 10."),
                 lambda rng, s: (lambda r: (rng.choice([f"within {r} km", f"within a {r} km radius"]), r))(
                     rng.choice([2, 5, 15, 25]))),
        Modifier("department", param("string", "Department required. Default any."),
                 _choice(("Pediatrics", "Cardiology", "Oncology", "Neurology"), "with a {v} department",
                         "that has {v}")),
    ]
}  # fmt: skip
"""Optional arguments by name. ``rate`` / ``rate_percent`` both become a parameter named
``interest_rate``: its description says which form the function takes (a tool asking for
``rate`` takes one of the two, at random)."""

_PARAM_NAME = {
    "rate": "interest_rate",
    "rate_percent": "interest_rate",
    "dietary": "dietary_requirements",
}

_VERBS = (
    ("get_{n}_details", "Get details about a {noun}."),
    ("{n}.get_info", "Retrieve information about a {noun}."),
    ("find_{n}_info", "Find information on a {noun}."),
    ("{n}_lookup.fetch", "Look up a {noun}."),
    ("analyze_{n}", "Analyze a {noun} and report the findings."),
    ("{n}_report.generate", "Generate a report on a {noun}."),
)
_OPENERS = ("", "", "Please ", "Could you ", "I'd like you to ", "Can you ")
_ASKS = (
    "get information about {subject}",
    "look up {subject}",
    "find details on {subject}",
    "give me a report on {subject}",
    "analyze {subject}",
)


def _modifiers(rng: random.Random, subject: Subject) -> list[str]:
    """The subject's optional arguments, ``rate`` resolved to one of its two forms."""
    return [
        ("rate" if rng.random() < 0.6 else "rate_percent") if m == "rate" else m
        for m in subject.modifiers
    ]


def _schema(subject: Subject, verb: int, modifiers: list[str]) -> dict[str, Any]:
    template, description = _VERBS[verb]
    name = template.format(n=subject.noun.replace(" ", "_"))
    kind = "integer" if all(v.isdigit() for v in subject.values) else "string"
    props: dict[str, Any] = {subject.key: param(kind, subject.key_description)}
    for extra in subject.extras:
        props["include_" + extra.replace(" ", "_")] = param(
            "boolean", f"Whether to include the {extra}. Default false."
        )
    for mod in modifiers:
        props[_PARAM_NAME.get(mod, mod)] = MODIFIERS[mod].schema
    return python_tool(name, description.format(noun=subject.noun), props, [subject.key])


def _one(rng: random.Random, index: int) -> tuple[TrainRequest, Subject]:
    subject = rng.choice(SUBJECTS)
    mods = _modifiers(rng, subject)
    verb = rng.randrange(len(_VERBS))
    tool = _schema(subject, verb, mods)
    value = rng.choice(subject.values)
    key_value: Any = int(value) if value.isdigit() else value
    subject_text = rng.choice(subject.phrases).format(v=value, noun=subject.noun)
    text = rng.choice(_OPENERS) + rng.choice(_ASKS).format(subject=subject_text)
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
            args[_PARAM_NAME.get(what, what)] = mvalue
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
                tools.append(_schema(other, rng.randrange(len(_VERBS)), _modifiers(rng, other)))
            rng.shuffle(tools)
            request = TrainRequest(
                request.id, request.messages, tools, request.calls, source="modifiers"
            )
        requests.append(request)
    return requests
