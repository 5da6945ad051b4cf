"""Generated requests whose numbers must be converted (percent → fraction, "$2 million" → int)."""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from ooo_agent.train.data import build_target_data, evaluation_function_names
from ooo_agent.train.generated import GENERATED_TOOLS
from ooo_agent.train.generated_quantities import (
    QUANTITY_TOOLS,
    amount_text,
    generate_quantity_requests,
    percent_text,
)

jsonschema = pytest.importorskip("jsonschema")

_SCALE = {"k": 10**3, "m": 10**6, "million": 10**6, "b": 10**9, "billion": 10**9}
_AMOUNT = re.compile(r"(\d[\d,]*(?:\.\d+)?)(?:\s*(million|billion)|(k|M|B)\b)?")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|percent|per cent)")


def _amounts(text: str) -> set[int]:
    """Every whole number the text states, read as a person would ("$2.5M" → 2500000)."""
    found = set()
    for figure, word, letter in _AMOUNT.findall(text):
        value = float(figure.replace(",", ""))
        scale = word or letter
        if scale:
            value *= _SCALE[scale.lower()]
        if value.is_integer():
            found.add(int(value))
    return found


def _percents(text: str) -> set[float]:
    return {float(p) for p in _PERCENT.findall(text)}


def test_generation_is_deterministic_per_seed() -> None:
    first = generate_quantity_requests(60, seed=3)
    assert first == generate_quantity_requests(60, seed=3)
    assert first != generate_quantity_requests(60, seed=4)


def test_calls_carry_the_converted_numbers() -> None:
    """Rates stated in percent are fractions unless the description asks for percent;
    written-out amounts are whole numbers; every value is valid for the schema."""
    kinds: Counter[str] = Counter()
    for request in generate_quantity_requests(400, seed=11):
        assert request.source == "quantities" and len(request.calls) == 1
        (name, args), text = request.calls[0], request.messages[0]["content"]
        offered = {t["function"]["name"]: t for t in request.tools}
        assert name in offered and 2 <= len(offered) <= 5 and len(offered) == len(request.tools)
        params = offered[name]["function"]["parameters"]
        jsonschema.Draft202012Validator(params).validate(args)
        assert set(params["required"]) <= set(args)
        for key, value in args.items():
            spec = params["properties"][key]
            if spec["type"] == "number" and "rate" in key:
                if "in percent" in spec["description"]:
                    kinds["percent kept"] += 1
                    assert float(value) in _percents(text), (key, value, text)
                else:
                    kinds["fraction"] += 1
                    assert value < 1 and any(
                        math.isclose(value * 100, p) for p in _percents(text)
                    ), (key, value, text)
            elif spec["type"] == "integer":
                kinds["amount"] += 1
                assert value in _amounts(text), (key, value, text)
            elif spec["type"] == "array":
                assert all(v in _amounts(text) for v in value), (key, value, text)
            elif isinstance(value, str):
                assert value in text
    assert kinds["fraction"] > 100 and kinds["percent kept"] > 30 and kinds["amount"] > 300


def test_amounts_are_written_in_many_ways() -> None:
    rng = random.Random(0)
    texts = {amount_text(rng, 2_500_000) for _ in range(200)}
    assert {"$2,500,000", "$2.5 million", "$2.5M", "2.5 million dollars"} <= texts
    assert all(_amounts(t) == {2_500_000} for t in texts)
    plain = {amount_text(rng, 40_000, dollars=False) for _ in range(100)}
    assert plain == {"40,000", "40000"}
    assert {amount_text(rng, 40_000) for _ in range(200)} >= {"$40k", "$40,000", "$40000"}
    assert {percent_text(rng, 4.5) for _ in range(50)} == {"4.5%", "4.5 percent", "4.5 per cent"}


def test_tools_are_valid_and_named_apart_from_the_evaluation() -> None:
    for tool in QUANTITY_TOOLS.values():
        jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])
    assert not set(QUANTITY_TOOLS) & evaluation_function_names()
    assert not set(QUANTITY_TOOLS) & set(GENERATED_TOOLS)


def test_generate_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        generate_quantity_requests(-1)
    with pytest.raises(ValueError):
        generate_quantity_requests(5, foreign_share=2)


def test_data_builder_mixes_quantity_requests_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_train_data import FakeTokenizer

    monkeypatch.setattr("ooo_agent.train.data.live_requests", lambda _cache: ([], 0))
    stats = build_target_data(
        tmp_path, examples=100, eval_examples=0, generated=200, quantities=200,
        max_prompt_tokens=400, seed=1, tokenizer=FakeTokenizer(), banned=frozenset(),
        mix={"quantities": 0.2, "generated": 0.8},
    )  # fmt: skip
    assert 15 <= stats.by_source["quantities"] <= 25  # the share the mix asks
    rows = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert sum(r["source"] == "quantities" for r in rows) == stats.by_source["quantities"]
