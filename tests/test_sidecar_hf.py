"""HFSidecar and the shared-prefix batched generator, on tiny random models (CPU, seconds)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import anyio  # noqa: E402

from ooo_agent.errors import ModelNotAvailableError  # noqa: E402
from ooo_agent.rules import RuledTools, rules_named  # noqa: E402
from ooo_agent.sidecar import Hint, HintBox, SidecarRequest, WaveOptions  # noqa: E402
from ooo_agent.sidecar._wave import WaveAssembler, WavePlan  # noqa: E402
from ooo_agent.sidecar.batch import (  # noqa: E402
    KeptPrefix,
    RowResult,
    SharedPrefixGenerator,
    common_prefix_length,
)
from ooo_agent.sidecar.hf import HFSidecar, _function_first  # noqa: E402
from ooo_agent.sidecar.prompts import chatml_prompt, template_from_tokenizer  # noqa: E402
from sidecar_tiny import ScriptedLM, make_model, make_tokenizer  # noqa: E402


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
    }


TOOLS = [
    _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("get_time", {"zone": {"type": "string"}}),
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris for 3 days?"}]


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return make_tokenizer()


def _wave_prompts(gen: SharedPrefixGenerator, tokenizer: Any) -> list[list[int]]:
    plan = WavePlan.build(
        SidecarRequest(MESSAGES, TOOLS), template_from_tokenizer(tokenizer), WaveOptions()
    )
    return [gen.encode(p) for p in plan.prompts]


def _distinct_rows(gen: SharedPrefixGenerator, tokenizer: Any) -> list[list[int]]:
    """Wave prompts with a distinct tail each: a 2-layer random model mostly echoes the last
    tokens, and wave rows all end with the same template text."""
    return [
        p + gen.encode(f" row {i}" * (i + 1)) for i, p in enumerate(_wave_prompts(gen, tokenizer))
    ]


def _alone(model: Any, prompt: list[int], stop_ids: set[int], max_new: int) -> list[int]:
    """The row run by itself with transformers' own greedy generate."""
    out = model.generate(
        torch.tensor([prompt]),
        max_new_tokens=max_new,
        do_sample=False,
        eos_token_id=sorted(stop_ids),
        pad_token_id=0,
    )
    ids = out[0, len(prompt) :].tolist()
    return [t for t in ids if t not in stop_ids]


def _splitting_stop_token(free: list[RowResult], max_new: int) -> int:
    """The token whose use as a stop token gives the rows the most different lengths."""

    def lengths(token: int) -> set[int]:
        return {r.token_ids.index(token) if token in r.token_ids else max_new for r in free}

    candidates = sorted({t for r in free for t in r.token_ids})
    best = max(candidates, key=lambda t: (len(lengths(t)), -t))
    assert len(lengths(best)) > 1, "the random model gave every row the same output"
    return best


def _values_ruled(messages: Any, tools: Any, on: bool) -> RuledTools | None:
    """The ruling of a target holding values to the ``values`` rule (None: rules not known)."""
    return RuledTools(messages, tools, rules_named(["values"])) if on else None


def test_template_matches_chatml(tokenizer: Any) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert template_from_tokenizer(tokenizer)(messages) == chatml_prompt(messages)


def test_common_prefix_length() -> None:
    assert common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_length([[5], [6]]) == 0
    assert common_prefix_length([]) == 0


