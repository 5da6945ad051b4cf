"""benchmarks/declined.py: declined requests' latency against the others', per mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo_scripts import load_script


def _record(mode: str, latency: float, declined: bool, status: str, warmup: bool = False) -> dict:
    return {
        "mode": mode, "warmup": warmup, "latency_s": latency, "declined": declined,
        "sidecar_status": status,
    }  # fmt: skip


def test_splits_measured_rows_by_mode_and_decline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        _record("toolspec", 1.0, True, "off"),
        _record("toolspec", 2.0, False, "off"),
        _record("ooo", 1.5, True, "stopped"),
        _record("ooo", 2.5, True, "ok"),
        _record("ooo", 1.0, False, "ok"),
        _record("ooo", 9.0, True, "ok", warmup=True),  # not measured
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_script("benchmarks", "declined").main([str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "toolspec": {
            "declined": {"n": 1, "mean_s": 1.0, "sidecar": {"off": 1}},
            "called": {"n": 1, "mean_s": 2.0, "sidecar": {"off": 1}},
        },
        "ooo": {
            "declined": {"n": 2, "mean_s": 2.0, "sidecar": {"ok": 1, "stopped": 1}},
            "called": {"n": 1, "mean_s": 1.0, "sidecar": {"ok": 1}},
        },
    }


def test_a_run_without_declines_has_an_empty_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(_record("vanilla", 1.0, False, "off")) + "\n")
    assert load_script("benchmarks", "declined").main([str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["vanilla"]["declined"] == {"n": 0, "mean_s": None, "sidecar": {}}
