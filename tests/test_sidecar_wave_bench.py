"""benchmarks/sidecar_wave.py on a tiny random model: it runs every configuration and reports
what the function-first schedule skips."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from repo_scripts import load_script
from sidecar_tiny import save_tiny_model


def _module(name: str) -> ModuleType:
    return load_script("benchmarks", name)


def test_wave_benchmark_reports_every_configuration(tmp_path: Path) -> None:
    data = tmp_path / "business.jsonl"
    assert _module("business_tools").main(["--out", str(data)]) == 0  # 6 tools per request
    model = save_tiny_model(tmp_path / "tiny", "qwen3")
    out = tmp_path / "waves.json"
    argv = ["--sidecar", str(model), "--data", str(data), "--n", "2", "--out", str(out),
            "--configs", "float32:parallel,float32:function-first"]  # fmt: skip
    assert _module("sidecar_wave").main(argv) == 0
    report = json.loads(out.read_text())
    parallel, first = report["results"]
    assert (parallel["schedule"], first["schedule"]) == ("parallel", "function-first")
    assert parallel["requests"] == first["requests"] == 2
    assert parallel["same_hint"] == 2  # the reference configuration agrees with itself
    # The schedule only decides which rows run, so the report counts both requests as agreeing
    # (the random model names no tool, so both hints are empty here; a scripted model's
    # non-empty hint is compared across schedules in test_sidecar_openai.py).
    assert first["same_hint"] == 2
    # Every row of six tools in one batch, against the index row plus at most one tool's rows.
    assert parallel["rows"] > first["rows"] >= 1
    assert parallel["wave_s"] > 0 and first["wave_s"] > 0
