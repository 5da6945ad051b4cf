"""The one training launcher: data folders, ``--recipe``, portable records.

Most tests replace the base loader and the trainer with fakes that record the
:class:`TrainConfig` and rows they get (no torch work); one trains a tiny model for real from a
data folder through ``ooo-agent train``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")  # the fakes replace ooo_agent.train.trainer's train_lora

from ooo_agent.cli import main as cli_main
from ooo_agent.train.config import TrainConfig, TrainReport
from ooo_agent.train.portable import portable_command, portable_command_line, portable_path
from ooo_agent.train.recipes import RECIPES
from ooo_agent.train.run import base_model_ref
from ooo_agent.train.run import main as run_main


def _rows(n: int, tag: str = "q") -> list[dict[str, str]]:
    return [
        {"prompt": f"user: {tag}{i}\nassistant: ", "completion": f"{i % 3}<|im_end|>"}
        for i in range(n)
    ]


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _folder(
    root: Path, *, train: int = 6, eval_rows: int = 4, stats: dict[str, Any] | None = None
) -> Path:
    folder = root / "data"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", _rows(train))
    _write_jsonl(folder / "eval.jsonl", _rows(eval_rows, "e"))
    if stats is not None:
        (folder / "stats.json").write_text(json.dumps(stats))
    return folder


class FakeRun:
    """Stands in for ``load_base`` and ``train_lora``; remembers what training was asked."""

    def __init__(self) -> None:
        self.config: TrainConfig | None = None
        self.rows: list[dict[str, str]] = []
        self.eval_rows: list[dict[str, str]] = []
        self.base: str | None = None
        self.load_options: dict[str, Any] = {}

    def load_base(self, base: str, **options: Any) -> tuple[object, object]:
        self.base, self.load_options = base, options
        return object(), object()

    def train_lora(self, config: TrainConfig, model: object, tokenizer: object,
                   rows: list[dict[str, str]], eval_rows: list[dict[str, str]]) -> TrainReport:  # fmt: skip
        self.config, self.rows, self.eval_rows = config, list(rows), list(eval_rows)
        out = Path(config.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        adapter = out / "adapter_model.safetensors"
        adapter.write_bytes(b"x")
        report = TrainReport(
            out_dir=out, adapter_path=adapter, adapter_bytes=1, steps=1, total_steps=1,
            examples=len(rows), eval_examples=len(eval_rows), skipped_too_long=0,
            train_tokens=1, seconds=0.0, train_loss=1.0, eval_loss=None,
        )  # fmt: skip
        (out / "train_report.json").write_text(json.dumps(report.to_dict()))  # as the trainer
        return report


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRun:
    run = FakeRun()
    monkeypatch.setattr("ooo_agent.models.load_base", run.load_base)
    monkeypatch.setattr("ooo_agent.train.trainer.train_lora", run.train_lora)
    return run


# -- data folders ---------------------------------------------------------------------------
def test_a_data_folder_gives_train_and_capped_eval_rows_and_the_roles_description(
    tmp_path: Path, fake: FakeRun
) -> None:
    stats = {"rows_by_kind": {"function_index": 6}, "other_null_fraction": 0.25}
    folder = _folder(tmp_path, train=7, eval_rows=5, stats=stats)
    (folder / "training_requests.txt").write_text("abc\tr1\n")
    out = tmp_path / "adapter"
    argv = ["sidecar", "--data", str(folder), "--out", str(out), "--max-eval", "3"]
    assert run_main(argv) == 0
    assert fake.rows == _rows(7)
    assert fake.eval_rows == _rows(5, "e")[:3]  # eval.jsonl, first --max-eval rows
    assert fake.config is not None
    text = fake.config.data_description
    assert 'Rows by kind: {"function_index": 6}' in text and "probability 0.25" in text
    assert "the first 3 held-out rows of `data/eval.jsonl`" in text
    assert (out / "training_requests.txt").read_text() == "abc\tr1\n"


def test_a_target_folder_uses_the_target_description_and_keeps_no_training_list(
    tmp_path: Path, fake: FakeRun
) -> None:
    folder = _folder(tmp_path, stats={"by_source": {"live_simple": 4, "generated": 2}})
    (folder / "training_requests.txt").write_text("abc\tr1\n")
    out = tmp_path / "adapter"
    assert run_main(["target", "--data", str(folder), "--out", str(out)]) == 0
    assert fake.config is not None
    assert 'Stats: {"live_simple": 4, "generated": 2}' in fake.config.data_description
    assert "OoO-Spec semantic rows" not in fake.config.data_description
    assert not (out / "training_requests.txt").exists()


def test_a_folder_without_stats_is_still_described(tmp_path: Path, fake: FakeRun) -> None:
    folder = _folder(tmp_path)
    assert run_main(["target", "--data", str(folder), "--out", str(tmp_path / "o"),
                     "--describe", "my rows"]) == 0  # fmt: skip
    assert fake.config is not None
    assert fake.config.data_description == (
        "my rows\n\nTraining rows from `data/train.jsonl`; eval: 4 held-out rows of "
        "`data/eval.jsonl`."
    )


@pytest.mark.parametrize(("role", "builder"), [("target", "ooo_agent.train.data"),
                                               ("sidecar", "ooo_agent.train.sidecar_data")])  # fmt: skip
def test_a_folder_missing_its_rows_names_the_builder(
    tmp_path: Path, fake: FakeRun, capsys: pytest.CaptureFixture[str], role: str, builder: str
) -> None:
    folder = _folder(tmp_path)
    (folder / "eval.jsonl").unlink()
    assert run_main([role, "--data", str(folder), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "eval.jsonl is missing" in err and f"python -m {builder}'" in err
    assert fake.config is None


def test_cli_trains_a_tiny_sidecar_from_a_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("peft")
    from sidecar_tiny import make_model, make_tokenizer

    tokenizer = make_tokenizer()
    make_model("llama", len(tokenizer)).save_pretrained(tmp_path / "base")
    tokenizer.save_pretrained(tmp_path / "base")
    folder = _folder(tmp_path, train=6, eval_rows=3, stats={"rows_by_kind": {"slot": 6}})
    (folder / "training_requests.txt").write_text("0123\tr1\n")
    argv = ["train", "sidecar", "--recipe", "cpu-sidecar", "--data", str(folder),
            "--out", str(tmp_path / "adapter"), "--base", str(tmp_path / "base"), "--r", "2",
            "--alpha", "4", "--batch", "2", "--accum", "1", "--max-steps", "1",
            "--threads", "1", "--save-every", "0", "--max-eval", "2"]  # fmt: skip
    monkeypatch.setattr("sys.argv", ["ooo-agent", *argv])
    monkeypatch.chdir(tmp_path)
    assert cli_main(argv) == 0
    out = tmp_path / "adapter"
    assert (out / "adapter_model.safetensors").is_file()
    assert (out / "training_requests.txt").read_text() == "0123\tr1\n"
    report = json.loads((out / "train_report.json").read_text())
    assert (report["steps"], report["eval_examples"], report["out_dir"]) == (1, 2, "adapter")
    card = (out / "README.md").read_text()
    assert (
        "ooo-agent train sidecar --recipe cpu-sidecar --data data --out adapter --base base" in card
    )
    assert 'Rows by kind: {"slot": 6}' in card and "| compute | cpu, float32 |" in card
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "base"
    for text in (card, json.dumps(config), json.dumps(report)):
        assert str(tmp_path) not in text


# -- recipes --------------------------------------------------------------------------------
def _config_of(fake: FakeRun, tmp_path: Path, argv: list[str]) -> TrainConfig:
    folder = tmp_path / "data" if (tmp_path / "data").is_dir() else _folder(tmp_path, eval_rows=250)
    assert (
        run_main([*argv[:1], "--data", str(folder), "--out", str(tmp_path / "o"), *argv[1:]]) == 0
    )
    assert fake.config is not None
    return fake.config


def test_cpu_target_recipe_is_the_old_target_script_run(tmp_path: Path, fake: FakeRun) -> None:
    config = _config_of(fake, tmp_path, ["target", "--recipe", "cpu-target"])
    got = {k: getattr(config, k) for k in (
        "r", "alpha", "dropout", "lr", "epochs", "batch_size", "grad_accum", "warmup_ratio",
        "max_len", "dtype", "device", "num_threads", "save_every", "log_every", "progress")}  # fmt: skip
    assert got == {
        "r": 32, "alpha": 64, "dropout": 0.05, "lr": 2e-4, "epochs": 1, "batch_size": 4,
        "grad_accum": 2, "warmup_ratio": 0.05, "max_len": 1024, "dtype": "float32",
        "device": "cpu", "num_threads": 2, "save_every": 20, "log_every": 1, "progress": False,
    }  # fmt: skip
    assert len(fake.eval_rows) == 250  # the target script read every eval row


def test_cpu_sidecar_recipe_differs_in_accumulation_epochs_and_eval_cap(
    tmp_path: Path, fake: FakeRun
) -> None:
    config = _config_of(fake, tmp_path, ["sidecar", "--recipe", "cpu-sidecar"])
    assert (config.batch_size, config.grad_accum, config.max_len) == (4, 4, 1024)
    assert config.epochs == 2
    assert (config.dtype, config.device, config.save_every) == ("float32", "cpu", 20)
    assert len(fake.eval_rows) == 200


def test_options_given_override_the_recipe(tmp_path: Path, fake: FakeRun) -> None:
    argv = ["sidecar", "--recipe", "cpu-sidecar", "--accum", "3", "--lr", "0.001",
            "--max-len", "64", "--threads", "1", "--progress", "--max-eval", "7"]  # fmt: skip
    config = _config_of(fake, tmp_path, argv)
    assert (config.grad_accum, config.lr, config.max_len) == (3, 0.001, 64)
    assert (config.num_threads, config.progress) == (1, True)
    assert len(fake.eval_rows) == 7
    assert (config.batch_size, config.r, config.dtype) == (4, 32, "float32")  # still the recipe's


def test_a_warm_start_reaches_the_trainer_and_the_card(tmp_path: Path, fake: FakeRun) -> None:
    config = _config_of(
        fake, tmp_path, ["target", "--recipe", "cpu-target", "--init-adapter", "runs/v1"]
    )
    assert config.init_adapter == "runs/v1"
    assert config.command is not None and config.command.endswith("--init-adapter runs/v1")


def test_no_recipe_is_the_seed_recipe(tmp_path: Path, fake: FakeRun) -> None:
    config = _config_of(fake, tmp_path, ["target"])
    seed = TrainConfig(out_dir=".")
    for key in ("r", "lr", "batch_size", "grad_accum", "max_len", "dtype", "device", "save_every"):
        assert getattr(config, key) == getattr(seed, key), key
    assert (config.num_threads, config.progress, config.log_every) == (None, True, 10)
    assert len(fake.eval_rows) == 200  # the default cap


def test_a_recipe_for_another_role_is_refused(
    tmp_path: Path, fake: FakeRun, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path)
    argv = ["target", "--recipe", "cpu-sidecar", "--data", str(folder), "--out", str(tmp_path)]
    assert run_main(argv) == 2
    assert "cpu-sidecar is for a sidecar" in capsys.readouterr().err
    assert fake.config is None


def test_every_recipe_value_is_an_option_left_unset_by_default() -> None:
    import argparse

    from ooo_agent.train.run import add_train_arguments

    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    dests = {action.dest for action in parser._actions}
    for name, recipe in RECIPES.items():
        for key in recipe.values:
            assert key in dests, (name, key)
            assert parser.get_default(key) is None, (name, key)  # else the recipe never applies


# -- portable records -------------------------------------------------------------------------
def test_portable_path_and_command(tmp_path: Path) -> None:
    outside = tmp_path.parent / "elsewhere" / "base"
    assert portable_path(str(tmp_path / "runs" / "d"), tmp_path) == "runs/d"
    assert portable_path(str(outside), tmp_path) == ".../base"
    assert portable_path("Org/model-id", tmp_path) == "Org/model-id"
    assert portable_command(
        ["/usr/bin/python3", "-m", "pkg"], [f"--x={tmp_path}/a b"], tmp_path
    ) == (".../python3 -m pkg '--x=a b'")
    line = f"ooo-agent train target --data {tmp_path / 'd.jsonl'} --out {outside}"
    assert portable_command_line(line, tmp_path) == (
        "ooo-agent train target --data d.jsonl --out .../base"
    )
    assert portable_command_line("it's unbalanced", tmp_path) == "it's unbalanced"


def test_base_model_ref_keeps_names_and_hub_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert base_model_ref("smollm2-135m-instruct") == "smollm2-135m-instruct"
    assert (
        base_model_ref("HuggingFaceTB/SmolLM2-135M-Instruct")
        == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    assert base_model_ref(str(tmp_path / "models" / "b")) == "models/b"
    assert base_model_ref(str(tmp_path.parent / "b")) == ".../b"


def test_module_entry_records_a_portable_command_and_report(
    tmp_path: Path, fake: FakeRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = _folder(work)
    base = tmp_path / "bases" / "tiny"
    out = work / "out" / "adapter"
    assert run_main(["sidecar", "--data", str(folder), "--out", str(out), "--base", str(base)]) == 0
    assert fake.config is not None and fake.base == str(base)  # loaded from where it is
    assert fake.config.command == (
        "python -m ooo_agent.train sidecar --data data --out out/adapter --base .../tiny"
    )
    assert (fake.config.base_model_ref, fake.config.base_model_name) == (".../tiny", ".../tiny")
    report = json.loads((out / "train_report.json").read_text())
    assert report["out_dir"] == "out/adapter"
    assert report["adapter_path"] == "out/adapter/adapter_model.safetensors"
