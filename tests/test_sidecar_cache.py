"""The sidecar's prefix cache and the tools-first row layout, on tiny random models (CPU).

A wave's shared prompt is kept in the sidecar's own ``PrefixCache``; a later wave runs only
what its prompt does not share with a kept entry, and answers exactly as without the cache.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import anyio  # noqa: E402

from ooo_agent import FastToolCaller  # noqa: E402
from ooo_agent.sidecar import HintBox, SidecarRequest, WaveOptions  # noqa: E402
from ooo_agent.sidecar._wave import WavePlan  # noqa: E402
from ooo_agent.sidecar.batch import common_prefix_length  # noqa: E402
from ooo_agent.sidecar.hf import HFSidecar  # noqa: E402
from ooo_agent.sidecar.rows import (  # noqa: E402
    build_wave_rows,
    label_rows,
    render_dialogue,
)
from ooo_agent.targets.base import Generation, Mode, TargetRequest  # noqa: E402
from ooo_agent.targets.replay import ReplayTarget  # noqa: E402
from sidecar_tiny import make_model, make_tokenizer  # noqa: E402


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


WEATHER = _tool(
    "get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"]
)
TIME = _tool("get_time", {"zone": {"type": "string"}}, ["zone"])
CONVERT = _tool("convert", {"amount": {"type": "number"}, "to": {"type": "string"}}, ["amount"])
TOOLS = [WEATHER, TIME]
OTHER_TOOLS = [CONVERT, TIME, WEATHER]

TURN_1 = [{"role": "user", "content": "What is the weather in Paris for 3 days?"}]
CALL_1 = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'},
        }
    ],
}
TURN_2 = [
    *TURN_1,
    CALL_1,
    {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 C"},
    {"role": "user", "content": "And what time is it in Tokyo?"},
]

# The embedded preset's wave, in the cacheable layout.
PRESET_LIKE = WaveOptions(
    function_choice="scored",
    relevance_weight=2.0,
    required_values=True,
    mentioned_values=True,
    typed_values=True,
    unnamed_nulls=True,
    whole_words=True,
    request_case=True,
    joint_values=True,
    layout="tools-first",
)
INDEX_PARALLEL = WaveOptions(schedule="parallel", layout="tools-first")


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return make_tokenizer()


def _sidecar(model: Any, tokenizer: Any, options: WaveOptions, **kwargs: Any) -> HFSidecar:
    return HFSidecar(model, tokenizer, options=options, max_new_tokens=6, **kwargs)


def _wave(sidecar: HFSidecar, messages: Any, tools: Any) -> tuple[Any, HintBox]:
    box = HintBox()
    report = sidecar.run_wave_sync(SidecarRequest(messages, tools), box)
    return report, box


def _shared_prefix(sidecar: HFSidecar, messages: Any, tools: Any) -> list[int]:
    """The token prefix every row of the wave's one batch shares (index row, parallel)."""
    plan = WavePlan.build(SidecarRequest(messages, tools), sidecar.template, sidecar.options)
    prompts = [sidecar.generator.encode(p) for p in plan.prompts]
    length = min(common_prefix_length(prompts), min(len(p) for p in prompts) - 1)
    return prompts[0][:length]


# -- the layout -------------------------------------------------------------------------------


def test_tools_first_rows_share_listing_and_dialogue_then_ask_the_same_questions() -> None:
    dialogue = render_dialogue(TURN_2)
    rows = build_wave_rows(TURN_2, TOOLS, direct_call=True, layout="tools-first")
    head = f"Available tools:\n[0] get_weather(city, days)\n[1] get_time(zone)\n\n{dialogue}\n\n"
    assert [r.key for r in rows] == ["function", "0.city", "0.days", "1.zone", "direct_call"]
    for row in rows:
        assert row.messages[1]["content"].startswith(head)
    questions = [r.messages[1]["content"][len(head) :] for r in rows]
    published = build_wave_rows(TURN_2, TOOLS, direct_call=True)
    assert questions[0] == published[0].messages[1]["content"].rsplit("\n\n", 1)[1]
    assert questions[1] == published[1].messages[1]["content"].rsplit("\n\n", 1)[1]
    assert questions[-1] == published[-1].messages[1]["content"].rsplit("\n\n", 1)[1]
    # Earlier calls and their results are in the dialogue, as the published rows show them.
    assert '<response>{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}' in (
        dialogue
    )
    assert "<obs>sunny, 21 C</obs>" in dialogue
    # A request on the same tools shares everything before the dialogue's text; the next turn
    # of a conversation shares everything before its new turn.
    first = build_wave_rows(TURN_1, TOOLS, layout="tools-first")[0].messages[1]["content"]
    shared = common_prefix_length([list(first), list(rows[0].messages[1]["content"])])
    assert shared >= len(head) - len(dialogue) + len(render_dialogue(TURN_1))


