"""benchmarks/merged_base.py: a base folder with a share of an adapter's weight change."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from repo_scripts import load_script  # noqa: E402


def test_the_folder_holds_the_base_plus_the_asked_share_of_the_change(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from sidecar_tiny import make_model, make_tokenizer

    tokenizer = make_tokenizer()
    model = make_model("llama", len(tokenizer))
    model.save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    peft_model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"]))
    with torch.no_grad():  # a fresh LoRA changes nothing: give it a change to fold in
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)
    peft_model.save_pretrained(tmp_path / "adapter")

    script = load_script("benchmarks", "merged_base")
    weights = {}
    for scale in (0.0, 0.5, 1.0):
        out = tmp_path / f"merged-{scale}"
        argv = ["--adapter", str(tmp_path / "adapter"), "--base", str(tmp_path / "base"),
                "--scale", str(scale), "--out", str(out)]  # fmt: skip
        assert script.main(argv) == 0
        loaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
        weights[scale] = {k: v.clone() for k, v in loaded.state_dict().items()}
    base = AutoModelForCausalLM.from_pretrained(tmp_path / "base", dtype=torch.float32)
    before = base.state_dict()
    moved = [k for k in before if not torch.equal(weights[1.0][k], before[k])]
    assert moved and all("q_proj" in k for k in moved)  # only the adapted layers move
    for key in before:
        assert torch.equal(weights[0.0][key], before[key])
        middle = (before[key] + weights[1.0][key]) / 2
        assert torch.allclose(weights[0.5][key], middle, atol=1e-6)
