"""The model card (``README.md``) written next to a trained adapter.

It records what someone needs to trust or reproduce the adapter: base model, data, the
full recipe, the losses, any evaluation numbers, and the exact command.
"""

from __future__ import annotations

from pathlib import Path

from ooo_agent.train._progress import format_seconds
from ooo_agent.train.config import TrainConfig, TrainReport

__all__ = ["render_card", "write_card"]


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _sampled(history: list[tuple[int, float]], points: int = 12) -> list[tuple[int, float]]:
    """At most ``points`` entries, evenly spread, always keeping the last one."""
    if len(history) <= points:
        return history
    stride = len(history) / points
    picked = [history[int(i * stride)] for i in range(points - 1)]
    return [*picked, history[-1]]


def _objective_text(config: TrainConfig) -> str:
    text = "completion-only causal cross-entropy (prompt tokens masked)"
    if config.key_weight != 1.0:
        text += f"; a call's keys and value-ending , / }} / ] weigh {config.key_weight:g}"
    if config.pack:
        text += "; the rows that share a prompt prefix packed into one forward over their trie"
    return text


def _init_text(config: TrainConfig) -> str:
    if config.init_adapter is None:
        return "fresh LoRA (B = 0)"
    return f"warm start from the adapter `{Path(config.init_adapter).name}`"


def render_card(config: TrainConfig, report: TrainReport) -> str:
    """The card's markdown text."""
    title = Path(report.out_dir).name or "adapter"
    base = config.base_model_name or "(base model not recorded)"
    lines = [
        f"# {title}",
        "",
        f"A LoRA adapter ({config.role}) for `{base}`, trained with ooo-agent's trainer.",
        "",
        "## Data",
        "",
        config.data_description or "(not described)",
        "",
        f"- training examples: {report.examples} "
        f"({report.skipped_too_long} skipped as longer than {config.max_len} tokens)",
        f"- held-out examples: {report.eval_examples}",
        f"- completion tokens trained on: {report.train_tokens:,}",
        "",
        "## Recipe",
        "",
        "| setting | value |",
        "|---|---|",
        f"| LoRA r / alpha / dropout | {config.r} / {config.alpha} / {config.dropout} |",
        f"| initialisation | {_init_text(config)} |",
        f"| target modules | {', '.join(config.target_modules)} |",
        f"| objective | {_objective_text(config)} |",
        f"| epochs | {config.epochs} |",
        f"| effective batch | {config.effective_batch} ({config.batch_size} × {config.grad_accum} accumulation) |",
        f"| peak LR / schedule | {config.lr:g} / cosine, {config.warmup_ratio:.0%} warmup |",
        f"| weight decay / grad clip | {config.weight_decay:g} / {config.max_grad_norm:g} |",
        f"| max length | {config.max_len} |",
        f"| seed | {config.seed} |",
        f"| compute | {report.device}, {report.dtype} |",
        f"| adapter file | {config.save_dtype}, {report.adapter_bytes / 1e6:.1f} MB |",
        "",
        "## Results",
        "",
        f"- optimizer steps: {report.steps} / {report.total_steps}",
        f"- final train loss (mean of last 10 steps): {_fmt(report.train_loss)}",
        f"- final eval loss: {_fmt(report.eval_loss)}",
        f"- wall time: {format_seconds(report.seconds)}",
    ]
    if report.resumed_from_step is not None:
        lines.append(f"- resumed from a checkpoint at step {report.resumed_from_step}")
    lines += ["", "| step | train loss |", "|---|---|"]
    lines += [f"| {s} | {v:.4f} |" for s, v in _sampled(report.train_history)]
    if report.eval_history:
        lines += ["", "| step | eval loss |", "|---|---|"]
        lines += [f"| {s} | {v:.4f} |" for s, v in _sampled(report.eval_history)]
    for heading, body in config.extra_card_sections.items():
        lines += ["", f"## {heading}", "", body.strip()]
    lines += [
        "",
        "## Reproduce",
        "",
        "```",
        config.command or "(trained through the Python API: ooo_agent.train.train_lora)",
        "```",
        "",
    ]
    return "\n".join(lines)


def write_card(path: Path, config: TrainConfig, report: TrainReport) -> None:
    """Write :func:`render_card` to ``path``."""
    path.write_text(render_card(config, report), encoding="utf-8")
