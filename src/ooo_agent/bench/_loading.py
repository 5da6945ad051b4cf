"""What the benchmark runs on: the target model and the sidecar, resolved from CLI names.

``--target``: ``auto`` (the tool-calling preset when its adapter exists, else the base SmolLM2
with a note), a preset name, or a local model folder. ``--sidecar``: ``auto`` (the trained
sidecar preset if present, else none), ``none``, ``oracle``, a preset name, a local model
folder, or an ``http(s)://`` URL of an OpenAI-compatible completions server. With
``process=True`` a local sidecar runs in its own ``serve-sidecar`` process (its own core),
started and stopped by the benchmark.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ooo_agent.errors import ModelNotAvailableError, SidecarError
from ooo_agent.sidecar.base import Sidecar

__all__ = ["LoadedTarget", "SidecarChoice", "load_target_model", "open_sidecar"]

TARGET_PRESET = "smollm2-135m-toolcall"
SIDECAR_PRESET = "smollm2-135m-sidecar"
BASE_PRESET = "smollm2-135m-instruct"


@dataclass
class LoadedTarget:
    """A loaded target model, what it is, and any caveat to print next to its numbers."""

    model: Any
    tokenizer: Any
    name: str
    note: str = ""


@dataclass
class SidecarChoice:
    """The sidecar for mode ``ooo`` (None: no ``ooo``), how outputs name it, and its kind."""

    sidecar: Sidecar | None
    label: str
    kind: str
    """``none`` | ``oracle`` | ``trained`` | ``untrained`` | ``remote``."""
    note: str = ""


def load_target_model(spec: str) -> LoadedTarget:
    """Load the target named by ``spec`` (see the module docstring)."""
    from ooo_agent.models import load_preset
    from ooo_agent.models.presets import PRESETS

    if spec == "auto":
        try:
            model, tokenizer = load_preset(TARGET_PRESET)
            return LoadedTarget(model, tokenizer, TARGET_PRESET)
        except ModelNotAvailableError as exc:
            model, tokenizer = load_preset(BASE_PRESET)
            note = (
                f"the {TARGET_PRESET} adapter is not available ({exc}); running the base "
                f"{BASE_PRESET}, which does not write tool calls: AST accuracy is meaningless"
            )
            return LoadedTarget(model, tokenizer, BASE_PRESET, note)
    if spec in PRESETS:
        model, tokenizer = load_preset(spec)
        note = "" if PRESETS[spec].role == "target" else f"{spec} is not a tool-calling target"
        return LoadedTarget(model, tokenizer, spec, note)
    if Path(spec).is_dir():
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(spec)
            model = AutoModelForCausalLM.from_pretrained(spec, dtype=torch.float32)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(f"cannot load target folder {spec!r}: {exc}") from exc
        model.eval()  # type: ignore[no-untyped-call]
        return LoadedTarget(model, tokenizer, Path(spec).name)
    known = ", ".join(sorted(PRESETS))
    raise ModelNotAvailableError(
        f"--target {spec!r} is neither a preset ({known}), 'auto', nor a model folder"
    )


def _sidecar_available(name: str) -> bool:
    from ooo_agent.models import adapter_dir

    try:
        adapter_dir(name)
    except ModelNotAvailableError:
        return False
    return True


@contextlib.contextmanager
def open_sidecar(
    spec: str, *, threads: int = 1, process: bool = False, oracle_delay_s: float = 0.0
) -> Iterator[SidecarChoice]:
    """The sidecar named by ``spec``, stopped (process) when the block ends."""
    from ooo_agent.bench.oracle import ORACLE_LABEL, OracleSidecar
    from ooo_agent.models.presets import PRESETS

    if spec == "none":
        yield SidecarChoice(None, "none", "none")
        return
    if spec == "oracle":
        label = ORACLE_LABEL + (f", hint after {oracle_delay_s:g} s" if oracle_delay_s else "")
        yield SidecarChoice(OracleSidecar(delay_s=oracle_delay_s), label, "oracle")
        return
    if spec.startswith(("http://", "https://")):
        from ooo_agent.sidecar.openai import OpenAISidecar

        yield SidecarChoice(OpenAISidecar(spec), f"remote sidecar {spec}", "remote")
        return
    note = ""
    if spec == "auto":
        if not _sidecar_available(SIDECAR_PRESET):
            note = (
                f"the {SIDECAR_PRESET} adapter is not available: no 'ooo' mode. Use "
                f"--sidecar oracle to measure the mechanism (upper bound), or --sidecar "
                f"{BASE_PRESET} for an untrained sidecar's cost"
            )
            yield SidecarChoice(None, "none", "none", note)
            return
        spec = SIDECAR_PRESET
    if spec in PRESETS:
        trained = PRESETS[spec].role == "sidecar"
        kind = "trained" if trained else "untrained"
        label = f"{spec}" + ("" if trained else " (untrained sidecar)")
    elif _adapter_base(spec) is not None:
        kind, label = "trained", f"{Path(spec).name} (local sidecar adapter)"
    elif Path(spec).is_dir():
        kind, label = "untrained", f"{Path(spec).name} (local sidecar)"
    else:
        raise ModelNotAvailableError(
            f"--sidecar {spec!r} is not none, oracle, auto, a preset, a folder or a URL"
        )
    if process:
        with _sidecar_process(spec, threads) as url:
            from ooo_agent.sidecar.openai import OpenAISidecar

            tokenizer = _sidecar_tokenizer(spec)
            sidecar = OpenAISidecar(url, template=tokenizer, timeout=120.0)
            yield SidecarChoice(sidecar, label + " [own process]", kind, note)
        return
    from ooo_agent.sidecar.hf import HFSidecar

    adapter_base = _adapter_base(spec)
    if spec in PRESETS:
        local = HFSidecar.from_preset(spec, num_threads=threads)
    elif adapter_base is not None:
        from ooo_agent.models.presets import attach_adapter, load_base

        model, tokenizer = load_base(adapter_base)
        model = attach_adapter(model, spec, merge=True)
        local = HFSidecar(model, tokenizer, num_threads=threads)
    else:
        local = HFSidecar.from_pretrained(spec, num_threads=threads)
    yield SidecarChoice(local, label + " [in-process thread]", kind, note)


def _adapter_base(spec: str) -> str | None:
    """For an adapter-only folder (``adapter_config.json``, no model weights): the base to load
    it on — the base it names when that is a preset, an existing folder or a hub id, else the
    embedded SmolLM2 (another machine's path means nothing here). None for anything else."""
    import json

    from ooo_agent.models.presets import PRESETS

    config = Path(spec) / "adapter_config.json"
    if not config.is_file():
        return None
    try:
        named = str(
            json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path") or ""
        )
    except (OSError, ValueError):
        named = ""
    if named in PRESETS or (named and Path(named).is_dir()):
        return named
    if named and not Path(named).is_absolute() and not Path(named).exists():
        return named  # a hub id
    return BASE_PRESET


def _base_folder(base: str) -> str:
    """A folder or hub id transformers can load for ``base`` (the embedded name resolved)."""
    from ooo_agent.models import SMOLLM2_NAME, ensure_smollm2

    return str(ensure_smollm2()) if base in (SMOLLM2_NAME, BASE_PRESET) else base


def _sidecar_tokenizer(spec: str) -> Any:
    """The tokenizer whose chat template the in-process sidecar would use."""
    from transformers import AutoTokenizer

    from ooo_agent.models import SMOLLM2_NAME, ensure_smollm2
    from ooo_agent.models.presets import PRESETS

    if spec in PRESETS:
        base = PRESETS[spec].base
        folder = str(ensure_smollm2()) if base == SMOLLM2_NAME else base
        return AutoTokenizer.from_pretrained(folder)
    adapter_base = _adapter_base(spec)
    if adapter_base is not None:
        return AutoTokenizer.from_pretrained(_base_folder(adapter_base))
    return AutoTokenizer.from_pretrained(spec)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _sidecar_process(spec: str, threads: int, *, ready_timeout: float = 300.0) -> Iterator[str]:
    """Run ``serve-sidecar`` for ``spec`` in a child process; yield its base URL."""
    from ooo_agent.models.presets import PRESETS

    port = _free_port()
    adapter_base = _adapter_base(spec)
    if spec in PRESETS:
        source = ["--preset", spec]
    elif adapter_base is not None:
        source = ["--base", _base_folder(adapter_base), "--adapter", spec]
    else:
        source = ["--base", spec]
    command = [sys.executable, "-m", "ooo_agent.sidecar.server", *source,
               "--threads", str(threads), "--port", str(port)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    # A file, not a pipe: the server logs every request, and a full pipe would stall it.
    with tempfile.TemporaryFile(mode="w+") as log:
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True)
        try:
            _wait_ready(child, log, f"http://127.0.0.1:{port}", ready_timeout)
            yield f"http://127.0.0.1:{port}"
        finally:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _wait_ready(child: subprocess.Popen[str], log: IO[str], url: str, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        if child.poll() is not None:
            log.seek(0)
            detail = log.read().strip().splitlines()[-3:]
            raise SidecarError("the sidecar process exited: " + " | ".join(detail))
        try:
            if httpx.get(url + "/v1/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SidecarError(f"the sidecar process was not ready after {timeout:g} s")
        time.sleep(0.5)
