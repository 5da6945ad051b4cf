"""The ``--constrain-*`` options of every command that decodes with an
:class:`~ooo_agent.targets.hf.HFTarget` (``bench``, ``eval_target``, ``sidecar_data``), and
``--decline-below`` (``bench``, ``eval_target``): one definition, so the commands name and
explain the same decoding the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypedDict


class ConstraintOptions(TypedDict):
    """``HFTarget``'s constraint keywords, as the ``--constrain-*`` flags set them."""

    constrain_names: bool
    constrain_json: bool
    constrain_arguments: bool
    constrain_mentioned: bool
    constrain_values: bool


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


def add_constraint_options(add: Callable[..., Any], *, scope: str = "") -> None:
    """Add the ``--constrain-*`` flags with ``add`` (a parser's ``add_argument``); ``scope``
    opens each help text (e.g. ``"every mode: "``)."""
    for keyword, text in CONSTRAINT_OPTIONS:
        add(
            "--" + keyword.replace("_", "-"),
            action="store_true",
            help=f"{scope}{text} (HFTarget({keyword}=True))",
        )


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
    """The parsed ``--constrain-*`` flags as ``HFTarget`` keyword arguments."""
    return ConstraintOptions(
        constrain_names=bool(args.constrain_names),
        constrain_json=bool(args.constrain_json),
        constrain_arguments=bool(args.constrain_arguments),
        constrain_mentioned=bool(args.constrain_mentioned),
        constrain_values=bool(args.constrain_values),
    )


def constrained(args: argparse.Namespace) -> bool:
    """Whether any ``--constrain-*`` flag is set."""
    return any(constraint_options(args).values())
