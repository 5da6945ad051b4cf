"""Averaging LoRA adapters (``python -m ooo_agent.train.average``) on a tiny random Llama."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
pytest.importorskip("transformers")

from tests.test_trainer import tiny_model  # noqa: E402

from ooo_agent.train.average import average_adapters, main  # noqa: E402

_MODULES = ["q_proj", "v_proj", "down_proj"]


def _random_adapter(folder: Path, seed: int, r: int = 2) -> Path:
    """A LoRA adapter with random A and B (a trained one's update is not zero)."""
    config = peft.LoraConfig(
        r=r, lora_alpha=2 * r, target_modules=_MODULES, init_lora_weights=False
    )
    torch.manual_seed(seed)
    model = peft.get_peft_model(tiny_model(), config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.2)
    model.save_pretrained(str(folder))
    return folder


def _merged_state(adapter: Path) -> dict[str, Any]:
    merged = peft.PeftModel.from_pretrained(tiny_model(), str(adapter)).merge_and_unload()
    return {k: v.detach().clone() for k, v in merged.state_dict().items()}


def test_full_rank_average_is_the_exact_mean_of_the_updates(tmp_path: Path) -> None:
    first = _random_adapter(tmp_path / "a", seed=1)
    second = _random_adapter(tmp_path / "b", seed=2)
    out = average_adapters(
        tiny_model(), [first, second], tmp_path / "avg", rank=4, save_dtype="float32"
    )
    base = {k: v.detach().clone() for k, v in tiny_model().state_dict().items()}
    one, two, avg = _merged_state(first), _merged_state(second), _merged_state(out)
    changed = 0
    for key, value in base.items():
        expected = value + 0.5 * (one[key] - value) + 0.5 * (two[key] - value)
        assert torch.allclose(avg[key], expected, atol=1e-5), key
        changed += not torch.equal(one[key], value)
    assert changed == 2 * len(_MODULES)  # two layers, three modules each: real updates
    report = json.loads((out / "average_report.json").read_text())
    assert report["weights"] == [0.5, 0.5] and report["rank"] == 4
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["lora_alpha"] == 4
    assert sorted(p.name for p in out.iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors", "average_report.json",
    ]  # fmt: skip


def test_weights_and_truncated_rank(tmp_path: Path) -> None:
    first = _random_adapter(tmp_path / "a", seed=3)
    second = _random_adapter(tmp_path / "b", seed=4)
    out = average_adapters(tiny_model(), [first, second], tmp_path / "w", weights=[1.0, 0.0])
    # All weight on the first adapter: its update, at its own rank, in float16.
    one, avg = _merged_state(first), _merged_state(out)
    for key, value in one.items():
        assert torch.allclose(avg[key], value, atol=2e-3), key
    # Rank 1 of two rank-2 updates: the best rank-1 approximation of the mean update (its top
    # singular component), same file layout.
    low = average_adapters(
        tiny_model(), [first, second], tmp_path / "low", rank=1, save_dtype="float32"
    )
    assert json.loads((low / "adapter_config.json").read_text())["r"] == 1
    base = {k: v.detach().clone() for k, v in tiny_model().state_dict().items()}
    two, truncated = _merged_state(second), _merged_state(low)
    checked = 0
    for key, value in base.items():
        mean = 0.5 * (one[key] - value) + 0.5 * (two[key] - value)
        if not mean.any():
            assert torch.equal(truncated[key], value), key
            continue
        u, s, vh = torch.linalg.svd(mean.double(), full_matrices=False)
        best = (s[0] * torch.outer(u[:, 0], vh[0])).to(mean.dtype)
        delta = truncated[key] - value
        assert torch.linalg.matrix_rank(delta.double(), rtol=1e-4) == 1, key
        assert torch.allclose(delta, best, atol=1e-4), key
        assert not torch.allclose(delta, mean, atol=1e-3), key  # truncation changed it
        checked += 1
    assert checked == 2 * len(_MODULES)


def test_bad_requests_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _random_adapter(tmp_path / "a", seed=5)
    with pytest.raises(ValueError, match="at least two"):
        average_adapters(tiny_model(), [first], tmp_path / "x")
    with pytest.raises(ValueError, match="weight"):
        average_adapters(tiny_model(), [first, first], tmp_path / "x", weights=[1.0])
    with pytest.raises(ValueError, match="save_dtype"):
        average_adapters(tiny_model(), [first, first], tmp_path / "x", save_dtype="int8")
    with pytest.raises(SystemExit):
        main([str(first), "--out", str(tmp_path / "x")])
    assert "at least two" in capsys.readouterr().err
