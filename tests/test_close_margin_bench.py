"""benchmarks/close_margin.py: where a call's arguments close, and the close / comma mass there."""

from __future__ import annotations

from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ooo_agent.bench.datasets import BenchItem  # noqa: E402
from ooo_agent.formats import get_format  # noqa: E402
from repo_scripts import load_script  # noqa: E402
from sidecar_tiny import CHATML_TEMPLATE, make_model, make_tokenizer  # noqa: E402

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}
OUTPUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def _module() -> ModuleType:
    return load_script("benchmarks", "close_margin")


def test_arguments_end_is_the_brace_that_closes_the_arguments() -> None:
    module = _module()
    end = module.arguments_end(OUTPUT)
    assert OUTPUT[end] == "}" and OUTPUT[:end].endswith('"Paris"')
    assert module.arguments_end("I cannot help with that.") is None


def test_margins_measure_each_scored_call_and_summarize_groups_them() -> None:
    module = _module()
    tokenizer = make_tokenizer()
    tokenizer.chat_template = CHATML_TEMPLATE
    model = make_model("llama", len(tokenizer)).eval()
    item = BenchItem(
        id="w_0",
        category="simple_python",
        messages=[{"role": "user", "content": "Weather in Paris in celsius?"}],
        tools=[TOOL],
        gold=[{"get_weather": {"city": ["Paris"], "unit": ["celsius"]}}],
    )
    scored = {"category": "simple_python", "output": OUTPUT, "name": True}
    report = {
        "items": [
            {**scored, "id": "w_0", "ast": False, "failure": "missing_optional"},
            {**scored, "id": "w_0", "ast": True, "failure": ""},
            {**scored, "id": "w_0", "ast": False, "failure": "malformed"},  # not measured
            {**scored, "id": "w_0", "ast": True, "failure": "", "category": "multiple"},
        ]
    }
    rows = module.margins(
        report, {"w_0": item}, model, tokenizer, get_format("hermes"), "simple_python"
    )
    assert [r["outcome"] for r in rows] == ["missing_optional", "acceptable"]
    for row in rows:
        assert 0.0 <= row["p_comma"] <= 1.0 and 0.0 <= row["p_close"] <= 1.0
        assert row["p_comma"] + row["p_close"] <= 1.0 + 1e-6
    assert rows[0]["p_comma"] == pytest.approx(rows[1]["p_comma"])  # same text, same model
    summary = module.summarize(
        [
            {"outcome": "acceptable", "p_comma": 0.5},
            {"outcome": "acceptable", "p_comma": 0.0},
            {"outcome": "value", "p_comma": 0.02},
        ]
    )
    assert summary["acceptable"]["n"] == 2
    assert summary["acceptable"]["p_comma_above"]["0.01"] == 1
    assert summary["value"]["p_comma_above"]["0.01"] == 1
    assert summary["value"]["p_comma_above"]["0.05"] == 0
