"""A LoRA trainer for prompt → completion rows, following the OoO-Spec seed recipe.

Completion-only cross-entropy (prompt tokens carry no loss), token-weighted over each effective
batch; AdamW on the LoRA weights; linear warmup then cosine decay; gradient accumulation;
fixed seed; resumable checkpoints that continue bit-for-bit where a run stopped.

Example::

    from ooo_agent.models import load_smollm2
    from ooo_agent.train import TrainConfig, read_rows, train_lora

    model, tokenizer = load_smollm2()
    report = train_lora(TrainConfig(out_dir="adapters/mine"), model, tokenizer,
                        read_rows("train.jsonl"), read_rows("eval.jsonl"))
    print(report.eval_loss, report.adapter_path)
"""

from __future__ import annotations

import inspect
import json
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ooo_agent.train._batches import (
    IGNORE_INDEX,
    Example,
    accumulation_groups,
    plan_epoch,
    rows_fingerprint,
    tokenize_rows,
)
from ooo_agent.train._checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from ooo_agent.train._packing import Packed, pack_pieces, plan_families, prefix_families, tree_mask
from ooo_agent.train._progress import TrainProgress
from ooo_agent.train.card import write_card
from ooo_agent.train.config import TrainConfig, TrainReport

__all__ = ["ADAPTER_FILE", "train_lora"]

ADAPTER_FILE = "adapter_model.safetensors"
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _device_and_dtype(config: TrainConfig) -> tuple[torch.device, torch.dtype]:
    if config.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(config.device)
    if config.dtype != "auto":
        return device, _DTYPES[config.dtype]
    # bf16 only where the hardware has it; on CPU fp32 is both faster and exact.
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return device, torch.bfloat16
    return device, torch.float32


def _wrap_lora(model: Any, config: TrainConfig) -> Any:
    from peft import LoraConfig, PeftModel, get_peft_model

    if isinstance(model, PeftModel):
        raise ValueError("train_lora expects a plain base model, not one already wrapped by peft")
    if config.init_adapter is not None:
        return _warm_start(model, config)
    lora = LoraConfig(
        r=config.r,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    try:
        return get_peft_model(model, lora)
    except ValueError as exc:
        raise ValueError(
            f"cannot place LoRA on modules {list(config.target_modules)} of "
            f"{type(model).__name__}: {exc}"
        ) from exc


def _warm_start(model: Any, config: TrainConfig) -> Any:
    """Wrap ``model`` with the adapter at ``config.init_adapter``, trainable."""
    from peft import PeftConfig, PeftModel

    path = str(config.init_adapter)
    saved = PeftConfig.from_pretrained(path)
    mismatch = {
        name: (mine, theirs)
        for name, mine, theirs in (
            ("r", config.r, getattr(saved, "r", None)),
            ("alpha", config.alpha, getattr(saved, "lora_alpha", None)),
            (
                "target_modules",
                sorted(config.target_modules),
                sorted(getattr(saved, "target_modules", None) or []),
            ),
        )
        if mine != theirs
    }
    if mismatch:
        raise ValueError(
            f"init_adapter {path} does not match the config (config, adapter): {mismatch}"
        )
    peft_model = PeftModel.from_pretrained(model, path, is_trainable=True)
    # Adapters are shipped in fp16; train in the model's dtype.
    dtype = next(model.parameters()).dtype
    for param in _trainable(peft_model).values():
        param.data = param.data.to(dtype)
    return peft_model


Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]


