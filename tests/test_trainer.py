"""LoRA trainer mechanics on a tiny random Llama and a byte-level tokenizer (fast, CPU)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from ooo_agent.train import TrainConfig, read_rows, train_lora  # noqa: E402
from ooo_agent.train._batches import (  # noqa: E402
    IGNORE_INDEX,
    decision_spans,
    plan_epoch,
    tokenize_rows,
)
from ooo_agent.train.trainer import _collate  # noqa: E402

EOS = 3  # the byte tokenizer's end-of-turn id


class ByteTokenizer:
    """Bytes + 4 as ids; ``<eot>`` is one special id. Enough for the trainer's needs."""

    pad_token_id = 0
    eos_token_id = EOS

    def __call__(
        self, text: str, add_special_tokens: bool = False, return_offsets_mapping: bool = False
    ) -> dict[str, Any]:
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        at = 0
        for part in text.split("<eot>"):
            ids.extend(b + 4 for b in part.encode("utf-8"))
            offsets.extend((at + i, at + i + 1) for i in range(len(part)))  # ASCII text only
            ids.append(EOS)
            offsets.append((at + len(part), at + len(part) + 5))
            at += len(part) + 5
        out: dict[str, Any] = {"input_ids": ids[:-1]}
        if return_offsets_mapping:
            out["offset_mapping"] = offsets[:-1]
        return out


def tiny_model(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=260,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=EOS,
        tie_word_embeddings=True,
        initializer_range=0.3,  # big enough random logits for a small LoRA to move them
    )
    return transformers.LlamaForCausalLM(config).eval()


def toy_rows(n: int = 12) -> list[dict[str, str]]:
    colours = ["red", "blue", "green", "black"]
    return [
        {"prompt": f"Q{i}: colour of item {i}?\nA: ", "completion": f"{colours[i % 4]}<eot>"}
        for i in range(n)
    ]


def config(tmp_path: Path, **overrides: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "out_dir": tmp_path / "adapter",
        "r": 4,
        "alpha": 8,
        "dropout": 0.1,
        "lr": 3e-2,
        "epochs": 3,
        "batch_size": 2,
        "grad_accum": 2,
        "max_len": 64,
        "progress": False,
        "log_every": 1000,
        "seed": 7,
        "save_dtype": "float32",
    }
    base.update(overrides)
    return TrainConfig(**base)


def lora_weights(model: Any) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}


def test_prompt_tokens_are_masked() -> None:
    tok = ByteTokenizer()
    rows = [
        {"prompt": "abc", "completion": "xy<eot>"},
        {"prompt": "hello ", "completion": "z<eot>"},
    ]
    examples, skipped = tokenize_rows(rows, tok, max_len=64)
    assert skipped == 0
    assert examples[0].prompt_len == 3 and examples[0].completion_len == 3
    ids, attention, labels, weights = _collate(examples, pad_id=0, device=torch.device("cpu"))
    assert weights is None  # unweighted rows: plain cross-entropy
    # row 0: 3 prompt tokens masked, then x, y, <eot>; the padding of row 0 is masked too
    assert (
        labels[0].tolist()
        == [IGNORE_INDEX] * 3 + [ord("x") + 4, ord("y") + 4, EOS] + [IGNORE_INDEX] * 2
    )
    assert labels[1].tolist() == [IGNORE_INDEX] * 6 + [ord("z") + 4, EOS]
    assert attention[0].tolist() == [1] * 6 + [0, 0]
    assert ids[0, 6:].tolist() == [0, 0]


CALL = '<tool_call>\n{"name": "f", "arguments": {"a": "x,}\\"y", "b": [1, 2]}}\n</tool_call><eot>'


def test_decision_spans_are_keys_and_value_ends_outside_strings() -> None:
    text = CALL.split("<eot>")[0]
    marked = [text[start:end] for start, end in decision_spans(text)]
    # keys with their quotes and the , / ] / } that end values (array elements too); the , }
    # and the escaped quote inside the string value are not structure
    assert marked == ['"name"', ",", '"arguments"', '"a"', ",", '"b"', ",", "]", "}", "}"]
    assert decision_spans("no call here, just {prose") == []
    assert decision_spans("plain, text } outside braces") == []


