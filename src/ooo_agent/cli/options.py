"""The options of every command that decodes with an :class:`~ooo_agent.targets.hf.HFTarget`
(``bench``, ``eval_target``, ``sidecar_data``): ``--rules`` and the ``--constrain-*`` flags,
and ``--decline-below`` (``bench``, ``eval_target``). One definition, so the commands name
and explain the same decoding the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ooo_agent.models.presets import ConstraintOptions
from ooo_agent.rules import RULES, SHORTHANDS, rules_named

__all__ = [
    "CONSTRAINT_OPTIONS",
    "ConstraintOptions",
    "add_constraint_options",
    "add_decline_option",
    "constrained",
    "constraint_options",
    "probability",
    "rule_names",
]

#: (keyword of ``HFTarget``, help text) for each ``--constrain-*`` option, in order.
CONSTRAINT_OPTIONS: tuple[tuple[str, str], ...] = (
    (
        "constrain_names",
        "restrict each call's function name to the offered tools while decoding",
    ),
    ("constrain_json", "keep each call's JSON well-formed while decoding"),
    (
        "constrain_arguments",
        "keep each call's arguments to its tool's schema while decoding (known keys, required "
        "ones, declared types and enums)",
    ),
    (
        "constrain_mentioned",
        "as --constrain-arguments, and the optional parameters the request names count as required",
    ),
    (
        "constrain_values",
        "as --constrain-arguments, and values follow the conventions the tool and the request "
        "state: a rate stated in percent as a fraction, an enum option the request names, "
        "'City, State' where asked, amounts whole",
    ),
)


def rule_names(text: str) -> tuple[str, ...]:
    """An argparse type: a comma list of rule names (:data:`ooo_agent.rules.RULES`)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in RULES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"rules must be a comma list of {', '.join(RULES)}; got {text!r}"
        )
    return names


def add_constraint_options(add: Callable[..., Any], *, scope: str = "") -> None:
    """Add ``--rules`` and the ``--constrain-*`` flags with ``add`` (a parser's
    ``add_argument``); ``scope`` opens each help text (e.g. ``"every mode: "``)."""
    add(
        "--rules",
        type=rule_names,
        default=(),
        metavar="NAME[,NAME]",
        help=f"{scope}decode under these request rules ({', '.join(RULES)}; "
        "HFTarget(rules=...); docs/rules.md); each implies --constrain-arguments",
    )
    for keyword, text in CONSTRAINT_OPTIONS:
        what = f"HFTarget({keyword}=True)"
        if keyword in SHORTHANDS:
            what = f"a shorthand for --rules {SHORTHANDS[keyword]}"
        add("--" + keyword.replace("_", "-"), action="store_true", help=f"{scope}{text} ({what})")


def probability(text: str) -> float:
    """An argparse type: a probability in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return value


def add_decline_option(add: Callable[..., Any], *, scope: str = "") -> None:
    """Add ``--decline-below P`` with ``add`` (``HFTarget(decline_below=P)``)."""
    add(
        "--decline-below",
        type=probability,
        default=None,
        metavar="P",
        help=f"{scope}answer without a call when the target's probability of opening one, at "
        "its first token, is below P (HFTarget(decline_below=P); the embedded preset's is "
        "0.9; default: off)",
    )


def constraint_options(args: argparse.Namespace) -> ConstraintOptions:
    """The parsed ``--rules`` and ``--constrain-*`` flags as ``HFTarget`` keyword arguments:
    ``--constrain-mentioned`` and ``--constrain-values`` join ``--rules`` as their rules."""
    shorthands = [rule for keyword, rule in SHORTHANDS.items() if getattr(args, keyword)]
    rules = rules_named([*args.rules, *shorthands])
    return ConstraintOptions(
        constrain_names=bool(args.constrain_names),
        constrain_json=bool(args.constrain_json),
        constrain_arguments=bool(args.constrain_arguments),
        rules=tuple(rule.name for rule in rules),
    )


def constrained(args: argparse.Namespace) -> bool:
    """Whether any ``--rules`` or ``--constrain-*`` flag is set."""
    return any(constraint_options(args).values())
