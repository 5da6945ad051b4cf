"""Rows sharing a prompt prefix, packed into one forward over their token trie: the same loss
and gradient as one forward per row, on a tiny random Llama."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("transformers")

from tests.test_trainer import ByteTokenizer, config, lora_weights, tiny_model  # noqa: E402

from ooo_agent.train import train_lora  # noqa: E402
from ooo_agent.train._batches import tokenize_rows  # noqa: E402
from ooo_agent.train._packing import (  # noqa: E402
    pack_pieces,
    plan_families,
    prefix_families,
    tree_mask,
)
from ooo_agent.train.trainer import (  # noqa: E402
    _collate,
    _evaluate,
    _loss_sum,
    _packed_loss_sum,
    _wrap_lora,
)

CPU = torch.device("cpu")


def family_rows(requests: int = 4) -> list[dict[str, str]]:
    """Sidecar-like rows: per request, a long shared prompt and one question per slot."""
    rows = []
    colours = ["red", "blue", "green", "black"]
    for r in range(requests):
        shared = f"System: answer.\nUser {r}: paint the item {colours[r % 4]}, size {r + 2}.\n"
        rows.append({"prompt": shared + "Q: colour? A: ", "completion": f"{colours[r % 4]}<eot>"})
        rows.append({"prompt": shared + "Q: size? A: ", "completion": f"{r + 2}<eot>"})
        rows.append({"prompt": shared + "Q: shape? A: ", "completion": "null<eot>"})
    return rows


def test_the_trie_shares_the_prefix_and_keeps_every_target() -> None:
    rows = [
        {"prompt": "abcX", "completion": "y<eot>"},
        {"prompt": "abcZ", "completion": "w<eot>"},
        {"prompt": "abcZ", "completion": "v<eot>"},  # the same prompt, another answer
    ]
    examples, _ = tokenize_rows(rows, ByteTokenizer(), max_len=64)
    (packed,) = pack_pieces(examples, max_nodes=10**6)
    # a, b, c once; X y <eot>; Z then w <eot> and v <eot>
    assert len(packed.input_ids) == 3 + 3 + 1 + 2 + 2
    assert packed.rows == 3
    assert packed.parents[:3] == (-1, 0, 1)
    for node, parent in enumerate(packed.parents):
        assert packed.depths[node] == (0 if parent < 0 else packed.depths[parent] + 1)
    assert max(packed.depths) == len(examples[0].input_ids) - 1  # a position per row's token
    z = packed.input_ids.index(ord("Z") + 4)
    assert sorted(t for node, t, _ in packed.targets if node == z) == sorted(
        [ord("w") + 4, ord("v") + 4]
    )
    assert len(packed.targets) == sum(ex.completion_len for ex in examples) == 6
    mask = tree_mask(packed.parents, torch.float32)[0, 0]
    visible = (mask == 0).nonzero().tolist()
    seen_by_z = sorted(j for i, j in visible if i == z)
    assert seen_by_z == [0, 1, 2, z]  # its ancestors and itself, not the X branch
    assert float(mask.min()) == torch.finfo(torch.float32).min


def test_packed_loss_and_gradient_equal_one_forward_per_row(tmp_path: Path) -> None:
    rows = family_rows(3)
    rows.append({"prompt": rows[0]["prompt"], "completion": "blue<eot>"})  # two targets, one node
    examples, _ = tokenize_rows(rows, ByteTokenizer(), max_len=128, key_weight=2.0)
    model = _wrap_lora(tiny_model(), config(tmp_path, dropout=0.0, max_len=128))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1)
    total = sum(ex.weight_sum for ex in examples)
    grads, losses = [], []
    for packed_run in (False, True):
        for keep_only in (True, False):
            model.zero_grad()
            summed = 0.0
            if packed_run:
                pieces = pack_pieces(examples, max_nodes=128)
                assert 1 < len(pieces) < len(examples)  # shared prefixes packed, the cap honoured
                assert all(len(p.input_ids) <= 128 for p in pieces)
                for packed in pieces:
                    loss, n = _packed_loss_sum(model, packed, CPU, torch.float32, keep_only)
                    assert n == len(packed.targets)
                    (loss / total).backward()
                    summed += float(loss.detach())
            else:
                for ex in examples:
                    loss, _ = _loss_sum(model, _collate([ex], 0, CPU), keep_only)
                    (loss / total).backward()
                    summed += float(loss.detach())
            losses.append(summed)
            grads.append(
                {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
            )
    assert losses[2] == pytest.approx(losses[0], rel=1e-5)
    assert losses[3] == pytest.approx(losses[0], rel=1e-5)
    for other in grads[1:]:
        for name, grad in grads[0].items():
            torch.testing.assert_close(other[name], grad, rtol=1e-4, atol=1e-6)
    assert max(float(g.abs().max()) for g in grads[0].values()) > 1e-3  # atol is meaningful
    packed_tokens = sum(len(p.input_ids) for p in pack_pieces(examples, 128))
    assert packed_tokens < 0.6 * sum(len(ex.input_ids) for ex in examples)


def test_families_are_a_requests_rows_and_stay_together() -> None:
    examples, _ = tokenize_rows(family_rows(5), ByteTokenizer(), max_len=128)
    families = prefix_families(examples)
    assert sorted(sorted(f) for f in families) == [[3 * r, 3 * r + 1, 3 * r + 2] for r in range(5)]
    plan = plan_families(families, batch_size=4, seed=1, epoch=0)
    flat = [i for batch in plan for i in batch]
    assert sorted(flat) == list(range(15)) and all(len(b) == 4 for b in plan[:-1])
    for family in families:
        spots = sorted(flat.index(i) for i in family)
        assert spots == list(range(spots[0], spots[0] + 3))  # contiguous
    assert plan_families(families, 4, 1, 0) == plan  # deterministic
    assert plan_families(families, 4, 1, 1) != plan  # another epoch, another order


def test_packed_evaluation_gives_the_same_loss(tmp_path: Path) -> None:
    examples, _ = tokenize_rows(family_rows(3), ByteTokenizer(), max_len=128)
    model = _wrap_lora(tiny_model(), config(tmp_path, max_len=128))
    plain = _evaluate(model, examples, 1, 0, CPU, True)
    packed = _evaluate(model, examples, 1, 0, CPU, True, (128, torch.float32))
    assert packed == pytest.approx(plain, rel=1e-5)
    assert model.training  # evaluation hands the model back in training mode


def test_a_packed_run_learns_and_resumes_exactly(tmp_path: Path) -> None:
    rows = family_rows(4)
    full_cfg = config(tmp_path / "full", epochs=4, pack=True, max_len=128)
    full = tiny_model()
    report = train_lora(full_cfg, full, ByteTokenizer(), rows, family_rows(5)[12:])
    assert report.train_history[-1][1] < 0.5 * report.train_history[0][1], report.train_history
    assert report.steps == 4 * 3  # 12 rows / (2 × 2) per step
    card = (Path(full_cfg.out_dir) / "README.md").read_text()
    assert "packed into one forward" in card

    class Killed(Exception):
        pass

    def kill_at_step_5(step: int, loss: float) -> None:
        if step == 5:
            raise Killed

    cut = config(tmp_path / "cut", epochs=4, pack=True, max_len=128, save_every=2)
    with pytest.raises(Killed):
        train_lora(cut, tiny_model(), ByteTokenizer(), rows, on_step=kill_at_step_5)
    unpacked = config(tmp_path / "cut", epochs=4, max_len=128, save_every=2, resume=True)
    with pytest.raises(ValueError, match="different recipe"):
        train_lora(unpacked, tiny_model(), ByteTokenizer(), rows)  # packing is in the recipe
    resumed = tiny_model()
    again = config(tmp_path / "cut", epochs=4, pack=True, max_len=128, save_every=2, resume=True)
    resumed_report = train_lora(again, resumed, ByteTokenizer(), rows)
    assert resumed_report.resumed_from_step == 4
    assert resumed_report.train_history == report.train_history  # the same run, continued
    for name, weight in lora_weights(full).items():
        assert torch.equal(lora_weights(resumed)[name], weight), name


def test_packing_refuses_an_attention_that_cannot_take_a_tree_mask(tmp_path: Path) -> None:
    model = tiny_model()
    model.config._attn_implementation = "flash_attention_2"  # padding masks only
    with pytest.raises(ValueError, match="4-D mask"):
        train_lora(config(tmp_path, pack=True, max_len=128), model, ByteTokenizer(), family_rows(2))


def _tokens_per_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, pack: bool) -> list[int]:
    """The ``tokens`` each optimizer step reports to the progress display, one epoch."""
    from ooo_agent.train._progress import TrainProgress

    counted: list[int] = []
    original = TrainProgress.step

    def record(self: TrainProgress, step: int, loss: float, lr: float, tokens: int) -> None:
        counted.append(tokens)
        original(self, step, loss, lr, tokens)

    with monkeypatch.context() as patch:
        patch.setattr(TrainProgress, "step", record)
        cfg = config(tmp_path / str(pack), epochs=1, pack=pack, max_len=128)
        train_lora(cfg, tiny_model(), ByteTokenizer(), family_rows(4))
    return counted


def test_progress_counts_the_tokens_each_step_puts_through_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples, _ = tokenize_rows(family_rows(4), ByteTokenizer(), 128)
    rows_tokens = sum(len(ex.input_ids) for ex in examples)
    unpacked = _tokens_per_step(tmp_path, monkeypatch, pack=False)
    packed = _tokens_per_step(tmp_path, monkeypatch, pack=True)
    assert len(unpacked) == len(packed) == 3
    assert sum(unpacked) == rows_tokens  # one forward per row: every row's tokens
    # Packed, a request's three rows share their prompt: fewer tokens, never under a third.
    assert rows_tokens / 3 < sum(packed) < 0.8 * rows_tokens, (packed, rows_tokens)