@pytest.mark.parametrize("split", [True, False], ids=["head-apart", "full-forward"])
@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_batched_rows_equal_rows_run_alone(kind: str, split: bool, tokenizer: Any) -> None:
    model = make_model(kind, len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    # Plain decoder -> lm_head stacks run the head apart, on the rows' last positions only;
    # without that split the full forward (logits_to_keep=1) must give the same answers.
    assert gen.head is model.get_output_embeddings()
    if not split:
        gen.decoder = gen.head = None
    prompts = _distinct_rows(gen, tokenizer)
    assert len({len(p) for p in prompts}) > 1, "suffixes of different lengths are the point"
    # A stop token taken from the rows' own outputs makes rows end at different steps.
    free = gen.generate(prompts, max_new_tokens=8)
    gen.stop_token_ids = gen.stop_token_ids | {_splitting_stop_token(free, 8)}
    results = gen.generate(prompts, max_new_tokens=8)
    assert "stop" in {r.finish_reason for r in results}
    assert len({len(r.token_ids) for r in results}) > 1
    for prompt, result in zip(prompts, results, strict=True):
        assert result.token_ids == _alone(model, prompt, set(gen.stop_token_ids), 8)


def test_prefix_runs_once_then_the_suffixes_as_one_batch(tokenizer: Any) -> None:
    model = make_model("qwen3", len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    prompts = _wave_prompts(gen, tokenizer)
    shapes: list[tuple[int, int]] = []
    hook = gen.decoder.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    try:
        gen.generate(prompts, max_new_tokens=3)
    finally:
        hook.remove()
    prefix = common_prefix_length(prompts)
    assert prefix > 20
    longest_suffix = max(len(p) for p in prompts) - prefix
    assert shapes == [
        (1, prefix),
        (len(prompts), longest_suffix),
        (len(prompts), 1),
        (len(prompts), 1),
    ]


def test_rows_report_in_finishing_order_and_leave_the_batch(tokenizer: Any) -> None:
    model = make_model("llama", len(tokenizer), seed=3)
    gen = SharedPrefixGenerator(model, tokenizer)
    prompts = _distinct_rows(gen, tokenizer)
    free = gen.generate(prompts, max_new_tokens=6)
    gen.stop_token_ids = gen.stop_token_ids | {_splitting_stop_token(free, 6)}
    arrived: list[RowResult] = []
    results = gen.generate(prompts, max_new_tokens=6, on_row=arrived.append)

    def finished_at(r: RowResult) -> int:
        return len(r.token_ids) + (1 if r.finish_reason == "stop" else 0)

    expected = sorted(results, key=lambda r: (finished_at(r), r.index))
    assert [r.index for r in arrived] == [r.index for r in expected]
    assert finished_at(arrived[0]) < finished_at(arrived[-1])


def test_stop_strings_cut_the_answer(tokenizer: Any) -> None:
    model = make_model("qwen3", len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    prompt = _wave_prompts(gen, tokenizer)[0]
    free = gen.generate([prompt], max_new_tokens=6)[0]
    stop = free.text[2:4]
    cut = gen.generate([prompt], max_new_tokens=6, stop_strings=[stop])[0]
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[: free.text.find(stop)]


@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_a_kept_prefix_computes_only_the_new_tokens_and_answers_the_same(
    kind: str, tokenizer: Any
) -> None:
    model = make_model(kind, len(tokenizer), seed=2)
    gen = SharedPrefixGenerator(model, tokenizer)
    first = _wave_prompts(gen, tokenizer)[0]
    # The same row written on, a row that shares only the start, one that shares nothing.
    on = gen.generate([first], max_new_tokens=4)[0]
    prompts = [
        first,
        first + on.token_ids + gen.encode(', "unit": '),
        first[:12] + gen.encode("Which tool?"),
        gen.encode("Available tools:"),
    ]
    kept = KeptPrefix()
    shapes: list[tuple[int, int]] = []
    hook = gen.decoder.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    try:
        for prompt in prompts:
            shapes.clear()
            alone = gen.generate([prompt], max_new_tokens=5)[0]
            held = kept.ids[:]
            shapes.clear()
            reused = gen.generate([prompt], max_new_tokens=5, kept=kept)[0]
            assert reused.token_ids == alone.token_ids
            shared = common_prefix_length([held, prompt[:-1]]) if held else 0
            # Only the prompt's tokens past the shared ones run (the last one on its own).
            assert sum(n for _, n in shapes[: 2 if len(prompt) - 1 > shared else 1]) == (
                len(prompt) - shared
            )
            # The last answer token is fed back only when a stop token came after it.
            fed = len(prompt) + len(reused.token_ids) - (reused.finish_reason == "length")
            assert kept.ids == (prompt + reused.token_ids)[:fed]
            assert kept.cache.get_seq_length() == len(kept.ids)
    finally:
        hook.remove()
    with pytest.raises(ValueError, match="kept"):
        gen.generate(prompts[:2], kept=kept)


def test_thread_count_is_restored(tokenizer: Any) -> None:
    before = torch.get_num_threads()
    gen = SharedPrefixGenerator(make_model("qwen3", len(tokenizer)), tokenizer, num_threads=1)
    gen.generate([[5, 6, 7]], max_new_tokens=2)
    assert torch.get_num_threads() == before


def test_bad_arguments(tokenizer: Any) -> None:
    gen = SharedPrefixGenerator(make_model("qwen3", len(tokenizer)), tokenizer)
    with pytest.raises(ValueError):
        gen.generate([[1], []])
    with pytest.raises(ValueError):
        SharedPrefixGenerator(gen.model, tokenizer, num_threads=0)
    assert gen.generate([]) == []
    assert gen.generate([[1, 2]], max_new_tokens=0)[0].token_ids == []


def test_first_token_bans_take_the_likeliest_other_token(tokenizer: Any) -> None:
    model = make_model("llama", len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    prompts = _distinct_rows(gen, tokenizer)[:3]
    free = gen.generate(prompts, max_new_tokens=3)
    banned_token = free[1].token_ids[0]
    results = gen.generate(prompts, max_new_tokens=3, first_token_bans={1: [banned_token]})
    with torch.no_grad():
        logits = model(torch.tensor([prompts[1]])).logits[0, -1]
    ranked = logits.argsort(descending=True).tolist()
    assert ranked[0] == banned_token
    assert results[1].token_ids[0] == ranked[1]  # the runner-up, then free decoding
    for row in (0, 2):
        assert results[row].token_ids == free[row].token_ids  # rows without bans untouched
    with pytest.raises(ValueError, match="first_token_bans"):
        gen.generate(prompts, first_token_bans={5: [banned_token]})


class _Forced:
    """A TokenConstraint that writes ``forced`` first, then the model's own tokens."""

    def __init__(self, forced: list[int]) -> None:
        self.forced = forced
        self.seen: list[list[int]] = []
        self.overrides = 0

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        self.seen.append(list(generated))
        return self.forced[len(generated)] if len(generated) < len(self.forced) else greedy


def test_a_rows_constraint_picks_its_tokens_and_leaves_the_other_rows_alone(
    tokenizer: Any,
) -> None:
    model = make_model("llama", len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    prompts = _distinct_rows(gen, tokenizer)[:3]
    free = gen.generate(prompts, max_new_tokens=5)
    forced = [
        t for t in range(10, 400) if t not in free[1].token_ids and t not in gen.stop_token_ids
    ][:2]
    steer = _Forced(forced)
    results = gen.generate(prompts, max_new_tokens=5, constraints={1: steer})
    assert results[1].token_ids[:2] == forced
    # Past the forced tokens, the row is what the model writes greedily after them alone.
    after = gen.generate([prompts[1] + forced], max_new_tokens=3)[0]
    assert results[1].token_ids[2:] == after.token_ids
    # It is asked at every position, with the row's tokens so far.
    assert steer.seen == [results[1].token_ids[:i] for i in range(len(steer.seen))]
    assert len(steer.seen) == len(results[1].token_ids) + (results[1].finish_reason == "stop")
    for row in (0, 2):
        assert results[row].token_ids == free[row].token_ids
    with pytest.raises(ValueError, match="constraints"):
        gen.generate(prompts, constraints={7: steer})


# -- HFSidecar ---------------------------------------------------------------------------


def _scripted(tokenizer: Any, delay_s: float = 0.0, answer: str = "0") -> ScriptedLM:
    """Every row answers ``answer`` then ends its turn."""
    zero = tokenizer.convert_tokens_to_ids(answer)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    return ScriptedLM(make_model("qwen3", len(tokenizer)), {zero: end}, zero, delay_s)


def test_wave_fills_the_box_function_first(tokenizer: Any) -> None:
    sidecar = HFSidecar(_scripted(tokenizer), tokenizer)
    box = HintBox()
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), box)
    # Index "0" → get_weather; "0" is a valid integer for `days`, not a string for `city`.
    assert report.hint.function == "get_weather"
    assert dict(report.hint.slots) == {"days": 0}
    assert report.hint.complete
    assert set(report.dropped) == {"city"}
    # On the CPU the schedule is function-first: the index row, then only get_weather's rows.
    assert sidecar.schedule == "function-first"
    assert report.arrivals[0] == "function"
    assert sorted(report.arrivals) == ["0.city", "0.days", "function"]
    snapshot = box.snapshot()
    assert (snapshot.function, dict(snapshot.slots), snapshot.complete) == (
        "get_weather",
        {"days": 0},
        True,
    )
    assert box.function_step == 0 and box.slot_steps == {"days": 0}


def test_hint_box_carries_the_targets_function_back() -> None:
    box = HintBox()
    heard: list[str] = []
    box.on_target_function(heard.append)
    started = time.perf_counter()
    assert box.wait_target_function(30.0) is None  # nobody reports: no wait at all
    assert time.perf_counter() - started < 10.0
    box.expect_target_function()
    assert box.wait_target_function(0.05) is None  # a reporter, but not yet
    cancel = threading.Event()
    cancel.set()
    started = time.perf_counter()
    assert box.wait_target_function(30.0, cancel) is None
    assert time.perf_counter() - started < 10.0

    def broken(_name: str) -> None:
        raise RuntimeError("listener bug")

    box.on_target_function(broken)  # a faulty listener costs nothing to the others
    timer = threading.Timer(0.05, box.report_target_function, ["get_time"])
    timer.start()
    assert box.wait_target_function(30.0) == "get_time"
    timer.join()
    box.report_target_function("get_weather")  # only the first report counts
    assert box.target_function == "get_time" and heard == ["get_time"]
    late: list[str] = []
    box.on_target_function(late.append)  # registered after the report: told at once
    assert late == ["get_time"]
    # Slots belong to one function: switching the function drops the other's slots.
    box.set_function("get_weather")
    box.set_slot("city", "Paris")
    box.set_function("get_time", from_target=True)
    assert box.snapshot() == Hint("get_time", {}, False) and box.function_from_target


@pytest.mark.parametrize("follow", [True, False])
def test_assembler_follows_the_function_the_target_wrote(tokenizer: Any, follow: bool) -> None:
    options = WaveOptions(schedule="parallel", follow_target=follow)
    plan = WavePlan.build(
        SidecarRequest(MESSAGES, TOOLS), template_from_tokenizer(tokenizer), options
    )
    box = HintBox()
    assembler = WaveAssembler.start(plan, box, options)
    keys = [row.key for row in plan.rows]
    assembler.answer(keys.index("function"), "0")  # the sidecar guesses get_weather
    assembler.answer(keys.index("0.city"), '"Paris"')
    assembler.answer(keys.index("1.zone"), '"CET"')
    assert box.snapshot().function == "get_weather" and dict(box.snapshot().slots) == {
        "city": "Paris"
    }
    box.report_target_function("get_time")  # the target writes get_time
    report = assembler.finish()
    assert report.answers["function"] == "0"  # the sidecar's own answer, for scoring
    if follow:
        assert (box.snapshot().function, dict(box.snapshot().slots)) == (
            "get_time",
            {"zone": "CET"},
        )
        assert box.function_from_target and report.followed_target
        assert report.hint.function == "get_time" and dict(report.hint.slots) == {"zone": "CET"}
    else:
        assert box.snapshot().function == "get_weather" and not box.function_from_target
        assert report.hint.function == "get_weather" and not report.followed_target


def test_request_case_writes_a_capitalised_copy_as_the_request_does(tokenizer: Any) -> None:
    """``request_case``: a free string's answer (or an array of free strings) the sidecar
    capitalises where the request writes it in lower case lands in the request's case, in the
    hint and in the report; other rows, codes and the tool's own options stay as written."""
    tools = [
        _tool(
            "find",
            {
                "material": {"type": "string"},
                "items": {"type": "array", "items": {"type": "string"}},
                "food": {"type": "string", "description": "Type of food like Sushi."},
                "kind": {"type": "string", "enum": ["Marble", "marble"]},
                "code": {"type": "string"},
            },
        )
    ]
    messages = [{"role": "user", "content": "A marble bowl with sushi, tomatoes and pet food; can"}]
    answers = {
        "0.material": '"Marble"',
        "0.items": '["Tomatoes", "Pet food"]',
        "0.food": '"Sushi"',
        "0.kind": '"Marble"',
        "0.code": '"CAN"',
    }
    for on in (False, True):
        options = WaveOptions(request_case=on)
        plan = WavePlan.build(
            SidecarRequest(messages, tools), template_from_tokenizer(tokenizer), options
        )
        assert sorted(plan.cased) == (["0.code", "0.food", "0.items", "0.material"] if on else [])
        assembler = WaveAssembler.start(plan, HintBox(), options)
        for i, row in enumerate(plan.rows):
            assembler.answer(i, answers[row.key])
        report = assembler.finish()
        assert report.answers["0.food"] == '"Sushi"'  # the tool writes it so
        assert report.answers["0.kind"] == '"Marble"'  # an enum: the tool's words
        assert report.answers["0.code"] == '"CAN"'  # capitals alone: a code
        if on:
            assert report.answers["0.material"] == '"marble"'
            assert report.answers["0.items"] == '["tomatoes", "pet food"]'
            assert report.hint.slots["material"] == "marble"
            assert report.hint.slots["items"] == ["tomatoes", "pet food"]
        else:
            assert report.answers["0.material"] == '"Marble"'
            assert report.hint.slots["items"] == ["Tomatoes", "Pet food"]


def test_function_first_without_waiting_asks_the_targets_tool_next(tokenizer: Any) -> None:
    """No wait (the default): the chosen tool's rows at once; once the target has written
    another tool, that tool's rows in the next phase; nothing asked twice."""
    plan = WavePlan.build(
        SidecarRequest(MESSAGES, TOOLS), template_from_tokenizer(tokenizer), WaveOptions()
    )
    box = HintBox()
    assembler = WaveAssembler.start(plan, box, WaveOptions())
    head, then = _function_first(plan, assembler)
    keys = [row.key for row in plan.rows]
    assert [keys[i] for i in head] == ["function"]
    index_row = RowResult(head[0], [], "0", "stop")
    assert sorted(keys[i] for i in then([index_row])) == ["0.city", "0.days"]
    assert then([index_row]) == []  # the target has not written yet: nothing more
    box.report_target_function("get_time")
    assert [keys[i] for i in then([index_row])] == ["1.zone"]
    assert then([index_row]) == []
    # A target known before the index row answers: its tool's rows only.
    early = HintBox()
    early.report_target_function("get_time")
    known = WaveAssembler.start(plan, early, WaveOptions())
    _, then_known = _function_first(plan, known)
    assert [keys[i] for i in then_known([index_row])] == ["1.zone"]
    assert then_known([index_row]) == []
    # The whole wave with the report already in: the same rows, the hint for get_time.
    sidecar = HFSidecar(_scripted(tokenizer), tokenizer)
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), early)
    assert report.arrivals == ["function", "1.zone"] and report.hint.function == "get_time"


def test_parallel_schedule_asks_every_row_in_one_batch(tokenizer: Any) -> None:
    model = _scripted(tokenizer)
    sidecar = HFSidecar(model, tokenizer, options=WaveOptions(schedule="parallel"))
    before = model.forwards
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), HintBox())
    assert sorted(report.arrivals) == ["0.city", "0.days", "1.zone", "function"]
    assert report.hint.function == "get_weather" and dict(report.hint.slots) == {"days": 0}
    # Prefix, the four suffixes as one batch, one decode step (each row answers one token).
    assert model.forwards - before == 3


