"""The rule layer: rules chosen by name, applied once per request, read by target and sidecar."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ooo_agent.rules import (
    RULES,
    MentionedRequired,
    Rule,
    RuledTools,
    ValueConventions,
    rules_named,
)
from ooo_agent.rules.conventions import with_value_conventions
from ooo_agent.rules.mentions import mentioned_of, with_mentioned_required


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


LOAN = _tool(
    "loan_payment",
    {
        "principal": {"type": "number"},
        "rate": {"type": "number", "description": "The annual interest rate."},
        "unit": {"type": "string", "enum": ["monthly", "yearly"]},
    },
    ["principal", "rate"],
)
TIME = _tool("get_time", {"zone": {"type": "string"}}, ["zone"])
WEATHER = _tool("get_weather", {"city": {"type": "string"}, "unit": {"type": "string"}}, ["city"])
MESSAGES = [{"role": "user", "content": "Monthly payment on $2,000 at 5% interest, unit monthly"}]


class Counting(Rule):
    """A rule that counts its runs and marks each tool it rewrites."""

    name = "counting"

    def __init__(self) -> None:
        self.runs = 0

    def rewrite(
        self, ruled: RuledTools, tools: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        self.runs += 1
        return [{**tool, "marked": True} for tool in tools]


def test_rules_are_chosen_by_name_once_each_in_a_fixed_order() -> None:
    assert list(RULES) == ["mentioned", "values"]
    assert rules_named(["values", "mentioned", "values"]) == (
        MentionedRequired(),
        ValueConventions(),
    )
    assert rules_named([ValueConventions(), "mentioned"]) == rules_named(["mentioned", "values"])
    with pytest.raises(ValueError, match=r"unknown rule 'dates'.*mentioned, values"):
        rules_named(["dates"])


def test_the_ruling_equals_the_rules_applied_one_after_another() -> None:
    ruled = RuledTools(MESSAGES, [LOAN, TIME], rules_named(["mentioned", "values"]))
    expected = with_value_conventions(MESSAGES, with_mentioned_required(MESSAGES, [LOAN, TIME]))
    assert [tool.to_openai() for tool in ruled.tools] == expected
    (loan, time) = ruled.tools
    assert loan.required == ("principal", "rate", "unit")
    assert loan.properties["rate"]["enum"] == [0.05]
    assert time is ruled.given[1] and time.to_openai() is TIME  # untouched: as given
    assert LOAN["function"]["parameters"]["required"] == ["principal", "rate"]  # not changed
    assert ruled.has("values") and not ruled.has("counting")
    assert RuledTools(MESSAGES, [LOAN]).tools[0].to_openai() is LOAN  # no rules: as given


def test_a_ruling_is_computed_once_whoever_reads_it_first() -> None:
    rule = Counting()
    ruled = RuledTools(MESSAGES, [LOAN, WEATHER], [rule])
    readers = [threading.Thread(target=lambda: ruled.tools) for _ in range(8)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert rule.runs == 1
    assert all(tool.to_openai()["marked"] for tool in ruled.tools)
    narrowed = ruled.only("get_weather")
    assert [tool.to_openai() for tool in narrowed.given] == [WEATHER]
    assert narrowed.tools == [ruled.tools[1]] and rule.runs == 1
    assert mentioned_of(narrowed) is mentioned_of(ruled)
    assert mentioned_of(ruled) == {"loan_payment": ("unit",), "get_weather": ("unit",)}


def test_a_ruling_knows_the_request_it_was_made_for() -> None:
    rules = rules_named(["values"])
    tools = [LOAN]
    ruled = RuledTools(MESSAGES, tools, rules)
    assert ruled.reads(MESSAGES, tools, rules)
    assert not ruled.reads(MESSAGES, [LOAN], rules)  # another request's tools
    assert not ruled.reads(MESSAGES, tools, rules_named(["mentioned"]))


def test_the_target_takes_rules_by_name_and_its_shorthands() -> None:
    pytest.importorskip("torch")
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget
    from test_decoding_support import byte_tokenizer, tiny_model

    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    plain = HFTarget(model, tokenizer)
    assert plain.rules == () and not plain.constrain_arguments
    assert not plain.constrain_mentioned and not plain.constrain_values
    named = HFTarget(model, tokenizer, rules=["values"], constrain_mentioned=True)
    assert named.rules == rules_named(["mentioned", "values"])
    assert named.constrain_mentioned and named.constrain_values and named.constrain_arguments
    # The target reads the caller's ruling of its own request, and makes its own otherwise.
    ruled = RuledTools(MESSAGES, [LOAN], named.rules)
    request = TargetRequest(MESSAGES, ruled.given, ruled=ruled)
    assert named.ruled(request) is ruled
    other = TargetRequest(MESSAGES, [LOAN], ruled=ruled)
    assert named.ruled(other) is not ruled and named.ruled(other).tools == ruled.tools
