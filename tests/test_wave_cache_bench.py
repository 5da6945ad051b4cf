"""benchmarks/wave_cache.py on a tiny random sidecar: the cache changes no answer, and the
tools-first layout serves more of each prompt from it than the published layout does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ooo_agent.sidecar import WaveOptions
from ooo_agent.sidecar.hf import HFSidecar
from repo_scripts import load_script
from sidecar_tiny import make_model, make_tokenizer


def test_the_cache_changes_no_answer_and_tools_first_is_served_most(tmp_path: Path) -> None:
    module = load_script("benchmarks", "wave_cache")
    tokenizer = make_tokenizer()
    options = WaveOptions(function_choice="scored", typed_values=True, unnamed_nulls=True)
    sidecar = HFSidecar(
        make_model("llama", len(tokenizer), seed=1), tokenizer, options=options, max_new_tokens=4
    )
    out = tmp_path / "report.json"
    argv = ["--requests", "3", "--sessions", "2", "--json", str(out)]
    assert module.main(argv, sidecar=sidecar) == 0
    report = json.loads(out.read_text())
    assert report["cache changed no answer"] is True
    assert report["tools-first cache changed no answer"] is True
    later = {name: report[name]["after first"] for name in module.SIDECARS}
    assert later["cold"]["cached_tokens"] == later["tools-first cold"]["cached_tokens"] == 0
    assert later["cache"]["waves"] == 4
    # The same tools on every request: tools-first finds the listing, dialogue-first only the
    # system line (and, within a wave, the dialogue the name scores ran).
    assert later["tools-first"]["cached_tokens"] > later["cache"]["cached_tokens"] > 0
    assert later["tools-first"]["prefill_tokens"] < later["tools-first cold"]["prefill_tokens"]
    for row in later.values():
        assert row["wave_s"] >= row["prefill_s"] + row["choice_s"] + row["rows_s"] - 1e-3
