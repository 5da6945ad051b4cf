"""The data tables of the generated training requests (``ooo_agent/train/tables/*.json``):
each is read by a generator, holds the keys its code reads, and its entries have the shape
the code expects."""

from __future__ import annotations

import random
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import ooo_agent.train
from ooo_agent.train import generated, generated_quantities, generated_science
from ooo_agent.train._tool_schema import PYTHON_NOTE, load_table
from ooo_agent.train.generated_agent import tool_result
from ooo_agent.train.generated_modifiers import MODIFIERS, SUBJECTS

jsonschema = pytest.importorskip("jsonschema")

TRAIN = Path(ooo_agent.train.__file__).parent
TABLES = sorted(
    p.name.removesuffix(".json")
    for p in resources.files("ooo_agent.train").joinpath("tables").iterdir()
    if p.name.endswith(".json")
)


def _reader(name: str) -> str:
    """The source of the one train module that loads table ``name``."""
    readers = [
        p.read_text(encoding="utf-8")
        for p in TRAIN.glob("*.py")
        if f'load_table("{name}")' in p.read_text(encoding="utf-8")
    ]
    assert len(readers) == 1, f"{name}.json is loaded by {len(readers)} modules"
    return readers[0]


def _lists(value: Any, path: str = "") -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, list):
        found.append((path, value))
        for i, item in enumerate(value):
            found += _lists(item, f"{path}/{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _lists(item, f"{path}/{key}")
    return found


def test_the_tables_ship_in_the_package() -> None:
    assert {"agent", "agent_domains", "business", "modifiers", "quantities", "science"} <= set(
        TABLES
    )


@pytest.mark.parametrize("name", TABLES)
def test_each_table_is_read_and_holds_exactly_the_keys_its_module_reads(name: str) -> None:
    table = load_table(name)
    source = _reader(name)
    read = set(re.findall(r"""(?:_T|load_domains\(\))\[["'](\w+)["']\]""", source))
    assert set(table) - {"_about"} == read
    assert all(table[key] for key in read)


@pytest.mark.parametrize("name", TABLES)
def test_no_table_holds_an_empty_list_to_draw_from(name: str) -> None:
    assert [path for path, items in _lists(load_table(name)) if not items] == []


@pytest.mark.parametrize(
    ("name", "python"), [("business", False), ("science", True), ("quantities", True)]
)
def test_tool_specs_are_valid_schemas(name: str, python: bool) -> None:
    for tool, spec in load_table(name)["tools"].items():
        assert set(spec) == {"description", "properties", "required"}, tool
        assert spec["required"] and set(spec["required"]) <= set(spec["properties"]), tool
        assert not spec["description"].endswith(PYTHON_NOTE), tool  # added on load
        for prop in spec["properties"].values():
            assert prop["type"] and prop["description"], tool
        jsonschema.Draft202012Validator.check_schema(
            {"type": "object", "properties": spec["properties"], "required": spec["required"]}
        )


def test_every_tool_of_a_table_has_a_generator_and_a_domain() -> None:
    generators = {
        "business": {g.tool for g in generated._GENERATORS} - set(generated_science.SCIENCE_TOOLS),
        "science": {name for name, _ in generated_science.SCIENCE_GENERATORS},
        "quantities": {name for name, _ in generated_quantities._GENERATORS},
    }
    for name, made in generators.items():
        table = load_table(name)
        assert set(table["tools"]) == made, name
        if "domains" in table:
            members = {m for group in table["domains"].values() for m in group}
            assert members == set(table["tools"]), name


def test_business_pairs_and_phrasings_have_their_shape() -> None:
    table = load_table("business")
    for pairs in (table["issues"], table["no_tool"]):
        assert all(len(pair) == 2 and all(pair) for pair in pairs)
    assert all(text.strip() for text in table["unsupported"])


def test_agent_comparisons_name_a_tool_argument_and_a_result_key() -> None:
    rng = random.Random(0)
    for tool, argument, question, key in load_table("agent")["compare"]:
        assert argument in generated.GENERATED_TOOLS[tool]["function"]["parameters"]["properties"]
        filled = question.format(a="A1", b="B2")
        assert "A1" in filled and "B2" in filled
        assert key in tool_result(rng, tool, {argument: "x"})


def test_modifier_entries_draw_a_filled_phrase_and_a_value_their_schema_accepts() -> None:
    rng = random.Random(0)
    for name, modifier in MODIFIERS.items():
        for _ in range(30):
            phrase, value = modifier.make(rng, rng.choice(SUBJECTS))
            assert phrase and "{" not in phrase and "}" not in phrase, name
            jsonschema.validate(value, modifier.schema)


def test_modifier_templates_have_their_placeholders() -> None:
    table = load_table("modifiers")
    assert all("{what}" in p for group in table["include"].values() for p in group)
    assert all("{subject}" in ask for ask in table["asks"])
    assert all("{n}" in template and "{noun}" in text for template, text in table["verbs"])
    assert all("{v}" in p for p in table["rates"]["phrases"])
    assert set(table["param_names"]) <= set(table["modifiers"])
    for subject in table["subjects"]:
        assert all("{v}" in p for p in subject["phrases"])
