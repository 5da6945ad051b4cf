"""benchmarks/exact_hints.py: forwards of the exact-hint `ooo` requests, from records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repo_scripts import load_script

CALL = {"name": "f", "arguments": {"x": 1}}


def _record(mode: str, forwards: int, tokens: int, hint: dict | None, warmup: bool = False) -> dict:
    return {
        "mode": mode, "warmup": warmup, "forward_passes": forwards, "new_tokens": tokens,
        "calls": [CALL], "sidecar_predicted": json.dumps(hint) if hint is not None else None,
    }  # fmt: skip


def test_counts_only_exact_measured_hints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        _record("ooo", 2, 40, CALL),
        _record("ooo", 3, 50, CALL),
        _record("ooo", 7, 50, {"name": "f", "arguments": {"x": 2}}),  # wrong value
        _record("ooo", 9, 50, None),  # no hint
        {**_record("ooo", 4, 50, None), "sidecar_status": "late"},  # the wave ended after it
        {**_record("ooo", 4, 50, None, warmup=True), "sidecar_status": "late"},
        _record("ooo", 2, 40, CALL, warmup=True),
        _record("vanilla", 40, 40, None),
        _record("vanilla", 70, 70, None),
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_script("benchmarks", "exact_hints").main([str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "exact": 2, "forwards": {"2": 1, "3": 1}, "outputs_33_64": 1, "outputs": 2, "late": 1,
    }  # fmt: skip