def test_function_first_skips_every_slot_without_a_function(tokenizer: Any) -> None:
    # Every row answers "x": no tool index, so no slot row can reach the hint.
    sidecar = HFSidecar(_scripted(tokenizer, answer="x"), tokenizer)
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), HintBox())
    assert report.arrivals == ["function"]
    assert report.hint.function is None and report.hint.complete
    with pytest.raises(ValueError):
        WaveOptions(schedule="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_phases_change_when_rows_run_never_what_they_answer(kind: str, tokenizer: Any) -> None:
    model = make_model(kind, len(tokenizer))
    gen = SharedPrefixGenerator(model, tokenizer)
    prompts = _distinct_rows(gen, tokenizer)
    together = gen.generate(prompts, max_new_tokens=6)
    seen: list[list[int]] = []
    order: list[int] = []
    last = len(prompts) - 1
    assert last > 2
    # Asked after every phase: the last row, then row 2, then the last again (already run:
    # the end). Rows never named are skipped.
    answers = iter([[last], [2, last], [last]])

    def then(results: list[RowResult]) -> list[int]:
        seen.append([r.index for r in results])
        return next(answers)

    phased = gen.generate(
        prompts, max_new_tokens=6, first=[0, 1], then=then, on_row=lambda r: order.append(r.index)
    )
    assert seen == [[0, 1]] * 3
    assert sorted(order[:2]) == [0, 1] and order[2:] == [last, 2]
    for i, (alone, result) in enumerate(zip(together, phased, strict=True)):
        if i in (0, 1, 2, last):
            assert result.token_ids == alone.token_ids and result.finish_reason != "skipped"
        else:
            assert result.finish_reason == "skipped" and (result.text, result.token_ids) == ("", [])
    with pytest.raises(ValueError):
        gen.generate(prompts, first=[len(prompts)])


def test_single_tool_skips_the_index_row(tokenizer: Any) -> None:
    model = _scripted(tokenizer)
    sidecar = HFSidecar(model, tokenizer)
    box = HintBox()
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS[:1]), box)
    assert report.arrivals == ["0.city", "0.days"]
    assert report.hint.function == "get_weather"


