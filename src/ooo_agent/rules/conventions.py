"""Values written the way the tool and the request say: the ``values`` rule.

Four conventions a small target gets wrong although the call validates:

- **a rate stated in percent is a fraction** (:mod:`ooo_agent.rules.percentages`): "5%" is
  ``0.05`` for a ``rate`` described as "The annual interest rate.";
- **a place asked for as "City, State" is written so** (:func:`place_parameters`): such a
  string parameter gets the ``pattern`` ``,\\s*\\S``, which the call constraint holds it to
  (:class:`ooo_agent.formats._scan.StringPattern`);
- **an amount is written whole** (:func:`truncated_amounts`): for "$2,000,000" or "213
  million" the leading figure times a power of ten (``2``, ``213``, ``21300000``) is ruled out
  of every number parameter (``not: {"enum": [...]}``), unless the request also writes it;
- **an option the request names is the one meant** (:func:`named_options`): an ``enum`` (or
  array items' ``enum``) with options the request names takes one of those; catch-all options
  (``all``, ``any``, ``none``…) never count as named.

:func:`with_value_conventions` applies them to a request's tools (copies; the tools given are
not changed). No model call, nothing fitted to a data set; docs/tools.md says why, and
``benchmarks/conventions.py`` counts how often BFCL's answers keep each rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ooo_agent.rules._parameters import free_string, parameters_matching, rewrite_parameters
from ooo_agent.rules.base import Rule, RuledTools
from ooo_agent.rules.percentages import with_fraction_rates
from ooo_agent.rules.text import relevance_terms, user_text

__all__ = [
    "CATCH_ALL_OPTIONS",
    "PLACE_PATTERN",
    "ValueConventions",
    "free_string",
    "named_options",
    "place_parameters",
    "truncated_amounts",
    "with_value_conventions",
]

PLACE_PATTERN = r",\s*\S"
"""What a "City, State" value must contain: a comma and something after it."""

_PLACE = re.compile(
    r"\bcity\s+and\s+(?:the\s+)?(?:state|country)\b"
    r"|\bcity\s*,\s*(?:state|country)\b"
    r"|\b(?:e\.g\.|eg\.|such as|like|example:?)\s*,?\s*['\"]?[A-Z][A-Za-z. ]+,\s*[A-Z]{2}\b",
    re.IGNORECASE,
)


# "2,000,000" (not a bracketed list "[200,300,400]"), "213 million"
_GROUPED = re.compile(r"(?<![\d.,\[])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)(?!\])")
_SCALE = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
_SCALED = re.compile(r"(?<![\d.,])(\d+(?:\.\d+)?)\s*(thousand|million|billion)\b", re.IGNORECASE)
_ALONE = re.compile(
    r"(?<![\d.,])\d+(?:\.\d+)?(?![\d,]*\d|\.\d)(?!\s*(?:thousand|million|billion)\b)",
    re.IGNORECASE,
)
_POWERS = 13
"""Multiples of a leading figure ruled out: times 10⁰ … 10¹²."""


def _number(value: float) -> float | int:
    value = round(value, 6)
    return int(value) if value.is_integer() else value


def truncated_amounts(messages: Sequence[Mapping[str, Any]]) -> list[float | int]:
    """The numbers an amount the user's messages write whole may not be mistaken for (module
    docstring): per amount written with thousands separators or a scale word, its leading
    figure (and its whole part: ``8`` of "8.5 million") times 10⁰ … 10¹², less the amount
    itself and every number the messages write."""
    text = user_text(messages)
    amounts: list[tuple[float, float]] = []  # (leading figure, amount)
    for written in _GROUPED.findall(text):
        amounts.append((float(written.split(",")[0]), float(written.replace(",", ""))))
    for figure, scale in _SCALED.findall(text):
        amounts.append((float(figure), float(figure) * _SCALE[scale.lower()]))
    written_numbers = {float(m) for m in _ALONE.findall(text)} | {a for _, a in amounts}
    leads = [lead for figure, _ in amounts for lead in dict.fromkeys((figure, float(int(figure))))]
    ruled_out = (_number(lead * 10**k) for lead in leads for k in range(_POWERS))
    return list(dict.fromkeys(v for v in ruled_out if v not in written_numbers))


def _is_place(schema: Any) -> bool:
    if not free_string(schema):
        return False
    description = schema.get("description")
    return isinstance(description, str) and _PLACE.search(description) is not None


def place_parameters(tools: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Per tool name, its string parameters whose description asks for "City, State" (module
    docstring); tools with none are left out."""
    return parameters_matching(tools, lambda _, schema: _is_place(schema))