def test_key_weight_weighs_the_call_structure_tokens_only() -> None:
    tok = ByteTokenizer()
    rows = [{"prompt": "p {a, b}: ", "completion": CALL}, {"prompt": "q", "completion": "no<eot>"}]
    plain, _ = tokenize_rows(rows, tok, max_len=256)
    weighted, _ = tokenize_rows(rows, tok, max_len=256, key_weight=3.0)
    assert plain[0].weights is None and plain[0].weight_sum == plain[0].completion_len
    assert [ex.input_ids for ex in weighted] == [ex.input_ids for ex in plain]
    weights = weighted[0].weights
    assert weights is not None and len(weights) == weighted[0].completion_len
    completion = CALL.split("<eot>")[0]
    heavy = "".join(c for c, w in zip(completion, weights, strict=False) if w == 3.0)
    chars = sum(end - start for start, end in decision_spans(completion))
    assert heavy == "".join(completion[s:e] for s, e in decision_spans(completion))
    assert weighted[0].weight_sum == pytest.approx(weighted[0].completion_len + 2.0 * chars)
    assert weighted[1].weights == (1.0, 1.0, 1.0)  # no braces in the answer: nothing weighed
    with pytest.raises(ValueError, match="key_weight"):
        TrainConfig(out_dir="x", key_weight=0)
    assert TrainConfig(out_dir="x", key_weight=2.5).recipe()["key_weight"] == 2.5


def test_weighted_loss_is_the_weighted_sum_of_token_losses(tmp_path: Path) -> None:
    from ooo_agent.train.trainer import _loss_sum, _wrap_lora

    rows = [
        {"prompt": "p: ", "completion": CALL},
        {"prompt": "long prompt: ", "completion": "ok<eot>"},
    ]
    plain, _ = tokenize_rows(rows, ByteTokenizer(), max_len=256)
    weighted, _ = tokenize_rows(rows, ByteTokenizer(), max_len=256, key_weight=3.0)
    model = _wrap_lora(tiny_model(), config(tmp_path, dropout=0.0, max_len=256))
    cpu = torch.device("cpu")
    with torch.no_grad():
        ids, attention, labels, _ = _collate(plain, 0, cpu)
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
        per_token = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), labels[:, 1:], ignore_index=IGNORE_INDEX, reduction="none"
        )
        expected = 0.0
        for row, ex in enumerate(weighted):
            own = ex.weights or (1.0,) * ex.completion_len
            span = per_token[row, ex.prompt_len - 1 : len(ex.input_ids) - 1]
            expected += float((span * torch.tensor(own)).sum())
        for keep_only in (True, False):
            batched, n = _loss_sum(model, _collate(weighted, 0, cpu), keep_only)
            single = sum(
                float(_loss_sum(model, _collate([ex], 0, cpu), keep_only)[0]) for ex in weighted
            )
            unweighted, _ = _loss_sum(model, _collate(plain, 0, cpu), keep_only)
            assert n == sum(ex.completion_len for ex in weighted)
            assert float(batched) == pytest.approx(expected, rel=1e-4)
            assert single == pytest.approx(expected, rel=1e-4)  # a mixed batch pads weights with 1
            assert float(batched) > float(unweighted) * 1.05  # the weights really count


def test_too_long_rows_are_skipped_and_bad_rows_rejected() -> None:
    tok = ByteTokenizer()
    rows = [{"prompt": "x" * 70, "completion": "y<eot>"}, {"prompt": "a", "completion": "b"}]
    examples, skipped = tokenize_rows(rows, tok, max_len=64)
    assert skipped == 1 and len(examples) == 1
    with pytest.raises(ValueError, match="row 0"):
        tokenize_rows([{"prompt": "a"}], tok, max_len=64)
    with pytest.raises(ValueError, match="empty"):
        tokenize_rows([{"prompt": "a", "completion": ""}], tok, max_len=64)


def test_read_rows_reports_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"prompt": "p", "completion": "c"}) + "\n\n{oops\n")
    with pytest.raises(ValueError, match=r"rows.jsonl:3"):
        read_rows(path)
    path.write_text(json.dumps({"prompt": "p", "completion": "c"}) + "\n")
    assert read_rows(path) == [{"prompt": "p", "completion": "c"}]