def _collate(examples: Sequence[Example], pad_id: int, device: torch.device) -> Batch:
    """Right-padded ``input_ids``, ``attention_mask``, ``labels`` and (when any example is
    weighted) per-token loss ``weights`` for one micro-batch."""
    width = max(len(ex.input_ids) for ex in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    weighted = any(ex.weights is not None for ex in examples)
    weights = torch.zeros((len(examples), width)) if weighted else None
    for row, ex in enumerate(examples):
        n = len(ex.input_ids)
        input_ids[row, :n] = torch.tensor(ex.input_ids)
        labels[row, ex.prompt_len : n] = input_ids[row, ex.prompt_len : n]
        attention[row, :n] = 1
        if weights is not None:
            own = ex.weights if ex.weights is not None else (1.0,) * ex.completion_len
            weights[row, ex.prompt_len : n] = torch.tensor(own)
    return (
        input_ids.to(device),
        attention.to(device),
        labels.to(device),
        None if weights is None else weights.to(device),
    )


def _accepts_logits_to_keep(model: Any) -> bool:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        return "logits_to_keep" in inspect.signature(base.forward).parameters
    except (TypeError, ValueError):
        return False


def _loss_sum(model: Any, batch: Batch, keep_only: bool) -> tuple[torch.Tensor, int]:
    """Summed (weighted, when the batch has weights) cross-entropy over completion tokens,
    and how many tokens there were."""
    input_ids, attention, labels, weights = batch
    targets = labels[:, 1:]
    token_weights = None if weights is None else weights[:, 1:]
    if keep_only:
        # Project only the positions that predict a completion token: on a small model the
        # vocabulary head is a large share of the compute, and prompts are long.
        positions = (targets != IGNORE_INDEX).any(dim=0).nonzero().squeeze(1)
        logits = model(
            input_ids=input_ids, attention_mask=attention, logits_to_keep=positions, use_cache=False
        ).logits
        targets = targets[:, positions]
        if token_weights is not None:
            token_weights = token_weights[:, positions]
    else:
        logits = model(input_ids=input_ids, attention_mask=attention, use_cache=False).logits
        logits = logits[:, :-1]
    losses = F.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="none",
    )
    if token_weights is not None:
        losses = losses * token_weights.reshape(-1)
    return losses.sum(), int((targets != IGNORE_INDEX).sum())


_TREE_ATTENTION = ("sdpa", "eager")
"""Attention implementations that take an arbitrary 4-D mask (flash attention takes padding
masks only, so it cannot express a trie)."""


def _check_packable(model: Any) -> None:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    impl = getattr(getattr(base, "config", None), "_attn_implementation", None)
    if impl is not None and impl not in _TREE_ATTENTION:
        raise ValueError(
            "pack needs an attention implementation that takes a 4-D mask "
            f"({', '.join(_TREE_ATTENTION)}); this model uses {impl!r}: load it with "
            "attn_implementation='sdpa', or train without pack"
        )


def _packed_loss_sum(
    model: Any, packed: Packed, device: torch.device, dtype: torch.dtype, keep_only: bool
) -> tuple[torch.Tensor, int]:
    """:func:`_loss_sum` of the packed examples, in one forward over their trie."""
    input_ids = torch.tensor([packed.input_ids], device=device)
    positions = torch.tensor([packed.depths], device=device)
    mask = tree_mask(packed.parents, dtype).to(device)
    nodes = torch.tensor([node for node, _, _ in packed.targets], device=device)
    tokens = torch.tensor([token for _, token, _ in packed.targets], device=device)
    weights = torch.tensor([weight for _, _, weight in packed.targets], device=device)
    inputs = {"input_ids": input_ids, "attention_mask": mask, "position_ids": positions}
    if keep_only:
        kept, rows = torch.unique(nodes, sorted=True, return_inverse=True)
        logits = model(**inputs, logits_to_keep=kept, use_cache=False).logits[0, rows]
    else:
        logits = model(**inputs, use_cache=False).logits[0, nodes]
    losses = F.cross_entropy(logits.float(), tokens, reduction="none")
    return (losses * weights).sum(), len(packed.targets)


@torch.no_grad()
def _evaluate(
    model: Any,
    examples: Sequence[Example],
    batch_size: int,
    pad_id: int,
    device: torch.device,
    keep_only: bool,
    pack: tuple[int, torch.dtype] | None = None,
) -> float:
    """Mean completion-token loss over ``examples`` (``pack``: tries of at most that many
    tokens, computed in that dtype)."""
    model.eval()
    if pack is not None:
        max_nodes, dtype = pack
        ordered = sorted(examples, key=lambda ex: ex.input_ids)  # a request's rows side by side
        forwards = (
            _packed_loss_sum(model, packed, device, dtype, keep_only)
            for packed in pack_pieces(ordered, max_nodes)
        )
    else:
        by_length = sorted(examples, key=lambda ex: len(ex.input_ids))
        forwards = (
            _loss_sum(model, _collate(by_length[i : i + batch_size], pad_id, device), keep_only)
            for i in range(0, len(by_length), batch_size)
        )
    total, count = 0.0, 0
    for loss, n in forwards:
        total += float(loss)
        count += n
    model.train()
    return total / max(count, 1)