def test_tools_first_rows_keep_the_labels_and_the_published_rows_are_unchanged() -> None:
    call = ("get_weather", {"city": "Paris", "days": 3})
    published = label_rows(TURN_1, TOOLS, call)
    cacheable = label_rows(TURN_1, TOOLS, call, layout="tools-first")
    assert [(r.key, a) for r, a in cacheable] == [(r.key, a) for r, a in published]
    assert [r.messages for r, _ in published] == [
        r.messages for r, _ in label_rows(TURN_1, TOOLS, call, layout="dialogue-first")
    ]
    assert published[0][0].messages[1]["content"].startswith("**Dialogue Records History**")
    with pytest.raises(ValueError, match="layout"):
        build_wave_rows(TURN_1, TOOLS, layout="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="layout"):
        WaveOptions(layout="sideways")  # type: ignore[arg-type]


def test_the_data_builder_writes_tools_first_rows_with_the_same_completions(
    tokenizer: Any,
) -> None:
    from ooo_agent.train._sidecar_labels import LabelledRequest
    from ooo_agent.train.examples import TrainRequest
    from ooo_agent.train.sidecar_data import build_parser, sidecar_rows

    item = LabelledRequest(
        TrainRequest("r1", TURN_1, TOOLS), ("get_weather", {"city": "Paris", "days": 3})
    )
    published = sidecar_rows([item], tokenizer, other_null_fraction=1.0)
    cacheable = sidecar_rows([item], tokenizer, other_null_fraction=1.0, layout="tools-first")
    assert [r["completion"] for r in cacheable] == [r["completion"] for r in published]
    assert all(r["prompt"].count("Available tools:\n[0] get_weather") == 1 for r in cacheable)
    assert len({r["prompt"] for r in cacheable}) == len(cacheable)
    args = build_parser().parse_args(["--target-adapter", "a", "--out", "o"])
    assert args.layout == "dialogue-first"
    args = build_parser().parse_args(
        ["--target-adapter", "a", "--out", "o", "--layout", "tools-first"]
    )
    assert args.layout == "tools-first"


def test_the_embedded_sidecar_keeps_the_layout_it_was_trained_on() -> None:
    from ooo_agent.models.presets import sidecar_wave_defaults

    # v6 was trained on tools-first rows; the published Qwen3 adapter on the published ones.
    assert sidecar_wave_defaults("smollm2-135m-sidecar")["layout"] == "tools-first"
    assert sidecar_wave_defaults("qwen3-0.6b-ooo-sidecar")["layout"] == "dialogue-first"


# -- the cache --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_a_second_turns_wave_prefills_only_the_new_turn_and_answers_as_without_cache(
    kind: str, tokenizer: Any
) -> None:
    model = make_model(kind, len(tokenizer), seed=4)
    cached = _sidecar(model, tokenizer, INDEX_PARALLEL)
    cold = _sidecar(model, tokenizer, INDEX_PARALLEL, prefix_cache_bytes=0)
    assert cold.prefix_cache is None and cached.prefix_cache is not None

    first, box = _wave(cached, TURN_1, TOOLS)
    prefix_1 = _shared_prefix(cached, TURN_1, TOOLS)
    assert box.usage.cached_tokens == 0
    assert box.usage.prefill_tokens == len(prefix_1)
    assert box.usage.row_tokens > 0
    assert first.answers == _wave(cold, TURN_1, TOOLS)[0].answers

    second, box = _wave(cached, TURN_2, TOOLS)
    prefix_2 = _shared_prefix(cached, TURN_2, TOOLS)
    shared = common_prefix_length([prefix_1, prefix_2])
    assert box.usage.cached_tokens == shared
    assert box.usage.prefill_tokens == len(prefix_2) - shared
    # What ran is the new turn (and the start of the rows' questions), nothing before it.
    new_text = render_dialogue(TURN_2)[len(render_dialogue(TURN_1)) :] + "\n\nWh"
    assert box.usage.prefill_tokens <= len(cached.generator.encode(new_text)) + 2
    assert shared >= len(prefix_1) - 4
    again, cold_box = _wave(cold, TURN_2, TOOLS)
    assert cold_box.usage.cached_tokens == 0
    assert cold_box.usage.prefill_tokens == len(prefix_2)
    assert second.answers == again.answers
    assert second.hint == again.hint


