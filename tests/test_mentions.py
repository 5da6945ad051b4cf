"""Optional parameters the request names count as required (``HFTarget(constrain_mentioned=True)``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from embedded_modes import held_in_every_mode
from ooo_agent.rules.mentions import mentioned_parameters, with_mentioned_required

CIRCLE = {
    "type": "function",
    "function": {
        "name": "calculate_circumference",
        "description": "Calculates the circumference of a circle.",
        "parameters": {
            "type": "object",
            "properties": {
                "radius": {"type": "number", "description": "The circle's radius."},
                "unit": {"type": "string", "description": "The unit of length."},
                "precision": {"type": "integer", "description": "Decimals to keep."},
            },
            "required": ["radius"],
        },
    },
}
WEATHER = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temp_scale": {"type": "string", "enum": ["celsius", "fahrenheit", "K"]},
            "includeHumidity": {"type": "boolean"},
        },
        "required": ["city"],
    },
}


def _user(text: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Use the unit the user gives."},
        {"role": "user", "content": text},
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a word of the parameter's name, in any inflection the word counter folds
        ("Circumference of a circle of radius 4, in inches: which unit? units please", ("unit",)),
        ("Radius 4; give it with 3 decimals of precision", ("precision",)),
        ("Radius 4, in the units I use", ("unit",)),
        # the required parameter is not listed; nothing named, nothing added
        ("Circumference of a circle of radius 4", ()),
    ],
)
def test_a_named_optional_parameter_is_found(text: str, expected: tuple[str, ...]) -> None:
    found = mentioned_parameters(_user(text), [CIRCLE])
    assert found.get("calculate_circumference", ()) == expected


def test_enum_options_and_camel_case_names_count_and_short_options_do_not() -> None:
    found = mentioned_parameters(_user("Weather in Oslo in Celsius, with the humidity"), [WEATHER])
    assert found == {"get_weather": ("temp_scale", "includeHumidity")}
    # "K" is too short to look for ("OK" would name it); a word inside another word is no option.
    assert mentioned_parameters(_user("Weather in Oslo, OK? K please"), [WEATHER]) == {}
    assert mentioned_parameters(_user("Weather in Oslo, supercelsiusish"), [WEATHER]) == {}


def test_only_the_users_words_count() -> None:
    messages = [
        {"role": "system", "content": "Always give the unit and the precision."},
        {"role": "assistant", "content": "Which unit?"},
        {"role": "user", "content": [{"type": "text", "text": "Radius 2"}]},
    ]
    assert mentioned_parameters(messages, [CIRCLE]) == {}


def test_with_mentioned_required_copies_and_extends_required() -> None:
    before = copy.deepcopy([CIRCLE, WEATHER])
    tools = with_mentioned_required(_user("Radius 4 in inches: state the unit"), [CIRCLE, WEATHER])
    assert tools[0]["function"]["parameters"]["required"] == ["radius", "unit"]
    assert tools[1] is WEATHER  # nothing named: passed as it is
    assert before == [CIRCLE, WEATHER]  # the caller's tools are not changed
    no_list = {"name": "f", "parameters": {"properties": {"unit": {"type": "string"}}}}
    (changed,) = with_mentioned_required(_user("the unit"), [no_list])
    assert changed["parameters"]["required"] == ["unit"]
    assert "required" not in no_list["parameters"]


def test_tools_without_parameters_are_skipped() -> None:
    tools = [{"name": "ping"}, {"name": "odd", "parameters": {"properties": "?"}}]
    assert mentioned_parameters(_user("ping the odd parameters"), tools) == {}
    assert with_mentioned_required(_user("ping"), tools) == tools


def test_the_constraint_keeps_a_named_optional_parameter_open() -> None:
    """With the named parameter required, the call cannot close before it is written."""
    from ooo_agent.formats import HermesFormat

    fmt = HermesFormat()
    messages = _user("Circumference of a circle of radius 4, unit: inches")
    plain = fmt.skeleton([CIRCLE])
    named = fmt.skeleton(with_mentioned_required(messages, [CIRCLE]))
    early = '<tool_call>\n{"name": "calculate_circumference", "arguments": {"radius": 4'
    assert plain.conforms(early + "}") is not False
    assert named.conforms(early + "}") is False
    assert named.conforms(early + ', "unit": "inches"}') is not False


@pytest.mark.slow
def test_the_embedded_target_writes_the_named_unit_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    held_in_every_mode(
        embedded,
        CIRCLE,
        "What is the circumference of a circle of radius 3 cm, in the unit cm?",
        # With the schema alone the model leaves the unit out.
        premise=[("calculate_circumference", {"radius": 3})],
        expected=[("calculate_circumference", {"radius": 3, "unit": "cm"})],
        # Right or wrong, one closing without the unit.
        hints=[{"radius": 3, "unit": "cm"}, {"radius": 3}, {"radius": 2, "unit": "inches"}],
        held={"constrain_names": True, "constrain_mentioned": True},
    )


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string", "enum": ["celsius", "K"]}, ["celsius", "K"]),
        (
            {"type": "array", "items": {"type": "string", "enum": ["Patio", "Wi-Fi"]}},
            ["Patio", "Wi-Fi"],
        ),
        (
            {"type": "string", "description": "The unit ('Celsius' or 'Fahrenheit')."},
            ["Celsius", "Fahrenheit"],
        ),
        (
            {
                "type": "array",
                "description": "Dietary needs, e.g. vegan, gluten-free. Default none.",
            },
            ["vegan", "gluten-free"],
        ),
        (
            {"type": "string", "description": "Mode, such as static or dynamic"},
            ["static", "dynamic"],
        ),
        (
            {"type": "string", "description": "A consideration like vegan, vegetarian etc."},
            ["vegan", "vegetarian", ""],
        ),
        ({"type": "integer", "description": "How many."}, []),
        ("not a schema", []),
    ],
)
def test_options_are_enums_and_the_values_a_description_offers(
    schema: object, expected: list[str]
) -> None:
    from ooo_agent.rules.mentions import options

    assert options(schema) == expected


def test_a_value_the_description_offers_names_its_parameter() -> None:
    tool = {
        "name": "find_restaurant",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "diet": {"type": "array", "description": "Needs, e.g. vegan, gluten-free."},
                "amenities": {"type": "array", "items": {"enum": ["Patio", "Wi-Fi"]}},
                "unit": {"type": "string", "description": "Distance unit ('km' or 'miles')."},
            },
            "required": ["city"],
        },
    }
    found = mentioned_parameters(_user("A vegan place with a patio in Boston"), [tool])
    assert found == {"find_restaurant": ("diet", "amenities")}  # "km" is too short to look for
    assert mentioned_parameters(_user("Within 3 miles"), [tool]) == {"find_restaurant": ("unit",)}


def test_quotes_pair_up_and_apostrophes_start_none() -> None:
    from ooo_agent.rules.mentions import options

    described = {"description": "The user's unit ('km' or 'miles'), \"metric\" by default."}
    assert options(described) == ["km", "miles", "metric"]


@pytest.mark.parametrize(
    ("key", "schema", "text", "named"),
    [
        # a unit word alone names no unit parameter (the model then writes it wrong)
        ("unit", {"type": "string", "description": "Default is 'cm'."}, "radius of 4 inches", False),
        # a quantity in the unit the description gives
        ("max_distance", {"type": "integer", "description": "Distance (in miles)."}, "within 10 miles", True),
        ("prep_time", {"type": "integer", "description": "Time (in minutes)."}, "under 30 minutes", True),
        ("max_distance", {"type": "integer", "description": "Distance (in miles)."}, "many miles away", False),
        ("max_distance", {"type": "string", "description": "Distance (in miles)."}, "10 miles", False),
        # the whole unit: "40 m/s" is no value in m/s^2
        ("acceleration", {"type": "number", "description": "Acceleration in m/s^2."}, "at 40 m/s", False),
        ("acceleration", {"type": "number", "description": "Acceleration in m/s^2."}, "at 3 m/s^2", True),
        # a year for a year parameter
        ("year", {"type": "integer", "description": "Default is 2001."}, "turtles in 2020", True),
        ("year", {"type": "integer"}, "Turtles in the river in 2020.", True),  # a sentence's end
        ("year", {"type": "integer"}, "turtles at 2020.5 m", False),
        ("year", {"type": "integer"}, "5000 turtles", False),
        ("year", {"type": "integer"}, "a 2020% rise", False),
        # a count of a unit ("The number of years ..."), a rate unit ("in beats per minute")
        ("period", {"type": "integer", "description": "The number of years to forecast."}, "for the next 5 years", True),
        ("period", {"type": "integer", "description": "The number of years to forecast."}, "over the next years", False),
        ("period", {"type": "integer", "description": "The number of apples."}, "5 apples", False),  # no unit
        ("tempo", {"type": "integer", "description": "The tempo, in beats per minute."}, "at 120 beats per minute", True),
        ("tempo", {"type": "integer", "description": "The tempo, in beats per minute."}, "at 120 beats", False),
        # a date for a date parameter, where the request states one
        ("date", {"type": "string"}, "the rate on January 1, 2022", True),
        ("start_date", {"type": "string"}, "from 10th December 2022", True),
        ("date", {"type": "string"}, "the rate in 2022", False),  # a year is no date
        ("update", {"type": "string"}, "on January 1, 2022", False),  # "update" is no date
    ],
)
def test_an_optional_parameter_named_by_its_value(
    key: str, schema: dict[str, Any], text: str, named: bool
) -> None:
    tool = {"name": "f", "parameters": {"type": "object", "properties": {key: schema}}}
    assert mentioned_parameters(_user(text), [tool]) == ({"f": (key,)} if named else {})
