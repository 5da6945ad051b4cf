"""Each drafter alone, and the planner that merges them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ooo_agent.decoding.codec import TokenizerCodec, end_token_ids  # noqa: E402
from ooo_agent.decoding.drafts.base import DraftContext, TokenDraft  # noqa: E402
from ooo_agent.decoding.drafts.hint import HintReader  # noqa: E402
from ooo_agent.decoding.drafts.memory import RetrievalMemory  # noqa: E402
from ooo_agent.decoding.drafts.ngram import NgramDrafter, NgramIndex  # noqa: E402
from ooo_agent.decoding.drafts.recycling import TokenRecycler  # noqa: E402
from ooo_agent.decoding.drafts.schema import SchemaDrafter, continuation_tokens  # noqa: E402
from ooo_agent.decoding.planner import AcceptanceRates, DraftPlanner  # noqa: E402
from ooo_agent.formats.base import TextDraft  # noqa: E402
from ooo_agent.sidecar.base import Hint, HintBox  # noqa: E402
from test_decoding_support import byte_tokenizer  # noqa: E402


def _context(
    generated: Sequence[int], prompt: Sequence[int] = (), codec: Any = None
) -> DraftContext:
    return DraftContext(prompt, list(generated), 0, codec.decode if codec else None)


# -- n-gram ------------------------------------------------------------------------------
def test_ngram_index_prefers_longest_match_then_most_recent() -> None:
    index = NgramIndex([1, 2, 3, 4, 5, 9, 2, 3, 4, 6, 7], min_n=2, max_n=4)
    found = index.continuations([8, 2, 3, 4], max_len=2, limit=4)
    assert found[0] == (3, (6, 7))  # most recent 3-gram match first
    assert (3, (5, 9)) in found
    assert index.continuations([0, 0, 0], max_len=2) == []


def test_ngram_index_skips_the_match_at_its_own_end() -> None:
    index = NgramIndex([1, 2, 3], min_n=3, max_n=3)
    assert index.continuations([1, 2, 3], max_len=4) == []


def test_ngram_drafter_copies_from_prompt_and_labelled_sources() -> None:
    prompt = [10, 11, 12, 13, 14, 15, 16]
    drafter = NgramDrafter(prompt, max_len=3)
    drafts = drafter.draft(_context([50, 11, 12, 13]))
    assert drafts[0] == TokenDraft((14, 15, 16), "ngram", pytest.approx(0.45))
    drafter.set_source("memory", [[30, 31, 32, 33, 34]])
    drafts = drafter.draft(_context([50, 11, 12, 13, 30, 31, 32]))
    assert TokenDraft((33, 34), "memory", pytest.approx(0.45)) in drafts
    drafter.set_source("memory", [])
    assert not [d for d in drafter.draft(_context([1, 30, 31, 32])) if d.source == "memory"]


# -- retrieval memory --------------------------------------------------------------------
def test_memory_returns_most_similar_outputs_and_is_bounded() -> None:
    memory = RetrievalMemory(capacity=2, top_k=2)
    memory.add(torch.tensor([1.0, 0.0]), [1, 2])
    memory.add(torch.tensor([0.0, 1.0]), [3, 4])
    assert memory.query(torch.tensor([0.9, 0.1])) == [(1, 2), (3, 4)]
    memory.add(torch.tensor([0.7, 0.7]), [5, 6])  # evicts [1, 2]
    assert len(memory) == 2
    assert memory.query(torch.tensor([1.0, 0.0]))[0] == (5, 6)
    memory.add(None, [])  # empty outputs are ignored
    assert len(memory) == 2


def test_memory_without_keys_falls_back_to_recency() -> None:
    memory = RetrievalMemory(capacity=4, top_k=2)
    for tokens in ([1], [2], [3]):
        memory.add(None, tokens)
    assert memory.query(None) == [(3,), (2,)]
    strict = RetrievalMemory(top_k=3, min_similarity=0.5)
    strict.add(torch.tensor([1.0, 0.0]), [7])
    assert strict.query(torch.tensor([0.0, 1.0])) == []


# -- token recycling ---------------------------------------------------------------------
def test_recycler_expands_its_table_through_the_template() -> None:
    recycler = TokenRecycler(top_k=3, template=(2, 1))
    recycler.record([5, 6, 7], [[6, 7, 8], [9, 1, 2], [4, 4, 4]])
    drafts = recycler.draft(_context([1, 5]))
    assert [d.tokens for d in drafts] == [(6, 9), (7, 4)]
    assert drafts[0].confidence > drafts[1].confidence
    assert recycler.draft(_context([99])) == []
    with pytest.raises(ValueError):
        TokenRecycler(template=(0,))


# -- schema ------------------------------------------------------------------------------
class FakeSkeleton:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.seen: list[tuple[str, Hint | None]] = []

    def continuations(self, generated: str, hint: Hint | None = None) -> list[TextDraft]:
        self.seen.append((generated, hint))
        drafts = [TextDraft(t, "schema") for t in self.texts]
        if hint is not None and hint.function:
            drafts.insert(0, TextDraft(f'{hint.function}"', "hint"))
        return drafts


def test_continuation_tokens_match_how_the_text_tokenizes_as_a_whole() -> None:
    codec = TokenizerCodec(byte_tokenizer())
    whole = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    for cut in range(1, len(whole)):
        prefix_ids = codec.encode(whole[:cut])
        tokens, how = continuation_tokens(codec, prefix_ids, whole[cut:])
        assert codec.decode(prefix_ids + tokens) == whole, (cut, how)
        if how == "exact":
            # What the tokenizer gives the whole text, after the generated prefix.
            assert (
                prefix_ids + tokens == codec.encode(whole)
                or codec.encode(codec.decode(prefix_ids[-3:]) + whole[cut:])[: len(prefix_ids[-3:])]
                == prefix_ids[-3:]
            )


def test_continuation_tokens_boundary_outcomes_are_counted() -> None:
    codec = TokenizerCodec(byte_tokenizer())
    whole = '<tool_call>\n{"name": "search", "arguments": {"query": "cheap flights to Rome"}}'
    whole_ids = codec.encode(whole)
    drafter = SchemaDrafter(FakeSkeleton([]), codec)
    # The target's output so far always ends on one of its own token boundaries.
    for k in range(1, len(whole_ids)):
        ids = whole_ids[:k]
        drafter.skeleton = FakeSkeleton([codec.decode(whole_ids[k:])])
        (draft,) = drafter.draft(_context(ids, codec=codec))
        assert ids + list(draft.tokens) == whole_ids, k
    assert drafter.boundaries["exact"] == len(whole_ids) - 1
    # Cut anywhere (mid-token), the text still lines up, just not always exactly.
    for cut in range(1, len(whole)):
        ids = codec.encode(whole[:cut])
        drafter.skeleton = FakeSkeleton([whole[cut:]])
        (draft,) = drafter.draft(_context(ids, codec=codec))
        assert codec.decode(ids + list(draft.tokens)) == whole
    assert drafter.boundaries["alone"] > 0


def test_schema_drafter_ranks_continuations_and_passes_the_hint() -> None:
    codec = TokenizerCodec(byte_tokenizer())
    skeleton = FakeSkeleton(['{"name": "', "</tool_call>"])
    box = HintBox()
    reader = HintReader(box, render=lambda h: f"call {h.function}")
    drafter = SchemaDrafter(skeleton, codec, hint=reader)
    generated = codec.encode("<tool_call>\n")
    drafts = drafter.draft(_context(generated, codec=codec))
    assert [d.source for d in drafts] == ["schema", "schema"]
    assert drafts[0].confidence > drafts[1].confidence
    assert skeleton.seen[-1] == ("<tool_call>\n", None)

    box.set_function("search")
    assert reader.poll(3) and reader.text == "call search"
    assert not reader.poll(4)  # nothing new: no snapshot
    drafts = drafter.draft(_context(generated, codec=codec))
    assert drafts[0].source == "hint"
    assert codec.decode(drafts[0].tokens) == 'search"'
    assert box.function_step == 0  # the box's step when the function was set


def test_schema_drafter_reports_the_written_function_once() -> None:
    from ooo_agent.formats import get_format

    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("get_weather", "get_time")
    ]
    codec = TokenizerCodec(byte_tokenizer())
    box = HintBox()
    heard: list[str] = []
    box.on_target_function(heard.append)
    drafter = SchemaDrafter(get_format("hermes").skeleton(tools), codec, hint=HintReader(box))
    assert box.target_reports  # a sidecar may wait for this drafter's report
    drafter.draft(_context(codec.encode('<tool_call>\n{"name": "get_ti'), codec=codec))
    assert box.target_function is None and heard == []
    for text in ('<tool_call>\n{"name": "get_time", "', '<tool_call>\n{"name": "get_time", "a'):
        drafter.draft(_context(codec.encode(text), codec=codec))
    assert box.target_function == "get_time" and heard == ["get_time"]
    # A skeleton that cannot tell the function: no promise to report.
    plain = HintBox()
    SchemaDrafter(FakeSkeleton([]), codec, hint=HintReader(plain))
    assert not plain.target_reports


def test_schema_drafter_survives_a_broken_skeleton() -> None:
    class Broken:
        def continuations(self, generated: str, hint: Any = None) -> list[TextDraft]:
            raise RuntimeError("bug")

    drafter = SchemaDrafter(Broken(), TokenizerCodec(byte_tokenizer()))
    assert drafter.draft(_context([1], codec=drafter.codec)) == []
    assert drafter.errors == 1


def test_hint_reader_marks_steps_and_drops_unrenderable_hints() -> None:
    box = HintBox()
    reader = HintReader(box, render=lambda h: h.function or "")
    box.set_slot("y", 0)  # before any draft: usable from step 0
    reader.poll(2)
    box.set_function("f")
    box.set_slot("x", 1)
    # Landed after step 2's drafts were built: step 3 is the first that can use it.
    assert box.slot_steps == {"y": 0, "x": 3} and box.function_step == 3
    assert reader.poll(5)
    assert reader.hint == Hint("f", {"y": 0, "x": 1}, False) and reader.text == "f"
    # Changed: a hint that cannot be rendered used to stay in use (its text None); it is now
    # dropped for the rest of the call, the reason in the box for the call's stats.
    broken = HintBox()
    reader = HintReader(broken, render=lambda h: 1 / 0)  # type: ignore[arg-type,return-value]
    broken.set_slot("y", 0)
    reader.poll(0)
    assert reader.hint is None and reader.text is None
    assert broken.dropped is not None and "ZeroDivisionError" in broken.dropped
    broken.set_slot("x", 1)
    reader.poll(1)
    assert reader.hint is None and broken.snapshot().empty


def test_end_token_ids_include_end_of_turn_markers() -> None:
    tok = byte_tokenizer()
    ids = end_token_ids(tok)
    assert tok.convert_tokens_to_ids("<|im_end|>") in ids
    assert tok.convert_tokens_to_ids("<|endoftext|>") in ids


# -- planner -----------------------------------------------------------------------------
class Fixed:
    def __init__(self, drafts: list[TokenDraft]) -> None:
        self.drafts = drafts

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        return list(self.drafts)

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None


def test_planner_spends_budget_on_expected_gain() -> None:
    schema = TokenDraft((1, 2, 3, 4), "schema")
    guess = TokenDraft((7, 8, 9), "recycling", 0.5)
    planner = DraftPlanner([Fixed([guess, schema])], budget=5, min_gain=0.0)
    tree = planner.plan(_context([0]))
    # The confident schema draft is inserted first and whole; the guess gets the rest.
    assert tree.tokens[1:5] == (1, 2, 3, 4)
    assert tree.tokens[5:] == (7,)
    strict = DraftPlanner([Fixed([guess, schema])], budget=16, min_gain=0.5)
    assert 7 not in strict.plan(_context([0])).tokens


def test_planner_uses_fallback_only_when_others_are_silent() -> None:
    fallback = Fixed([TokenDraft((5,), "recycling")])
    planner = DraftPlanner([Fixed([])], fallback=[fallback], budget=4, min_gain=0.0)
    assert planner.plan(_context([0])).tokens == (0, 5)
    planner = DraftPlanner(
        [Fixed([TokenDraft((6,), "ngram")])], fallback=[fallback], budget=4, min_gain=0.0
    )
    assert planner.plan(_context([0])).tokens == (0, 6)


def test_acceptance_rates_learn_from_verdicts() -> None:
    rates = AcceptanceRates({"ngram": (0.5, 0.5)})
    planner = DraftPlanner([Fixed([TokenDraft((1, 2), "ngram")])], rates=rates, min_gain=0.0)
    tree = planner.plan(_context([0]))
    for _ in range(8):
        planner.observe(_context([0]), tree, [0])  # first token always rejected
    assert rates.first("ngram") < 0.25
    assert rates.next("ngram") == pytest.approx(0.5)  # never had a chance
    snapshot = rates.snapshot()
    assert snapshot["first"]["ngram"] == {"rate": round(rates.first("ngram"), 4), "seen": 8}
    assert snapshot["next"]["ngram"] == {"rate": 0.5, "seen": 0}  # the prior alone


def test_a_fresh_target_drafts_a_whole_64_token_hint() -> None:
    """The hint's prior keeps every node of a 64-token hint above ``min_gain``: a fresh
    target's first call can verify a whole call in one step."""
    hint = TokenDraft(tuple(range(1, 65)), "hint")
    tree = DraftPlanner([Fixed([hint])], budget=64).build(0, [hint])
    assert len(tree) - 1 == 64
