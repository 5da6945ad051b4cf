"""The prefix cache: several entries within a byte budget, never served past a difference.

Tiny random models (float64) and the byte tokenizer: every output with the cache equals the
output of a target without it, in every mode, over interleaved conversations, partial shares,
a conversation's next turn (rendered as written and rendered otherwise) and concurrent calls.
The slow test runs a two-turn agent conversation on the embedded model.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch")
from ooo_agent.decoding.kv import cache_length, new_cache  # noqa: E402
from ooo_agent.decoding.loop import DecodeEngine  # noqa: E402
from ooo_agent.decoding.prefix_cache import PrefixCache, cache_bytes  # noqa: E402
from ooo_agent.decoding.stopping import StopCondition  # noqa: E402
from ooo_agent.sidecar.base import HintBox  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402


def _tool(name: str, description: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": params, "required": list(params)},
        },
    }


WEATHER = [_tool("get_weather", "Weather for a city.", {"city": {"type": "string"}})]
FLIGHTS = [
    _tool("search", "Search flights.", {"query": {"type": "string"}, "limit": {"type": "integer"}})
]


def _ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def _filled(model: Any, ids: list[int]) -> Any:
    """A cache holding ``ids``' KV, computed by the model."""
    cache = new_cache()
    with torch.no_grad():
        model(input_ids=torch.tensor([ids]), cache=cache, use_cache=True)
    return cache


def _kv(cache: Any) -> list[tuple[Any, Any]]:
    return [(layer.keys.clone(), layer.values.clone()) for layer in cache.layers]


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_model("qwen2", "sdpa", vocab_size=96, seed=5)


# -- the class ------------------------------------------------------------------------------
def test_longest_prefix_is_served_and_a_partial_share_copies_without_harming_the_entry(
    model: Any,
) -> None:
    cache = PrefixCache()
    a = [1, 2, 3, 4, 5, 6, 7, 8]
    b = [1, 2, 9, 9, 9]
    cache.insert(a, _filled(model, a))
    cache.insert(b, _filled(model, b))
    before = _kv(_filled(model, a))

    match = cache.lookup([1, 2, 3, 4, 40, 41])
    assert (match.length, match.diverged_at, match.entry_tokens) == (4, 4, 8)
    hit = cache.take([1, 2, 3, 4, 40, 41])
    assert hit.length == 4 and hit.diverged_at == 4 and hit.copied
    assert cache_length(hit.cache) == 4
    # The copy equals a cold prefill of the shared tokens ...
    for (k, v), (k0, v0) in zip(_kv(hit.cache), _kv(_filled(model, a[:4])), strict=True):
        assert torch.allclose(k, k0, atol=1e-9) and torch.allclose(v, v0, atol=1e-9)
    # ... and growing it leaves the entry it came from whole.
    with torch.no_grad():
        model(input_ids=torch.tensor([[40, 41]]), cache=hit.cache, use_cache=True)
    assert sorted(cache.entries()) == sorted([tuple(a), tuple(b)])
    again = cache.take(a)
    assert again.length == len(a) and not again.copied and again.diverged_at is None
    for (k, v), (k0, v0) in zip(_kv(again.cache), before, strict=True):
        assert torch.allclose(k, k0, atol=1e-9) and torch.allclose(v, v0, atol=1e-9)
    # Handed over whole: it left the cache (its owner gives back a longer one).
    assert cache.entries() == [tuple(b)]
    assert cache.take([50, 51]).length == 0  # nothing shared: an empty cache of its own


