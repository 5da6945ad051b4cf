"""Rates stated in percent are written as fractions (``HFTarget(constrain_values=True)``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from embedded_modes import held_in_every_mode
from ooo_agent.rules.percentages import (
    fraction_rates,
    stated_percentages,
    with_fraction_rates,
)


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of an investment.",
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


FUTURE_VALUE = _tool(
    "future_value",
    {
        "present_value": {"type": "integer", "description": "The amount invested."},
        "annual_interest_rate": {"type": "number", "description": "The annual interest rate."},
        "years": {"type": "integer", "description": "The holding period in years."},
    },
    ["present_value", "annual_interest_rate", "years"],
)


def _user(text: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Rates are 3% unless the user says otherwise."},
        {"role": "user", "content": text},
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at 5% a year", [5.0]),
        ("a 7.5 percent return and 3 per cent fees", [7.5, 3.0]),
        ("fell -2.5% then 10 %", [-2.5, 10.0]),
        ("5 percentiles, 0.05 and 12", []),
    ],
)
def test_stated_percentages(text: str, expected: list[float]) -> None:
    assert stated_percentages(_user(text)) == expected


def test_only_the_users_words_count() -> None:
    messages = [
        {"role": "system", "content": "Assume 4%."},
        {"role": "assistant", "content": "Which rate, 5%?"},
        {"role": "user", "content": [{"type": "text", "text": "The usual one"}]},
    ]
    assert stated_percentages(messages) == []


@pytest.mark.parametrize(
    ("key", "schema", "is_rate"),
    [
        ("annual_interest_rate", {"type": "number", "description": "The annual rate."}, True),
        ("rate", {"type": "number"}, True),
        ("annualGrowthRate", {"type": "number"}, True),
        ("expected_return", {"type": "number", "description": "As a decimal, 5% is 0.05."}, True),
        ("yield", {"type": "number", "description": "Yield as a fraction (5% = 0.05)."}, True),
        # asks for percent: left alone
        ("annual_rate", {"type": "number", "description": "Annual rate in percent."}, False),
        ("rate_pct", {"type": "number"}, False),
        ("growth", {"type": "number", "description": "Growth, e.g. 5 for 5%."}, False),
        # not a rate, not a number, or held already
        ("threshold", {"type": "number", "description": "Alert threshold."}, False),
        ("interest_rate", {"type": "integer"}, False),
        ("interest_rate", {"type": "string"}, False),
        ("rate", {"type": "number", "maximum": 100}, False),
        ("rate", {"type": "number", "enum": [1.5, 2.5]}, False),
        ("separate", {"type": "number"}, False),  # a word of the name, not a letter run
    ],
)
def test_which_parameters_are_fraction_rates(key: str, schema: Any, is_rate: bool) -> None:
    tool = _tool("f", {key: schema}, [key])
    assert fraction_rates([tool]) == ({"f": (key,)} if is_rate else {})


def test_with_fraction_rates_offers_the_stated_percentages_as_fractions() -> None:
    before = copy.deepcopy(FUTURE_VALUE)
    other = _tool("echo", {"text": {"type": "string"}}, ["text"])
    messages = _user("Future value of $5000 at 5% (or 4.5 percent, or a rate of 0.045) for 3 years")
    changed, same = with_fraction_rates(messages, [FUTURE_VALUE, other])
    rate = changed["function"]["parameters"]["properties"]["annual_interest_rate"]
    assert rate["enum"] == [0.05, 0.045]  # 0.045 once; 5000 and 3 are not rates
    assert rate["description"] == "The annual interest rate."
    assert same is other
    assert before == FUTURE_VALUE  # the caller's tools are not changed
    # a request that states no percentage leaves every tool as it is
    assert with_fraction_rates(_user("$5000 at 0.05 for 3 years"), [FUTURE_VALUE])[0] is (
        FUTURE_VALUE
    )


def test_tools_without_parameters_are_skipped() -> None:
    tools = [{"name": "ping"}, {"name": "odd", "parameters": {"properties": "?"}}]
    assert fraction_rates(tools) == {}
    assert with_fraction_rates(_user("ping at 5%"), tools) == tools


def test_the_constraint_refuses_the_percentage_as_written() -> None:
    from ooo_agent.formats import HermesFormat

    fmt = HermesFormat()
    messages = _user("Future value of $5000 at an annual interest rate of 5% for 10 years")
    held = fmt.skeleton(with_fraction_rates(messages, [FUTURE_VALUE]))
    plain = fmt.skeleton([FUTURE_VALUE])
    start = (
        '<tool_call>\n{"name": "future_value", "arguments": {"present_value": 5000, '
        '"annual_interest_rate": '
    )
    for written in ("5,", "5.0,", "0.5,"):
        assert plain.conforms(start + written) is not False
        assert held.conforms(start + written) is False, written
    assert held.conforms(start + "0.0") is not False
    assert held.conforms(start + '0.05, "years": 10}') is not False


@pytest.mark.slow
def test_the_embedded_target_writes_the_rate_as_a_fraction_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    call = {"present_value": 5000, "years": 10}
    held_in_every_mode(
        embedded,
        FUTURE_VALUE,
        "What will $5000 be worth after 10 years at an annual interest rate of 5%?",
        # With the schema alone the model copies the percentage.
        premise=[("future_value", {**call, "annual_interest_rate": 5})],
        expected=[("future_value", {**call, "annual_interest_rate": 0.05})],
        hints=[{**call, "annual_interest_rate": 0.05}, {**call, "annual_interest_rate": 5}],
        held={"constrain_names": True, "constrain_values": True},
    )