def test_length_grouped_plan_covers_every_example_once() -> None:
    lengths = [5, 50, 6, 49, 7, 48, 8, 47, 9]
    batches = plan_epoch(lengths, batch_size=2, seed=1, epoch=0, group_by_length=True)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    # grouped: the long examples never share a batch with the short ones (one window here)
    for batch in batches:
        spread = max(lengths[i] for i in batch) - min(lengths[i] for i in batch)
        assert spread <= 2 or len(batch) == 1 or {lengths[i] for i in batch} == {9, 47}
    assert batches == plan_epoch(lengths, 2, 1, 0, True)  # deterministic
    assert batches != plan_epoch(lengths, 2, 1, 1, True)  # reshuffled per epoch


def test_loss_decreases_and_adapter_reloads_identically(tmp_path: Path) -> None:
    from peft import PeftModel

    rows, eval_rows = toy_rows(12), toy_rows(16)[12:]
    cfg = config(
        tmp_path, epochs=6, eval_every=3, save_dtype="float16", command="ooo-agent train x"
    )
    model = tiny_model()
    report = train_lora(cfg, model, ByteTokenizer(), rows, eval_rows)
    first, last = report.train_history[0][1], report.train_history[-1][1]
    assert last < 0.5 * first, report.train_history
    assert report.eval_history[0][0] == 3 and report.eval_history[-1][0] == report.steps
    assert report.eval_loss is not None and report.eval_loss < report.eval_history[0][1]
    assert report.steps == report.total_steps == 6 * 3  # 12 rows / (2 × 2) = 3 steps per epoch

    assert report.adapter_path.is_file()
    card = (cfg.out_dir / "README.md").read_text()  # type: ignore[operator]
    assert "ooo-agent train x" in card and "r / alpha / dropout | 4 / 8 / 0.1" in card
    assert json.loads((Path(cfg.out_dir) / "train_report.json").read_text())["steps"] == 18
    assert not (Path(cfg.out_dir) / "checkpoints").exists()

    probe = torch.tensor([ByteTokenizer()("Q3: colour of item 3?\nA: ")["input_ids"]])
    with torch.no_grad():
        expected = model(input_ids=probe).logits
        reloaded = PeftModel.from_pretrained(tiny_model(), str(cfg.out_dir)).eval()
        actual = reloaded(input_ids=probe).logits
    assert torch.equal(expected, actual)
    from safetensors import safe_open

    with safe_open(str(report.adapter_path), "pt") as handle:
        assert {handle.get_tensor(k).dtype for k in handle.keys()} == {torch.float16}  # noqa: SIM118


def test_resume_continues_exactly_where_it_stopped(tmp_path: Path) -> None:
    rows = toy_rows(12)
    full_cfg = config(tmp_path / "full", epochs=3)
    full = tiny_model()
    full_report = train_lora(full_cfg, full, ByteTokenizer(), rows)

    class Killed(Exception):
        pass

    def kill_at_step_5(step: int, loss: float) -> None:
        if step == 5:
            raise Killed

    cut_cfg = config(tmp_path / "cut", epochs=3, save_every=2)
    with pytest.raises(Killed):
        train_lora(cut_cfg, tiny_model(), ByteTokenizer(), rows, on_step=kill_at_step_5)
    checkpoints = sorted(p.name for p in (Path(cut_cfg.out_dir) / "checkpoints").iterdir())
    assert checkpoints == ["step-000002", "step-000004"]

    resumed_cfg = config(tmp_path / "cut", epochs=3, save_every=2, resume=True)
    resumed = tiny_model()  # the same base; LoRA, optimizer, schedule and RNG come from step 4
    report = train_lora(resumed_cfg, resumed, ByteTokenizer(), rows)
    assert report.resumed_from_step == 4
    assert report.steps == full_report.steps
    assert report.train_history == full_report.train_history
    full_w, resumed_w = lora_weights(full), lora_weights(resumed)
    assert full_w.keys() == resumed_w.keys()
    for name in full_w:
        assert torch.equal(full_w[name], resumed_w[name]), name


def test_resume_refuses_different_data(tmp_path: Path) -> None:
    cfg = config(tmp_path, epochs=2, save_every=1, max_steps=2)
    train_lora(cfg, tiny_model(), ByteTokenizer(), toy_rows(12))
    resumed = config(tmp_path, epochs=2, save_every=1, resume=True)
    with pytest.raises(ValueError, match="different recipe or data"):
        train_lora(resumed, tiny_model(), ByteTokenizer(), toy_rows(8))


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(out_dir="x", batch_size=0)
    with pytest.raises(ValueError, match="dropout"):
        TrainConfig(out_dir="x", dropout=1.5)
    with pytest.raises(ValueError, match="dtype"):
        TrainConfig(out_dir="x", dtype="float8")  # type: ignore[arg-type]
    cfg = TrainConfig(out_dir="x")
    assert (cfg.r, cfg.alpha, cfg.dropout, cfg.seed, cfg.effective_batch) == (
        32,
        64,
        0.05,
        31082027,
        32,
    )


