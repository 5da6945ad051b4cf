"""Scoring a target's BFCL outputs (the generation itself is faked: no model needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ooo_agent.bench.ast_check import gold_calls
from ooo_agent.bench.datasets import BenchItem, load_bfcl
from ooo_agent.formats.hermes import HermesFormat
from ooo_agent.train._sidecar_labels import LabelledRequest
from ooo_agent.train.eval_target import (
    classify_failures,
    compare_reports,
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
    missing = score_output(item, FMT.render_calls([("calculate_triangle_area", {"base": 10})]), FMT)
    assert [s.failure for s in (prose, wrong_name, scored, broken, missing)] == [
        "count",
        "name",
        "value",
        "malformed",
        "missing_required",
    ]
    assert score_output(item, FMT.render_calls(gold_calls(item)), FMT).failure == ""


def test_categories_count_their_failure_classes() -> None:
    items = load_bfcl("simple_python", limit=3)
    outputs = {items[0].id: "no call", items[1].id: '<tool_call>\n{"name": "x", "arg'}
    report = evaluate_items(
        items, lambda item: (outputs.get(item.id, FMT.render_calls(gold_calls(item))), 1), FMT
    )
    assert report.categories["simple_python"].failures == {"count": 1, "malformed": 1}


def _report(tmp_path: Path, name: str, outputs: dict[str, str]) -> Path:
    items = [i for i in _items() if i.id in outputs]
    report = evaluate_items(items, lambda item: (outputs[item.id], 1), FMT).to_dict()
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_compare_counts_gains_and_losses_item_by_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items()
    gold = {i.id: FMT.render_calls(gold_calls(i)) for i in items}
    a, b, c = (i.id for i in items[:3])  # simple_python items
    old_outputs = {**gold, a: "prose", b: "prose"}
    new_outputs = {**gold, a: "prose", c: "prose"}
    new_outputs.pop(items[-1].id)  # one multiple item only in the old report
    old_path = _report(tmp_path, "old.json", old_outputs)
    new_path = _report(tmp_path, "new.json", new_outputs)
    old, new = (json.loads(p.read_text()) for p in (old_path, new_path))
    comparison = compare_reports(old, new)
    simple = comparison["categories"]["simple_python"]
    assert simple["n"] == 4 and comparison["unmatched"] == 1
    assert simple["ast"] == {"old": 0.5, "new": 0.5, "gained": 1, "lost": 1}
    assert simple["failures_old"] == simple["failures_new"] == {"count": 2}
    assert comparison["categories"]["multiple"]["ast"]["lost"] == 0

    # A report written before failures were recorded is classified from its outputs.
    for entry in old["items"]:
        entry.pop("failure")
    assert classify_failures(old) == 2
    assert compare_reports(old, new)["categories"]["simple_python"]["failures_old"] == {"count": 2}

    assert main(["--compare", str(old_path), str(new_path)]) == 0
    printed = capsys.readouterr().out
    assert "ast_accuracy" in printed and "gained   1, lost   1" in printed
    assert "1 items are in only one of the reports" in printed


def test_compare_refuses_reports_without_common_items(tmp_path: Path) -> None:
    items = _items()
    first = _report(tmp_path, "a.json", {items[0].id: "x"})
    second = _report(tmp_path, "b.json", {items[1].id: "x"})
    with pytest.raises(ValueError, match="share no item"):
        compare_reports(*(json.loads(p.read_text()) for p in (first, second)))
    assert main(["--compare", str(first), str(second)]) == 1
    assert main(["--compare", str(first), str(tmp_path / "missing.json")]) == 1


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
    text, new_tokens, declined = engine_generator(target, mode="toolspec", max_new_tokens=12)(item)
    plain = target.generate_sync(
        TargetRequest(item.messages, item.tools, mode="vanilla", max_new_tokens=12)
    )
    assert (text, new_tokens) == (plain.text, plain.stats.new_tokens)
    assert 0 < new_tokens <= 12
    assert declined is False  # no decline policy
    # With one that always declines, the generator says so (scored as no call).
    target.decline_below = 1.0
    assert engine_generator(target, mode="toolspec", max_new_tokens=12)(item)[2] is True
