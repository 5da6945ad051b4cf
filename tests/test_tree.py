"""Token trie, tree masks and positions, per-node logits and KV compaction."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ooo_agent.decoding.kv import cache_length, compact_cache, new_cache  # noqa: E402
from ooo_agent.decoding.tree import TreeBuilder, TreeMaskCache  # noqa: E402
from ooo_agent.decoding.verify import TreeVerifier, accept_path  # noqa: E402
from test_decoding_support import ARCHS, ATTENTIONS, tiny_model  # noqa: E402


def _sample_tree() -> TreeBuilder:
    builder = TreeBuilder(root_token=5, budget=16)
    builder.add([7, 8, 9], "schema")
    builder.add([7, 8, 4], "ngram")
    builder.add([3, 3], "recycling")
    return builder


def test_trie_stores_shared_prefixes_once_and_keeps_first_source() -> None:
    tree = _sample_tree().build()
    assert tree.tokens == (5, 7, 8, 9, 4, 3, 3)
    assert tree.parents == (-1, 0, 1, 2, 2, 0, 5)
    assert tree.depths == (0, 1, 2, 3, 3, 1, 2)
    assert tree.sources[4] == "ngram" and tree.sources[2] == "schema"
    assert tree.children[2] == {9: 3, 4: 4}
    assert tree.internal_nodes == [0, 1, 2, 5]
    assert tree.path_to(4) == [0, 1, 2, 4]


def test_budget_cuts_a_draft_where_it_runs_out() -> None:
    builder = TreeBuilder(root_token=1, budget=3)
    assert builder.add([2, 3], "a") == 2
    assert builder.add([2, 3, 4, 5, 6], "b") == 1  # 2, 3 shared; only 4 fits
    assert builder.full
    assert builder.build().tokens == (1, 2, 3, 4)
    with pytest.raises(ValueError):
        TreeBuilder(1, -1)


def test_mask_lets_each_node_see_prefix_ancestors_and_itself() -> None:
    tree = _sample_tree().build()
    masks = TreeMaskCache(torch.float32, torch.device("cpu"))
    mask, positions = masks.attention_inputs(tree.parents, past_length=4)
    assert mask.shape == (1, 1, 7, 11)
    visible = mask[0, 0] == 0
    assert visible[:, :4].all()  # the whole prefix, for every node
    assert visible[4, 4:].tolist() == [True, True, True, False, True, False, False]
    assert visible[6, 4:].tolist() == [True, False, False, False, False, True, True]
    assert positions.tolist() == [[4, 5, 6, 7, 7, 5, 6]]
    again, _ = masks.attention_inputs(tree.parents, past_length=9)
    assert again.shape == (1, 1, 7, 16)
    assert masks.tree_part(tree.parents)[0] is masks.tree_part(tree.parents)[0]  # cached


def test_accept_path_follows_target_choices_and_returns_bonus() -> None:
    tree = _sample_tree().build()
    choices = {0: 7, 1: 8, 2: 4, 4: 42}
    path, bonus = accept_path(tree, choices.__getitem__)
    assert path == [0, 1, 2, 4] and bonus == 42
    path, bonus = accept_path(tree, {0: 11}.__getitem__)
    assert path == [0] and bonus == 11


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("arch", ARCHS)
def test_tree_logits_equal_sequential_and_compaction_equals_sequential_cache(
    arch: str, attention: str
) -> None:
    model = tiny_model(arch, attention, dtype=torch.float32, seed=3)
    prompt = [1, 5, 9, 23, 44, 2, 8, 17]
    verifier = TreeVerifier(model, split_head=False)
    cache = new_cache()
    with torch.no_grad():
        verifier.prefill(cache, prompt, 0)
        tree = _sample_tree().build()
        mask, positions = verifier.masks.attention_inputs(tree.parents, len(prompt))
        logits = model(
            input_ids=torch.tensor([tree.tokens]),
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
        ).logits[0]
        for node in range(len(tree)):
            path_tokens = [tree.tokens[i] for i in tree.path_to(node)]
            sequential = model(input_ids=torch.tensor([prompt + path_tokens])).logits[0, -1]
            assert torch.allclose(logits[node], sequential, atol=1e-4), node

        keep = [0, 1, 2, 4]  # a non-contiguous accepted path
        compact_cache(cache, len(prompt), keep)
        assert cache_length(cache) == len(prompt) + len(keep)
        reference = new_cache()
        model(input_ids=torch.tensor([prompt + [tree.tokens[i] for i in keep]]), cache=reference)
        for ours, theirs in zip(cache.layers, reference.layers, strict=True):
            assert torch.allclose(ours.keys, theirs.keys, atol=1e-5)
            assert torch.allclose(ours.values, theirs.values, atol=1e-5)


def test_split_head_verify_matches_full_forward() -> None:
    model = tiny_model("qwen2", dtype=torch.float32, seed=4)
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    verdicts = []
    for split in (True, False):
        verifier = TreeVerifier(model, split_head=split)
        assert verifier.splits_head is split
        cache = new_cache()
        first, hidden, _ = verifier.prefill(cache, prompt, 0)
        assert (hidden is not None) is split
        builder = TreeBuilder(first, 8)
        builder.add([5, 5, 5], "a")
        builder.add([7], "b")
        verdicts.append(verifier.verify(builder.build(), cache, len(prompt), top_k=3))
    assert verdicts[0].path == verdicts[1].path and verdicts[0].bonus == verdicts[1].bonus
    assert verdicts[0].path_top == verdicts[1].path_top
    assert all(len(top) == 3 for top in verdicts[0].path_top)


def test_buffer_cache_grows_past_its_first_capacity() -> None:
    model = tiny_model("llama", seed=5)
    verifier = TreeVerifier(model)
    cache = new_cache()
    prompt = [i % 90 + 1 for i in range(300)]  # more than the initial 256 slots
    token, _, logits = verifier.prefill(cache, prompt, 0)
    reference = model(input_ids=torch.tensor([prompt])).logits[0, -1]
    assert cache_length(cache) == 300
    assert token == int(reference.argmax())
    assert torch.allclose(logits, reference, atol=1e-9)


def test_a_grown_buffer_holds_at_most_a_quarter_more_than_its_tokens() -> None:
    from ooo_agent.decoding.prefix_cache import cache_bytes

    model = tiny_model("llama", seed=5)
    verifier = TreeVerifier(model)
    cache = new_cache()
    prompt = [i % 90 + 1 for i in range(1100)]
    logits = None
    for end in (40, 300, 700, 1100):  # a conversation's turns, each prefilled after the last
        past = cache_length(cache)
        _, _, logits = verifier.prefill(cache, prompt[past:end], past)
        capacity = cache.layers[0]._key_buffer.shape[-2]
        assert end <= capacity <= max(end + 2 * 256, end * 5 // 4 + 256)
        assert capacity % 256 == 0
    assert cache_bytes(cache) // capacity * 2048 > cache_bytes(cache)  # doubling: 2048 slots
    reference = model(input_ids=torch.tensor([prompt])).logits[0, -1]
    assert logits is not None and torch.allclose(logits, reference, atol=1e-9)
