"""BFCL-style AST checking on hand-made cases."""

from __future__ import annotations

from typing import Any

import pytest

from ooo_agent.bench._literals import parse_literal, render_literal, split_top_level
from ooo_agent.bench.ast_check import argument_ok, check, gold_calls, names_match, standardize
from ooo_agent.bench.datasets import BenchItem, Language, functions_to_tools
from ooo_agent.calls import RawCall, ToolCall

AREA = {
    "name": "geo.area",
    "description": "Area of a shape.",
    "parameters": {
        "type": "dict",
        "properties": {
            "shape": {"type": "string", "description": "Shape name."},
            "size": {"type": "float", "description": "Side length."},
            "count": {"type": "integer", "description": "How many."},
            "unit": {"type": "string", "description": "Unit."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
            "origin": {"type": "tuple", "items": {"type": "integer"}, "description": "Origin."},
            "options": {"type": "dict", "description": "Options.", "properties": {}},
        },
        "required": ["shape", "size"],
    },
}
WEATHER = {
    "name": "weather",
    "description": "Weather.",
    "parameters": {
        "type": "dict",
        "properties": {"city": {"type": "string", "description": "City."}},
        "required": ["city"],
    },
}


def _item(
    gold: list[dict[str, Any]],
    functions: list[dict[str, Any]] | None = None,
    language: Language = "python",
) -> BenchItem:
    functions = functions or [AREA, WEATHER]
    return BenchItem(
        id="t",
        category="test",
        messages=[{"role": "user", "content": "q"}],
        tools=functions_to_tools(functions, language),
        gold=gold,
        functions=functions,
        language=language,
    )


SIMPLE = _item(
    [
        {
            "geo.area": {
                "shape": ["square", "a square"],
                "size": [2.5],
                "count": [3, ""],
                "unit": ["", "cm"],
                "tags": [["red", "big"], ""],
                "origin": [[0, 0], ""],
                "options": [{"precise": [True], "mode": ["fast", ""]}, ""],
            }
        }
    ]
)


def test_correct_call_passes() -> None:
    result = check([("geo.area", {"shape": "square", "size": 2.5})], SIMPLE)
    assert result.ok and result.reason == "" and bool(result)


@pytest.mark.parametrize(
    ("args", "kind", "fragment"),
    [
        ({"size": 2.5}, "missing_required", "'shape'"),
        ({"shape": "square", "size": 2.5, "colour": "red"}, "unexpected_param", "'colour'"),
        ({"shape": "circle", "size": 2.5}, "value", "'shape'"),
        ({"shape": "square", "size": "2.5"}, "type", "should be float"),
        ({"shape": "square", "size": 2.5, "count": 3.0}, "type", "should be integer"),
        ({"shape": "square", "size": 2.5, "count": True}, "type", "should be integer"),
        ({"shape": "square", "size": 2.5, "tags": ["big", "red"]}, "value", "'tags'"),
        ({"shape": "square", "size": 2.5, "tags": ["red"]}, "value", "'tags'"),
        ({"shape": "square", "size": 2.5, "tags": "red"}, "type", "should be array"),
        ({"shape": "square", "size": 2.5, "options": {"precise": False}}, "value", "'options'"),
        ({"shape": "square", "size": 2.5, "options": {"precise": True, "x": 1}}, "value", ""),
        ({"shape": "square", "size": 2.5, "options": {"mode": "fast"}}, "value", ""),
    ],
)
def test_rejections_say_why(args: dict[str, Any], kind: str, fragment: str) -> None:
    result = check([("geo.area", args)], SIMPLE)
    assert not result.ok
    assert result.kind == kind
    assert fragment in result.reason


@pytest.mark.parametrize(
    "args",
    [
        {"shape": "A Square", "size": 2.5},  # case, spaces
        {"shape": "square", "size": 2.5, "unit": "CM"},
        {"shape": "square", "size": 2.5, "tags": ["Red", "BIG"]},  # strings inside lists
        {"shape": "square", "size": 2.5, "origin": (0, 0)},  # tuple for tuple
        {"shape": "square", "size": 2.5, "options": {"precise": True}},  # optional dict key absent
        {"shape": "square", "size": 2.5, "options": {"precise": True, "mode": "Fast"}},
        {"shape": "square", "size": 2.5, "count": 3},
    ],
)
def test_bfcl_leniency(args: dict[str, Any]) -> None:
    assert check([("geo.area", args)], SIMPLE).ok


def test_int_stands_for_float() -> None:
    item = _item([{"geo.area": {"shape": ["square"], "size": [2.0]}}])
    assert check([("geo.area", {"shape": "square", "size": 2})], item).ok


def test_optional_parameter_without_empty_marker_must_be_given() -> None:
    item = _item([{"geo.area": {"shape": ["square"], "size": [2.0], "unit": ["cm"]}}])
    result = check([("geo.area", {"shape": "square", "size": 2.0})], item)
    assert result.kind == "missing_optional"
    assert check([("geo.area", {"shape": "square", "size": 2.0, "unit": "cm"})], item).ok


def test_string_standardisation_matches_bfcl() -> None:
    assert standardize("April 1, 2024") == standardize("april 1 2024") == "april12024"
    assert standardize("New-York_City/NY.") == "newyorkcityny"
    assert standardize("it's") == 'it"s'
    assert standardize("a*b^c") == "abc"


def test_wrong_function_name() -> None:
    result = check([("weather", {"city": "Paris"})], SIMPLE)
    assert result.kind == "name" and "'geo.area'" in result.reason


def test_call_count_must_match() -> None:
    call = ("geo.area", {"shape": "square", "size": 2.5})
    assert check([call, call], SIMPLE).kind == "count"
    assert check([], SIMPLE).kind == "count"


def test_irrelevance_means_no_call() -> None:
    item = _item([])
    assert check([], item).ok
    result = check([("weather", {"city": "Paris"})], item)
    assert not result.ok and result.kind == "count"


def test_parallel_calls_match_in_any_order() -> None:
    item = _item([{"weather": {"city": ["Paris"]}}, {"weather": {"city": ["Rome", "Roma"]}}])
    rome, paris = ("weather", {"city": "Roma"}), ("weather", {"city": "paris"})
    assert check([rome, paris], item).ok
    assert check([paris, rome], item).ok
    result = check([paris, paris], item)
    assert not result.ok and "Rome" in result.reason


def test_parallel_matching_is_one_to_one_not_greedy() -> None:
    # Gold 0 accepts both calls, gold 1 only the first: a greedy match of gold 0 to the
    # first call would fail; the one-to-one assignment exists and must be found.
    item = _item([{"weather": {"city": ["Paris", "Rome"]}}, {"weather": {"city": ["Paris"]}}])
    assert check([("weather", {"city": "Paris"}), ("weather", {"city": "Rome"})], item).ok


def test_call_shapes_accepted() -> None:
    args = {"shape": "square", "size": 2.5}
    assert check([RawCall("geo.area", '{"shape": "square", "size": 2.5}')], SIMPLE).ok
    assert check([ToolCall("call_1", "geo.area", args)], SIMPLE).ok
    assert check([{"name": "geo.area", "arguments": args}], SIMPLE).ok


def test_invalid_json_arguments_fail_cleanly() -> None:
    result = check([RawCall("geo.area", '{"shape": "squ')], SIMPLE)
    assert not result.ok and result.kind == "arguments_json"


def test_names_match_is_a_multiset_comparison() -> None:
    item = _item([{"weather": {"city": ["Paris"]}}, {"geo.area": {"shape": ["x"], "size": [1.0]}}])
    assert names_match([("geo.area", {}), ("weather", {})], item)
    assert not names_match([("weather", {}), ("weather", {})], item)
    assert not names_match([("weather", {})], item)


def test_gold_value_of_a_variable_is_accepted_despite_declared_type() -> None:
    # BFCL golds sometimes hold a variable name where the schema declares another type.
    item = _item([{"geo.area": {"shape": ["square"], "size": ["side_length"]}}])
    assert check([("geo.area", {"shape": "square", "size": "side_length"})], item).ok


def test_gold_calls_take_first_value_and_leave_out_what_may_be_absent() -> None:
    assert gold_calls(SIMPLE) == [("geo.area", {"shape": "square", "size": 2.5})]
    item = _item(
        [{"geo.area": {"shape": ["square"], "size": ["", 2.0], "unit": ["cm"],
                       "options": [{"precise": [True], "mode": ["", "fast"]}]}}]
    )  # fmt: skip
    # Required stays even when "" comes first; nested optional keys are left out too.
    assert gold_calls(item) == [
        ("geo.area", {"shape": "square", "size": 2.0, "unit": "cm", "options": {"precise": True}})
    ]
    assert check(gold_calls(item), item).ok


# -- Java / JavaScript ---------------------------------------------------------------------

JAVA_FN = {
    "name": "Db.query",
    "description": "Run a query.",
    "parameters": {
        "type": "dict",
        "properties": {
            "limit": {"type": "long", "description": "Rows."},
            "ratio": {"type": "float", "description": "Ratio."},
            "flag": {"type": "boolean", "description": "Flag."},
            "ids": {"type": "Array", "items": {"type": "integer"}, "description": "Ids."},
            "names": {"type": "ArrayList", "items": {"type": "String"}, "description": "Names."},
            "props": {"type": "HashMap", "description": "Properties."},
            "conn": {"type": "any", "description": "Connection."},
        },
        "required": ["limit"],
    },
}


def test_java_values_are_literal_strings() -> None:
    gold = {
        "limit": [50],
        "ratio": [0.5, ""],
        "flag": [True, ""],
        "ids": [[1, 2], ""],
        "names": [["a", "b"], ""],
        "props": [{"k": "v"}, ""],
        "conn": ["dbConn", ""],
    }
    item = _item([{"Db.query": gold}], [JAVA_FN], "java")
    good = {
        "limit": "50L",
        "ratio": "0.5f",
        "flag": "true",
        "ids": "new int[]{1, 2}",
        "names": 'new ArrayList<>(Arrays.asList("a", "b"))',
        "props": 'new HashMap<String, String>() {{ put("k", "v"); }}',
        "conn": "dbConn",
    }
    assert check([("Db.query", good)], item).ok
    assert not check([("Db.query", {**good, "limit": 50})], item).ok  # not a string
    assert check([("Db.query", {**good, "limit": "50"})], item).kind == "type"  # long needs L
    assert check([("Db.query", {**good, "flag": "false"})], item).kind == "value"
    assert check(gold_calls(item), item).ok


def test_javascript_values_are_literal_strings() -> None:
    fn = {
        "name": "render",
        "description": "Render.",
        "parameters": {
            "type": "dict",
            "properties": {
                "el": {"type": "String", "description": "Element id."},
                "size": {"type": "integer", "description": "Size."},
                "items": {"type": "array", "items": {"type": "String"}, "description": "Items."},
                "opts": {"type": "dict", "description": "Options."},
                "on": {"type": "Boolean", "description": "On."},
            },
            "required": ["el"],
        },
    }
    gold = {"el": ["main"], "size": [3, ""], "items": [["a", "b"], ""],
            "opts": [{"dark": [True]}, ""], "on": [False, ""]}  # fmt: skip
    item = _item([{"render": gold}], [fn], "javascript")
    good = {
        "el": "'main'",
        "size": "3",
        "items": "['a', 'b']",
        "opts": "{dark: true}",
        "on": "false",
    }
    assert check([("render", good)], item).ok
    assert check([("render", {**good, "items": "['b', 'a']"})], item).kind == "value"
    assert check(gold_calls(item), item).ok


@pytest.mark.parametrize(
    ("text", "language", "kind", "items", "expected"),
    [
        ("12", "java", "integer", None, 12),
        ("12L", "java", "long", None, 12),
        ("12", "java", "long", None, "12"),
        ("1.5f", "java", "float", None, 1.5),
        ("1.5", "java", "double", None, 1.5),
        ("'c'", "java", "char", None, "c"),
        ("new ArrayList<>()", "java", "ArrayList", None, []),
        ('new ArrayList<String>() {{ add("x"); add("y"); }}', "java", "ArrayList", "String", ["x", "y"]),
        ('new Object[]{1, "a, b", true}', "java", "Array", None, [1, "a, b", True]),
        ("new HashMap<>()", "java", "HashMap", None, {}),
        ("garbage", "java", "Array", None, "garbage"),
        ("12n", "javascript", "Bigint", None, 12),
        ("[[1, 2], [3]]", "javascript", "array", None, [[1, 2], [3]]),
        ("new Array(1, 2)", "javascript", "array", None, [1, 2]),
        ("{'a': [1, 'x'], b: {c: null}}", "javascript", "dict", None, {"a": [1, "x"], "b": {"c": None}}),
        ("not a dict", "javascript", "dict", None, "not a dict"),
        ("x", "python", "integer", None, "x"),
    ],
)  # fmt: skip
def test_literal_parsing(
    text: str, language: str, kind: str, items: str | None, expected: Any
) -> None:
    assert parse_literal(text, language, kind, items) == expected


@pytest.mark.parametrize(
    ("value", "language", "kind", "items"),
    [
        (7, "java", "long", None),
        (2.5, "java", "float", None),
        ([1, 2], "java", "Array", "integer"),
        (["a", "b"], "java", "ArrayList", "String"),
        ({"k": 1, "j": "v"}, "java", "HashMap", None),
        (["x", 3], "javascript", "array", None),
        ({"k": [1, "x"]}, "javascript", "dict", None),
        (5, "javascript", "Bigint", None),
    ],
)
def test_render_then_parse_round_trips(
    value: Any, language: str, kind: str, items: str | None
) -> None:
    text = render_literal(value, language, kind, items)
    assert isinstance(text, str)
    assert parse_literal(text, language, kind, items) == value


def test_split_top_level_respects_quotes_and_brackets() -> None:
    assert split_top_level('1, "a, b", [2, 3], {x: 4}') == ["1", '"a, b"', "[2, 3]", "{x: 4}"]
    assert split_top_level("") == []


def test_argument_ok_judges_one_argument_by_the_gold_answer() -> None:
    call = {"shape": "A Square", "size": 2.5, "count": 4, "extra": 1}
    assert argument_ok(SIMPLE, "geo.area", "shape", call) is True  # case, spaces forgiven
    assert argument_ok(SIMPLE, "geo.area", "size", call) is True
    assert argument_ok(SIMPLE, "geo.area", "size", {"size": 2}) is False  # not 2.5
    assert argument_ok(SIMPLE, "geo.area", "count", call) is False  # 4 is not among [3]
    assert argument_ok(SIMPLE, "geo.area", "extra", call) is False  # unknown to the answer
    assert argument_ok(SIMPLE, "geo.area", "unit", call) is True  # may be absent
    assert argument_ok(SIMPLE, "geo.area", "shape", {}) is False  # required, absent
    assert argument_ok(SIMPLE, "weather", "city", {"city": "Oslo"}) is None  # not expected