def test_slots_arriving_before_the_function_are_held_back() -> None:
    request = SidecarRequest(MESSAGES, TOOLS)
    plan = WavePlan.build(request, chatml_prompt, WaveOptions())
    box = HintBox()
    assembler = WaveAssembler.start(plan, box, WaveOptions())
    keys = [r.key for r in plan.rows]
    assembler.answer(keys.index("0.city"), '"Paris"')
    assembler.answer(keys.index("1.zone"), '"UTC"')
    assert box.snapshot().empty
    box.mark_step(2)
    assembler.answer(keys.index("function"), "0")
    assert dict(box.snapshot().slots) == {"city": "Paris"}
    box.mark_step(3)
    assembler.answer(keys.index("0.days"), "3")
    # Each part counts from the first step drafted after it landed.
    assert box.slot_steps == {"city": 3, "days": 4}
    assert box.function_step == 3
    report = assembler.finish()
    assert dict(report.hint.slots) == {"city": "Paris", "days": 3}
    assert report.answers["1.zone"] == '"UTC"'


def test_wave_is_cancellable_between_steps(tokenizer: Any) -> None:
    a = tokenizer.convert_tokens_to_ids("a")
    slow = ScriptedLM(make_model("qwen3", len(tokenizer)), {}, a, delay_s=0.05)
    sidecar = HFSidecar(slow, tokenizer, max_new_tokens=32)
    box = HintBox()

    async def main() -> None:
        with anyio.move_on_after(0.3):
            await sidecar.wave(SidecarRequest(MESSAGES, TOOLS), box)

    anyio.run(main)
    time.sleep(0.2)  # at most one forward was in flight when the wave was cancelled
    stopped_at = slow.forwards
    time.sleep(0.3)
    assert slow.forwards == stopped_at < 20
    assert not box.snapshot().complete
    # The generator is free again: a later wave runs to the end.
    slow.delay_s = 0.0
    hint = anyio.run(sidecar.wave, SidecarRequest(MESSAGES, TOOLS), HintBox())
    assert hint.complete


def test_run_wave_sync_matches_async(tokenizer: Any) -> None:
    sidecar = HFSidecar(_scripted(tokenizer), tokenizer)
    request = SidecarRequest(MESSAGES, TOOLS)
    sync = sidecar.run_wave_sync(request, HintBox(), threading.Event())
    assert sync.hint == anyio.run(sidecar.wave, request, HintBox())


# -- loading -----------------------------------------------------------------------------


def _save_tiny(tmp: Path, tokenizer: Any) -> tuple[Path, Path]:
    peft = pytest.importorskip("peft")
    base_dir = tmp / "base"
    model = make_model("qwen3", len(tokenizer))
    model.save_pretrained(base_dir)
    tokenizer.save_pretrained(base_dir)
    repo = tmp / "adapters"
    for seed, name in ((1, "sidecar-lora-spaced"), (2, "sidecar-lora")):
        lora_base = make_model("qwen3", len(tokenizer))
        torch.manual_seed(seed)  # after make_model, which seeds for the base weights
        config = peft.LoraConfig(
            r=4,
            lora_alpha=128,
            target_modules=[
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ],
            init_lora_weights=False,
        )
        peft.get_peft_model(lora_base, config).save_pretrained(repo / name)
    return base_dir, repo


def _logits(model: Any) -> Any:
    with torch.no_grad():
        return model(input_ids=torch.tensor([[5, 6, 7, 8]])).logits


def test_from_pretrained_picks_the_published_adapter(tmp_path: Path, tokenizer: Any) -> None:
    import peft

    base_dir, repo = _save_tiny(tmp_path, tokenizer)
    sidecar = HFSidecar.from_pretrained(base_dir, adapter=repo, dtype=torch.float32)
    reference = peft.PeftModel.from_pretrained(
        make_model("qwen3", len(tokenizer)), str(repo), subfolder="sidecar-lora-spaced"
    ).eval()
    other = HFSidecar.from_pretrained(
        base_dir, adapter=repo, subfolder="sidecar-lora", merge=False, dtype=torch.float32
    )
    assert isinstance(other.model, peft.PeftModel)
    assert torch.allclose(_logits(sidecar.model), _logits(reference), atol=1e-4)
    assert not torch.allclose(_logits(sidecar.model), _logits(other.model), atol=1e-3)
    plain = HFSidecar.from_pretrained(base_dir, dtype=torch.float32)
    assert not torch.allclose(_logits(plain.model), _logits(sidecar.model), atol=1e-3)


