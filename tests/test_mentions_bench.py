"""benchmarks/mentions.py: optional parameters by what BFCL accepts, named by the request or not."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from ooo_agent.bench.datasets import BenchItem
from repo_scripts import load_script

TOOL = {
    "type": "function",
    "function": {
        "name": "area",
        "parameters": {
            "type": "object",
            "properties": {
                "radius": {"type": "number"},
                "unit": {"type": "string"},
                "precision": {"type": "integer"},
                "rounding": {"type": "string"},
                "shape": {"type": "string", "enum": ["circle", "disk"]},
            },
            "required": ["radius"],
        },
    },
}


def _item(text: str, answers: dict[str, list[object]], calls: int = 1) -> BenchItem:
    return BenchItem(
        id="x",
        category="simple_python",
        messages=[{"role": "user", "content": text}],
        tools=[TOOL],
        gold=[{"area": answers}] * calls,
    )


def _module() -> ModuleType:
    return load_script("benchmarks", "mentions")


def test_each_optional_parameter_is_classed_by_the_acceptable_answers() -> None:
    item = _item(
        "Area of a circle of radius 2 in the unit cm, with rounding",
        {"radius": [2], "unit": ["cm"], "precision": ["", 2], "rounding": [""]},
    )
    assert _module().classify(item) == [
        ("unit", "must write", True),
        ("precision", "may write", False),
        ("rounding", "must leave out", True),  # named, yet the answer leaves it out
        ("shape", "must leave out", True),  # not listed: left out; "circle" is an enum option
    ]
    assert _module().classify(_item("two calls", {"radius": [2]}, calls=2)) == []


def test_tally_and_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = _module()
    items = [
        _item("radius 2, unit cm", {"radius": [2], "unit": ["cm"]}),
        _item("radius 3", {"radius": [3], "unit": ["", "m"]}),
    ]
    counts = module.tally(items)
    assert counts["items"] == 2 and counts["items_with_a_named_parameter"] == 1
    assert counts["classes"]["must write"] == {"named": 1, "not named": 0}
    assert counts["classes"]["may write"] == {"named": 0, "not named": 1}
    assert counts["classes"]["must leave out"] == {"named": 0, "not named": 6}
    monkeypatch.setattr(module, "load_bfcl", lambda category: items)
    out = tmp_path / "m.json"
    assert module.main(["--categories", "simple_python", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["simple_python"] == counts
    assert "1 with a named optional parameter" in capsys.readouterr().out