def test_take_respects_its_limit_and_insert_replaces_prefixes(model: Any) -> None:
    cache = PrefixCache()
    a = [3, 4, 5, 6]
    cache.insert(a, _filled(model, a))
    hit = cache.take(a, limit=3)  # one token must still run
    assert hit.length == 3 and cache_length(hit.cache) == 3 and hit.diverged_at is None
    longer = [*a, 7, 8]
    cache.insert(longer, _filled(model, longer))
    cache.insert(a, _filled(model, a))  # already a prefix of an entry: not stored twice
    assert cache.entries() == [tuple(longer)]
    with pytest.raises(ValueError, match="holds 4 tokens, not the 3"):
        cache.insert([1, 2, 3], _filled(model, a))
    for bad in (-1, 1.5, True, "9"):
        with pytest.raises(ValueError, match="max_bytes"):
            PrefixCache(bad)  # type: ignore[arg-type]


def test_the_byte_budget_holds_least_recently_used_evicted_first(model: Any) -> None:
    one = cache_bytes(_filled(model, [1, 2, 3]))  # every entry here fits one buffer size
    cache = PrefixCache(max_bytes=2 * one)
    cache.insert([1, 2, 3], _filled(model, [1, 2, 3]))
    cache.insert([4, 5, 6], _filled(model, [4, 5, 6]))
    assert cache.lookup([4, 5, 6]).length == 3  # peeking does not mark an entry used
    assert cache.take([1, 2, 9]).copied  # serving part of [1, 2, 3] marks it used
    cache.insert([7, 8, 9], _filled(model, [7, 8, 9]))  # past the budget: evicts [4, 5, 6]
    assert cache.entries() == [(1, 2, 3), (7, 8, 9)]
    assert cache.nbytes == 2 * one and cache.evictions == 1 and cache.tokens == 6
    tiny = PrefixCache(max_bytes=one - 1)  # an entry over the whole budget is not kept
    tiny.insert([1, 2, 3], _filled(model, [1, 2, 3]))
    assert len(tiny) == 0 and tiny.nbytes == 0
    cache.evict(0)
    assert len(cache) == 0 and cache.nbytes == 0
    single = PrefixCache(max_entries=1)  # the single slot of old: the last entry only
    single.insert([1, 2, 3], _filled(model, [1, 2, 3]))
    single.insert([4, 5, 6], _filled(model, [4, 5, 6]))
    assert single.entries() == [(4, 5, 6)] and single.nbytes == one
    with pytest.raises(ValueError, match="max_entries"):
        PrefixCache(max_entries=-1)


# -- the engine ------------------------------------------------------------------------------
def test_engine_turn_two_prefills_only_the_new_tokens_and_says_where_a_rendering_diverged(
    model: Any,
) -> None:
    warm = DecodeEngine(model)
    cold = DecodeEngine(model, prefix_reuse=False)
    stop = StopCondition.of([95], (), None)
    turn1 = [7, 8, 9, 10, 11, 12, 13, 14]
    first = warm.decode(turn1, max_new_tokens=12, stop=stop)
    assert first.token_ids == cold.decode(turn1, max_new_tokens=12, stop=stop).token_ids
    result = [60, 61, 62, 63]  # the tool's result and the next turn's header
    turn2 = [*turn1, *first.token_ids, *result]
    second = warm.decode(turn2, max_new_tokens=12, stop=stop)
    assert second.token_ids == cold.decode(turn2, max_new_tokens=12, stop=stop).token_ids
    # Everything the first call wrote but its last token (never run) came from the cache.
    assert second.stats.cached_tokens == len(turn1) + len(first.token_ids) - 1
    assert second.stats.prefill_tokens == len(result) + 1
    assert second.stats.cache_diverged_at is None

    # The conversation renders the assistant's turn otherwise from its 3rd token on.
    written = list(second.token_ids)
    rendered = [*written[:2], (written[2] + 1) % 90, *written[3:]]
    turn3 = [*turn2, *rendered, *result]
    third = warm.decode(turn3, max_new_tokens=12, stop=stop)
    assert third.token_ids == cold.decode(turn3, max_new_tokens=12, stop=stop).token_ids
    assert third.stats.cache_diverged_at == len(turn2) + 2 == third.stats.cached_tokens
    assert third.stats.prefill_tokens == len(turn3) - len(turn2) - 2