def test_default_precision_follows_the_hardware(
    tmp_path: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ooo_agent.models import presets

    base_dir, _ = _save_tiny(tmp_path, tokenizer)
    for native, expected in ((True, torch.bfloat16), (False, torch.float32)):
        monkeypatch.setattr(presets, "cpu_has_native_bf16", lambda native=native: native)
        sidecar = HFSidecar.from_pretrained(base_dir)
        assert {p.dtype for p in sidecar.model.parameters()} == {expected}
        # The hint is proposed in that precision; what the rows answer stays a plain string.
        box = HintBox()
        report = sidecar.run_wave_sync(SidecarRequest(MESSAGES, TOOLS), box)
        assert report.hint.complete


def test_loading_errors_are_clear(tmp_path: Path, tokenizer: Any) -> None:
    with pytest.raises(ModelNotAvailableError, match="base model"):
        HFSidecar.from_pretrained(tmp_path / "missing")
    base_dir, _ = _save_tiny(tmp_path, tokenizer)
    with pytest.raises(ModelNotAvailableError, match="adapter"):
        HFSidecar.from_pretrained(base_dir, adapter=tmp_path / "no-adapter")


def test_from_preset_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(ModelNotAvailableError):
        HFSidecar.from_preset("no-such-preset-anywhere")


def test_bench_loads_an_adapter_only_folder_on_its_base(tmp_path: Path, tokenizer: Any) -> None:
    import json

    from ooo_agent.bench._loading import BASE_PRESET, open_sidecar
    from ooo_agent.models.presets import adapter_base

    base_dir, repo = _save_tiny(tmp_path, tokenizer)
    folder = repo / "sidecar-lora"
    config_path = folder / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = str(base_dir)
    config_path.write_text(json.dumps(config))
    assert adapter_base(str(folder)) == str(base_dir)
    assert adapter_base(str(base_dir)) is None  # a full model folder is not an adapter
    with open_sidecar(str(folder)) as choice:
        assert choice.kind == "trained" and "sidecar-lora" in choice.label
        assert isinstance(choice.sidecar, HFSidecar)
        assert choice.sidecar.options.function_choice == "index"  # auto: not a preset
        reference = HFSidecar.from_pretrained(
            base_dir, adapter=repo, subfolder="sidecar-lora", dtype=torch.float32
        )
        assert torch.allclose(_logits(choice.sidecar.model), _logits(reference.model), atol=1e-4)
    assert choice.sidecar.options.relevance_weight == 0.0  # not a preset: the sidecar alone
    with open_sidecar(str(folder), function_choice="scored", relevance_weight=2.0) as weighed:
        assert isinstance(weighed.sidecar, HFSidecar)
        assert weighed.sidecar.options.relevance_weight == 2.0
    assert choice.sidecar.options.unnamed_nulls is False  # auto: not a preset, off
    with open_sidecar(str(folder), unnamed_nulls="on") as nulled:
        assert isinstance(nulled.sidecar, HFSidecar)
        assert nulled.sidecar.options.unnamed_nulls is True
    assert choice.sidecar.options.whole_words is False
    with open_sidecar(str(folder), typed_values="on", whole_words="on") as whole:
        assert isinstance(whole.sidecar, HFSidecar)
        assert whole.sidecar.options.whole_words is True
    assert choice.sidecar.options.request_case is False
    with open_sidecar(str(folder), request_case="on") as cased:
        assert isinstance(cased.sidecar, HFSidecar)
        assert cased.sidecar.options.request_case is True
    assert choice.sidecar.options.joint_values is False
    with open_sidecar(str(folder), joint_values="on") as untyped:  # needs typed rows
        assert isinstance(untyped.sidecar, HFSidecar)
        assert untyped.sidecar.options.joint_values is False
    with open_sidecar(str(folder), typed_values="on", joint_values="on") as joint:
        assert isinstance(joint.sidecar, HFSidecar)
        assert joint.sidecar.options.joint_values is True
    # A base recorded as another machine's path falls back to the embedded model; names stay.
    config["base_model_name_or_path"] = str(tmp_path / "gone" / "model")
    config_path.write_text(json.dumps(config))
    assert adapter_base(str(folder)) == BASE_PRESET
    config["base_model_name_or_path"] = "Qwen/Qwen3-0.6B"
    config_path.write_text(json.dumps(config))
    assert adapter_base(str(folder)) == "Qwen/Qwen3-0.6B"


# -- function_choice="scored": the tool named by the likeliest direct-call start -----------


def _logprob_alone(model: Any, sequence: list[int], count: int) -> float:
    """Summed log-probability of the last ``count`` tokens, the row run by itself."""
    with torch.no_grad():
        logits = model(torch.tensor([sequence])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    n = len(sequence)
    return sum(float(logprobs[i - 1, sequence[i]]) for i in range(n - count, n))


@pytest.mark.parametrize("split", [True, False], ids=["head-apart", "full-forward"])
@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_scores_equal_each_row_scored_alone(kind: str, split: bool, tokenizer: Any) -> None:
    model = make_model(kind, len(tokenizer), seed=3)
    gen = SharedPrefixGenerator(model, tokenizer)
    if not split:
        gen.decoder = gen.head = None
    prompts = _distinct_rows(gen, tokenizer)
    counts = [1 + i % 4 for i in range(len(prompts))]
    scores = gen.score(prompts, counts)
    expected = [_logprob_alone(model, p, c) for p, c in zip(prompts, counts, strict=True)]
    assert scores == pytest.approx(expected, abs=1e-4)
    assert len(set(round(s, 3) for s in scores)) > 1  # rows really differ
    with pytest.raises(ValueError, match="count"):
        gen.score(prompts[:1], [len(prompts[0])])
    with pytest.raises(ValueError, match="one count per sequence"):
        gen.score(prompts, counts[:1])


@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_scores_of_rows_sharing_their_start_equal_each_row_scored_alone(
    kind: str, tokenizer: Any
) -> None:
    model = make_model(kind, len(tokenizer), seed=4)
    gen = SharedPrefixGenerator(model, tokenizer)
    base = _wave_prompts(gen, tokenizer)[0]
    start = gen.encode(' {"name": "')
    tails = [gen.encode(name) for name in ("get_weather", "get_time", "get", "book_flight")]
    prompts = [base + start + tail for tail in tails]
    prompts.append(base + start[:2])  # a row that ends inside the others' shared start
    counts = [len(start) + len(tail) for tail in tails] + [2]
    scores = gen.score(prompts, counts)
    expected = [_logprob_alone(model, p, c) for p, c in zip(prompts, counts, strict=True)]
    assert scores == pytest.approx(expected, abs=1e-4)
    assert len(set(round(s, 3) for s in scores)) == len(scores)


def _direct_call_scores(sidecar: HFSidecar, model: Any, messages: Any) -> list[float]:
    """Each tool name's direct-call start after ``messages``, every row scored alone."""
    from ooo_agent.sidecar.rows import build_wave_rows, direct_call_start

    template = template_from_tokenizer(sidecar.tokenizer)
    prompt = template(build_wave_rows(messages, TOOLS, direct_call=True)[-1].messages)
    base = sidecar.generator.encode(prompt)
    scores = []
    for tool in TOOLS:
        start = direct_call_start(tool["function"]["name"])
        full = sidecar.generator.encode(prompt + start)
        if full[: len(base)] != base:
            full = base + sidecar.generator.encode(start)
        scores.append(_logprob_alone(model, full, len(full) - len(base)))
    return scores


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scored_choice_names_the_likeliest_tool_and_asks_only_its_rows(
    seed: int, tokenizer: Any
) -> None:
    model = make_model("qwen3", len(tokenizer), seed=seed)
    template = template_from_tokenizer(tokenizer)
    options = WaveOptions(function_choice="scored")
    sidecar = HFSidecar(model, tokenizer, options=options)
    plan = WavePlan.build(SidecarRequest(MESSAGES, TOOLS), template, options)
    assert "function" not in [row.key for row in plan.rows]  # no function-index row
    # What the choice must be: each name's direct-call start scored by the model alone.
    alone = _direct_call_scores(sidecar, model, MESSAGES)
    chosen = max(range(2), key=alone.__getitem__)
    assert abs(alone[0] - alone[1]) > 1e-3, "a near-tie would make the test depend on noise"

    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), HintBox())
    assert report.answers["function"] == str(chosen)
    assert report.hint.function == TOOLS[chosen]["function"]["name"]
    # Function-first on the CPU: the choice, then only the chosen tool's argument rows.
    params = list(TOOLS[chosen]["function"]["parameters"]["properties"])
    assert report.arrivals[0] == "function"
    assert sorted(report.arrivals[1:]) == sorted(f"{chosen}.{p}" for p in params)


def test_relevance_weight_adds_the_requests_words_to_the_scored_choice(tokenizer: Any) -> None:
    from ooo_agent.sidecar.relevance import tool_relevance, with_relevance

    asked = [{"role": "user", "content": "What time is it in Lima?"}]  # get_time's word
    request = SidecarRequest(asked, TOOLS)
    relevance = tool_relevance(asked, TOOLS)
    assert relevance[1] > 0 == relevance[0]
    flipped = 0
    for seed in range(6):
        model = make_model("qwen3", len(tokenizer), seed=seed)
        scored = _direct_call_scores(
            HFSidecar(model, tokenizer, options=WaveOptions(function_choice="scored")),
            model,
            asked,
        )
        for weight in (0.5, 50.0):
            options = WaveOptions(function_choice="scored", relevance_weight=weight)
            sidecar = HFSidecar(model, tokenizer, options=options)
            combined = with_relevance(scored, relevance, weight)
            assert abs(combined[0] - combined[1]) > 1e-3, "a near-tie would test noise"
            chosen = max(range(2), key=combined.__getitem__)
            report = anyio.run(sidecar.run_wave, request, HintBox())
            assert report.answers["function"] == str(chosen)
            assert report.hint.function == TOOLS[chosen]["function"]["name"]
            if weight == 50.0:
                assert chosen == 1  # words this plain outvote a random model
                flipped += max(range(2), key=scored.__getitem__) != 1
        # A request that shares no word with any tool: the sidecar's own choice stands.
        plain = [{"role": "user", "content": "Hello there"}]
        alone = _direct_call_scores(
            HFSidecar(model, tokenizer, options=WaveOptions(function_choice="scored")),
            model,
            plain,
        )
        options = WaveOptions(function_choice="scored", relevance_weight=50.0)
        report = anyio.run(
            HFSidecar(model, tokenizer, options=options).run_wave,
            SidecarRequest(plain, TOOLS),
            HintBox(),
        )
        assert report.answers["function"] == str(max(range(2), key=alone.__getitem__))
    assert flipped, "no seed where the words change the choice: the test shows nothing"


