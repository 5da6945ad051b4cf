"""Optional parameters the request names: a call should not leave them out.

A small target often closes a call after its required arguments although the user asked for
more — "radius 3 cm, in the *unit* cm" without ``unit``, "include the *owner*'s details"
without ``include_owner``, "a restaurant with a *patio*" without ``amenities``.
:func:`mentioned_parameters` finds, per offered tool, the optional parameters the user's
messages name: a word of the parameter's name among the request's words (as
:func:`ooo_agent.rules.text.relevance_terms` counts them: case, ``snake_case`` and
``camelCase`` split, short words, stopwords and plural / ``-ing`` / ``-ed`` endings dropped), or
one of its options written as a word of the request — the options being its ``enum``, its
array items' ``enum``, and the values its description quotes (``'Celsius' or 'Fahrenheit'``) or
lists as examples (``e.g. vegan, gluten-free``; after "e.g.", "such as" or "like") — or its
value without its name: a number in the unit a number parameter's description gives ("within
10 miles" for one described "(in miles)", "5 years" for "The number of years", "120 beats per
minute" for one "in beats per minute"; the whole unit: "40 m/s" is no value "in m/s^2"), a
date for a parameter named *date* (a date the request states: "January 1, 2022"), a year for a
parameter named *year* ("in 2020"). A unit word alone does not name a parameter called *unit*
("4 inches").
:func:`with_mentioned_required` returns the tools with those parameters added to ``required``:
what the ``mentioned`` rule (:class:`MentionedRequired`) hands the call constraint, so the target cannot
close such a call before writing them (it still chooses their values). No model call, nothing
fitted to a data set; docs/tools.md says why, ``benchmarks/mentions.py`` measures it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.offered import ToolLike, offer
from ooo_agent.rules._parameters import options, rewrite_functions
from ooo_agent.rules.base import Rule, RuledTools
from ooo_agent.rules.text import relevance_terms, user_text
from ooo_agent.rules.words import names_a_date, stated_dates

__all__ = [
    "MentionedRequired",
    "mentioned_of",
    "mentioned_parameters",
    "options",
    "with_mentioned_required",
]

_MIN_OPTION = 3
"""An option shorter than this (``"C"``, ``"km"``) is not looked for in the request."""


def _names_option(option: Any, text: str) -> bool:
    if not isinstance(option, str) or len(option) < _MIN_OPTION:
        return False
    return re.search(r"(?<!\w)" + re.escape(option.lower()) + r"(?!\w)", text) is not None


# fmt: off
_UNITS = frozenset(
    {
        "mm", "cm", "m", "km", "meter", "meters", "metre", "metres", "kilometer", "kilometers",
        "kilometre", "kilometres", "inch", "inches", "ft", "foot", "feet", "yard", "yards", "mile",
        "miles", "mg", "g", "gram", "grams", "kg", "kilogram", "kilograms", "lb", "lbs", "pound",
        "pounds", "oz", "ounce", "ounces", "ml", "liter", "liters", "litre", "litres", "gallon",
        "gallons", "cup", "cups", "second", "seconds", "minute", "minutes", "hour", "hours", "day",
        "days", "week", "weeks", "month", "months", "year", "years", "km/h", "kph", "mph", "m/s",
        "m/s^2",
    }
)
# fmt: on
"""Units of measure a number parameter's description may give its value in."""
_DESCRIBED_UNIT = re.compile(r"\bin ([a-z]+(?:/[a-z0-9^]+)?)(?![\w/^])")
_RATE_UNIT = re.compile(r"\bin ([a-z]+ per [a-z]+)\b")
_COUNTED_UNIT = re.compile(r"\bnumber of ([a-z]+)\b")
_YEAR = re.compile(r"(?<![\w.,-])(?:1[5-9]|20)\d\d(?![\w,-]|\.\d|\s*(?:%|percent))")


def _named_by_value(key: str, schema: Any, text: str) -> bool:
    """Whether the request gives this optional parameter a value without naming it: a number
    in the unit a number parameter's description gives ("within 10 miles" for a distance
    described "(in miles)", "5 years" for "The number of years to forecast", "120 beats per
    minute" for a tempo "in beats per minute"), a date for a parameter named *date*
    ("January 1, 2022": :func:`~ooo_agent.rules.words.stated_dates`), or a year for a
    parameter named *year* ("in 2020")."""
    if not isinstance(schema, Mapping):
        return False
    description = schema.get("description")
    if schema.get("type") in ("integer", "number") and isinstance(description, str):
        lowered = description.lower()
        described = _DESCRIBED_UNIT.findall(lowered) + _COUNTED_UNIT.findall(lowered)
        for unit in [u for u in described if u in _UNITS] + _RATE_UNIT.findall(lowered):
            written = r"\d\s*" + re.escape(unit) + r"(?![\w/^])"
            if re.search(written, text):
                return True
    if names_a_date(key) and stated_dates(text):
        return True
    return "year" in relevance_terms(key) and _YEAR.search(text) is not None


def mentioned_parameters(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[ToolLike]
) -> dict[str, tuple[str, ...]]:
    """Per tool name, its optional parameters (schema order) that the user's messages name
    (module docstring); tools with none are left out."""
    text = user_text(messages)
    words = relevance_terms(text)
    lowered = text.lower()
    found: dict[str, tuple[str, ...]] = {}
    for tool in offer(tools):
        required_set = set(tool.required)
        named = []
        for key, schema in tool.properties.items():
            if key in required_set:
                continue
            if (
                relevance_terms(str(key)) & words
                or any(_names_option(option, lowered) for option in options(schema))
                or _named_by_value(str(key), schema, lowered)
            ):
                named.append(str(key))
        if named:
            found[tool.name] = tuple(named)
    return found


def mentioned_of(ruled: RuledTools) -> dict[str, tuple[str, ...]]:
    """:func:`mentioned_parameters` of every tool a ruled request offers, computed once per
    request for the ``mentioned`` rule and the sidecar alike."""
    whole = ruled.whole
    return whole.once("mentioned", lambda: mentioned_parameters(whole.messages, whole.given))


def _require(function: dict[str, Any], extra: tuple[str, ...]) -> None:
    parameters = function["parameters"]
    required = parameters.get("required")
    parameters["required"] = [*(required if isinstance(required, list) else []), *extra]


def with_mentioned_required(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """``tools`` with each one's :func:`mentioned_parameters` added to its ``required`` list
    (copies; the tools given are not changed, a tool without any is passed as it is)."""
    return rewrite_functions(tools, mentioned_parameters(messages, tools), _require)


class MentionedRequired(Rule):
    """The ``mentioned`` rule: the optional parameters the request names count as required
    (:func:`with_mentioned_required` of the tools as offered; ``HFTarget(constrain_mentioned=
    True)`` names it too)."""

    name = "mentioned"

    def rewrite(
        self, ruled: RuledTools, tools: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        return rewrite_functions(tools, mentioned_of(ruled), _require)
