"""What the benchmark runs on: the target model and the sidecar, resolved from CLI names.

``--target``: ``auto`` (the tool-calling preset when its adapter exists, else the base SmolLM2
with a note), a preset name, or a local model folder. ``--sidecar``: ``auto`` (the trained
sidecar preset if present, else none), ``none``, ``oracle``, a preset name, a local model
folder, or an ``http(s)://`` URL of an OpenAI-compatible completions server. With
``process=True`` a local sidecar runs in its own ``serve-sidecar`` process (its own core),
started and stopped by the benchmark.

``device`` (``cpu``, ``cuda``, ``cuda:N``) and ``dtype`` put the target and a local sidecar
(in-process or its own process) on one device in one precision; :func:`resolve_device` and
:func:`resolve_dtype` turn the CLI's ``auto`` into a choice, and refuse CUDA when this torch
has none.
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
from typing import IO, TYPE_CHECKING, Any

from ooo_agent.errors import ModelNotAvailableError, SidecarError
from ooo_agent.sidecar.base import Sidecar

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEVICE_CHOICES",
    "DTYPE_CHOICES",
    "LoadedTarget",
    "SidecarChoice",
    "describe_placement",
    "load_target_model",
    "open_sidecar",
    "resolve_device",
    "resolve_dtype",
    "resolve_sidecar_dtype",
]

TARGET_PRESET = "smollm2-135m-toolcall"
SIDECAR_PRESET = "smollm2-135m-sidecar"
BASE_PRESET = "smollm2-135m-instruct"

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N"
DTYPE_CHOICES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")


def resolve_device(spec: str) -> str:
    """``auto`` → ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda[:N]`` checked to exist.

    Raises :class:`ModelNotAvailableError` when CUDA is asked and this torch has none (a CPU
    build, no driver, no GPU) or has no device ``N``; :class:`ValueError` for other names.
    """
    import torch

    name = spec.strip().lower()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cpu":
        return "cpu"
    index_text = name.removeprefix("cuda:") if name.startswith("cuda:") else None
    if name != "cuda" and not (index_text and index_text.isdigit()):
        raise ValueError(f"unknown device {spec!r}; choose one of {DEVICE_CHOICES}")
    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}"
        raise ModelNotAvailableError(
            f"--device {spec} asked, but torch sees no CUDA GPU ({build}). Install a CUDA "
            "build of torch on a machine with an NVIDIA GPU, or use --device cpu"
        )
    if index_text is not None and int(index_text) >= torch.cuda.device_count():
        raise ModelNotAvailableError(
            f"--device {spec}: torch sees {torch.cuda.device_count()} CUDA device(s)"
        )
    return name


def resolve_dtype(spec: str, device: str) -> torch.dtype:
    """``auto`` → bfloat16 on a CUDA device that supports it, else float32; names as torch's."""
    import torch

    name = spec.strip().lower().removeprefix("torch.")
    if name not in DTYPE_CHOICES:
        raise ValueError(f"unknown dtype {spec!r}; choose one of {', '.join(DTYPE_CHOICES)}")
    if name == "auto":
        from ooo_agent.models.presets import default_dtype

        return default_dtype(device)
    resolved: torch.dtype = getattr(torch, name)
    return resolved


def resolve_sidecar_dtype(spec: str, device: str) -> torch.dtype:
    """Like :func:`resolve_dtype`, but ``auto`` is the sidecar's default (``sidecar_dtype``)."""
    if spec.strip().lower() == "auto":
        from ooo_agent.models.presets import sidecar_dtype

        return sidecar_dtype(device)
    return resolve_dtype(spec, device)


def describe_placement(model: Any) -> tuple[str, str]:
    """``(device, dtype)`` of ``model``'s first parameter, as ``("cuda:0", "bfloat16")``."""
    parameter = next(iter(model.parameters()))
    return str(parameter.device), str(parameter.dtype).removeprefix("torch.")


def _dtype_name(dtype: torch.dtype | None) -> str:
    return "auto" if dtype is None else str(dtype).removeprefix("torch.")


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
    placement: tuple[str, str] | None = None
    """``(device, dtype)`` of a local sidecar model (None: no model here, or a remote one)."""