def test_required_values_keep_a_required_parameters_row_from_answering_null(
    tokenizer: Any,
) -> None:
    from ooo_agent.sidecar.openai import OpenAISidecar

    tool = _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})
    tool["function"]["parameters"]["required"] = ["city"]
    request = SidecarRequest(MESSAGES, [tool])
    null = tokenizer("null", add_special_tokens=False)["input_ids"]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    script = dict(itertools.pairwise(null)) | {null[-1]: end}
    answers = {}
    for required_values in (False, True):
        # Every row's likeliest answer is `null`, then the end of the turn.
        model = ScriptedLM(make_model("qwen3", len(tokenizer)), script, null[0])
        options = WaveOptions(required_values=required_values)
        sidecar = HFSidecar(model, tokenizer, options=options)
        answers[required_values] = anyio.run(sidecar.run_wave, request, HintBox()).answers
    assert answers[False] == {"function": "0", "0.city": "null", "0.days": "null"}
    assert answers[True]["0.days"] == "null"  # optional: null stays a possible answer
    city = answers[True]["0.city"]
    assert city and not city.startswith("n"), city  # required: never null, nor empty
    banned = set(sidecar.null_token_ids())
    stops = set(sidecar.generator.stop_token_ids)
    assert null[0] in banned and stops <= banned
    for token in banned - stops:
        text = tokenizer.decode([token]).strip()
        assert not text or "null".startswith(text) or text.startswith("null"), text
    with pytest.raises(ValueError, match="required_values"):
        OpenAISidecar("http://127.0.0.1:9", options=WaveOptions(required_values=True))


def test_mentioned_values_keep_a_named_optional_parameters_row_from_answering_null(
    tokenizer: Any,
) -> None:
    from ooo_agent.sidecar.openai import OpenAISidecar

    tool = _tool("get_weather", {"city": {"type": "string"}, "unit": {"type": "string"}})
    tool["function"]["parameters"]["required"] = ["city"]
    null = tokenizer("null", add_special_tokens=False)["input_ids"]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    script = dict(itertools.pairwise(null)) | {null[-1]: end}
    answers = {}
    for text in ("Weather in Paris?", "Weather in Paris, and in which unit?"):
        request = SidecarRequest([{"role": "user", "content": text}], [tool])
        # Every row's likeliest answer is `null`, then the end of the turn.
        model = ScriptedLM(make_model("qwen3", len(tokenizer)), script, null[0])
        sidecar = HFSidecar(model, tokenizer, options=WaveOptions(mentioned_values=True))
        answers[text] = anyio.run(sidecar.run_wave, request, HintBox()).answers
    assert answers["Weather in Paris?"]["0.unit"] == "null"  # not named: null may stand
    assert answers["Weather in Paris?"]["0.city"] == "null"  # required_values is off
    unit = answers["Weather in Paris, and in which unit?"]["0.unit"]
    assert unit and not unit.startswith("n"), unit  # named: never null, nor empty
    # A target known to leave named optionals to the model: the row may answer null again.
    asked = [{"role": "user", "content": "Weather in Paris, and in which unit?"}]
    request = SidecarRequest(asked, [tool], ruled=RuledTools(asked, [tool]))  # no `mentioned`
    model = ScriptedLM(make_model("qwen3", len(tokenizer)), script, null[0])
    sidecar = HFSidecar(model, tokenizer, options=WaveOptions(mentioned_values=True))
    assert anyio.run(sidecar.run_wave, request, HintBox()).answers["0.unit"] == "null"
    with pytest.raises(ValueError, match="mentioned_values"):
        OpenAISidecar("http://127.0.0.1:9", options=WaveOptions(mentioned_values=True))


def test_unnamed_nulls_answer_an_unnamed_optional_parameter_null_without_asking(
    tokenizer: Any,
) -> None:
    from ooo_agent.sidecar.openai import OpenAISidecar

    weather = _tool(
        "get_weather",
        {"city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"}},
    )
    weather["function"]["parameters"]["required"] = ["city"]
    time_tool = _tool("get_time", {"zone": {"type": "string"}})
    template = template_from_tokenizer(tokenizer)
    request = SidecarRequest(
        [{"role": "user", "content": "Weather in Paris, and in which unit?"}], [weather, time_tool]
    )
    asked = WavePlan.build(request, template, WaveOptions())
    plan = WavePlan.build(request, template, WaveOptions(unnamed_nulls=True))
    assert {r.key for r in asked.rows} - {r.key for r in plan.rows} == {"0.days", "1.zone"}
    assert plan.implied == {"0.days": "null", "1.zone": "null"}
    assert asked.implied == {}
    # Required and named optional parameters are still asked; the prompts are the rows'.
    assert {"0.city", "0.unit"} <= {r.key for r in plan.rows}
    assert len(plan.prompts) == len(plan.rows)

    # Every row's answer is `0`, then the end of the turn: an asked row says so, a left-out
    # row's answer is null and never reaches the hint.
    zero = tokenizer.convert_tokens_to_ids("0")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model = ScriptedLM(make_model("qwen3", len(tokenizer)), {zero: end}, zero)
    sidecar = HFSidecar(model, tokenizer, options=WaveOptions(unnamed_nulls=True))
    report = anyio.run(sidecar.run_wave, request, HintBox())
    assert report.answers["0.days"] == "null" and report.answers["1.zone"] == "null"
    assert report.answers["0.unit"] == "0"
    assert "0.days" not in report.arrivals and "1.zone" not in report.arrivals
    if report.hint.function == "get_weather":
        assert "days" not in report.hint.slots
    # Every argument row left out: a scored choice still picks the tool, alone.
    scored = HFSidecar(
        model, tokenizer, options=WaveOptions(unnamed_nulls=True, function_choice="scored")
    )
    bare = SidecarRequest([{"role": "user", "content": "Hello there"}], TOOLS)
    assert WavePlan.build(bare, template, scored.options).rows == []
    chosen = anyio.run(scored.run_wave, bare, HintBox())
    assert chosen.arrivals == ["function"] and chosen.hint.function in ("get_weather", "get_time")
    assert chosen.hint.slots == {}
    assert chosen.answers["0.city"] == chosen.answers["1.zone"] == "null"
    # It only leaves rows out, so an HTTP sidecar takes it too.
    OpenAISidecar("http://127.0.0.1:9", options=WaveOptions(unnamed_nulls=True))


