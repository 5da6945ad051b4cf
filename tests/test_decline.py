"""The decline policy: no call when the target is not sure one is wanted, the same in every
mode; above the threshold nothing changes."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ooo_agent.bench.datasets import BenchItem  # noqa: E402
from ooo_agent.caller import FastToolCaller  # noqa: E402
from ooo_agent.cli.options import add_decline_option, probability  # noqa: E402
from ooo_agent.decoding.decline import DeclinePolicy, call_start_ids  # noqa: E402
from ooo_agent.formats import HermesFormat, JsonFormat  # noqa: E402
from ooo_agent.sidecar.base import HintBox  # noqa: E402
from ooo_agent.targets.base import Generation, TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from ooo_agent.train.eval_target import evaluate_items, labelled_line, score_output  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402
from test_hf_target import MESSAGES, TOOLS  # noqa: E402  (get_weather: city, unit)

PIECES = ["<", "tool", "_call", ">", "Sorry", ",", " no", "{", '"name"', " language", "x"]
"""A toy vocabulary: token id i is ``PIECES[i]``."""


def _decode(ids: Sequence[int]) -> str:
    return "".join(PIECES[i] for i in ids)


def _logits(probabilities: dict[str, float]) -> torch.Tensor:
    """Logits whose softmax gives each named piece its probability (the rest share what is
    left equally)."""
    rest = (1.0 - sum(probabilities.values())) / (len(PIECES) - len(probabilities))
    return torch.tensor([math.log(probabilities.get(p, rest)) for p in PIECES])


def _id(piece: str) -> int:
    return PIECES.index(piece)


class Recording:
    """An inner constraint that records what it is asked and returns the greedy token."""

    def __init__(self) -> None:
        self.overrides = 0
        self.asked: list[list[int]] = []

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        self.asked.append(list(generated))
        self.overrides += 1  # as if it had changed the token
        return greedy


def _policy(threshold: float, inner: Recording | None = None) -> DeclinePolicy:
    return DeclinePolicy({_id("<")}, threshold, _decode, marker="<tool_call>", inner=inner)


def test_a_sure_call_is_left_to_the_inner_constraint() -> None:
    inner = Recording()
    policy = _policy(0.9, inner)
    logits = _logits({"<": 0.95, "Sorry": 0.04})
    assert policy.choose([], logits, _id("<")) == _id("<")
    assert policy.call_probability == pytest.approx(0.95, abs=1e-6)
    assert not policy.declined
    assert policy.choose([_id("<")], logits, _id("tool")) == _id("tool")
    assert inner.asked == [[], [_id("<")]]
    assert policy.overrides == 2  # the inner constraint's count shows through


def test_an_unsure_call_is_refused_at_the_first_token() -> None:
    inner = Recording()
    policy = _policy(0.9, inner)
    logits = _logits({"<": 0.6, "Sorry": 0.3})
    assert policy.choose([], logits, _id("<")) == _id("Sorry")
    assert policy.declined
    assert policy.call_probability == pytest.approx(0.6, abs=1e-6)
    assert policy.overrides == 1
    assert inner.asked == []  # declined: no call to constrain


def test_a_declined_answer_opens_no_call_later() -> None:
    policy = _policy(0.9)
    policy.choose([], _logits({"<": 0.2, "Sorry": 0.7}), _id("Sorry"))
    written = [_id("Sorry"), _id(","), _id("<"), _id("tool")]
    # "_call" would write "<tool_call" (a tag name, whatever attributes follow): refused.
    logits = _logits({"_call": 0.8, " no": 0.1})
    assert policy.choose(written, logits, _id("_call")) == _id(" no")
    # Text that does not complete the marker is kept.
    assert policy.choose(written[:2], logits, _id("<")) == _id("<")
    assert policy.overrides == 1


def test_a_decline_is_told_once_with_its_probability() -> None:
    told: list[float] = []
    policy = DeclinePolicy({_id("<")}, 0.9, _decode, on_decline=told.append)
    policy.choose([], _logits({"<": 0.25, "Sorry": 0.7}), _id("Sorry"))
    policy.choose([_id("Sorry")], _logits({",": 0.9}), _id(","))
    assert told == [pytest.approx(0.25, abs=1e-6)]
    sure = DeclinePolicy({_id("<")}, 0.9, _decode, on_decline=told.append)
    sure.choose([], _logits({"<": 0.95}), _id("<"))
    assert len(told) == 1  # a call is made: nothing told


def test_not_calling_already_is_no_override() -> None:
    policy = _policy(0.9)
    assert policy.choose([], _logits({"<": 0.1, "Sorry": 0.8}), _id("Sorry")) == _id("Sorry")
    assert policy.declined and policy.overrides == 0


@pytest.mark.parametrize(("threshold", "declined"), [(0.0, False), (0.5, False), (1.0, True)])
def test_the_threshold_bounds(threshold: float, declined: bool) -> None:
    policy = _policy(threshold)
    policy.choose([], _logits({"<": 0.7}), _id("<"))
    assert policy.declined is declined


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="start_ids"):
        DeclinePolicy(set(), 0.5, _decode)
    with pytest.raises(ValueError, match="threshold"):
        DeclinePolicy({0}, -0.1, _decode)
    with pytest.raises(ValueError, match="no tokens"):
        call_start_ids(lambda text: [], "<tool_call>")


def test_call_start_and_opening_per_format() -> None:
    hermes, plain = HermesFormat(), JsonFormat()
    assert hermes.call_opening == "<tool_call>"
    assert plain.call_opening == ""  # bare JSON calls
    encode = lambda text: [ord(c) for c in text]  # noqa: E731
    assert call_start_ids(encode, hermes.render_calls([("f", {})])) == {ord("<")}
    assert call_start_ids(encode, plain.render_calls([("f", {})])) == {ord("{")}


def test_the_decline_below_option() -> None:
    parser = argparse.ArgumentParser()
    add_decline_option(parser.add_argument)
    assert parser.parse_args([]).decline_below is None
    assert parser.parse_args(["--decline-below", "0.98"]).decline_below == 0.98
    for bad in ("1.5", "-0.1", "high"):
        with pytest.raises(argparse.ArgumentTypeError):
            probability(bad)


# -- HFTarget ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parts() -> tuple[Any, Any]:
    tokenizer = byte_tokenizer()
    return tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21), tokenizer


def _run(target: HFTarget, mode: str, box: HintBox | None = None) -> Generation:
    request = TargetRequest(MESSAGES, TOOLS, mode=mode, max_new_tokens=40, hint_box=box)  # type: ignore[arg-type]
    return target.generate_sync(request)


def test_a_target_that_declines_does_so_in_every_mode(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    target = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=1.0)
    box = HintBox()  # a hint for a whole call: its drafts must all be refused
    box.set_function("get_weather")
    box.set_slot("city", "Paris")
    box.finish()
    runs = [_run(target, "vanilla"), _run(target, "toolspec"), _run(target, "ooo", box)]
    assert [g.token_ids for g in runs[1:]] == [runs[0].token_ids] * 2
    for generation in runs:
        assert generation.stats.declined
        assert generation.raw_calls == []  # words, whatever they hold
        assert "<tool_call" not in generation.text
        assert generation.stats.call_probability is not None
        assert 0.0 <= generation.stats.call_probability < 1.0


def test_a_declining_target_tells_the_hint_box_in_every_mode(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    declining = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=1.0)
    calling = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=0.0)
    for mode in ("vanilla", "toolspec", "ooo"):
        told, untold = HintBox(), HintBox()
        assert _run(declining, mode, told).stats.declined
        assert told.no_call is not None and "declined to call a tool" in told.no_call
        assert "below 100.0%" in told.no_call
        assert not _run(calling, mode, untold).stats.declined
        assert untold.no_call is None


def test_a_target_that_never_declines_writes_what_it_would_without(
    parts: tuple[Any, Any],
) -> None:
    model, tokenizer = parts
    plain = HFTarget(model, tokenizer, "hermes", node_budget=16)
    policy = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=0.0)
    for mode in ("vanilla", "toolspec"):
        before, after = _run(plain, mode), _run(policy, mode)
        assert after.token_ids == before.token_ids
        assert before.stats.call_probability is None and not before.stats.declined
        assert after.stats.call_probability is not None and not after.stats.declined
        assert after.raw_calls is None  # parsed by the format, as without the policy


def test_only_a_users_request_with_tools_is_asked(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    target = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=1.0)
    out = target.generate_sync(TargetRequest(MESSAGES, [], mode="vanilla", max_new_tokens=8))
    assert out.stats.call_probability is None and not out.stats.declined  # no tools
    after_result = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    out = target.generate_sync(
        TargetRequest(after_result, TOOLS, mode="vanilla", max_new_tokens=8)  # type: ignore[arg-type]
    )
    # After a tool's result, calling again or answering is the model's own choice.
    assert out.stats.call_probability is None and not out.stats.declined


def _after_result() -> list[dict[str, Any]]:
    call = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    return [
        *MESSAGES,
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": call}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]  # fmt: skip


def test_after_a_result_call_again_below_decides_in_every_mode(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    never = HFTarget(model, tokenizer, "hermes", node_budget=16, call_again_below=1.0)
    always = HFTarget(model, tokenizer, "hermes", node_budget=16, call_again_below=0.0)
    plain = HFTarget(model, tokenizer, "hermes", node_budget=16)
    runs = {}
    for mode in ("vanilla", "toolspec", "ooo"):
        request = TargetRequest(_after_result(), TOOLS, mode=mode, max_new_tokens=40)  # type: ignore[arg-type]
        declined = never.generate_sync(request)
        assert declined.stats.declined and declined.raw_calls == []
        assert "<tool_call" not in declined.text
        assert declined.stats.call_probability is not None
        kept = always.generate_sync(request)
        assert not kept.stats.declined
        assert kept.token_ids == plain.generate_sync(request).token_ids  # nothing else changes
        runs[mode] = declined.token_ids
    assert runs["toolspec"] == runs["ooo"] == runs["vanilla"]
    # A user's turn is decline_below's, not call_again_below's.
    fresh = never.generate_sync(TargetRequest(MESSAGES, TOOLS, mode="vanilla", max_new_tokens=8))  # type: ignore[arg-type]
    assert fresh.stats.call_probability is None and not fresh.stats.declined
    with pytest.raises(ValueError, match="call_again_below"):
        HFTarget(model, tokenizer, call_again_below=-0.1)


def test_decline_below_is_a_probability(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    with pytest.raises(ValueError, match="decline_below"):
        HFTarget(model, tokenizer, decline_below=1.5)


# -- what readers of a declined answer see ------------------------------------------------------


class Declining:
    """A target whose answer quotes a call it declined to make."""

    format = HermesFormat()
    modes = ("vanilla",)

    async def generate(self, request: TargetRequest) -> Generation:
        text = 'Sorry. {"name": "get_weather", "arguments": {"city": "Paris"}}'
        generation = Generation(text=text, raw_calls=[])
        generation.stats.declined = True
        return generation


@pytest.mark.anyio
async def test_the_caller_dispatches_nothing_for_a_declined_answer() -> None:
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return "sunny"

    result = await FastToolCaller(Declining()).call(MESSAGES, [get_weather])  # type: ignore[arg-type]
    assert result.calls == [] and result.results == [] and result.errors == []
    assert result.text.startswith("Sorry.")
    assert result.stats.decode.declined
    assert ran == []


def _item(gold: list[Any], category: str = "simple_python") -> BenchItem:
    return BenchItem(
        id="x", category=category, messages=MESSAGES, tools=TOOLS, gold=gold, language="python"
    )


def test_a_declined_output_is_scored_as_no_call() -> None:
    fmt = HermesFormat()
    quoted = fmt.render_calls([("get_weather", {"city": "Paris"})])
    relevant = _item([{"get_weather": {"city": ["Paris"]}}])
    assert score_output(relevant, quoted, fmt).ast  # as written, a right call
    declined = score_output(relevant, quoted, fmt, declined=True)
    assert declined.declined and not declined.parsed and not declined.ast
    assert score_output(_item([], "irrelevance"), quoted, fmt, declined=True).ast
    line = labelled_line(relevant, quoted, fmt, declined=True)
    assert line["target_call"] is None


def test_evaluate_items_counts_declines() -> None:
    fmt = HermesFormat()
    quoted = fmt.render_calls([("get_weather", {"city": "Paris"})])
    answers = {"a": (quoted, 9, True), "b": (quoted, 9, False), "c": (quoted, 9)}
    items = [
        BenchItem(id=i, category="simple_python", messages=MESSAGES, tools=TOOLS,
                  gold=[{"get_weather": {"city": ["Paris"]}}], language="python")
        for i in answers
    ]  # fmt: skip
    report = evaluate_items(items, lambda item: answers[item.id], fmt)
    assert [s.declined for s in report.items] == [True, False, False]
    assert [s.ast for s in report.items] == [False, True, True]
    assert report.categories["simple_python"].declined == 1
