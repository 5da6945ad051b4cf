"""The LoRA recipe (:class:`TrainConfig`) and what a run reports (:class:`TrainReport`).

Defaults follow the OoO-Spec sidecar seed recipe: LoRA r 32 / alpha 64 / dropout 0.05 on
q, k, v, o, gate, up, down; peak LR 1e-4 with cosine decay after 5 % warmup; effective
batch 32 (micro 4 × accumulation 8); 1 epoch; max length 2048; seed 31082027;
completion-only cross-entropy. Plain data, no torch import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["DEFAULT_TARGET_MODULES", "TrainConfig", "TrainReport"]

DEFAULT_TARGET_MODULES: tuple[str, ...] = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
)

DType = Literal["auto", "float32", "bfloat16", "float16"]
SaveDType = Literal["float16", "bfloat16", "float32"]


@dataclass
class TrainConfig:
    """Everything that decides a LoRA training run.

    Steps (``eval_every``, ``save_every``, ``log_every``) count optimizer steps, i.e.
    effective batches of ``batch_size × grad_accum`` examples.

    Example::

        cfg = TrainConfig(out_dir="adapters/my-adapter", r=16, alpha=32, lr=2e-4)
    """

    out_dir: str | Path
    r: int = 32
    alpha: int = 64
    dropout: float = 0.05
    target_modules: tuple[str, ...] = DEFAULT_TARGET_MODULES
    lr: float = 1e-4
    epochs: int = 1
    batch_size: int = 4
    """Examples per micro-batch (one forward/backward)."""
    grad_accum: int = 8
    warmup_ratio: float = 0.05
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_len: int = 2048
    """Rows whose prompt + completion exceed this many tokens are skipped (and counted)."""
    key_weight: float = 1.0
    """Loss weight of the completion tokens that shape a call — its JSON keys and the ``,`` /
    ``}`` / ``]`` after each value, where the model picks the next argument or ends the call —;
    every other completion token weighs 1. The loss is normalised by the summed weight.
    1 (the default): plain cross-entropy. The held-out loss is always unweighted."""
    seed: int = 31082027
    dtype: DType = "auto"
    """Compute dtype of the base weights: ``auto`` = bf16 on a GPU that supports it, else fp32."""
    device: str = "auto"
    save_dtype: SaveDType = "float16"
    """dtype of the final adapter file (LoRA weights are trained in fp32)."""
    group_by_length: bool = True
    """Batch rows of similar length together, so padding wastes little compute."""
    per_example: bool | None = None
    """Run each micro-batch one example at a time (same loss and gradient, no padding).

    ``None`` (auto): per example on CPU, where it measured ~20 % faster than padded batches
    of 4 for SmolLM2-135M at ~370 tokens; batched on GPUs.
    """
    pack: bool = False
    """Train rows that share a prompt prefix in one forward over their token trie (tree
    attention mask and positions, :mod:`ooo_agent.train._packing`): each step's rows are drawn
    a family at a time (the rows of one request together, families in random order) and packed
    up to ``max_len`` tokens. Same loss per row, a fraction of the compute when rows repeat a
    long prompt (the sidecar's). Replaces ``group_by_length`` and ``per_example``."""
    num_threads: int | None = None
    """``torch.set_num_threads`` for the run (CPU); ``None`` leaves torch's choice."""
    eval_every: int = 0
    """Evaluate on the held-out rows every N steps (0: only at the end)."""
    save_every: int = 0
    """Write a resumable checkpoint every N steps (0: never)."""
    keep_checkpoints: int = 2
    keep_checkpoints_after: bool = False
    """Keep ``checkpoints/`` once the run has finished (they hold optimizer state)."""
    resume: bool = False
    """Continue from the newest checkpoint in ``out_dir/checkpoints`` when there is one."""
    log_every: int = 1
    progress: bool = True
    """Show a live rich progress bar (plain log lines are printed either way)."""
    max_steps: int | None = None
    """Stop after this many optimizer steps (the schedule still spans the whole run)."""
    command: str | None = None
    """The command that started the run, recorded in the model card."""
    data_description: str = ""
    """Free text for the model card: where the rows came from."""
    role: str = "adapter"
    """What the adapter is for (``target`` / ``sidecar``), for the model card."""
    base_model_name: str = ""
    init_adapter: str | Path | None = None
    """Start from this LoRA adapter folder instead of a zero-initialised LoRA (warm start).
    Its own rank, alpha and target modules then apply; ``r`` / ``alpha`` / ``target_modules``
    must match them. The embedded sidecar starts from the target's adapter: the sidecar must
    write the values *this target* writes, and the target's adapter already copies them."""
    base_model_ref: str = ""
    """What ``adapter_config.json`` records as ``base_model_name_or_path`` (a preset name or
    hub id). peft writes the folder the base was loaded from — often a cache path of the
    training machine, meaningless elsewhere; empty keeps peft's value."""
    extra_card_sections: dict[str, str] = field(default_factory=dict)
    """Extra ``## title`` → markdown sections for the model card (e.g. eval numbers)."""

    def __post_init__(self) -> None:
        self.out_dir = Path(self.out_dir)
        self.target_modules = tuple(self.target_modules)
        positive = {
            "r": self.r,
            "alpha": self.alpha,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "grad_accum": self.grad_accum,
            "max_len": self.max_len,
            "log_every": self.log_every,
            "keep_checkpoints": self.keep_checkpoints,
        }
        for name, value in positive.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive integer, got {value!r}")
        for name, value in {"eval_every": self.eval_every, "save_every": self.save_every}.items():
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"TrainConfig.{name} must be an integer >= 0, got {value!r}")
        if not (isinstance(self.key_weight, (int, float)) and self.key_weight > 0):
            raise ValueError(f"TrainConfig.key_weight must be > 0, got {self.key_weight!r}")
        if not self.lr > 0:
            raise ValueError(f"TrainConfig.lr must be > 0, got {self.lr!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"TrainConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(
                f"TrainConfig.warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}"
            )
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError(f"TrainConfig.dtype: unknown dtype {self.dtype!r}")
        if self.save_dtype not in ("float16", "bfloat16", "float32"):
            raise ValueError(f"TrainConfig.save_dtype: unknown dtype {self.save_dtype!r}")
        if not self.target_modules:
            raise ValueError("TrainConfig.target_modules must name at least one module")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"TrainConfig.num_threads must be >= 1, got {self.num_threads!r}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"TrainConfig.max_steps must be >= 1, got {self.max_steps!r}")

    @property
    def effective_batch(self) -> int:
        """Examples per optimizer step."""
        return self.batch_size * self.grad_accum

    def recipe(self) -> dict[str, Any]:
        """The fields that decide the trained weights (checked when resuming)."""
        keys = (
            "r",
            "alpha",
            "dropout",
            "target_modules",
            "lr",
            "epochs",
            "batch_size",
            "grad_accum",
            "warmup_ratio",
            "weight_decay",
            "max_grad_norm",
            "max_len",
            "key_weight",
            "seed",
            "group_by_length",
        )
        data = asdict(self)
        recipe = {k: (list(data[k]) if k == "target_modules" else data[k]) for k in keys}
        if self.pack:  # only when set, so runs checkpointed before the option still resume
            recipe["pack"] = True
        return recipe


@dataclass
class TrainReport:
    """What a finished :func:`~ooo_agent.train.train_lora` run produced."""

    out_dir: Path
    adapter_path: Path
    """The adapter's safetensors file."""
    adapter_bytes: int
    steps: int
    total_steps: int
    examples: int
    eval_examples: int
    skipped_too_long: int
    train_tokens: int
    """Completion (loss-bearing) tokens seen during training."""
    seconds: float
    train_loss: float | None
    """Mean completion-token loss over the last ``min(steps, 10)`` optimizer steps."""
    eval_loss: float | None
    train_history: list[tuple[int, float]] = field(default_factory=list)
    eval_history: list[tuple[int, float]] = field(default_factory=list)
    resumed_from_step: int | None = None
    device: str = "cpu"
    dtype: str = "float32"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (paths as strings)."""
        data = asdict(self)
        data["out_dir"] = str(self.out_dir)
        data["adapter_path"] = str(self.adapter_path)
        return data