def test_typed_values_hold_each_argument_row_to_its_parameters_schema(tokenizer: Any) -> None:
    from ooo_agent.sidecar.openai import OpenAISidecar

    tool = _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})
    tool["function"]["parameters"]["required"] = ["city", "days"]
    request = SidecarRequest(MESSAGES, [tool])
    zero, quote = tokenizer.convert_tokens_to_ids(["0", '"'])
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    reports = {}
    for typed in (False, True):
        # Every row's likeliest answer is `0`, then the end of the turn; the runner-up at each
        # step is the inner script's: `"` first, `"` after `0`, the end after `"`.
        runner_up = ScriptedLM(
            make_model("qwen3", len(tokenizer)), {zero: quote, quote: end}, quote, bonus=1e3
        )
        model = ScriptedLM(runner_up, {zero: end}, zero)
        sidecar = HFSidecar(model, tokenizer, options=WaveOptions(typed_values=typed))
        reports[typed] = anyio.run(sidecar.run_wave, request, HintBox())
    assert reports[False].answers["0.city"] == "0" and "city" in reports[False].dropped
    # The integer row keeps the sidecar's own answer; the string row may not be a number, nor
    # end inside its string, nor go on after it: `"`, `0` (the model's), `"`, the end.
    assert reports[True].answers == {"function": "0", "0.days": "0", "0.city": '"0"'}
    assert dict(reports[True].hint.slots) == {"city": "0", "days": 0}
    assert not reports[True].dropped
    with pytest.raises(ValueError, match="typed_values"):
        OpenAISidecar("http://127.0.0.1:9", options=WaveOptions(typed_values=True))


def test_scored_choice_follows_the_target_and_is_refused_over_http(tokenizer: Any) -> None:
    from ooo_agent.sidecar.openai import OpenAISidecar

    model = make_model("qwen3", len(tokenizer), seed=0)
    sidecar = HFSidecar(model, tokenizer, options=WaveOptions(function_choice="scored"))
    box = HintBox()
    box.report_target_function("get_time")  # the target wrote get_time before the wave ran
    report = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS), box)
    assert report.hint.function == "get_time" and report.followed_target
    assert "1.zone" in report.arrivals
    single = anyio.run(sidecar.run_wave, SidecarRequest(MESSAGES, TOOLS[:1]), HintBox())
    assert single.hint.function == "get_weather"  # one tool: nothing to score
    with pytest.raises(ValueError, match="function_choice"):
        WaveOptions(function_choice="guess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="log-probabilities"):
        OpenAISidecar("http://127.0.0.1:9", options=WaveOptions(function_choice="scored"))


@pytest.mark.slow
def test_the_embedded_sidecar_scores_tool_names_by_default() -> None:
    try:
        sidecar = HFSidecar.from_preset("smollm2-135m-sidecar")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded sidecar not available: {exc}")
    assert sidecar.options.function_choice == "scored"
    assert sidecar.options.required_values is True
    assert sidecar.options.typed_values is True
    assert sidecar.options.relevance_weight == 2.0
    messages = [{"role": "user", "content": "What time is it in Tokyo right now?"}]
    report = sidecar.run_wave_sync(SidecarRequest(messages, TOOLS), HintBox())
    assert report.arrivals[0] == "function"
    assert report.hint.function == "get_time", report.answers
    explicit = HFSidecar(sidecar.model, sidecar.tokenizer, options=WaveOptions())
    assert explicit.options.function_choice == "index"


def test_typed_rows_follow_a_target_that_holds_values_to_conventions(tokenizer: Any) -> None:
    """Beside a target decoding with ``constrain_values``, a rate row writes the stated
    percentage as a fraction — the target's value — instead of the sidecar's own ``5``."""
    tool = _tool("future_value", {"rate": {"type": "number", "description": "The rate."}})
    tool["function"]["parameters"]["required"] = ["rate"]
    messages = [{"role": "user", "content": "Future value at an annual rate of 5%?"}]
    five = tokenizer.convert_tokens_to_ids("5")
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    answers = {}
    for conventions in (False, True):
        # Every row's likeliest answer is `5`, then the end of the turn.
        model = ScriptedLM(make_model("qwen3", len(tokenizer)), {five: end}, five)
        sidecar = HFSidecar(model, tokenizer, options=WaveOptions(typed_values=True))
        request = SidecarRequest(
            messages, [tool], ruled=_values_ruled(messages, [tool], conventions)
        )
        answers[conventions] = anyio.run(sidecar.run_wave, request, HintBox()).answers["0.rate"]
    assert answers == {False: "5", True: "0.05"}


def test_beside_such_a_target_a_free_string_adds_no_state_the_request_does_not_write(
    tokenizer: Any,
) -> None:
    """The sidecar's own habit ("Boston, MA" for "in Boston") is not the target's, which writes
    "City, State" only where the tool asks for it: the row closes the string instead — and
    where the place's description shows no comma, also when the request writes one."""
    described = {"The city, as the user writes it.": True, "The city.": False}
    for description, commas in described.items():
        answers = _boston_answers(tokenizer, description)
        assert answers == {
            ("Weather in Boston today?", False): '"Boston, MA"',
            ("Weather in Boston today?", True): '"Boston"',
            ("Weather in Boston, MA today?", False): '"Boston, MA"',
            # the request writes it; a target reading "The city." writes "Boston" all the same
            ("Weather in Boston, MA today?", True): '"Boston, MA"' if commas else '"Boston"',
        }, description


def _boston_answers(tokenizer: Any, description: str) -> dict[tuple[str, bool], str]:
    tool = _tool("weather", {"city": {"type": "string", "description": description}})
    tool["function"]["parameters"]["required"] = ["city"]
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ['Ġ"', "B", "o", "s", "to", "n", ","]}
    ids |= {t: tokenizer.convert_tokens_to_ids(t) for t in ["Ġ", "M", "A", '"', "<|im_end|>"]}
    script = ['Ġ"', "B", "o", "s", "to", "n", ",", "Ġ", "M", "A", '"', "<|im_end|>"]
    table = {ids[a]: ids[b] for a, b in itertools.pairwise(script)}
    answers = {}
    for text in ("Weather in Boston today?", "Weather in Boston, MA today?"):
        for conventions in (False, True):
            # After "Boston" the likeliest token is the comma, the runner-up the closing quote.
            inner = ScriptedLM(
                make_model("qwen3", len(tokenizer)), {ids["n"]: ids['"']}, None, bonus=100.0
            )
            model = ScriptedLM(inner, table, ids['Ġ"'])
            sidecar = HFSidecar(model, tokenizer, options=WaveOptions(typed_values=True))
            said = [{"role": "user", "content": text}]
            request = SidecarRequest(said, [tool], ruled=_values_ruled(said, [tool], conventions))
            answers[text, conventions] = anyio.run(sidecar.run_wave, request, HintBox()).answers[
                "0.city"
            ]
    return answers


