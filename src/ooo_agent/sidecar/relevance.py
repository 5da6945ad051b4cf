"""How much a request's own words point at each offered tool: a lexical prior for the tool choice.

A small sidecar tells tools apart by what its weights learned of their names; the request
often names the tool outright ("the *area* of a *circle*" for ``geometry.circle_area``). This
module scores each tool by the words it shares with the user's messages, weighted by how rare
each word is among the offered tools (a word every tool has tells nothing), a name's word
counting twice, a description's once and a word of its parameters' names and descriptions half
(a word in several of these counts for each). No weight is fitted to an evaluation set.

:func:`tool_relevance` is what ``WaveOptions(relevance_weight=...)`` adds to a scored choice
(docs/sidecar.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ooo_agent.messages import user_text  # re-exported: rule and wave modules import it here
from ooo_agent.offered import OfferedTool, ToolLike, offer
from ooo_agent.rules.text import STOPWORDS, relevance_terms  # re-exported

__all__ = [
    "NAME_WEIGHT",
    "PARAMETER_WEIGHT",
    "STOPWORDS",
    "log_softmax",
    "relevance_terms",
    "tool_relevance",
    "user_text",
    "with_relevance",
]

NAME_WEIGHT = 2.0
"""A word shared with the tool's name counts this many times (its description's words count
once; a word in both counts for both)."""

PARAMETER_WEIGHT = 0.5
"""A word shared with the tool's parameters — their names and descriptions, top level — counts
this much (the request often says what it gives: "a *principal* of $10,000 at 5 % *interest*").
``WaveOptions.relevance_parameter_weight`` overrides it; 0 leaves the parameters out."""


def _parameter_terms(tool: OfferedTool) -> set[str]:
    """The counted words of a tool's top-level parameter names and descriptions."""
    terms: set[str] = set()
    for key, schema in tool.properties.items():
        terms |= relevance_terms(str(key))
        if isinstance(schema, Mapping):
            terms |= relevance_terms(str(schema.get("description") or ""))
    return terms


def tool_relevance(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolLike],
    *,
    parameter_weight: float = PARAMETER_WEIGHT,
) -> list[float]:
    """One score per tool (offered tools or OpenAI tool dicts, in order): the sum over the user's words that
    the tool shares of ``idf(word)`` — :data:`NAME_WEIGHT` times for its name's words, once for
    its description's and ``parameter_weight`` times for its parameters' names and descriptions
    — where ``idf(w) = ln((n + 1) / (df(w) + 0.5))`` over the ``n`` offered tools (a tool's
    parameters count towards ``df`` only when their weight is not 0). All zeros when the
    request shares no counted word with any tool."""
    if not parameter_weight >= 0:  # also refuses NaN
        raise ValueError(f"parameter_weight must be at least 0, not {parameter_weight}")
    request = relevance_terms(user_text(messages))
    names: list[set[str]] = []
    descriptions: list[set[str]] = []
    parameters: list[set[str]] = []
    for tool in offer(tools):
        names.append(relevance_terms(tool.name))
        descriptions.append(relevance_terms(tool.description))
        parameters.append(_parameter_terms(tool) if parameter_weight else set())
    documents = [
        name | description | parameter
        for name, description, parameter in zip(names, descriptions, parameters, strict=True)
    ]
    frequency: Counter[str] = Counter()
    for document in documents:
        frequency.update(document)
    n = len(tools)

    def idf(word: str) -> float:
        return math.log((n + 1) / (frequency[word] + 0.5))

    return [
        NAME_WEIGHT * sum(idf(w) for w in request & name)
        + sum(idf(w) for w in request & description)
        + parameter_weight * sum(idf(w) for w in request & parameter)
        for name, description, parameter in zip(names, descriptions, parameters, strict=True)
    ]


def log_softmax(scores: Sequence[float]) -> list[float]:
    """``scores`` as log-probabilities of one choice among them (stable for any magnitude)."""
    top = max(scores)
    total = math.log(sum(math.exp(s - top) for s in scores))
    return [s - top - total for s in scores]


def with_relevance(
    scores: Sequence[float], relevance: Sequence[float], weight: float
) -> list[float]:
    """A choice's scores with the tools' relevance added: ``log_softmax(scores) + weight *
    log_softmax(relevance)`` — a product of the two as distributions over the tools, the
    relevance raised to ``weight``. Equal relevance everywhere leaves the order of ``scores``."""
    if len(scores) != len(relevance):
        raise ValueError(f"{len(scores)} scores but {len(relevance)} relevance values")
    if not scores:
        return []
    return [
        s + weight * r for s, r in zip(log_softmax(scores), log_softmax(relevance), strict=True)
    ]
