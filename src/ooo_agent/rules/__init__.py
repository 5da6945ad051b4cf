"""Request rules: each rewrites a request's tool schemas the way its decoding holds them.

A :class:`Rule` is chosen by name; :class:`RuledTools` applies a list of them to one request,
once, for the target's call constraint and the sidecar's argument rows alike
(``HFTarget(rules=...)``, docs/rules.md).

======================  ==============================================================
name                    what the call is held to
======================  ==============================================================
``mentioned``           the optional parameters the request names are required
                        (:mod:`ooo_agent.rules.mentions`)
``values``              a rate stated in percent as a fraction, an enum option the
                        request names, "City, State" where asked, amounts whole
                        (:mod:`ooo_agent.rules.conventions`)
======================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Iterable

from ooo_agent.rules.base import Rule, RuledTools
from ooo_agent.rules.conventions import ValueConventions
from ooo_agent.rules.mentions import MentionedRequired

__all__ = [
    "RULES",
    "SHORTHANDS",
    "MentionedRequired",
    "Rule",
    "RuledTools",
    "ValueConventions",
    "rules_named",
]

RULES: dict[str, type[Rule]] = {rule.name: rule for rule in (MentionedRequired, ValueConventions)}
"""Every rule, by name, in the order a list of them is applied."""

SHORTHANDS: dict[str, str] = {"constrain_mentioned": "mentioned", "constrain_values": "values"}
"""``HFTarget`` keywords (and ``--constrain-*`` flags) that each stand for one rule."""


def rules_named(rules: Iterable[Rule | str]) -> tuple[Rule, ...]:
    """Rules given as objects or names, each once, in :data:`RULES`' order (a rule of another
    kind after those); ``ValueError`` names an unknown name."""
    chosen: list[Rule] = []
    for rule in rules:
        if isinstance(rule, str):
            if rule not in RULES:
                raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")
            rule = RULES[rule]()
        if rule not in chosen:
            chosen.append(rule)
    order = list(RULES)
    return tuple(
        sorted(chosen, key=lambda r: order.index(r.name) if r.name in order else len(order))
    )
