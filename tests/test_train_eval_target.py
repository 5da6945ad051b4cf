"""Scoring a target's BFCL outputs (the generation itself is faked: no model needed)."""

from __future__ import annotations

import pytest

from ooo_agent.bench.ast_check import gold_calls
from ooo_agent.bench.datasets import BenchItem, load_bfcl
from ooo_agent.formats.hermes import HermesFormat
from ooo_agent.train._sidecar_labels import LabelledRequest
from ooo_agent.train.eval_target import (
    engine_generator,
    evaluate_items,
    labelled_line,
    main,
    score_output,
)

FMT = HermesFormat()


def _items() -> list[BenchItem]:
    return load_bfcl("simple_python", limit=4) + load_bfcl("multiple", limit=3)


def test_gold_outputs_score_full_marks() -> None:
    report = evaluate_items(_items(), lambda item: (FMT.render_calls(gold_calls(item)), 7), FMT)
    assert set(report.categories) == {"simple_python", "multiple"}
    for score in report.categories.values():
        assert (score.parse_rate, score.name_accuracy, score.ast_accuracy) == (1.0, 1.0, 1.0)
        assert score.mean_new_tokens == 7.0
    assert report.categories["simple_python"].n == 4


def test_prose_wrong_names_and_wrong_values_are_told_apart() -> None:
    item = load_bfcl("simple_python", limit=1)[0]  # calculate_triangle_area(base=10, height=5)
    prose = score_output(item, "The area is 25 square units.", FMT)
    assert (prose.parsed, prose.name, prose.ast) == (False, False, False)
    wrong_name = score_output(item, FMT.render_calls([("area", {"base": 10, "height": 5})]), FMT)
    assert (wrong_name.parsed, wrong_name.name, wrong_name.ast) == (True, False, False)
    wrong_value = FMT.render_calls([("calculate_triangle_area", {"base": 10, "height": 6})])
    scored = score_output(item, wrong_value, FMT)
    assert (scored.parsed, scored.name, scored.ast) == (True, True, False)
    assert "'height'" in scored.reason
    broken = score_output(item, '<tool_call>\n{"name": "calculate_triangle_area", "arg', FMT)
    assert not broken.parsed and not broken.ast and broken.reason


def test_irrelevance_rewards_a_plain_answer() -> None:
    item = load_bfcl("irrelevance", limit=1)[0]
    plain = score_output(item, "I cannot compute that with the given tool.", FMT)
    assert plain.parsed and plain.name and plain.ast
    call = score_output(item, FMT.render_calls([(item.tool_names[0], {})]), FMT)
    assert not call.ast


def test_cli_rejects_unknown_options() -> None:
    with pytest.raises(SystemExit):
        main(["--no-such-option"])


def test_labelled_lines_carry_the_targets_first_valid_call() -> None:
    item = load_bfcl("simple_python", limit=1)[0]
    gold = gold_calls(item)
    line = labelled_line(item, FMT.render_calls(gold), FMT)
    assert line["target_call"] == {"name": gold[0][0], "arguments": gold[0][1]}
    assert line["calls"] == [{"name": n, "arguments": a} for n, a in gold]
    assert line["id"] == item.id and line["source"] == "simple_python"
    prose = labelled_line(item, "The area is 25.", FMT)
    assert prose["target_call"] is None and prose["target_problem"] == "no call"
    unknown = labelled_line(item, FMT.render_calls([("nope", {})]), FMT)
    assert unknown["target_call"] is None and "invalid call" in unknown["target_problem"]
    # The line reads back as a labelled request (what eval-sidecar consumes).
    assert LabelledRequest.from_dict(line).call == gold[0]


def test_engine_generator_decodes_with_the_targets_own_loop() -> None:
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget
    from test_decoding_support import byte_tokenizer, tiny_model

    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    target = HFTarget(model, tokenizer, "hermes")
    item = load_bfcl("simple_python", limit=1)[0]
    text, new_tokens = engine_generator(target, mode="toolspec", max_new_tokens=12)(item)
    plain = target.generate_sync(
        TargetRequest(item.messages, item.tools, mode="vanilla", max_new_tokens=12)
    )
    assert (text, new_tokens) == (plain.text, plain.stats.new_tokens)
    assert 0 < new_tokens <= 12
