"""Benchmark statistics and outputs: paired bootstrap CIs, percentiles, summaries, files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ooo_agent.bench.report import (
    Interval,
    RequestRecord,
    goal_checks,
    paired_bootstrap_ratio,
    percentile,
    summarize,
    write_report,
)


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 90) == pytest.approx(4.6)
    assert percentile([7.0], 90) == 7.0
    assert math.isnan(percentile([], 50))


def test_bootstrap_point_is_the_ratio_of_totals_and_lies_in_its_interval() -> None:
    base = [3.0, 4.0, 2.5, 6.0, 3.5, 5.0, 4.5, 2.0]
    other = [1.0, 1.5, 1.2, 2.0, 1.1, 2.5, 1.4, 1.0]
    result = paired_bootstrap_ratio(base, other, seed=7)
    assert result.point == pytest.approx(sum(base) / sum(other))
    assert result.low < result.point < result.high
    assert paired_bootstrap_ratio(base, other, seed=7) == result  # fixed seed: reproducible
    assert paired_bootstrap_ratio(base, other, seed=8) != result
    wider = paired_bootstrap_ratio(base, other, seed=7, level=0.99)
    assert wider.low <= result.low and wider.high >= result.high


def test_bootstrap_is_paired() -> None:
    # Every request is exactly 2x faster: any resample of pairs gives 2.0, so no spread,
    # although the latencies themselves vary 100-fold (an unpaired bootstrap would spread).
    other = [0.1, 1.0, 10.0, 0.5, 3.0]
    base = [2 * v for v in other]
    result = paired_bootstrap_ratio(base, other, resamples=500)
    assert result.low == pytest.approx(2.0) and result.high == pytest.approx(2.0)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        paired_bootstrap_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_bootstrap_ratio([], [])
    with pytest.raises(ValueError):
        paired_bootstrap_ratio([1.0], [0.0])
    with pytest.raises(ValueError):
        paired_bootstrap_ratio([1.0], [1.0], level=1.5)


def _record(item: str, mode: str, latency: float, **kw: object) -> RequestRecord:
    fields: dict[str, object] = {
        "item_id": item, "category": "c", "mode": mode, "position": 0, "warmup": False,
        "latency_s": latency, "generate_s": latency, "forward_passes": 10, "new_tokens": 20,
        "prompt_tokens": 100, "prefill_tokens": 100, "prefill_s": 0.1, "decode_steps": 9,
        "accepted_tokens": 19,
    }  # fmt: skip
    fields.update(kw)
    return RequestRecord(**fields)  # type: ignore[arg-type]


def _records() -> list[RequestRecord]:
    records = [_record("w", "vanilla", 50.0, warmup=True), _record("w", "ooo", 50.0, warmup=True)]
    for i, (vanilla, ooo) in enumerate([(4.0, 1.0), (6.0, 2.0), (5.0, 1.0)]):
        records.append(
            _record(f"r{i}", "vanilla", vanilla, ast_ok=True, forward_passes=40, prefill_s=0.1 * i)
        )
        records.append(
            _record(f"r{i}", "ooo", ooo, identical=i != 2, ast_ok=i == 0, forward_passes=3,
                    sidecar_status="ok", sidecar_latency_s=0.2, sidecar_function_step=1)
        )  # fmt: skip
    records.append(_record("r3", "vanilla", 5.0, ast_ok=True))
    records.append(_record("r3", "ooo", math.nan, failure="TargetError: boom"))
    return records


def test_summarize_excludes_warmups_and_keeps_failures_out_of_latency() -> None:
    rows = {s.mode: s for s in summarize(_records(), labels={"ooo": "ooo [oracle]"})}
    vanilla, ooo = rows["vanilla"], rows["ooo"]
    assert vanilla.n == 4 and ooo.n == 4 and ooo.failed == 1
    assert vanilla.mean_s == pytest.approx(5.0)  # the 50 s warm-up is not in it
    assert ooo.mean_s == pytest.approx(4.0 / 3)
    # Paired over the 3 requests both modes finished: (4+6+5) / (1+2+1).
    assert ooo.speedup_vs_vanilla is not None
    assert ooo.speedup_vs_vanilla.point == pytest.approx(15.0 / 4.0)
    assert vanilla.speedup_vs_vanilla is None and ooo.speedup_vs_toolspec is None
    assert ooo.identity == pytest.approx(2 / 3) and vanilla.identity is None
    assert ooo.ast_accuracy == pytest.approx(1 / 4)  # the failed request counts as wrong
    assert ooo.mean_accepted == pytest.approx(19 / 9)
    assert ooo.label == "ooo [oracle]" and ooo.sidecar_latency_s == pytest.approx(0.2)
    assert vanilla.prefill_s == pytest.approx((0.0 + 0.1 + 0.2 + 0.1) / 4)  # r0..r2, then r3
    assert vanilla.prompt_tokens == 100 and ooo.prefill_s == pytest.approx(0.1)
    goals = goal_checks(list(rows.values()))
    assert goals["ooo_vs_vanilla_met"] is True and goals["ooo_forward_passes_met"] is True
    assert goals["ooo_vs_toolspec"] is None


def test_write_report_writes_every_file(tmp_path: Path) -> None:
    records = _records()
    summaries = summarize(records, labels={"ooo": "ooo [oracle]"})
    paths = write_report(records, summaries, tmp_path / "out", meta={"title": "t", "seed": 0})
    lines = paths["requests"].read_text().splitlines()
    assert len(lines) == len(records)
    assert json.loads(lines[-1])["latency_s"] is None  # NaN is not JSON: written as null
    summary = json.loads(paths["summary"].read_text())
    assert summary["seed"] == 0 and summary["goals"]["ooo_vs_vanilla_min"] == 3.0
    speedup = summary["modes"][1]["speedup_vs_vanilla"]
    assert speedup["low"] <= speedup["point"] <= speedup["high"]
    assert paths["plot"].read_bytes()[:4] == b"\x89PNG"
    table = paths["table"].read_text()
    assert "ooo *" in table and "* ooo: ooo [oracle]" in table
    markdown = paths["markdown"].read_text().splitlines()
    assert markdown[0].startswith("| mode | n |") and len(markdown) == 2 + len(summaries)
    assert markdown[3].startswith("| ooo [oracle] | 4 |")


def test_several_categories_get_their_own_summaries_and_goal_checks(tmp_path: Path) -> None:
    records = []
    for category, (toolspec_fwd, ooo_fwd) in {"a": (10, 5), "b": (10, 9)}.items():
        for i in range(3):
            item = f"{category}{i}"
            records += [
                _record(item, "toolspec", 2.0, category=category, forward_passes=toolspec_fwd),
                _record(item, "ooo", 1.0, category=category, forward_passes=ooo_fwd,
                        identical=True, sidecar_status="ok"),
            ]  # fmt: skip
    summaries = summarize(records)
    overall = goal_checks(summaries)
    assert overall["ooo_forward_ratio_vs_toolspec"] == pytest.approx(7 / 10)
    assert overall["ooo_forward_ratio_vs_toolspec_met"] is False
    paths = write_report(records, summaries, tmp_path / "out", meta={"seed": 0})
    per_category = json.loads(paths["summary"].read_text())["per_category"]
    assert set(per_category) == {"a", "b"}
    assert per_category["a"]["goals"]["ooo_forward_ratio_vs_toolspec"] == pytest.approx(0.5)
    assert per_category["a"]["goals"]["ooo_forward_ratio_vs_toolspec_met"] is True
    assert per_category["b"]["goals"]["ooo_forward_ratio_vs_toolspec_met"] is False
    assert [m["n"] for m in per_category["b"]["modes"]] == [3, 3]
    assert "a only" in paths["table"].read_text() and "b only" in paths["table"].read_text()
    markdown = paths["markdown"].read_text()
    assert "\na:\n" in markdown and "\nb:\n" in markdown
    # One category: no per-category section.
    single = [r for r in records if r.category == "a"]
    paths = write_report(single, summarize(single), tmp_path / "one", meta={"seed": 0})
    assert "per_category" not in json.loads(paths["summary"].read_text())


def test_interval_prints_point_and_bounds() -> None:
    assert str(Interval(2.0, 1.5, 2.25)) == "2.00x [1.50, 2.25]"