def test_whole_words_hold_the_rows_that_copy_the_requests_words(tokenizer: Any) -> None:
    """``whole_words`` gives each typed row of a free string, a number or an array of them the
    request's text to copy whole — beside a target that holds values to conventions only."""
    tool = _tool(
        "find",
        {
            "dish": {"type": "string"},
            "servings": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "string"}},
            "diet": {"type": "string", "enum": ["vegan", "any"]},
            "hot": {"type": "boolean"},
        },
    )
    text = "Chicken and Mushrooms for 12, vegan"
    template = template_from_tokenizer(tokenizer)
    model = make_model("qwen3", len(tokenizer))
    held = {}
    for whole_words in (False, True):
        for conventions in (False, True):
            options = WaveOptions(typed_values=True, whole_words=whole_words)
            said = [{"role": "user", "content": text}]
            request = SidecarRequest(said, [tool], ruled=_values_ruled(said, [tool], conventions))
            plan = WavePlan.build(request, template, options)
            _, constraints = HFSidecar(model, tokenizer, options=options)._steers(plan)
            assert constraints is not None
            held[whole_words, conventions] = {
                plan.rows[i].param: c.words_from for i, c in constraints.items()
            }
    assert held[True, True] == {
        "dish": text, "servings": text, "items": text, "diet": None, "hot": None
    }  # fmt: skip
    for key in ((False, False), (False, True), (True, False)):
        assert set(held[key].values()) == {None}, key


def _triangle() -> dict[str, Any]:
    tool = _tool("triangle", {"side1": {"type": "integer"}, "side2": {"type": "integer"}})
    tool["function"]["parameters"]["required"] = ["side1", "side2"]
    return tool


class _Recording(HFSidecar):
    """An HFSidecar that records the prompts its generator runs with a kept prefix."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.call_prompts: list[str] = []
        generate = self.generator.generate

        def recording(prompts: Any, **kw: Any) -> Any:
            if kw.get("kept") is not None:
                self.call_prompts.append(self.generator.tokenizer.decode(prompts[0]))
            return generate(prompts, **kw)

        self.generator.generate = recording  # type: ignore[method-assign]


@pytest.mark.parametrize("joint", [False, True])
def test_joint_values_write_the_numbers_again_in_the_call(tokenizer: Any, joint: bool) -> None:
    """Each argument row answers 5 (its prompt ends the template's ``assistant\\n``); inside
    the call (a prompt ending ``": "``) the model writes 7 and then a comma. With
    ``joint_values`` each number is written again in the call, after the ones before it."""
    request = SidecarRequest([{"role": "user", "content": "Sides 5 and 7."}], [_triangle()])
    template = template_from_tokenizer(tokenizer)
    options = WaveOptions(typed_values=True, joint_values=joint)
    plan = WavePlan.build(request, template, options)

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    row_end = {encode(p)[-1] for p in plan.prompts}
    call_end = encode('{"name": "triangle", "parameters": {"side1": ')[-1]
    assert len(row_end) == 1 and call_end not in row_end
    five, seven, comma = tokenizer.convert_tokens_to_ids(["5", "7", ","])
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    (row,) = row_end
    table = {row: five, five: end, call_end: seven, seven: comma}
    model = ScriptedLM(make_model("qwen3", len(tokenizer)), table, None)
    sidecar = _Recording(model, tokenizer, options=options)
    report = anyio.run(sidecar.run_wave, request, HintBox())
    number = "7" if joint else "5"
    assert report.answers["0.side1"] == report.answers["0.side2"] == number
    assert dict(report.hint.slots) == {"side1": int(number), "side2": int(number)}
    if not joint:
        assert sidecar.call_prompts == []
        return
    # The direct-call prompt, then the call as written so far: side2 reads side1's 7.
    from ooo_agent.sidecar.rows import build_wave_rows

    direct = build_wave_rows(request.messages, request.tools, direct_call=True)[-1]
    start = template(direct.messages) + '{"name": "triangle", "parameters": {'
    assert sidecar.call_prompts == [start + '"side1": ', start + '"side1": 7, "side2": ']
    # Each row's answer lands first, the number written again after it.
    assert report.arrivals == ["0.side1", "0.side2", "0.side1", "0.side2"]


def test_joint_values_keep_the_rows_answer_where_the_call_writes_no_number(
    tokenizer: Any,
) -> None:
    """Inside the call the model never ends its number (it writes 7s to the token budget):
    the row's own answer stands. A tool with no number asks nothing more."""
    request = SidecarRequest([{"role": "user", "content": "Sides 5 and 7."}], [_triangle()])
    options = WaveOptions(typed_values=True, joint_values=True)
    plan = WavePlan.build(request, template_from_tokenizer(tokenizer), options)

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    (row,) = {encode(p)[-1] for p in plan.prompts}
    call_end = encode('{"name": "triangle", "parameters": {"side1": ')[-1]
    five, seven = tokenizer.convert_tokens_to_ids(["5", "7"])
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    table = {row: five, five: end, call_end: seven, seven: seven}
    model = ScriptedLM(make_model("qwen3", len(tokenizer)), table, None)
    sidecar = _Recording(model, tokenizer, options=options, max_new_tokens=4)
    report = anyio.run(sidecar.run_wave, request, HintBox())
    assert report.answers["0.side1"] == report.answers["0.side2"] == "5"
    assert len(sidecar.call_prompts) == 2
    words = SidecarRequest(MESSAGES, [_tool("get_time", {"zone": {"type": "string"}})])
    anyio.run(sidecar.run_wave, words, HintBox())
    assert len(sidecar.call_prompts) == 2
    with pytest.raises(ValueError, match="typed_values"):
        WaveOptions(joint_values=True)


def test_joint_values_write_again_a_string_that_repeats_an_earlier_one(tokenizer: Any) -> None:
    """A string row that answers an earlier row's words again ("Sydney" for the country after
    the city "Sydney"; case aside, or a part of them) is written again in the call, after
    them; a string of its own words is not, nor a tool's first string."""
    from ooo_agent.sidecar.hf import _repeats

    strings = {"type": "string"}
    tool = _tool("clock", {"city": strings, "country": strings, "zone": strings})
    tool["function"]["parameters"]["required"] = ["city", "country", "zone"]
    request = SidecarRequest([{"role": "user", "content": "Time in Sydney, Australia?"}], [tool])
    options = WaveOptions(typed_values=True, joint_values=True)
    template = template_from_tokenizer(tokenizer)
    sidecar = HFSidecar(make_model("qwen3", len(tokenizer)), tokenizer, options=options)
    plan = WavePlan.build(request, template, options)
    assembler = WaveAssembler.start(plan, HintBox(), options)
    rows = {"city": '"Sydney"', "country": '"sydney"', "zone": '"AEST"'}
    for i, row in enumerate(plan.rows):
        assert row.param is not None
        assembler.answer(i, rows[row.param])
    asked: list[str] = []

    def generate(prompts: Any, **kw: Any) -> list[RowResult]:
        assert kw["stop_strings"] == ('",', '"}') and kw["kept"] is not None
        asked.append(tokenizer.decode(prompts[0]))
        return [RowResult(0, [], '"Australia', "stop")]  # cut before its stop string

    sidecar.generator.generate = generate  # type: ignore[method-assign]
    _, constraints = sidecar._steers(plan)
    assert constraints is not None
    sidecar._joint_values(plan, assembler, constraints, None)
    from ooo_agent.sidecar.rows import build_wave_rows

    direct = build_wave_rows(request.messages, request.tools, direct_call=True)[-1]
    call = '{"name": "clock", "parameters": {"city": "Sydney", "country": '
    assert asked == [template(direct.messages) + call]
    assert assembler.answers_of(0) == {
        "city": '"Sydney"', "country": '"Australia"', "zone": '"AEST"'
    }  # fmt: skip
    assert _repeats("A", ["Aries"]) and _repeats("New York City", ["new york"])
    assert not _repeats("Paris", ["London", 3]) and not _repeats(" ", ["a b"])
