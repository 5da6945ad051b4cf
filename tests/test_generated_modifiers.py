"""Generated look-ups whose optional arguments are named in the request."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.train.data import build_target_data, evaluation_function_names
from ooo_agent.train.generated_modifiers import MODIFIERS, SUBJECTS, generate_modifier_requests

jsonschema = pytest.importorskip("jsonschema")


def _tool(request: Any, name: str) -> dict[str, Any]:
    return next(t for t in request.tools if t["function"]["name"] == name)


def test_generation_is_deterministic_per_seed() -> None:
    first = generate_modifier_requests(60, seed=3)
    assert first == generate_modifier_requests(60, seed=3)
    assert first != generate_modifier_requests(60, seed=4)


def test_calls_are_valid_and_carry_exactly_the_named_optional_arguments() -> None:
    requests = generate_modifier_requests(300, seed=11)
    optional_counts: Counter[int] = Counter()
    for request in requests:
        assert request.source == "modifiers" and len(request.calls) == 1
        name, args = request.calls[0]
        params = _tool(request, name)["function"]["parameters"]
        jsonschema.Draft202012Validator(params).validate(args)
        assert list(args) == [k for k in params["properties"] if k in args]  # schema order
        text = request.messages[0]["content"]
        required = params["required"]
        assert set(required) <= set(args)
        assert str(args[required[0]]) in text
        for key, value in args.items():
            if key.startswith("include_"):
                # The flag's words are in the request: "including human impact" → True.
                assert key.removeprefix("include_").replace("_", " ") in text, (key, text)
            elif isinstance(value, str):
                assert value in text, (key, value, text)
        optional_counts[len(args) - len(required)] += 1
    # A quarter name no option (the call must omit them), the rest one to three.
    assert 0.15 < optional_counts[0] / len(requests) < 0.35
    assert set(optional_counts) == {0, 1, 2, 3}


def test_a_rate_takes_the_form_its_description_asks_for() -> None:
    forms = Counter()
    for request in generate_modifier_requests(600, seed=2):
        name, args = request.calls[0]
        if "interest_rate" not in args:
            continue
        description = _tool(request, name)["function"]["parameters"]["properties"]["interest_rate"][
            "description"
        ]
        text = request.messages[0]["content"]
        percent = (
            args["interest_rate"] if "in percent" in description else args["interest_rate"] * 100
        )
        assert f"{round(percent, 2):g}" in text, (args, text)
        forms["percent" if "in percent" in description else "decimal"] += 1
    assert forms["percent"] > 5 and forms["decimal"] > 5


def test_unnamed_tools_are_offered_as_distractors() -> None:
    requests = generate_modifier_requests(300, seed=5, distractor_share=0.3)
    several = [r for r in requests if len(r.tools) > 1]
    assert 0.2 < len(several) / len(requests) < 0.4
    for request in several:
        assert len(set(request.tool_names)) == len(request.tools)
    with pytest.raises(ValueError):
        generate_modifier_requests(3, distractor_share=2)


def test_modifier_tool_names_avoid_evaluation_names() -> None:
    names = {
        t["function"]["name"] for r in generate_modifier_requests(600, seed=0) for t in r.tools
    }
    assert len(names) >= len(SUBJECTS) * 4
    assert not names & evaluation_function_names()
    assert all(m in MODIFIERS or m == "rate" for s in SUBJECTS for m in s.modifiers)


def test_data_builder_mixes_modifier_requests_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_train_data import FakeTokenizer

    # Generated sources only (the live ones are covered in test_train_data): fast.
    monkeypatch.setattr("ooo_agent.train.data.live_requests", lambda _cache: ([], 0))
    stats = build_target_data(
        tmp_path, examples=200, eval_examples=0, generated=50, modifiers=120,
        max_prompt_tokens=400, seed=1, tokenizer=FakeTokenizer(),
        banned=frozenset(), mix={"modifiers": 0.3, "generated": 0.7},
    )  # fmt: skip
    assert stats.train_rows == 170  # every generated request fits
    assert stats.by_source == {"modifiers": 120, "generated": 50}
    stats = build_target_data(
        tmp_path, examples=100, eval_examples=0, generated=200, modifiers=200,
        max_prompt_tokens=400, seed=1, tokenizer=FakeTokenizer(), banned=frozenset(),
        mix={"modifiers": 0.3, "generated": 0.7},
    )  # fmt: skip
    assert 25 <= stats.by_source["modifiers"] <= 35  # the share the mix asks
    rows = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert sum(r["source"] == "modifiers" for r in rows) == stats.by_source["modifiers"]