def test_unknown_target_modules_give_a_clear_error(tmp_path: Path) -> None:
    cfg = config(tmp_path, target_modules=("no_such_proj",))
    with pytest.raises(ValueError, match="no_such_proj"):
        train_lora(cfg, tiny_model(), ByteTokenizer(), toy_rows(4))


def test_per_example_and_padded_batches_give_the_same_gradient(tmp_path: Path) -> None:
    from ooo_agent.train.trainer import _loss_sum, _wrap_lora

    examples, _ = tokenize_rows(toy_rows(4), ByteTokenizer(), max_len=64)
    assert len({len(ex.input_ids) for ex in examples}) > 1  # the padded batch really pads
    model = _wrap_lora(tiny_model(), config(tmp_path, dropout=0.0))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1)
    cpu = torch.device("cpu")
    grads = []
    for pieces in ([examples], [[ex] for ex in examples]):
        model.zero_grad()
        total_tokens = sum(ex.completion_len for ex in examples)
        for keep_only in (True, False):  # projecting only completion positions changes nothing
            for batch in pieces:
                loss, n = _loss_sum(model, _collate(batch, 0, cpu), keep_only)
                assert n == sum(ex.completion_len for ex in batch)
                (loss / total_tokens).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad})
    padded, single = grads
    for name in padded:
        torch.testing.assert_close(single[name], padded[name], rtol=1e-4, atol=1e-6)
    assert max(float(g.abs().max()) for g in padded.values()) > 1e-3  # atol is meaningful


def test_per_example_and_padded_runs_train_alike(tmp_path: Path) -> None:
    histories = []
    for per_example in (True, False):
        cfg = config(tmp_path / str(per_example), epochs=2, dropout=0.0, per_example=per_example)
        histories.append(train_lora(cfg, tiny_model(), ByteTokenizer(), toy_rows(8)).train_history)
    single, padded = histories
    assert [s for s, _ in single] == [s for s, _ in padded]
    for (_, a), (_, b) in zip(single, padded, strict=True):
        assert a == pytest.approx(b, rel=1e-3)


def test_warm_start_begins_from_the_given_adapter(tmp_path: Path) -> None:
    from peft import PeftModel

    rows = toy_rows(8)
    first = config(tmp_path / "first", epochs=2, save_dtype="float16")
    train_lora(first, tiny_model(), ByteTokenizer(), rows)
    probe = torch.tensor([ByteTokenizer()("Q5: colour of item 5?\nA: ")["input_ids"]])
    with torch.no_grad():
        start = PeftModel.from_pretrained(tiny_model(), str(first.out_dir)).eval()(probe).logits

    # One step at a vanishing LR: the model is still the adapter it started from.
    warm = config(tmp_path / "warm", max_steps=1, lr=1e-12, init_adapter=first.out_dir)
    train_lora(warm, tiny_model(), ByteTokenizer(), rows)
    with torch.no_grad():
        again = PeftModel.from_pretrained(tiny_model(), str(warm.out_dir)).eval()(probe).logits
    assert torch.allclose(start, again, atol=1e-4)
    with torch.no_grad():
        fresh_logits = tiny_model()(probe).logits
    assert not torch.allclose(start, fresh_logits, atol=1e-2)  # the first adapter did learn
    assert "warm start from the adapter `adapter`" in (Path(warm.out_dir) / "README.md").read_text()
    # Training on from there moves it, and a config that disagrees with the adapter is refused.
    more = config(tmp_path / "more", epochs=2, init_adapter=first.out_dir)
    more_report = train_lora(more, tiny_model(), ByteTokenizer(), rows)
    assert (
        more_report.train_history[0][1]
        < 0.9
        * train_lora(
            config(tmp_path / "fresh", max_steps=1), tiny_model(), ByteTokenizer(), rows
        ).train_history[0][1]
    )
    with pytest.raises(ValueError, match="does not match"):
        train_lora(
            config(tmp_path / "bad", r=8, alpha=16, init_adapter=first.out_dir),
            tiny_model(),
            ByteTokenizer(),
            rows,
        )
