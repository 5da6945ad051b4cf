"""Values written the way the tool and the request say (``HFTarget(constrain_values=True)``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from embedded_modes import held_in_every_mode
from ooo_agent.rules.conventions import (
    PLACE_PATTERN,
    named_options,
    place_parameters,
    truncated_amounts,
    with_value_conventions,
)


def _tool(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "find_concert",
            "parameters": {"type": "object", "properties": properties, "required": ["city"]},
        },
    }


CONCERT = _tool(
    {
        "city": {"type": "string", "description": "The city and state, e.g. Chicago, IL."},
        "genre": {"type": "string", "description": "Music genre, e.g. Rock."},
        "rate": {"type": "number", "description": "The booking fee rate."},
    }
)


@pytest.mark.parametrize(
    ("description", "is_place"),
    [
        ("The city and state, e.g. New York, NY", True),
        ("The city and the country of the museum.", True),
        ("Where, in the format of 'City, State', such as 'San Francisco, CA'.", True),
        ("The location, e.g. Berkeley, CA", True),
        ("The city name.", False),
        ("The city where the exhibition is held.", False),
        ("A state code, e.g. NY", False),
    ],
)
def test_which_parameters_ask_for_city_and_state(description: str, is_place: bool) -> None:
    tool = _tool({"city": {"type": "string", "description": description}})
    assert place_parameters([tool]) == ({"find_concert": ("city",)} if is_place else {})


def test_a_place_parameter_must_be_a_string_without_a_rule_of_its_own() -> None:
    described = "The city and state, e.g. Chicago, IL."
    for schema in (
        {"type": "array", "description": described},
        {"type": "string", "description": described, "enum": ["Chicago, IL"]},
        {"type": "string", "description": described, "pattern": "^[A-Z]"},
    ):
        assert place_parameters([_tool({"city": schema})]) == {}


def test_with_value_conventions_applies_both_rules_to_copies() -> None:
    before = copy.deepcopy(CONCERT)
    (changed,) = with_value_conventions(
        [{"role": "user", "content": "Rock in Chicago at a 2% fee"}], [CONCERT]
    )
    properties = changed["function"]["parameters"]["properties"]
    assert properties["city"]["pattern"] == PLACE_PATTERN
    assert "pattern" not in properties["genre"]
    assert properties["rate"]["enum"] == [0.02]
    assert before == CONCERT  # the caller's tools are not changed
    # no percentage: the rate is left alone, the place still held
    (plain,) = with_value_conventions([{"role": "user", "content": "Rock in Chicago"}], [CONCERT])
    assert "enum" not in plain["function"]["parameters"]["properties"]["rate"]
    assert plain["function"]["parameters"]["properties"]["city"]["pattern"] == PLACE_PATTERN
    other = {"name": "ping"}
    assert with_value_conventions([], [other])[0] is other


def test_the_constraint_keeps_a_place_open_until_it_has_its_state() -> None:
    from ooo_agent.formats import HermesFormat

    fmt = HermesFormat()
    held = fmt.skeleton(with_value_conventions([], [CONCERT]))
    start = '<tool_call>\n{"name": "find_concert", "arguments": {"city": "Chicago'
    assert fmt.skeleton([CONCERT]).conforms(start + '"}') is not False
    assert held.conforms(start + '"}') is False
    assert held.conforms(start + ",") is not False
    assert held.conforms(start + ', "}') is False  # something after the comma
    assert held.conforms(start + ', IL"}') is not False


def _said(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_truncated_amounts_are_the_figures_an_amount_may_not_be_mistaken_for() -> None:
    ruled_out = truncated_amounts(_said("Net income $2,000,000 and dividends of $200,000"))
    assert ruled_out[:5] == [2, 20, 200, 2000, 20000]  # the leading figure times 10^k …
    assert 2000000 not in ruled_out and 200000 not in ruled_out  # … less the amounts written
    assert 20000000 in ruled_out  # a zero too many
    scaled = truncated_amounts(_said("213 million people on 8.5 million km2"))
    assert {213, 21300000, 8.5, 85, 8} <= set(scaled)  # "8" of 8.5: its whole part
    assert 213000000 not in scaled and 8500000 not in scaled
    # a number the request also writes on its own stays allowed; a bracketed list is no amount
    assert 2 not in truncated_amounts(_said("$2,000 over 2 years"))
    assert truncated_amounts(_said("cash flows [200,300,400,500] and 1,2,3")) == []
    assert truncated_amounts(_said("three thousand and 12 apples")) == []


def test_number_parameters_may_not_take_a_truncated_amount() -> None:
    from ooo_agent.formats import HermesFormat

    tool = _tool(
        {
            "city": {"type": "string"},
            "population": {"type": "integer", "description": "How many people."},
            "area": {"type": "number"},
            "year": {"type": "integer", "enum": [2020, 2021]},  # an enum of its own: kept
        }
    )
    (changed,) = with_value_conventions(_said("Density of 213 million on 8.5 million km2"), [tool])
    properties = changed["function"]["parameters"]["properties"]
    assert 213 in properties["population"]["not"]["enum"]
    assert 8.5 not in properties["population"]["not"]["enum"]  # an integer is never 8.5
    assert 8.5 in properties["area"]["not"]["enum"]
    assert "not" not in properties["year"] and "not" not in properties["city"]
    skeleton = HermesFormat().skeleton([changed])
    start = '<tool_call>\n{"name": "find_concert", "arguments": {"city": "x", "population": '
    assert skeleton.conforms(start + "213") is not False  # may still grow
    assert skeleton.conforms(start + "213}") is False
    assert skeleton.conforms(start + "21300000}") is False
    assert skeleton.conforms(start + "213000000}") is not False


ORDER = {"type": "string", "enum": ["descending", "ascending"], "description": "Sort order."}
NURSERY = {"type": "array", "items": {"type": "string", "enum": ["Annual", "Perennial", "Tree"]}}


@pytest.mark.parametrize(
    ("schema", "text", "named"),
    [
        (ORDER, "Sort [3, 1, 2] in ascending order", ["ascending"]),
        (ORDER, "Sort [3, 1, 2]", []),
        (NURSERY, "Nurseries in Toronto that sell annual plants", ["Annual"]),
        (NURSERY, "Trees and perennials, please", ["Perennial", "Tree"]),  # plurals name them
        (
            {
                "type": "array",
                "items": {"type": "string", "enum": ["high_low_temperature", "wind"]},
            },
            "the high and low temperatures",  # "temperatures" stems to "temperatur"
            ["high_low_temperature"],
        ),
        (
            {"type": "string", "enum": ["six_months", "year"]},
            "rain over six months",
            ["six_months"],
        ),
        ({"type": "string", "enum": ["Wi-Fi", "Cafe"]}, "a library with free Wi-Fi", ["Wi-Fi"]),
        # a catch-all option never counts as named; options that are no strings are not read
        ({"type": "string", "enum": ["all", "movies"]}, "all the news", []),
        ({"type": "integer", "enum": [1, 2]}, "one or 2", []),
        ({"type": "string", "description": "e.g. ascending"}, "ascending", []),  # no enum
    ],
)
def test_named_options_are_the_enum_options_the_request_names(
    schema: dict[str, Any], text: str, named: list[str]
) -> None:
    assert named_options(_said(text), schema) == named


def test_an_enum_is_held_to_the_options_the_request_names() -> None:
    from ooo_agent.formats import HermesFormat

    tool = _tool({"city": {"type": "string"}, "order": ORDER, "plants": NURSERY})
    said = _said("Annual plants in Toronto, listed in ascending order")
    (changed,) = with_value_conventions(said, [tool])
    properties = changed["function"]["parameters"]["properties"]
    assert properties["order"]["enum"] == ["ascending"]
    assert properties["order"]["description"] == "Sort order."
    assert properties["plants"]["items"]["enum"] == ["Annual"]
    assert tool["function"]["parameters"]["properties"]["order"] is ORDER  # not changed
    (untouched,) = with_value_conventions(_said("Plants in Toronto"), [tool])
    assert untouched is tool
    skeleton = HermesFormat().skeleton([changed])
    start = '<tool_call>\n{"name": "find_concert", "arguments": {"city": "Toronto", '
    assert skeleton.conforms(start + '"order": "desc') is False
    assert skeleton.conforms(start + '"order": "ascending"') is not False
    assert skeleton.conforms(start + '"plants": ["Annual", "Tree') is False
    assert skeleton.conforms(start + '"plants": ["Annual"]') is not False


@pytest.mark.slow
def test_the_embedded_target_writes_city_and_state_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    described = "The city where you are looking for a concert. In the format City, State."
    held_in_every_mode(
        embedded,
        _tool({"city": {"type": "string", "description": described}}),
        "Find a rock concert in Chicago for less than $100.",
        premise=[("find_concert", {"city": "Chicago"})],
        expected=[("find_concert", {"city": "Chicago, IL"})],
        hints=[{"city": "Chicago, IL"}, {"city": "Chicago"}],
    )


@pytest.mark.slow
def test_the_embedded_target_takes_the_option_the_request_names_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    amenities = ["Patio", "Wi-Fi", "Parking", "Live Music"]
    tool = {
        "type": "function",
        "function": {
            "name": "find_restaurant",
            "description": "Find a restaurant nearby.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "amenities": {
                        "type": "array",
                        "items": {"type": "string", "enum": amenities},
                        "description": "Amenities the restaurant should have.",
                    },
                },
                "required": ["city"],
            },
        },
    }
    held_in_every_mode(
        embedded,
        tool,
        "Find a restaurant with a patio in Boston.",
        # every option of the array, not the one asked for
        premise=[("find_restaurant", {"city": "Boston", "amenities": amenities})],
        expected=[("find_restaurant", {"city": "Boston", "amenities": ["Patio"]})],
        hints=[
            {"city": "Boston", "amenities": ["Patio"]},
            {"city": "Boston", "amenities": amenities},
        ],
    )
