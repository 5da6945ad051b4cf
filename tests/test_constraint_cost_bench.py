"""benchmarks/constraint_cost.py: it replays outputs through every kind of constraint and counts
what each would have refused."""

from __future__ import annotations

from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from repo_scripts import load_script

TOOL = {
    "type": "function",
    "function": {
        "name": "get_order_status",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}


def _module() -> ModuleType:
    return load_script("benchmarks", "constraint_cost")


def test_cost_per_token_and_refusals_for_each_kind() -> None:
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset

    try:
        _, tokenizer = load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded model not available: {exc}")
    good = '<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "D-9001"}}\n</tool_call>'
    borrowed = good.replace('"D-9001"}', '"D-9001", "amount": 9}')
    asked = [{"role": "user", "content": "Status of D-9001?"}]
    results = _module().measure([([TOOL], good, asked), ([TOOL], borrowed, asked)], tokenizer)
    assert set(results) == {
        "names",
        "names+json",
        "names+arguments",
        "names+mentioned",
        "names+mentioned+values",
    }
    tokens = len(tokenizer.encode(good + borrowed, add_special_tokens=False))
    for row in results.values():
        assert abs(row["tokens"] - tokens) <= 2
        assert row["us_per_token"] > 0
    # Only the schema refuses the borrowed key (and, after it, whatever follows the refusal).
    assert results["names"]["overrides"] == results["names+json"]["overrides"] == 0
    assert results["names+arguments"]["overrides"] >= 1
    assert results["names+mentioned"]["overrides"] == results["names+arguments"]["overrides"]


def test_a_named_optional_parameter_is_refused_a_close_only_with_mentions() -> None:
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset

    try:
        _, tokenizer = load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded model not available: {exc}")
    tool = {"type": "function", "function": {**TOOL["function"], "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "carrier": {"type": "string"}},
        "required": ["order_id"],
    }}}  # fmt: skip
    asked = [{"role": "user", "content": "Status of D-9001, and which carrier has it?"}]
    closes = '<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "D-9001"}}\n</tool_call>'
    results = _module().measure([([tool], closes, asked)], tokenizer)
    assert results["names+arguments"]["overrides"] == 0
    assert results["names+mentioned"]["overrides"] >= 1


def test_a_rate_written_as_a_percentage_is_refused_only_with_values() -> None:
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset

    try:
        _, tokenizer = load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded model not available: {exc}")
    tool = {"type": "function", "function": {"name": "grow", "parameters": {
        "type": "object",
        "properties": {"rate": {"type": "number", "description": "The annual rate."}},
        "required": ["rate"],
    }}}  # fmt: skip
    asked = [{"role": "user", "content": "Grow it at 5% a year"}]
    copied = '<tool_call>\n{"name": "grow", "arguments": {"rate": 5}}\n</tool_call>'
    results = _module().measure([([tool], copied, asked)], tokenizer)
    assert results["names+mentioned"]["overrides"] == 0
    assert results["names+mentioned+values"]["overrides"] >= 1