@pytest.fixture(scope="module")
def byte_model() -> Any:
    return tiny_model("llama", "sdpa", vocab_size=len(byte_tokenizer()), seed=23)


def _target(byte_model: Any, **kw: Any) -> HFTarget:
    return HFTarget(byte_model, byte_tokenizer(), "hermes", node_budget=16, **kw)


def _request(messages: list[dict[str, Any]], tools: Any, mode: str) -> TargetRequest:
    box = None
    if mode == "ooo":
        box = HintBox()
        box.set_function(tools[0]["function"]["name"])
    return TargetRequest(messages, tools, mode=mode, max_new_tokens=20, hint_box=box)  # type: ignore[arg-type]


CONVERSATIONS = [
    (_ask("What is the weather in Paris?"), WEATHER),
    (_ask("Find cheap flights to Rome"), FLIGHTS),
    (_ask("What is the weather in Paris?"), WEATHER),  # A again, after B
    (_ask("What is the weather in Berlin today?"), WEATHER),  # shares only A's start
    (_ask("Find cheap flights to Rome, five of them"), FLIGHTS),
]


@pytest.mark.parametrize("mode", ["vanilla", "toolspec", "ooo"])
def test_interleaved_conversations_equal_a_target_without_the_cache(
    byte_model: Any, mode: str
) -> None:
    warm = _target(byte_model)
    cold = _target(byte_model, prefix_reuse=False)
    assert cold.prefix_cache is None and warm.prefix_cache is not None
    outs = []
    for messages, tools in CONVERSATIONS:
        got = warm.generate_sync(_request(messages, tools, mode))
        want = cold.generate_sync(_request(messages, tools, mode))
        assert got.token_ids == want.token_ids and got.text == want.text
        assert want.stats.prefill_tokens == want.stats.prompt_tokens
        assert got.stats.prefill_tokens + got.stats.cached_tokens == got.stats.prompt_tokens
        outs.append(got)
    # A after B: A's entry was kept (a single slot would hold B), one token runs.
    assert outs[2].stats.prefill_tokens == 1
    # Another question on A's tools: served up to where the question differs.
    prompt_a = warm.prompt_ids(*CONVERSATIONS[0])
    prompt_d = warm.prompt_ids(*CONVERSATIONS[3])
    shared = next(i for i, (x, y) in enumerate(zip(prompt_a, prompt_d, strict=False)) if x != y)
    assert outs[3].stats.cached_tokens == shared == outs[3].stats.cache_diverged_at
    assert len(warm.prefix_cache) >= 3


def test_a_next_turn_rendered_otherwise_is_served_up_to_the_first_difference(
    byte_model: Any,
) -> None:
    # A random model's call holds stray bytes: its text re-encodes otherwise after the opening.
    warm = _target(byte_model, constrain_arguments=True)
    cold = _target(byte_model, constrain_arguments=True, prefix_reuse=False)
    messages = _ask("What is the weather in Paris?")

    def request(conversation: list[dict[str, Any]]) -> TargetRequest:
        return TargetRequest(conversation, WEATHER, max_new_tokens=30, tool_choice="required")

    first = warm.generate_sync(request(messages))
    turn2 = [
        *messages,
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "And in Rome?"},
    ]
    second = warm.generate_sync(request(turn2))
    assert second.token_ids == cold.generate_sync(request(turn2)).token_ids
    prompt1, prompt2 = warm.prompt_ids(messages, WEATHER), warm.prompt_ids(turn2, WEATHER)
    written = [*prompt1, *first.token_ids]
    same = next(i for i, (x, y) in enumerate(zip(written, prompt2, strict=False)) if x != y)
    assert len(prompt1) < same < len(written) - 1  # the call's opening matched, then not
    assert second.stats.cached_tokens == same == second.stats.cache_diverged_at
    assert second.stats.prefill_tokens == len(prompt2) - same


