"""The agent's own turn stays cached, and the next turn's known start is prefilled while the
tools run.

Tiny random model (float64) and the byte tokenizer. What the model wrote is put in the cache
as decoding leaves it (prompt and call, :meth:`DecodeEngine.prefill_prefix`), so the call's
text is exact; the conversation then renders that call as written, with ``25`` as ``25.0``, or
with its keys in another order. Every output equals a target's without any cache.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch")
from ooo_agent.caller import FastToolCaller  # noqa: E402
from ooo_agent.decoding.loop import common_prefix_length  # noqa: E402
from ooo_agent.targets.base import Generation, TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from ooo_agent.targets.replay import ReplayTarget  # noqa: E402
from ooo_agent.tools import tool  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402

REFUND = [
    {
        "type": "function",
        "function": {
            "name": "refund",
            "description": "Refund an order.",
            "parameters": {
                "type": "object",
                "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order", "amount"],
            },
        },
    }
]
ASK = [{"role": "user", "content": "Refund 25 on order A1."}]
WRITTEN = {"order": "A1", "amount": 25}


@pytest.fixture(scope="module")
def byte_model() -> Any:
    return tiny_model("llama", "sdpa", vocab_size=len(byte_tokenizer()), seed=23)


def _target(byte_model: Any, **kw: Any) -> HFTarget:
    return HFTarget(byte_model, byte_tokenizer(), "hermes", node_budget=16, **kw)


def _wrote(target: HFTarget) -> list[int]:
    """Leave ``target``'s cache as a call that wrote ``WRITTEN`` leaves it; its tokens."""
    call = target.format.render_calls([("refund", WRITTEN)])
    written = [*target.prompt_ids(ASK, REFUND), *target.codec.encode(call)]
    assert target.engine.prefill_prefix(written) == len(written)
    return written


def _called(arguments: str) -> list[dict[str, Any]]:
    """The conversation with the assistant's call rendered from ``arguments`` (JSON text)."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "refund", "arguments": arguments},
    }
    return [*ASK, {"role": "assistant", "content": None, "tool_calls": [call]}]


RESULT = {"role": "tool", "tool_call_id": "call_1", "content": '{"refunded": 25}'}


def _next(target: HFTarget, called: list[dict[str, Any]]) -> Generation:
    return target.generate_sync(TargetRequest([*called, RESULT], REFUND, max_new_tokens=8))


@pytest.mark.parametrize(
    ("arguments", "differs"),
    [
        ('{"order": "A1", "amount": 25}', None),  # rendered as written
        ('{"order": "A1", "amount": 25.0}', "25.0"),  # a framework re-typed the number
        ('{"amount": 25, "order": "A1"}', '"amount"'),  # ... or re-ordered the keys
    ],
)
def test_the_call_the_model_wrote_is_served_up_to_where_its_rendering_differs(
    byte_model: Any, arguments: str, differs: str | None
) -> None:
    warm, cold = _target(byte_model), _target(byte_model, prefix_reuse=False)
    written = _wrote(warm)
    called = _called(arguments)
    prompt = warm.prompt_ids([*called, RESULT], REFUND)
    got, want = _next(warm, called), _next(cold, called)
    assert got.token_ids == want.token_ids and got.text == want.text
    same = common_prefix_length(written, prompt)
    assert got.stats.cached_tokens == same
    assert got.stats.prefill_tokens == len(prompt) - same
    if differs is None:
        assert same == len(written)  # the whole call, and nothing diverged
        assert got.stats.cache_diverged_at is None
    else:
        assert got.stats.cache_diverged_at == same < len(written)
        rendered = warm.codec.decode(prompt[: same + len(differs) + 4])
        assert differs in rendered[len(warm.codec.decode(prompt[:same])) - 2 :]


def test_prefilling_the_known_start_of_the_next_turn_leaves_only_the_result(
    byte_model: Any,
) -> None:
    warmed, unwarmed = _target(byte_model), _target(byte_model)
    cold = _target(byte_model, prefix_reuse=False)
    called = _called(json.dumps({"order": "A1", "amount": 25.0}))  # rendered otherwise
    for target in (warmed, unwarmed):
        _wrote(target)
    known = warmed.next_turn_ids(called, REFUND)
    prompt = warmed.prompt_ids([*called, RESULT], REFUND)
    assert prompt[: len(known)] == known  # the known start is where every next prompt starts
    assert warmed.codec.decode(prompt[len(known) :]).lstrip().startswith('{"refunded"')
    ran = warmed.prefill_next_turn_sync(called, REFUND)
    assert 0 < ran < len(known)  # only what the cache did not hold
    assert warmed.prefill_next_turn_sync(called, REFUND) == 0  # already there
    got, plain, want = _next(warmed, called), _next(unwarmed, called), _next(cold, called)
    assert got.token_ids == plain.token_ids == want.token_ids
    assert got.stats.prefill_tokens == len(prompt) - len(known)
    assert plain.stats.prefill_tokens == got.stats.prefill_tokens + ran
    assert _target(byte_model, prefix_reuse=False).prefill_next_turn_sync(called, REFUND) == 0


class _Warming(ReplayTarget):
    """Replays a call; records each next-turn prefill it is asked for, and when."""

    def __init__(self, outputs: list[str], *, fail: bool = False) -> None:
        super().__init__(outputs, format="hermes")
        self.prefills: list[tuple[float, list[dict[str, Any]]]] = []
        self.fail = fail

    async def prefill_next_turn(self, messages: Any, tools: Any) -> int:
        self.prefills.append((time.perf_counter(), [dict(m) for m in messages]))
        if self.fail:
            raise RuntimeError("no room for it")
        return 1


@tool
async def slow_refund(order: str, amount: float) -> dict[str, Any]:
    """Refund an order.

    Args:
        order: The order.
        amount: How much.
    """
    await anyio.sleep(0.3)
    return {"refunded": amount, "at": time.perf_counter()}


CALL = (
    '<tool_call>\n{"name": "slow_refund", "arguments": {"order": "A1", "amount": 25}}\n</tool_call>'
)


@pytest.mark.parametrize("fail", [False, True])
def test_the_caller_prefills_the_next_turn_while_the_tools_run(fail: bool) -> None:
    target = _Warming([CALL], fail=fail)
    result = FastToolCaller(target).call_sync(ASK, [slow_refund])
    assert result.ok and result.results[0].value["refunded"] == 25.0  # a failed prefill is harmless
    ((started, messages),) = target.prefills
    assert messages == [*ASK, result.assistant_message()]
    assert started < result.results[0].value["at"]  # beside the tool, not after it
    off = _Warming([CALL])
    FastToolCaller(off, prefill_next_turn=False).call_sync(ASK, [slow_refund])
    undispatched = _Warming([CALL])
    FastToolCaller(undispatched).call_sync(ASK, [slow_refund], dispatch=False)
    assert off.prefills == [] and undispatched.prefills == []
