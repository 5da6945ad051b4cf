"""benchmarks/identity_check.py: two runs compared item by item; any output difference fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from repo_scripts import load_script


def _record(item: str, mode: str, text: str, forwards: int = 10, **extra: Any) -> dict[str, Any]:
    return {
        "item_id": item, "mode": mode, "warmup": False, "text": text, "token_ids": [ord(c) for c in text],
        "calls": [], "declined": False, "ast_ok": text == "ok", "ast_reason": "", "errors": [],
        "failure": "", "identical": None if mode == "vanilla" else True,
        "forward_passes": forwards, "latency_s": 1.0, **extra,
    }  # fmt: skip


def _sidecar(hint: str, seconds: float = 0.1) -> dict[str, Any]:
    return {
        "scores": {"target": {"requests": 1, "function_index": {"value": 1.0, "hits": 1, "n": 1},
                              "mean_wave_seconds": seconds}},
        "predictions": [{"id": "a", "answers": {"function": "0"}, "hint": hint, "direct": None,
                         "seconds": seconds}],
        "config": {"function_choice": "scored"},
    }  # fmt: skip


def _run(folder: Path, records: list[dict[str, Any]], sidecar: dict[str, Any]) -> Path:
    (folder / "bench").mkdir(parents=True)
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (folder / "bench" / "requests.jsonl").write_text(lines)
    (folder / "sidecar.json").write_text(json.dumps(sidecar))
    return folder


def test_same_outputs_pass_whatever_the_timing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _run(tmp_path / "a", [_record("a", "vanilla", "ok"), _record("a", "ooo", "ok")],
                _sidecar("h"))  # fmt: skip
    new = _run(tmp_path / "b", [_record("a", "vanilla", "ok"), _record("a", "ooo", "ok", 6)],
               _sidecar("h", seconds=0.5) | {"config": {}})  # fmt: skip
    assert load_script("benchmarks", "identity_check").main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "| ooo | 1 | 1 -> 1 | 1 -> 1 | 0 | 10.00 -> 6.00 |" in out
    assert out.rstrip().endswith("identical")


def test_a_changed_token_or_hint_fails_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _run(tmp_path / "a", [_record("a", "vanilla", "ok"), _record("a", "ooo", "ok")],
                _sidecar("h"))  # fmt: skip
    new = _run(tmp_path / "b", [_record("a", "vanilla", "ok"), _record("a", "ooo", "no")],
               _sidecar("other"))  # fmt: skip
    assert load_script("benchmarks", "identity_check").main(["compare", str(base), str(new)]) == 1
    out = capsys.readouterr().out
    assert "DIFF a ooo: token_ids, text, ast_ok differ ('ok' -> 'no')" in out
    assert "DIFF eval-sidecar a: hint differ" in out
    assert "2 difference(s)" in out


def test_a_missing_item_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _run(tmp_path / "a", [_record("a", "vanilla", "ok"), _record("b", "vanilla", "ok")],
                _sidecar("h"))  # fmt: skip
    new = _run(tmp_path / "b", [_record("a", "vanilla", "ok")], _sidecar("h"))
    assert load_script("benchmarks", "identity_check").main(["compare", str(base), str(new)]) == 1
    assert "DIFF b vanilla: only in the base run" in capsys.readouterr().out
