"""``ooo-agent train``: end to end on a tiny local model folder with a real fast tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from ooo_agent.cli import main  # noqa: E402
from ooo_agent.train.run import holdout_split  # noqa: E402


def _tiny_base(folder: Path) -> Path:
    """A byte-level BPE tokenizer (no merges) and a 2-layer random Llama, saved to ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i + 2 for i, ch in enumerate(sorted(byte_chars))}
    vocab.update({"<pad>": 0, "<|im_end|>": 1})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<|im_end|>"
    )
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_end|>"]})
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=0,
        eos_token_id=1,
        initializer_range=0.3,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def _write_rows(path: Path, n: int) -> Path:
    with path.open("w") as handle:
        for i in range(n):
            row = {"prompt": f"user: item {i}?\nassistant: ", "completion": f"ok {i % 3}<|im_end|>"}
            handle.write(json.dumps(row) + "\n")
    return path


def test_cli_trains_and_writes_adapter_card_and_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _tiny_base(tmp_path / "base")
    data = _write_rows(tmp_path / "rows.jsonl", 24)
    out = tmp_path / "adapter"
    argv = [
        "train", "sidecar", "--data", str(data), "--out", str(out), "--base", str(base),
        "--r", "4", "--alpha", "8", "--lr", "0.02", "--batch", "2", "--accum", "2",
        "--max-len", "64", "--eval-fraction", "0.25", "--no-progress", "--describe", "toy rows",
    ]  # fmt: skip
    monkeypatch.setattr("sys.argv", ["pytest"])  # the card records main()'s own arguments
    monkeypatch.chdir(tmp_path)  # paths inside the working folder are recorded relative to it
    assert main(argv) == 0
    assert (out / "adapter_model.safetensors").is_file()
    report = json.loads((out / "train_report.json").read_text())
    assert report["examples"] == 18 and report["eval_examples"] == 6  # 25 % held out
    assert report["eval_loss"] is not None
    card = (out / "README.md").read_text()
    assert "ooo-agent train sidecar --data rows.jsonl --out adapter --base base" in card
    assert "toy rows" in card and "(sidecar) for `base`" in card
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "base"
    assert report["out_dir"] == "adapter"
    for text in (card, json.dumps(config), json.dumps(report)):
        assert str(tmp_path) not in text  # no folder of this machine in what ships


def test_cli_key_weight_reaches_the_run_and_its_card(tmp_path: Path) -> None:
    base = _tiny_base(tmp_path / "base")
    data = tmp_path / "calls.jsonl"
    with data.open("w") as handle:
        for i in range(8):
            call = json.dumps({"name": "f", "arguments": {"n": i % 3}})
            answer = f"<tool_call>\n{call}\n</tool_call>"
            handle.write(json.dumps({"prompt": f"user: {i}\nassistant: ", "completion": answer}))
            handle.write("\n")
    outs = {}
    for weight in ("1", "4"):
        out = tmp_path / f"adapter{weight}"
        argv = [
            "train", "target", "--data", str(data), "--out", str(out), "--base", str(base),
            "--r", "4", "--alpha", "8", "--lr", "0.02", "--batch", "2", "--accum", "2",
            "--max-len", "128", "--eval-fraction", "0.25", "--no-progress", "--key-weight", weight,
        ]  # fmt: skip
        assert main(argv) == 0
        outs[weight] = json.loads((out / "train_report.json").read_text())
        card = (out / "README.md").read_text()
        assert ("value-ending , / } / ] weigh 4" in card) == (weight == "4")
    # Same rows, same seed: only the weights differ, so the runs' losses do too.
    assert outs["1"]["train_history"] != outs["4"]["train_history"]
    assert main(["train", "target", "--data", str(data), "--out", "x", "--key-weight", "0"]) == 2


def test_cli_reports_bad_data_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"prompt": "p"}\n')
    code = main(["train", "target", "--data", str(data), "--out", str(tmp_path / "o")])
    assert code == 2
    assert "rows.jsonl:1" in capsys.readouterr().err
    code = main(["train", "target", "--data", str(tmp_path / "missing.jsonl"), "--out", "x"])
    assert code == 2


def test_holdout_split_is_deterministic_and_disjoint() -> None:
    rows = [{"prompt": str(i), "completion": "c"} for i in range(100)]
    train, held = holdout_split(rows, 0.1, max_eval=5, seed=1)
    assert len(held) == 5 and len(train) == 95
    assert {r["prompt"] for r in train}.isdisjoint(r["prompt"] for r in held)
    assert holdout_split(rows, 0.1, 5, 1) == (train, held)
    assert holdout_split(rows[:5], 0.1, 5, 1) == (rows[:5], [])
