"""Rates the request states in percent are written as fractions.

People write "an annual interest rate of 5%", "discounted at 8%"; a Python function's
``rate: float`` ("The annual interest rate.") computes with ``0.05`` and ``0.08``. A small
target copies what it reads and passes ``5`` — a call that validates and is wrong by a factor
of a hundred. :func:`fraction_rates` finds, per offered tool, the ``number`` parameters that
are rates — a word of the name is *rate*, *return*, *yield*, *growth* or *interest* — and that
do not ask for percent: neither name nor description says *percent*, *percentage*, *pct* or
``%``, unless the description asks for a *decimal* or *fraction* ("5% is 0.05").
When the user's messages state percentages, :func:`with_fraction_rates` gives each such
parameter an ``enum``: those percentages as fractions (``5%`` → ``0.05``), and any number
between -1 and 1 the request writes as it is (``a rate of 0.045``). That is what
the ``values`` rule (:class:`~ooo_agent.rules.conventions.ValueConventions`) hands the call constraint: the target chooses among
them (it may not write ``5``, nor ``0.5`` for "5%"). A parameter with an ``enum``, ``const``,
``minimum`` or ``maximum`` of its own keeps it. No model call, nothing fitted to a data set;
docs/tools.md says why, and ``benchmarks/conventions.py`` how often BFCL's answers agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.rules._parameters import parameters_matching, rewrite_parameters
from ooo_agent.rules.text import user_text

__all__ = ["fraction_rates", "stated_percentages", "with_fraction_rates"]

_PERCENTAGE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)", re.IGNORECASE)
_DECIMAL = re.compile(r"(?<![\w.])(-?\d*\.\d+)(?![\w.%]|\s*(?:%|percent\b|per cent\b))")
_RATE_WORDS = frozenset({"rate", "rates", "return", "returns", "yield", "growth", "interest"})
_PERCENT_WORDS = re.compile(r"percent|pct|%", re.IGNORECASE)
_FRACTION_WORDS = re.compile(r"\bdecimal|\bfraction", re.IGNORECASE)
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def stated_percentages(messages: Sequence[Mapping[str, Any]]) -> list[float]:
    """The percentages the user's messages state (``5%``, ``7.5 percent``, ``3 per cent``)."""
    return [float(m) for m in _PERCENTAGE.findall(user_text(messages))]


def _fractions(messages: Sequence[Mapping[str, Any]]) -> list[float]:
    """The values a rate may take: each stated percentage as a fraction, then each number
    between -1 and 1 the request writes as a decimal (first occurrence first, once each)."""
    found = [round(p / 100, 10) for p in stated_percentages(messages)]
    found += [float(d) for d in _DECIMAL.findall(user_text(messages)) if abs(float(d)) <= 1]
    return list(dict.fromkeys(found))


def _is_fraction_rate(key: str, schema: Any) -> bool:
    if not isinstance(schema, Mapping) or schema.get("type") != "number":
        return False
    held = ("enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    if any(key in schema for key in held):
        return False
    words = {word.lower() for word in _NAME_WORD.findall(key)}
    if not words & _RATE_WORDS:
        return False
    description = schema.get("description")
    said = f"{key} {description if isinstance(description, str) else ''}"
    return _FRACTION_WORDS.search(said) is not None or _PERCENT_WORDS.search(said) is None


def fraction_rates(tools: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Per tool name, its rate parameters that take a fraction (module docstring); tools with
    none are left out."""
    return parameters_matching(tools, _is_fraction_rate)


def with_fraction_rates(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """``tools`` with each one's :func:`fraction_rates` held to the request's percentages as
    fractions when the user's messages state any (module docstring; copies: the tools given
    are not changed, a tool without such a parameter, or every tool of a request that states
    no percentage, is passed as it is)."""
    if not stated_percentages(messages):
        return list(tools)
    values = _fractions(messages)
    return rewrite_parameters(
        tools, fraction_rates(tools), lambda schema: {**schema, "enum": values}
    )