def test_concurrent_calls_on_one_target_equal_sequential_calls(byte_model: Any) -> None:
    shared = _target(byte_model, prefix_cache_bytes=4 * 2**20)
    sequential = _target(byte_model, prefix_reuse=False)
    requests = [
        _request(messages, tools, mode)
        for (messages, tools) in CONVERSATIONS
        for mode in ("vanilla", "toolspec")
    ]
    want = [sequential.generate_sync(r).token_ids for r in requests]

    async def main() -> list[list[int]]:
        got: list[list[int]] = [[] for _ in requests]

        async def one(i: int) -> None:
            got[i] = (await shared.generate(requests[i])).token_ids

        async with anyio.create_task_group() as group:
            for i in range(len(requests)):
                group.start_soon(one, i)
        return got

    for _ in range(2):  # the second round is served from what the first one cached
        assert anyio.run(main) == want
    assert shared.prefix_cache is not None and shared.prefix_cache.nbytes <= 4 * 2**20


def test_a_call_failing_mid_decode_never_leaves_a_half_written_entry(model: Any) -> None:
    warm = DecodeEngine(model)
    cold = DecodeEngine(model, prefix_reuse=False)
    assert warm.prefix_cache is not None
    stop = StopCondition.of([95], (), None)
    turn1 = [7, 8, 9, 10, 11, 12]
    first = warm.decode(turn1, max_new_tokens=8, stop=stop).token_ids
    entry = warm.prefix_cache.entries()
    original = warm.verifier.verify

    def broken(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)  # the cache has grown by the tree: then the step fails
        raise RuntimeError("device lost")

    warm.verifier.verify = broken  # type: ignore[method-assign]
    other = [7, 8, 9, 40, 41]  # shares part of the entry: a copy fails, the entry stays
    turn2 = [*turn1, *first, 60, 61]  # extends the entry: it is handed over, then lost
    try:
        with pytest.raises(RuntimeError, match="device lost"):
            warm.decode(other, max_new_tokens=8, stop=stop)
        assert warm.prefix_cache.entries() == entry
        with pytest.raises(RuntimeError, match="device lost"):
            warm.decode(turn2, max_new_tokens=8, stop=stop)
        assert warm.prefix_cache.entries() == []
    finally:
        warm.verifier.verify = original  # type: ignore[method-assign]
    again = warm.decode(turn2, max_new_tokens=8, stop=stop)
    assert again.token_ids == cold.decode(turn2, max_new_tokens=8, stop=stop).token_ids
    assert again.stats.prefill_tokens == len(turn2)


@pytest.mark.slow
def test_embedded_agent_second_turn_prefills_only_the_new_tokens(embedded: Any) -> None:
    from ooo_agent.agent import Agent
    from ooo_agent.caller import FastToolCaller
    from ooo_agent.models import target_constraints, target_decline_below, target_format

    model, tokenizer = embedded
    name = "smollm2-135m-toolcall"  # HFTarget.from_preset()'s settings, without a second load
    settings: dict[str, Any] = dict(
        target_constraints(name),
        format=target_format(name),
        decline_below=target_decline_below(name),
    )
    warm = HFTarget(model, tokenizer, **settings)
    cold = HFTarget(model, tokenizer, prefix_reuse=False, **settings)

    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"Sunny, 21 C in {city}."

    def run(target: HFTarget) -> Any:
        agent = Agent(FastToolCaller(target), max_turns=2, on_retry_budget="stop")
        return agent.run_sync("What is the weather in Paris right now?", [get_weather])

    got, want = run(warm), run(cold)
    assert [m.get("content") for m in got.messages] == [m.get("content") for m in want.messages]
    assert got.turns == want.turns == 2 and got.calls and got.calls[0].name == "get_weather"
    second = got.stats.turns[1].decode
    assert second.prefill_tokens * 4 < second.prompt_tokens
    assert want.stats.turns[1].decode.prefill_tokens == second.prompt_tokens