def _cosine_with_warmup(warmup: int, total: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return factor


def _trainable(model: Any) -> dict[str, torch.nn.Parameter]:
    return {name: p for name, p in model.named_parameters() if p.requires_grad}


def _save_adapter(model: Any, out_dir: Path, save_dtype: torch.dtype) -> Path:
    """Save the adapter in ``save_dtype`` and round the live weights the same way.

    Rounding in place makes the returned model compute exactly what the saved file does.
    """
    with torch.no_grad():
        for param in _trainable(model).values():
            param.copy_(param.to(save_dtype).to(param.dtype))
    out_dir.mkdir(parents=True, exist_ok=True)
    original = {n: p.dtype for n, p in _trainable(model).items()}
    try:
        for param in _trainable(model).values():
            param.data = param.data.to(save_dtype)
        model.save_pretrained(str(out_dir), safe_serialization=True)
    finally:
        for name, param in _trainable(model).items():
            param.data = param.data.to(original[name])
    return out_dir / ADAPTER_FILE


def _record_base_model(out_dir: Path, ref: str) -> None:
    path = out_dir / "adapter_config.json"
    adapter_config = json.loads(path.read_text(encoding="utf-8"))
    adapter_config["base_model_name_or_path"] = ref
    path.write_text(json.dumps(adapter_config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def train_lora(
    config: TrainConfig,
    base_model: Any,
    tokenizer: Any,
    rows: Sequence[Mapping[str, str]],
    eval_rows: Sequence[Mapping[str, str]] | None = None,
    *,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainReport:
    """Train a LoRA adapter on ``rows`` and write it (+ model card) to ``config.out_dir``.

    ``base_model`` is a transformers causal LM; LoRA layers are injected into it in place and
    the returned report's ``adapter_path`` holds the result. ``rows`` / ``eval_rows`` are
    ``{"prompt": str, "completion": str}`` mappings (see :func:`read_rows`). ``on_step(step,
    loss)`` is called after every optimizer step. Raises ``ValueError`` on bad rows or a
    checkpoint that does not match this recipe and data.
    """
    out_dir = Path(config.out_dir)
    if config.num_threads is not None:
        torch.set_num_threads(config.num_threads)
    device, dtype = _device_and_dtype(config)
    examples, skipped = tokenize_rows(rows, tokenizer, config.max_len, config.key_weight)
    eval_examples, _ = tokenize_rows(eval_rows or (), tokenizer, config.max_len)
    if not examples:
        raise ValueError(f"no training rows fit in max_len={config.max_len} tokens")
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
    fingerprint = rows_fingerprint(rows)

    torch.manual_seed(config.seed)  # LoRA A matrices are initialised randomly
    model = _wrap_lora(base_model.to(device=device, dtype=dtype), config)
    model.train()
    params = _trainable(model)
    optimizer = torch.optim.AdamW(params.values(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = math.ceil(math.ceil(len(examples) / config.batch_size) / config.grad_accum)
    total_steps = steps_per_epoch * config.epochs
    warmup = max(1, math.ceil(config.warmup_ratio * total_steps)) if config.warmup_ratio else 0
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, _cosine_with_warmup(warmup, total_steps)
    )
    keep_only = _accepts_logits_to_keep(model)
    if config.pack:
        _check_packable(model)
    per_example = device.type == "cpu" if config.per_example is None else config.per_example
    eval_batch = 1 if per_example else config.batch_size
    lengths = [len(ex.input_ids) for ex in examples]
    families = prefix_families(examples) if config.pack else None
    eval_pack = (config.max_len, dtype) if config.pack else None

    step, tokens_seen, elapsed_before = 0, 0, 0.0
    train_history: list[tuple[int, float]] = []
    eval_history: list[tuple[int, float]] = []
    resumed_from: int | None = None
    ckpt_root = out_dir / "checkpoints"
    checkpoint = latest_checkpoint(ckpt_root) if config.resume else None
    if checkpoint is not None:
        state = load_checkpoint(checkpoint)
        if state["recipe"] != config.recipe() or state["fingerprint"] != fingerprint:
            raise ValueError(
                f"checkpoint {checkpoint} was made with a different recipe or data; "
                "start a fresh run (another --out, or delete its checkpoints/)"
            )
        with torch.no_grad():
            for name, param in params.items():
                param.copy_(state["weights"][name].to(param.dtype))
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        step = resumed_from = int(state["step"])
        tokens_seen, elapsed_before = int(state["tokens_seen"]), float(state["seconds"])
        train_history = [(int(s), float(v)) for s, v in state["train_history"]]
        eval_history = [(int(s), float(v)) for s, v in state["eval_history"]]

    def snapshot() -> dict[str, Any]:
        return {
            "weights": {n: p.detach().to("cpu", copy=True) for n, p in params.items()},
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
            "step": step,
            "tokens_seen": tokens_seen,
            "seconds": elapsed_before + time.perf_counter() - started,
            "train_history": [list(x) for x in train_history],
            "eval_history": [list(x) for x in eval_history],
            "recipe": config.recipe(),
            "fingerprint": fingerprint,
        }

    started = time.perf_counter()
    stop_at = min(total_steps, config.max_steps or total_steps)
    with TrainProgress(total_steps, step, config.log_every, config.progress) as progress:
        if resumed_from is not None:
            progress.note(f"resumed from {checkpoint} (step {resumed_from}/{total_steps})")
        for epoch in range(config.epochs):
            if families is not None:
                batches = plan_families(families, config.batch_size, config.seed, epoch)
            else:
                batches = plan_epoch(
                    lengths, config.batch_size, config.seed, epoch, config.group_by_length
                )
            for index, group in enumerate(accumulation_groups(batches, config.grad_accum)):
                if epoch * steps_per_epoch + index < step or step >= stop_at:
                    continue  # done before the checkpoint we resumed from (or past max_steps)
                group_examples = [[examples[i] for i in batch] for batch in group]
                group_tokens = sum(ex.completion_len for b in group_examples for ex in b)
                group_weight = sum(ex.weight_sum for b in group_examples for ex in b)
                step_loss = 0.0
                # The loss is summed and divided by the group's token count (its summed weight
                # under key_weight), so running a micro-batch as single examples gives the
                # same gradient without padding.
                flat = [ex for b in group_examples for ex in b]
                if config.pack:
                    packs = pack_pieces(flat, config.max_len)
                    forwarded = sum(len(p.input_ids) for p in packs)  # a shared prefix once
                    forwards = (_packed_loss_sum(model, p, device, dtype, keep_only) for p in packs)
                else:
                    pieces = [[ex] for ex in flat] if per_example else group_examples
                    forwarded = sum(len(ex.input_ids) for ex in flat)
                    forwards = (
                        _loss_sum(model, _collate(b, pad_id, device), keep_only) for b in pieces
                    )
                for loss, _ in forwards:  # one forward at a time: each backward frees its graph
                    (loss / group_weight).backward()  # type: ignore[no-untyped-call]
                    step_loss += float(loss.detach())
                if config.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params.values(), config.max_grad_norm)
                lr = optimizer.param_groups[0]["lr"]
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                tokens_seen += group_tokens
                mean_loss = step_loss / group_weight
                train_history.append((step, mean_loss))
                progress.step(step, mean_loss, lr, forwarded)
                if on_step is not None:
                    on_step(step, mean_loss)
                if (
                    eval_examples
                    and config.eval_every
                    and step % config.eval_every == 0
                    and step < total_steps
                ):
                    value = _evaluate(
                        model, eval_examples, eval_batch, pad_id, device, keep_only, eval_pack
                    )
                    eval_history.append((step, value))
                    progress.note(f"step {step}: eval loss {value:.4f}")
                if (
                    config.save_every
                    and (step % config.save_every == 0 or step == stop_at)
                    and step < total_steps
                ):
                    path = save_checkpoint(ckpt_root, step, snapshot(), config.keep_checkpoints)
                    progress.note(f"checkpoint {path}")

    if eval_examples and (not eval_history or eval_history[-1][0] != step):
        value = _evaluate(model, eval_examples, eval_batch, pad_id, device, keep_only, eval_pack)
        eval_history.append((step, value))
    model.eval()
    adapter_path = _save_adapter(model, out_dir, _DTYPES[config.save_dtype])
    if config.base_model_ref:
        _record_base_model(out_dir, config.base_model_ref)
    recent = [v for _, v in train_history[-10:]]
    report = TrainReport(
        out_dir=out_dir,
        adapter_path=adapter_path,
        adapter_bytes=adapter_path.stat().st_size,
        steps=step,
        total_steps=total_steps,
        examples=len(examples),
        eval_examples=len(eval_examples),
        skipped_too_long=skipped,
        train_tokens=tokens_seen,
        seconds=elapsed_before + time.perf_counter() - started,
        train_loss=sum(recent) / len(recent) if recent else None,
        eval_loss=eval_history[-1][1] if eval_history else None,
        train_history=train_history,
        eval_history=eval_history,
        resumed_from_step=resumed_from,
        device=str(device),
        dtype=str(dtype).removeprefix("torch."),
    )
    (out_dir / "train_report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
    write_card(out_dir / "README.md", config, report)
    if step >= total_steps and not config.keep_checkpoints_after:
        shutil.rmtree(ckpt_root, ignore_errors=True)
    return report
