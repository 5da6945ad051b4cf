"""``scripts/train_sidecar.py`` on a tiny base: the adapter, a portable card and config, the
training-request list beside the adapter."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from ooo_agent.train.portable import portable_command, portable_path  # noqa: E402
from repo_scripts import load_script  # noqa: E402


def _script() -> ModuleType:
    return load_script("scripts", "train_sidecar")


def test_portable_command_hides_this_machines_folders(tmp_path: Path) -> None:
    inside = tmp_path / "runs" / "data"
    command = portable_command(
        ["python", "scripts/train_sidecar.py"],
        ["--data", str(inside), f"--out={tmp_path.parent / 'x' / 'adapter'}", "--r", "4"],
        tmp_path,
    )
    assert command == "python scripts/train_sidecar.py --data runs/data --out=.../adapter --r 4"
    assert portable_path("adapters/a", tmp_path) == "adapters/a"


def test_trains_a_tiny_sidecar_with_a_portable_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sidecar_tiny import make_model, make_tokenizer

    tokenizer = make_tokenizer()
    make_model("llama", len(tokenizer)).save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    data = tmp_path / "data"
    data.mkdir()
    rows = [
        {"prompt": f"<|im_start|>user\nq{i}<|im_end|>\n<|im_start|>assistant\n",
         "completion": f"{i % 3}<|im_end|>"}
        for i in range(6)
    ]  # fmt: skip
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    (data / "training_requests.txt").write_text("0123456789abcdef\tr1\n")
    (data / "stats.json").write_text(json.dumps({"rows_by_kind": {"function_index": 6}}))
    out = tmp_path / "adapter"
    argv = ["--data", str(data), "--out", str(out), "--base", str(tmp_path / "base"), "--r", "2",
            "--alpha", "4", "--batch-size", "2", "--grad-accum", "1", "--max-steps", "1",
            "--threads", "1", "--save-every", "0"]  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert _script().main(argv) == 0
    assert (out / "adapter_model.safetensors").is_file()
    assert (out / "training_requests.txt").read_text() == "0123456789abcdef\tr1\n"
    card = (out / "README.md").read_text()
    assert "python scripts/train_sidecar.py --data data --out adapter --base base" in card
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "base"
    report = json.loads((out / "train_report.json").read_text())
    assert report["out_dir"] == "adapter" and report["steps"] == 1
    for text in (card, json.dumps(config), json.dumps(report)):
        assert str(tmp_path) not in text


def test_missing_rows_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main(["--data", str(tmp_path), "--out", str(tmp_path / "a")]) == 1
    assert "sidecar_data" in capsys.readouterr().err
