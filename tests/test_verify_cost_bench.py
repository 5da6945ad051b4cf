"""benchmarks/verify_cost.py on a tiny random model: one row per size, the ratios to the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from repo_scripts import load_script


def test_one_row_per_size_with_its_ratio_to_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("benchmarks", "verify_cost")
    out = tmp_path / "cost.json"
    argv = ["--model", "tiny", "--sizes", "1,4,16", "--prompt-tokens", "20", "--repeat", "3",
            "--json", str(out)]  # fmt: skip
    assert module.main(argv) == 0
    rows = json.loads(out.read_text())
    assert [r["tokens"] for r in rows] == [1, 4, 16]
    assert all(r["ms"] > 0 for r in rows)
    assert rows[0]["ratio"] == 1.0
    assert rows[2]["ratio"] == pytest.approx(rows[2]["ms"] / rows[0]["ms"], abs=0.01)
    assert "tokens verified" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        module.main(["--model", "tiny", "--sizes", "0,4"])
