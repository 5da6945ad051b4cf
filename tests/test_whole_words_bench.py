"""benchmarks/whole_words.py: would the whole-words rule refuse what the target writes?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repo_scripts import load_script


def _label(ident: str, text: str, schema: dict[str, Any], value: Any) -> dict[str, Any]:
    return {
        "id": ident,
        "messages": [{"role": "user", "content": text}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"properties": {"x": schema}}},
            }
        ],
        "target_call": {"name": "f", "arguments": {"x": value}},
    }


STRING = {"type": "string"}
LIST = {"type": "array", "items": {"type": "string"}}
LABELS = [
    _label("a", "In Christianity's history", STRING, "Christianity"),  # ok
    _label("b", "In Christianity's history", STRING, "Christian"),  # word refused
    _label("c", "Invest $5000 now", {"type": "integer"}, 500),  # word refused
    _label("d", "Chicken and rice, please", LIST, ["chicken"]),  # list refused
    _label("e", "Chicken and rice, please", LIST, ["chicken", "rice"]),  # ok
    _label("f", "In Christianity's history", {"type": "string", "enum": ["Christian"]}, "x"),
    _label("g", "Weather in Paris", STRING, "Paris"),
    _label("i", "Weather in Paris", STRING, " Paris"),  # led by a space
    _label("j", "On March 17, 1915", STRING, "2015-03-17"),  # a date not stated
    _label("k", "On March 17, 1915", STRING, "17-03-1915"),  # the stated date, another form
    {"id": "h", "messages": [], "tools": [], "target_call": None},  # no call
]


def test_refused_values_and_lists() -> None:
    module = load_script("benchmarks", "whole_words")
    found = [(kind, ident) for kind, ident, *_ in module.refused(LABELS)]
    # the enum row is not held; the rest are, in order
    assert found == [
        ("ok", "a"), ("word", "b"), ("word", "c"), ("list", "d"), ("ok", "e"), ("ok", "g"),
        ("space", "i"), ("date", "j"), ("ok", "k"),
    ]  # fmt: skip


def test_the_request_case_rewrite_and_its_rows() -> None:
    module = load_script("benchmarks", "whole_words")
    text = "Find a Marble statue of marble dust"
    assert module.any_case(text, "marble") == "Marble"  # the first whole-word place
    assert module.any_case(text, ["MARBLE DUST", "stat"]) == ["marble dust", "stat"]
    assert module.any_case(text, 3) == 3
    labels = {
        "p": _label("p", "a classical concert", STRING, "classical"),
        "q": _label("q", "some sushi tonight", STRING, "Sushi"),
        "r": _label("r", "some sushi tonight", STRING, "sushi"),
    }
    predictions = [
        {"id": "p", "answers": {"0.x": '"Classical"'}},  # gained
        {"id": "q", "answers": {"0.x": '"Sushi"'}},  # lost
        {"id": "r", "answers": {"0.x": "not json"}},  # skipped
        {"id": "unknown", "answers": {}},
    ]
    assert module.case_rows(predictions, labels, "any") == (1, 1)
    # the sidecar's rule writes the request's lower case alone; "Sushi" is the tool's option
    labels["s"] = _label("s", "Weather in paris", STRING, "paris")
    labels["t"] = _label("t", "some sushi", {**STRING, "description": "like Sushi"}, "sushi")
    predictions += [
        {"id": "s", "answers": {"0.x": '"Paris"'}},  # gained
        {"id": "t", "answers": {"0.x": '"Sushi"'}},  # kept: a miss either way
    ]
    assert module.case_rows(predictions, labels) == (2, 1)
    assert module.case_rows(predictions, labels, "any") == (3, 1)  # "sushi" for the option too
    assert module.recased(labels.values()) == (5, [("q", "x", '"Sushi"')])


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = load_script("benchmarks", "whole_words")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in LABELS), encoding="utf-8")
    assert module.main([str(labels), "--show"]) == 0
    out = capsys.readouterr().out
    assert "values held 9: words refused 2" in out
    assert "arrays held 2: closed where the request's list goes on 1" in out
    assert "led by a space 1; a date the request does not state 1" in out
    assert 'word b x: "Christian"' in out and "list d x" in out
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"predictions": [{"id": "g", "answers": {"0.x": '"paris"'}}]}))
    assert module.main([str(labels), "--case", str(report), "--case-rule", "any"]) == 0
    assert "(any): rows gained 1, lost 0" in capsys.readouterr().out
    assert module.main([str(labels), "--case", str(report)]) == 0  # lower case stays
    assert "(lower): rows gained 0, lost 0" in capsys.readouterr().out
    assert module.main([str(labels), "--case-target", "--show"]) == 0
    assert "rows the rule rewrites 8: it would rewrite 0" in capsys.readouterr().out
