"""``ooo-agent bench --device/--dtype``: where the target and the sidecar run, and in what.

Tiny random models on the CPU (seconds). CUDA itself is not needed: its absence must give a
clear error, and its presence is faked where only the choice passed to the loaders is checked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ooo_agent.bench import _loading  # noqa: E402
from ooo_agent.bench import runner as bench_runner  # noqa: E402
from ooo_agent.bench.baselines import PromptLookupTarget  # noqa: E402
from ooo_agent.cli import CliError, main  # noqa: E402
from ooo_agent.errors import ModelNotAvailableError  # noqa: E402
from ooo_agent.models import presets  # noqa: E402
from ooo_agent.models.presets import sidecar_dtype  # noqa: E402
from ooo_agent.sidecar import server  # noqa: E402
from ooo_agent.sidecar.hf import HFSidecar  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny Llama folder (target, and sidecar when asked) and a two-item JSONL data set."""
    from sidecar_tiny import save_tiny_model

    root = tmp_path_factory.mktemp("bench-device")
    model_dir = save_tiny_model(root / "tiny-target")
    questions = [("What is the weather in Paris?", "Paris"), ("Weather in Rome?", "Rome")]
    items = [
        {
            "id": f"tiny_{i}",
            "category": "tiny",
            "messages": [{"role": "user", "content": q}],
            "tools": [WEATHER],
            "gold": [{"get_weather": {"city": [city]}}],
        }
        for i, (q, city) in enumerate(questions)
    ]
    data = root / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items))
    return model_dir, data


def _bench(setup: tuple[Path, Path], out: Path, *extra: str) -> int:
    model_dir, data = setup
    return main([
        "bench", "--data", str(data), "--n", "1", "--warmup", "1", "--target", str(model_dir),
        "--max-new-tokens", "8", "--out", str(out), *extra,
    ])  # fmt: skip