def load_target_model(
    spec: str, *, device: str = "cpu", dtype: torch.dtype | None = None
) -> LoadedTarget:
    """Load the target named by ``spec`` (see the module docstring) on ``device``.

    ``dtype`` None: float32 (the embedded model), or the presets' own default.
    """
    from ooo_agent.models import load_preset
    from ooo_agent.models.presets import PRESETS

    if spec == "auto":
        try:
            model, tokenizer = load_preset(TARGET_PRESET, device=device, dtype=dtype)
            return LoadedTarget(model, tokenizer, TARGET_PRESET)
        except ModelNotAvailableError as exc:
            model, tokenizer = load_preset(BASE_PRESET, device=device, dtype=dtype)
            note = (
                f"the {TARGET_PRESET} adapter is not available ({exc}); running the base "
                f"{BASE_PRESET}, which does not write tool calls: AST accuracy is meaningless"
            )
            return LoadedTarget(model, tokenizer, BASE_PRESET, note)
    if spec in PRESETS:
        model, tokenizer = load_preset(spec, device=device, dtype=dtype)
        note = "" if PRESETS[spec].role == "target" else f"{spec} is not a tool-calling target"
        return LoadedTarget(model, tokenizer, spec, note)
    if Path(spec).is_dir():
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(spec)
            model = AutoModelForCausalLM.from_pretrained(spec, dtype=dtype or torch.float32)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(f"cannot load target folder {spec!r}: {exc}") from exc
        model.eval()  # type: ignore[no-untyped-call]
        # A move only: a cast would also round buffers kept in float32 on purpose (rotary
        # frequencies), so the dtype is chosen at load time.
        placed: Any = model
        return LoadedTarget(placed.to(device), tokenizer, Path(spec).name)
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


def _switch(flag: str, default: bool) -> bool:
    """An ``on`` / ``off`` / ``auto`` option: ``auto`` is ``default``."""
    return flag == "on" or (flag == "auto" and default)


