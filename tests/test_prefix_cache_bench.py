"""benchmarks/prefix_cache.py on a tiny random target: three targets, the same outputs, and the
prefix cache prefilling less than a single slot, which prefills less than no cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ooo_agent.targets.hf import HFTarget
from repo_scripts import load_script
from test_decoding_support import byte_tokenizer, tiny_model


def test_the_cache_prefills_least_and_every_target_writes_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load_script("benchmarks", "prefix_cache")
    tokenizer = byte_tokenizer()
    target = HFTarget(tiny_model("qwen2", vocab_size=len(tokenizer), seed=3), tokenizer)
    out = tmp_path / "report.json"
    assert module.main(["--requests", "2", "--json", str(out)], target=target) == 0
    report = json.loads(out.read_text())
    for work in ("toolsets", "sessions"):
        rows = report[work]
        assert rows["identical"] is True
        assert rows["cold"]["prefill_tokens"] == rows["cold"]["prompt_tokens"]
        assert (
            rows["cache"]["prefill_tokens"]
            < rows["one-entry"]["prefill_tokens"]
            < rows["cold"]["prefill_tokens"]
        )
        for row in (rows[name] for name in module.TARGETS):
            assert row["prefill_tokens"] + row["cached_tokens"] == row["prompt_tokens"]
    assert report["toolsets"]["cache"]["calls"] == 4 and report["sessions"]["cache"]["calls"] == 4
    assert "outputs identical across targets: True" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        module.main(["--requests", "9"], target=target)