def _capture_runners(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Record the model and the sidecar the command hands to ``build_runners``."""
    seen: dict[str, Any] = {}
    original = bench_runner.build_runners

    def spy(model: Any, tokenizer: Any, **kwargs: Any) -> Any:
        seen["model"], seen["sidecar"] = model, kwargs.get("sidecar")
        return original(model, tokenizer, **kwargs)

    monkeypatch.setattr(bench_runner, "build_runners", spy)
    return seen


def _placement(model: Any) -> set[tuple[str, Any]]:
    return {(p.device.type, p.dtype) for p in model.parameters()}


def test_cpu_float32_loads_and_runs_every_mode_on_cpu(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _capture_runners(monkeypatch)
    model_dir, _ = setup
    out = tmp_path / "out"
    status = _bench(
        setup, out, "--device", "cpu", "--dtype", "float32", "--sidecar", str(model_dir),
        "--modes", "vanilla,toolspec,ooo,hf-pld",
    )  # fmt: skip
    assert status == 0  # float32 on the CPU: every speculative mode equals vanilla
    assert _placement(seen["model"]) == {("cpu", torch.float32)}
    assert isinstance(seen["sidecar"], HFSidecar)
    # The sidecar's own default: bf16 where this CPU multiplies it natively (never the output).
    expected = sidecar_dtype("cpu")
    assert _placement(seen["sidecar"].model) == {("cpu", expected)}
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["device"], summary["dtype"]) == ("cpu", "float32")
    assert summary["settings"]["device"] == "cpu" and summary["settings"]["dtype"] == "float32"
    assert (summary["settings"]["sidecar_device"], summary["settings"]["sidecar_dtype"]) == (
        "cpu",
        str(expected).removeprefix("torch."),
    )
    assert summary["settings"]["sidecar_schedule"] == "function-first"  # auto, on the CPU
    assert summary["machine"]["gpu"] is None
    assert " · cpu float32 · " in summary["title"]
    assert " · cpu float32 · " in (out / "table.txt").read_text()
    records = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in records} == {"vanilla", "toolspec", "ooo", "hf-pld"}
    assert not any(r["failure"] for r in records)
    assert not any("reduced precision" in n for n in summary["notes"])


def test_the_dtype_reaches_the_target_and_the_in_process_sidecar(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _capture_runners(monkeypatch)
    model_dir, _ = setup
    out = tmp_path / "out"
    status = _bench(
        setup, out, "--dtype", "bfloat16", "--sidecar", str(model_dir),
        "--sidecar-dtype", "bfloat16", "--sidecar-schedule", "parallel",
        "--modes", "vanilla,ooo,hf-pld",
    )  # fmt: skip
    # Reduced precision may break identity (exit 3, report written); anything else is a bug.
    assert status in (0, 3)
    assert _placement(seen["model"]) == {("cpu", torch.bfloat16)}
    assert _placement(seen["sidecar"].model) == {("cpu", torch.bfloat16)}
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["device"], summary["dtype"]) == ("cpu", "bfloat16")
    assert summary["settings"]["sidecar_dtype"] == "bfloat16"
    assert summary["settings"]["sidecar_schedule"] == "parallel"
    assert seen["sidecar"].options.schedule == "parallel"
    assert " · cpu bfloat16 · " in summary["title"]
    assert any("reduced precision" in n for n in summary["notes"])
    records = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert not any(r["failure"] for r in records)  # hf-pld and ooo ran in bfloat16 too


def test_cuda_without_cuda_is_a_clear_error_before_any_load(
    setup: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def must_not_load(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a model was loaded although the device does not exist")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(_loading, "load_target_model", must_not_load)
    for device in ("cuda", "cuda:1"):
        assert _bench(setup, tmp_path / "out", "--device", device) == 1
        err = capsys.readouterr().err
        assert f"--device {device}" in err and "no CUDA" in err and "--device cpu" in err
    assert not (tmp_path / "out").exists()
    # A name that is no device at all is a usage error (argparse: exit status 2).
    with pytest.raises(SystemExit) as exc:
        _bench(setup, tmp_path / "out", "--device", "tpu")
    assert exc.value.code == 2
    assert "cuda:N" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _bench(setup, tmp_path / "out", "--dtype", "float8")


def test_auto_picks_cuda_and_bfloat16_and_hands_them_to_both_loaders(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: dict[str, Any] = {}

    def fake_target(spec: str, *, device: str, dtype: Any) -> Any:
        asked["target"] = (device, dtype)
        raise CliError("stop before any real load")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(_loading, "load_target_model", fake_target)
    assert _bench(setup, tmp_path / "out", "--device", "auto", "--dtype", "auto") == 1
    assert asked["target"] == ("cuda", torch.bfloat16)
    assert _bench(setup, tmp_path / "out", "--device", "cuda:1") == 1
    assert asked["target"] == ("cuda:1", torch.float32)  # the default dtype stays float32
    assert _bench(setup, tmp_path / "out", "--device", "cuda:2") == 1  # only 0 and 1 exist
    assert asked["target"] == ("cuda:1", torch.float32)  # refused before the loader

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert _loading.resolve_dtype("auto", "cuda") == torch.float32
    assert _loading.resolve_dtype("auto", "cpu") == torch.float32
    assert _loading.resolve_dtype("float16", "cpu") == torch.float16
    with pytest.raises(ValueError):
        _loading.resolve_dtype("int8", "cpu")
    # The sidecar's auto: bf16 wherever the hardware multiplies it natively, else float32.
    assert _loading.resolve_sidecar_dtype("float32", "cpu") == torch.float32
    for native, expected in ((True, torch.bfloat16), (False, torch.float32)):
        monkeypatch.setattr(presets, "cpu_has_native_bf16", lambda native=native: native)
        assert _loading.resolve_sidecar_dtype("auto", "cpu") == expected
        assert sidecar_dtype("cpu") == expected
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _loading.resolve_device("auto") == "cpu"
    with pytest.raises(ModelNotAvailableError):
        _loading.resolve_device("cuda:0")


def test_the_sidecar_process_is_started_on_the_same_device_and_dtype(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir, _ = setup
    started: list[list[str]] = []

    def fake_popen(command: list[str], **_kwargs: Any) -> Any:
        started.append(command)
        raise OSError("not started in a test")

    monkeypatch.setattr(_loading.subprocess, "Popen", fake_popen)
    with (
        pytest.raises(OSError, match="not started"),
        _loading.open_sidecar(str(model_dir), process=True, device="cuda:0", dtype=torch.bfloat16),
    ):
        pass
    command = started[0]
    assert command[1:3] == ["-m", "ooo_agent.sidecar.server"]
    parser = argparse.ArgumentParser()
    server.add_arguments(parser)
    parsed = parser.parse_args(command[3:])  # what the child reads
    assert (parsed.base, parsed.device, parsed.dtype) == (str(model_dir), "cuda:0", "bfloat16")


def test_serve_sidecar_loads_on_the_device_and_dtype_it_is_given(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ooo_agent.models

    model_dir, _ = setup
    served: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda generator, **_kw: served.append(generator))
    assert server.main(["--base", str(model_dir), "--device", "cpu", "--dtype", "bfloat16"]) == 0
    assert _placement(served[-1].model) == {("cpu", torch.bfloat16)}
    assert server.main(["--base", str(model_dir), "--dtype", "float32"]) == 0
    assert _placement(served[-1].model) == {("cpu", torch.float32)}
    # The default follows the hardware: bf16 where the CPU has native kernels, else float32.
    for native, expected in ((True, torch.bfloat16), (False, torch.float32)):
        monkeypatch.setattr(presets, "cpu_has_native_bf16", lambda native=native: native)
        assert server.main(["--base", str(model_dir)]) == 0
        assert _placement(served[-1].model) == {("cpu", expected)}

    asked: dict[str, Any] = {}

    def fake_preset(name: str, **kwargs: Any) -> Any:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        asked.update(kwargs, name=name)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=kwargs["dtype"])
        return model, AutoTokenizer.from_pretrained(model_dir)

    monkeypatch.setattr(ooo_agent.models, "load_preset", fake_preset)
    argv = ["--preset", "some-sidecar", "--device", "cpu", "--dtype", "float16"]
    assert server.main(argv) == 0
    assert asked == {"name": "some-sidecar", "device": "cpu", "dtype": "float16"}
    assert _placement(served[-1].model) == {("cpu", torch.float16)}


class _Handle:
    def remove(self) -> None:
        pass


class _ElsewhereModel:
    """A model whose weights live on another device ('meta'); generate records its inputs."""

    def __init__(self, end_id: int) -> None:
        self.weight = torch.empty(2, device="meta")
        self.end_id = end_id
        self.devices: list[str] = []

    def parameters(self) -> Any:
        return iter([self.weight])

    def register_forward_pre_hook(self, *_args: Any, **_kwargs: Any) -> Any:
        return _Handle()

    def generate(self, input_ids: Any, attention_mask: Any, **_kwargs: Any) -> Any:
        self.devices += [input_ids.device.type, attention_mask.device.type]
        prompt = torch.zeros(1, input_ids.shape[1], dtype=torch.long)  # meta holds no data
        return torch.cat([prompt, torch.tensor([[self.end_id]])], dim=1)


async def test_hf_pld_feeds_generate_on_the_model_device() -> None:
    from sidecar_tiny import make_tokenizer

    tokenizer = make_tokenizer()
    model = _ElsewhereModel(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    target = PromptLookupTarget(model, tokenizer, "hermes")
    request = TargetRequest([{"role": "user", "content": "Weather in Rome?"}], [WEATHER])
    generation = await target.generate(request)
    assert model.devices == ["meta", "meta"]  # not the CPU tensors it used to pass
    assert generation.stats.finish_reason != "length"