def _is_free_number(schema: Any) -> bool:
    if not isinstance(schema, Mapping) or schema.get("type") not in ("number", "integer"):
        return False
    return not any(key in schema for key in ("enum", "const", "not"))


CATCH_ALL_OPTIONS = frozenset(
    {"all", "any", "anything", "default", "dontcare", "n/a", "none", "other", "unknown"}
)
"""Options that stand for no choice: never taken as named by the request."""


def _enum_options(schema: Any) -> list[Any]:
    """A parameter's ``enum``, else its array items' one; ``[]`` without either."""
    if not isinstance(schema, Mapping):
        return []
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, Mapping):
        return list(items.get("enum") or [])
    return []


def _roots(text: str) -> set[str]:
    """:func:`relevance_terms` with a final ``e`` dropped, so that a plural the light stemmer
    cuts to ``temperatur`` meets its singular ``temperature``."""
    return {w[:-1] if w.endswith("e") and len(w) > 4 else w for w in relevance_terms(text)}


def _names(option: Any, lowered: str, words: set[str]) -> bool:
    if not isinstance(option, str) or option.strip().lower() in CATCH_ALL_OPTIONS:
        return False
    terms = _roots(option)
    if terms and terms <= words:
        return True
    written = option.lower()
    return (
        len(written) >= 3 and re.search(rf"(?<!\w){re.escape(written)}(?!\w)", lowered) is not None
    )


def named_options(messages: Sequence[Mapping[str, Any]], schema: Any) -> list[str]:
    """The options of a parameter's ``enum`` (or its array items' ``enum``) that the user's
    messages name (module docstring), in the schema's order; ``[]`` when none or no enum."""
    return _options_named_by(messages)(schema) if _enum_options(schema) else []


def _options_named_by(messages: Sequence[Mapping[str, Any]]) -> Callable[[Any], list[str]]:
    """:func:`named_options` for one request's messages, their words read once."""
    text = user_text(messages)
    lowered, words = text.lower(), _roots(text)

    def named(schema: Any) -> list[str]:
        return [str(o) for o in _enum_options(schema) if _names(o, lowered, words)]

    return named


def _held_to_named(schema: Mapping[str, Any], named: list[str]) -> Mapping[str, Any]:
    if isinstance(schema.get("enum"), list):
        return {**schema, "enum": named}
    return {**schema, "items": {**schema["items"], "enum": named}}


def with_value_conventions(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """``tools`` with rates held to the request's percentages as fractions, enums to the
    options the request names, "City, State" parameters to their pattern and number
    parameters to whole amounts (module docstring;
    copies: a tool none of them touches is passed as it is)."""
    tools = with_fraction_rates(messages, tools)
    named = _options_named_by(messages)
    tools = rewrite_parameters(
        tools,
        parameters_matching(tools, lambda _, schema: bool(named(schema))),
        lambda schema: _held_to_named(schema, named(schema)),
    )
    tools = rewrite_parameters(
        tools, place_parameters(tools), lambda schema: {**schema, "pattern": PLACE_PATTERN}
    )
    leads = truncated_amounts(messages)
    if not leads:
        return tools
    whole: list[float | int] = [v for v in leads if isinstance(v, int)]

    def ruled_out(schema: Mapping[str, Any]) -> list[float | int]:
        return whole if schema.get("type") == "integer" else leads

    amounts = parameters_matching(
        tools, lambda _, schema: _is_free_number(schema) and bool(ruled_out(schema))
    )
    return rewrite_parameters(
        tools, amounts, lambda schema: {**schema, "not": {"enum": ruled_out(schema)}}
    )


class ValueConventions(Rule):
    """The ``values`` rule: :func:`with_value_conventions` (``HFTarget(constrain_values=True)``
    names it too)."""

    name = "values"

    def rewrite(
        self, ruled: RuledTools, tools: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        return with_value_conventions(ruled.messages, tools)
