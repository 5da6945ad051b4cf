"""What each shipped preset decodes with: ``HFTarget.from_preset`` and ``HFSidecar.from_preset``
give the same target rules, format and thresholds and the same sidecar ``WaveOptions`` as
before presets became a model plus rules and a ``WaveOptions`` (the values below were read
from the flat presets they replace). No real model is loaded."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

pytest.importorskip("torch")

import ooo_agent.models
from ooo_agent.models import PRESETS
from ooo_agent.sidecar import WaveOptions
from ooo_agent.sidecar.hf import HFSidecar
from ooo_agent.targets.hf import HFTarget
from test_decoding_support import byte_tokenizer, tiny_model

PUBLISHED = WaveOptions(
    check_slots=True,
    schedule="auto",
    follow_target=True,
    function_choice="index",
    relevance_weight=0.0,
    relevance_parameter_weight=0.5,
    layout="dialogue-first",
    required_values=False,
    mentioned_values=False,
    typed_values=False,
    unnamed_nulls=False,
    whole_words=False,
    request_case=False,
    joint_values=False,
)
"""A sidecar that is no sidecar preset of its own: the method as published."""

EMBEDDED_SIDECAR = WaveOptions(
    check_slots=True,
    schedule="auto",
    follow_target=True,
    function_choice="scored",
    relevance_weight=2.0,
    relevance_parameter_weight=0.5,
    layout="tools-first",
    required_values=True,
    mentioned_values=True,
    typed_values=True,
    unnamed_nulls=True,
    whole_words=True,
    request_case=True,
    joint_values=True,
)

UNCONSTRAINED = ("hermes", None, None, False, False, False, ())
"""(format, decline_below, call_again_below, constrain_names, constrain_json,
constrain_arguments, rules) of a target decoded as no target preset."""

TARGETS: dict[str, tuple[Any, ...]] = {
    "smollm2-135m-instruct": UNCONSTRAINED,
    "smollm2-135m-toolcall": (
        "hermes-description-first", 0.9, 0.5, True, False, True, ("mentioned", "values"),
    ),
    "smollm2-135m-sidecar": UNCONSTRAINED,
    "qwen3-0.6b-ooo-sidecar": UNCONSTRAINED,
}  # fmt: skip

SIDECARS: dict[str, WaveOptions] = {
    "smollm2-135m-instruct": PUBLISHED,
    "smollm2-135m-toolcall": PUBLISHED,
    "smollm2-135m-sidecar": EMBEDDED_SIDECAR,
    "qwen3-0.6b-ooo-sidecar": PUBLISHED,
}


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    tokenizer = byte_tokenizer()
    return tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21), tokenizer


@pytest.fixture
def no_loading(monkeypatch: pytest.MonkeyPatch, tiny: tuple[Any, Any]) -> None:
    """Every preset loads as the tiny random model."""
    monkeypatch.setattr(ooo_agent.models, "load_preset", lambda name, **kw: tiny)


def _decoding(target: HFTarget) -> tuple[Any, ...]:
    return (
        target.format.name,
        target.decline_below,
        target.call_again_below,
        target.constrain_names,
        target.constrain_json,
        target.constrain_arguments,
        tuple(rule.name for rule in target.rules),
    )


def test_every_shipped_preset_is_pinned() -> None:
    assert set(TARGETS) == set(SIDECARS) == set(PRESETS)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_target_preset_decodes_as_before(name: str, no_loading: None) -> None:
    assert _decoding(HFTarget.from_preset(name)) == TARGETS[name]


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ({"constrain_values": False}, ("mentioned",)),
        ({"constrain_mentioned": False, "constrain_names": False}, ("values",)),
        ({"rules": ["mentioned"]}, ("mentioned", "values")),
        ({"constrain_values": False, "rules": ["values"]}, ("mentioned", "values")),
        ({"constrain_values": False, "constrain_mentioned": False}, ()),
    ],
)
def test_keywords_turn_a_presets_rules_off_or_add_to_them(
    keywords: dict[str, Any], expected: tuple[str, ...], no_loading: None
) -> None:
    target = HFTarget.from_preset("smollm2-135m-toolcall", **keywords)
    assert tuple(rule.name for rule in target.rules) == expected
    assert target.constrain_names is keywords.get("constrain_names", True)
    assert target.format.name == "hermes-description-first" and target.decline_below == 0.9


def test_format_and_thresholds_given_replace_the_presets(no_loading: None) -> None:
    target = HFTarget.from_preset("smollm2-135m-toolcall", format="hermes", decline_below=None)
    assert _decoding(target) == ("hermes", None, 0.5, True, False, True, ("mentioned", "values"))


@pytest.mark.parametrize("name", sorted(SIDECARS))
def test_a_sidecar_preset_waves_as_before(
    name: str, monkeypatch: pytest.MonkeyPatch, no_loading: None
) -> None:
    class Recorded(HFSidecar):
        def __init__(self, model: Any, tokenizer: Any, **options: Any) -> None:
            self.options = options["options"]

    sidecar = Recorded.from_preset(name)
    assert sidecar.options == SIDECARS[name]
    # Options given are kept as they are.
    assert Recorded.from_preset(name, options=PUBLISHED).options is PUBLISHED


def test_the_module_helpers_read_the_same_presets() -> None:
    from ooo_agent.models.presets import (
        sidecar_wave_defaults,
        target_call_again_below,
        target_constraints,
        target_decline_below,
        target_format,
    )

    model_decided = (
        "function_choice", "relevance_weight", "layout", "required_values", "mentioned_values",
        "typed_values", "unnamed_nulls", "whole_words", "request_case", "joint_values",
    )  # fmt: skip
    for name in [*PRESETS, "some/folder"]:
        options = SIDECARS.get(name, PUBLISHED)
        assert sidecar_wave_defaults(name) == {f: getattr(options, f) for f in model_decided}
        fmt, decline, again, names, _, _, rules = TARGETS.get(name, UNCONSTRAINED)
        assert (target_format(name), target_decline_below(name)) == (fmt, decline)
        assert target_call_again_below(name) == again
        assert target_constraints(name) == {
            "constrain_names": names,
            "constrain_json": False,
            "constrain_arguments": False,
            "rules": rules,
        }


def test_preset_rules_are_known_rules() -> None:
    from ooo_agent.rules import RULES

    for preset in PRESETS.values():
        assert set(preset.rules) <= set(RULES), preset.name
        assert preset.role == "target" or not preset.rules


# (flags, (constrain_names, constrain_json, constrain_arguments, rules)) as the
# --constrain-* flags decoded before --rules: the shorthands must keep decoding the same.
FLAGS: list[tuple[list[str], tuple[Any, ...]]] = [
    ([], (False, False, False, ())),
    (["--constrain-names"], (True, False, False, ())),
    (["--constrain-json"], (False, True, False, ())),
    (["--constrain-arguments"], (False, False, True, ())),
    (["--constrain-mentioned"], (False, False, True, ("mentioned",))),
    (["--constrain-values"], (False, False, True, ("values",))),
    (
        ["--constrain-names", "--constrain-mentioned", "--constrain-values"],
        (True, False, True, ("mentioned", "values")),
    ),
    (["--constrain-json", "--constrain-values"], (False, True, True, ("values",))),
    (["--rules", "values,mentioned"], (False, False, True, ("mentioned", "values"))),
    (["--rules", "values", "--constrain-mentioned"], (False, False, True, ("mentioned", "values"))),
    (["--rules", "mentioned", "--constrain-names"], (True, False, True, ("mentioned",))),
]


@pytest.mark.parametrize(("flags", "expected"), FLAGS)
def test_the_constrain_flags_and_rules_decode_as_before(
    flags: list[str], expected: tuple[Any, ...], tiny: tuple[Any, Any]
) -> None:
    from ooo_agent.bench.command import add_arguments
    from ooo_agent.cli.options import constrained, constraint_options

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(flags)
    target = HFTarget(*tiny, **constraint_options(args))
    decoding = (target.constrain_names, target.constrain_json, target.constrain_arguments)
    assert (*decoding, tuple(rule.name for rule in target.rules)) == expected
    assert constrained(args) is bool(flags)


def test_rules_refuses_an_unknown_name() -> None:
    from ooo_agent.cli.options import add_constraint_options

    parser = argparse.ArgumentParser()
    add_constraint_options(parser.add_argument)
    with pytest.raises(SystemExit):
        parser.parse_args(["--rules", "mentioned,nonsense"])