@contextlib.contextmanager
def open_sidecar(
    spec: str,
    *,
    threads: int = 1,
    process: bool = False,
    oracle_delay_s: float = 0.0,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    schedule: str = "auto",
    follow_target: bool = True,
    function_choice: str = "auto",
    relevance_weight: float | None = None,
    relevance_parameter_weight: float | None = None,
    required_values: str = "auto",
    typed_values: str = "auto",
    mentioned_values: str = "auto",
    unnamed_nulls: str = "auto",
    whole_words: str = "auto",
    request_case: str = "auto",
    joint_values: str = "auto",
) -> Iterator[SidecarChoice]:
    """The sidecar named by ``spec``, stopped (process) when the block ends.

    A local model (preset, folder, adapter folder) is loaded on ``device`` in ``dtype``, in
    this process or, with ``process``, in a ``serve-sidecar`` child given the same choice.
    ``schedule`` is the in-process sidecar's row schedule (``WaveOptions.schedule``); a
    sidecar behind HTTP always gets every row in one request. ``follow_target`` is
    ``WaveOptions``' (every model-backed sidecar); ``function_choice``
    too (``scored`` only in this process: they need the model's
    log-probabilities; ``auto``: a preset's own choice in this process, else ``index``),
    ``relevance_weight`` (``None``: a preset's own with its own choice, else 0),
    ``relevance_parameter_weight`` (``None``: ``WaveOptions``' default)  and
    ``required_values``, ``mentioned_values``, ``typed_values``, ``whole_words`` and
    ``joint_values`` (``on`` / ``off``;
    ``auto``: a preset's own setting in this process, else off — they steer the sidecar's own
    decoding). ``unnamed_nulls`` and ``request_case`` (``on`` / ``off``; ``auto``: a preset's
    own setting) only leave rows out or rewrite answers as they land, so they hold for every
    model-backed sidecar.
    """
    from ooo_agent.models.presets import sidecar_wave_defaults
    from ooo_agent.sidecar._wave import WaveOptions
    from ooo_agent.sidecar.relevance import PARAMETER_WEIGHT

    name = SIDECAR_PRESET if spec == "auto" else spec
    remote = spec.startswith(("http://", "https://"))
    fields = sidecar_wave_defaults(name)
    in_process = not process and not remote
    if function_choice != "auto":
        fields["function_choice"] = function_choice  # type: ignore[typeddict-item]
    elif not in_process:
        # Scoring needs the model's log-probabilities: only a sidecar in this process.
        fields["function_choice"] = "index"
    if relevance_weight is not None:
        fields["relevance_weight"] = relevance_weight
    elif fields["function_choice"] == "index":
        fields["relevance_weight"] = 0.0  # no scores to add it to
    # These steer the sidecar's own decoding: only a model in this process.
    fields["required_values"] = in_process and _switch(required_values, fields["required_values"])
    fields["typed_values"] = in_process and _switch(typed_values, fields["typed_values"])
    fields["mentioned_values"] = in_process and _switch(
        mentioned_values, fields["mentioned_values"]
    )
    fields["unnamed_nulls"] = _switch(unnamed_nulls, fields["unnamed_nulls"])
    fields["whole_words"] = in_process and _switch(whole_words, fields["whole_words"])
    fields["request_case"] = _switch(request_case, fields["request_case"])
    # Written again in the sidecar's own decoding, held to the typed rows' rules.
    fields["joint_values"] = (
        in_process and fields["typed_values"] and _switch(joint_values, fields["joint_values"])
    )
    options = WaveOptions(
        schedule=schedule,  # type: ignore[arg-type]
        follow_target=follow_target,
        **fields,
        relevance_parameter_weight=(
            PARAMETER_WEIGHT if relevance_parameter_weight is None else relevance_parameter_weight
        ),
    )
    from ooo_agent.bench.oracle import ORACLE_LABEL, OracleSidecar
    from ooo_agent.models.presets import PRESETS, adapter_base, load_tokenizer

    if spec == "none":
        yield SidecarChoice(None, "none", "none")
        return
    if spec == "oracle":
        label = ORACLE_LABEL + (f", hint after {oracle_delay_s:g} s" if oracle_delay_s else "")
        yield SidecarChoice(OracleSidecar(delay_s=oracle_delay_s), label, "oracle")
        return
    if remote:
        from ooo_agent.sidecar.openai import OpenAISidecar

        client = OpenAISidecar(spec, options=options)
        yield SidecarChoice(client, f"remote sidecar {spec}", "remote")
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
    elif adapter_base(spec) is not None:
        kind, label = "trained", f"{Path(spec).name} (local sidecar adapter)"
    elif Path(spec).is_dir():
        kind, label = "untrained", f"{Path(spec).name} (local sidecar)"
    else:
        raise ModelNotAvailableError(
            f"--sidecar {spec!r} is not none, oracle, auto, a preset, a folder or a URL"
        )
    if process:
        with _sidecar_process(spec, threads, device=device, dtype=dtype) as url:
            from ooo_agent.sidecar.openai import OpenAISidecar

            sidecar = OpenAISidecar(
                url, template=load_tokenizer(spec), timeout=120.0, options=options
            )
            placement = (device, _dtype_name(dtype))
            yield SidecarChoice(sidecar, label + " [own process]", kind, note, placement)
        return
    from ooo_agent.sidecar.hf import HFSidecar

    base = adapter_base(spec)
    if spec in PRESETS:
        from ooo_agent.models import load_preset

        model, tokenizer = load_preset(spec, device=device, dtype=dtype)
        local = HFSidecar(model, tokenizer, num_threads=threads, options=options)
    elif base is not None:
        from ooo_agent.models.presets import attach_adapter, load_base

        model, tokenizer = load_base(base, device=device, dtype=dtype)
        model = attach_adapter(model, spec, merge=True).to(device)
        local = HFSidecar(model, tokenizer, num_threads=threads, options=options)
    else:
        local = HFSidecar.from_pretrained(
            spec, num_threads=threads, device=device, dtype=dtype, options=options
        )
    placement = describe_placement(local.model)
    yield SidecarChoice(local, label + " [in-process thread]", kind, note, placement)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _sidecar_process(
    spec: str,
    threads: int,
    *,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
    ready_timeout: float = 300.0,
) -> Iterator[str]:
    """Run ``serve-sidecar`` for ``spec`` in a child process; yield its base URL."""
    from ooo_agent.models.presets import PRESETS, adapter_base, base_source

    port = _free_port()
    base = adapter_base(spec)
    if spec in PRESETS:
        source = ["--preset", spec]
    elif base is not None:
        source = ["--base", base_source(base), "--adapter", spec]
    else:
        source = ["--base", spec]
    command = [sys.executable, "-m", "ooo_agent.sidecar.server", *source,
               "--threads", str(threads), "--port", str(port),
               "--device", device, "--dtype", _dtype_name(dtype)]  # fmt: skip
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
