"""BFCL items read out of the bfcl-eval wheel, and JSONL benchmark sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ooo_agent.bench.datasets import (
    BFCL_CATEGORIES,
    BenchItem,
    bfcl_wheel,
    functions_to_tools,
    load_bfcl,
    load_jsonl,
    openai_safe_tools,
    save_jsonl,
)
from ooo_agent.errors import DatasetError

EXPECTED_SIZES = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "simple_java": 100,
    "simple_javascript": 50,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
}

_BFCL_ONLY_TYPES = {"dict", "float", "tuple", "any"}


def _types(schema: dict) -> set[str]:
    found = {schema.get("type")} if "type" in schema else set()
    for sub in (schema.get("properties") or {}).values():
        found |= _types(sub)
    if isinstance(schema.get("items"), dict):
        found |= _types(schema["items"])
    return found


@pytest.mark.parametrize("category", BFCL_CATEGORIES)
def test_every_category_loads_whole(category: str) -> None:
    items = load_bfcl(category)
    assert len(items) == EXPECTED_SIZES[category]
    assert len({i.id for i in items}) == len(items)
    for item in items:
        assert item.category == category
        assert item.messages and all("role" in m and "content" in m for m in item.messages)
        assert item.messages[-1]["role"] == "user"
        assert item.tool_names == [f["name"] for f in item.functions]
        if category in ("irrelevance", "live_irrelevance"):
            assert item.gold == []
        else:
            assert item.gold, item.id
            assert all(next(iter(g)) in item.tool_names for g in item.gold)


def test_simple_python_item_shape() -> None:
    item = load_bfcl("simple_python", limit=3)[1]
    assert item.id == "simple_python_1"
    assert item.language == "python"
    assert item.messages == [
        {"role": "user", "content": "Calculate the factorial of 5 using math functions."}
    ]
    # The dotted name is kept, as BFCL shows it to locally served models.
    assert item.tool_names == ["math.factorial"]
    assert item.gold == [{"math.factorial": {"number": [5]}}]
    tool = item.tools[0]
    assert tool["type"] == "function"
    assert tool["function"]["parameters"]["type"] == "object"
    assert tool["function"]["description"].endswith("in Python 3 syntax.")
    # The original BFCL doc is kept for the checker.
    assert item.functions[0]["parameters"]["type"] == "dict"


def test_tools_use_json_schema_types_only() -> None:
    for category in ("simple_python", "multiple", "parallel_multiple", "live_multiple"):
        for item in load_bfcl(category):
            for tool in item.tools:
                types = _types(tool["function"]["parameters"])
                assert not types & _BFCL_ONLY_TYPES, (item.id, types)


def test_java_and_javascript_parameters_are_literal_strings() -> None:
    java = load_bfcl("simple_java", limit=5)
    assert all(i.language == "java" for i in java)
    props = java[1].tools[0]["function"]["parameters"]["properties"]
    assert {p["type"] for p in props.values()} == {"string"}
    assert (
        "Java boolean type parameter in string representation"
        in props["useShortName"]["description"]
    )
    js = load_bfcl("simple_javascript", limit=5)
    assert all(i.language == "javascript" for i in js)
    assert all(
        p["type"] == "string"
        for i in js
        for t in i.tools
        for p in t["function"]["parameters"]["properties"].values()
    )


def test_functions_to_tools_does_not_modify_its_input() -> None:
    function = {
        "name": "a.b",
        "description": "d",
        "parameters": {"type": "dict", "properties": {"x": {"type": "float", "description": "x"}}},
    }
    snapshot = json.dumps(function)
    (tool,) = functions_to_tools([function])
    assert json.dumps(function) == snapshot
    assert tool["function"]["parameters"]["properties"]["x"]["type"] == "number"
    assert tool["function"]["parameters"]["required"] == []


def test_limit_and_unknown_category() -> None:
    assert [i.id for i in load_bfcl("multiple", limit=2)] == ["multiple_0", "multiple_1"]
    with pytest.raises(DatasetError, match="unknown BFCL category"):
        load_bfcl("simple_rust")


def test_missing_wheel_without_download_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not cached"):
        bfcl_wheel(tmp_path, download=False)


def test_cache_env_var_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = bfcl_wheel()
    target = tmp_path / "bfcl"
    target.mkdir()
    (target / wheel.name).write_bytes(wheel.read_bytes())
    monkeypatch.setenv("OOO_AGENT_CACHE", str(tmp_path))
    assert bfcl_wheel(download=False) == target / wheel.name


def test_openai_safe_tools_renames_and_maps_back() -> None:
    item = load_bfcl("simple_python", limit=2)[1]
    tools, back = openai_safe_tools(item.tools + item.tools)
    names = [t["function"]["name"] for t in tools]
    assert names == ["math_factorial", "math_factorial_2"]
    assert back == {"math_factorial": "math.factorial", "math_factorial_2": "math.factorial"}
    assert item.tools[0]["function"]["name"] == "math.factorial"  # input untouched


def test_jsonl_round_trip(tmp_path: Path) -> None:
    items = load_bfcl("parallel", limit=3) + load_bfcl("simple_java", limit=2)
    path = save_jsonl(items, tmp_path / "set.jsonl")
    assert load_jsonl(path) == items


def test_jsonl_accepts_minimal_user_items(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    line = {
        "id": "q1",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
        "gold": [{"get_weather": {"city": ["Paris"]}}],
    }
    path.write_text(json.dumps(line) + "\n\n")
    (item,) = load_jsonl(path)
    assert item == BenchItem(
        id="q1",
        category="mine",
        messages=line["messages"],
        tools=[{"type": "function", "function": line["tools"][0]}],
        gold=line["gold"],
    )
    assert item.schemas() == [line["tools"][0]]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 1|:1: not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"messages": [], "tools": []}', "lacks field"),
        ('{"id": "x", "messages": "hi", "tools": []}', "messages must be"),
        ('{"id": "x", "messages": [], "tools": [{"type": "function"}]}', "OpenAI tool"),
        ('{"id": "x", "messages": [], "tools": [], "gold": [{"f": {"a": 1}}]}', "gold call"),
        ('{"id": "x", "messages": [], "tools": [], "language": "cobol"}', "unknown language"),
    ],
)
def test_jsonl_malformed_lines_name_the_problem(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message):
        load_jsonl(path)


def test_jsonl_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read"):
        load_jsonl(tmp_path / "nope.jsonl")