@pytest.mark.parametrize("kind", ["qwen3", "llama"])
def test_interleaved_waves_answer_token_for_token_as_without_cache(
    kind: str, tokenizer: Any
) -> None:
    model = make_model(kind, len(tokenizer), seed=7)
    third = [*TURN_2[:-1], {"role": "user", "content": "Convert 3 EUR to dollars"}]
    requests = [
        (TURN_1, TOOLS),
        (TURN_1, OTHER_TOOLS),  # another toolset: shares only the listing's start
        (TURN_2, TOOLS),
        ([{"role": "user", "content": "time in Oslo"}], TOOLS),
        (third, OTHER_TOOLS),
        (TURN_2, OTHER_TOOLS),
        (TURN_2, TOOLS),  # the same wave again: wholly cached prefix
    ]
    for options in (PRESET_LIKE, INDEX_PARALLEL, WaveOptions(function_choice="scored")):
        cached = _sidecar(model, tokenizer, options)
        cold = _sidecar(model, tokenizer, options, prefix_cache_bytes=0)
        served = 0
        for messages, tools in requests:
            report, box = _wave(cached, messages, tools)
            alone, _ = _wave(cold, messages, tools)
            assert report.answers == alone.answers, (options, messages, tools)
            assert report.hint == alone.hint
            served += box.usage.cached_tokens
        assert served > 0  # the cache was used, and changed no answer
        assert cached.prefix_cache is not None
        assert cached.prefix_cache.nbytes <= cached.prefix_cache.max_bytes


def test_concurrent_waves_on_one_sidecar_answer_as_sequential_ones(tokenizer: Any) -> None:
    model = make_model("llama", len(tokenizer), seed=11)
    requests = [
        (TURN_1, TOOLS),
        (TURN_2, TOOLS),
        (TURN_1, OTHER_TOOLS),
        (TURN_2, OTHER_TOOLS),
    ] * 2
    cold = _sidecar(model, tokenizer, PRESET_LIKE, prefix_cache_bytes=0)
    expected = [_wave(cold, m, t)[0].answers for m, t in requests]
    # A budget of about two prompts: entries are evicted while other waves read them.
    budget = 2 * 46 * 4 * 2 * 2 * 200
    shared = _sidecar(model, tokenizer, PRESET_LIKE, prefix_cache_bytes=budget)
    got: list[Any] = [None] * len(requests)
    failures: list[BaseException] = []

    def worker(start: int) -> None:
        try:
            for i in range(start, len(requests), 4):
                got[i] = _wave(shared, *requests[i])[0].answers
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert got == expected
    assert shared.prefix_cache is not None
    assert shared.prefix_cache.nbytes <= budget
    assert shared.prefix_cache.evictions > 0


def test_a_cancelled_wave_leaves_no_half_written_entry(tokenizer: Any) -> None:
    model = make_model("qwen3", len(tokenizer), seed=5)
    sidecar = _sidecar(model, tokenizer, INDEX_PARALLEL)
    cold = _sidecar(model, tokenizer, INDEX_PARALLEL, prefix_cache_bytes=0)
    from ooo_agent.sidecar.batch import GenerationCancelled

    cancel = threading.Event()
    forwards = 0
    real = sidecar.generator.decoder.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        nonlocal forwards
        forwards += 1
        if forwards == 3:  # mid-decode
            cancel.set()
        return real(*args, **kwargs)

    sidecar.generator.decoder.forward = forward
    with pytest.raises(GenerationCancelled):
        sidecar.run_wave_sync(SidecarRequest(TURN_1, TOOLS), HintBox(), cancel)
    sidecar.generator.decoder.forward = real
    assert sidecar.prefix_cache is not None
    for ids in sidecar.prefix_cache.entries():
        assert len(ids) > 0
    report, _ = _wave(sidecar, TURN_1, TOOLS)
    assert report.answers == _wave(cold, TURN_1, TOOLS)[0].answers


# -- the call's stats -------------------------------------------------------------------------


class _SlowReplay(ReplayTarget):
    """A replay target in every mode that takes a while, so the wave lands first."""

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla", "toolspec", "ooo")

    async def generate(self, request: TargetRequest) -> Generation:
        box = request.hint_box
        for step in range(100):
            if box is not None:
                box.mark_step(step)
                if box.snapshot().complete:
                    break
            await anyio.sleep(0.02)
        await anyio.sleep(0.2)  # the caller records the finished wave meanwhile
        return await super().generate(request)


@pytest.mark.anyio
async def test_call_stats_give_the_waves_cached_and_prefilled_tokens(tokenizer: Any) -> None:
    model = make_model("llama", len(tokenizer), seed=2)
    sidecar = _sidecar(model, tokenizer, INDEX_PARALLEL)
    call = json.dumps({"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}})
    target = _SlowReplay([f"<tool_call>\n{call}\n</tool_call>"], cycle=True)
    caller = FastToolCaller(target, sidecar, mode="ooo")
    first = await caller.call(TURN_1, TOOLS, dispatch=False)
    second = await caller.call(TURN_2, TOOLS, dispatch=False)
    one, two = first.stats.sidecar, second.stats.sidecar
    assert one.status == two.status == "ok"
    assert one.cached_tokens == 0 and one.prefill_tokens > 0 and one.row_tokens > 0
    assert two.cached_tokens >= one.prefill_tokens - 4
    assert 0 < two.prefill_tokens < one.prefill_tokens
    assert one.prefill_s > 0 and one.rows_s > 0
