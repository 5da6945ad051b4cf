"""benchmarks/sidecar_wave.py on a tiny random model: it runs every configuration and reports
what the function-first schedule skips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from sidecar_tiny import save_tiny_model

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert 0 <= first["same_hint"] <= 2
    # Every row of six tools in one batch, against the index row plus at most one tool's rows.
    assert parallel["rows"] > first["rows"] >= 1
    assert parallel["wave_s"] > 0 and first["wave_s"] > 0
