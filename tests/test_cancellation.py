"""Cancelling a call always returns: ``HFTarget.generate`` cancelled before its worker thread
started, while it waits behind another call's decode, or anywhere in its first 50 ms (the
embedded model, every mode), and the target serves the next call as before."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

torch = pytest.importorskip("torch")
from ooo_agent.decoding.loop import DecodeCancelled  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402
from test_hf_target import MESSAGES, TOOLS  # noqa: E402

HANG = 60.0
"""Seconds after which a call that has not returned is taken to hang (a guard, not a timing)."""


@pytest.fixture(scope="module")
def target() -> HFTarget:
    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    return HFTarget(model, tokenizer, "hermes", node_budget=16)


def _request(mode: str = "toolspec") -> TargetRequest:
    return TargetRequest(MESSAGES, TOOLS, mode=mode, max_new_tokens=24)  # type: ignore[arg-type]


def _returns(fn: Callable[[], Any]) -> tuple[bool, Any]:
    """Run ``fn`` in a daemon thread: whether it returned (or raised) before the hang guard,
    and what it returned or raised."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # reported to the test, which asserts on it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    return (not thread.is_alive(), outcome[0] if outcome else None)


def test_a_call_cancelled_before_its_thread_starts_returns_and_never_decodes(
    target: HFTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = target.generate_sync(_request())
    real_run_sync = anyio.to_thread.run_sync
    queued: list[Callable[[], Any]] = []

    async def no_thread_free(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """anyio's queue when no worker thread picks the job up before the cancel lands:
        an abandoned job is never run."""
        if kwargs.get("abandon_on_cancel"):
            queued.append(func)
            await anyio.sleep_forever()
        return await real_run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", no_thread_free)

    async def cancelled_while_queued() -> bool:
        with anyio.CancelScope() as scope:

            async def cancel_once_queued() -> None:
                while not queued:
                    await anyio.sleep(0)
                scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_once_queued)
                await target.generate(_request())
        return scope.cancelled_caught

    returned, cancelled = _returns(lambda: anyio.run(cancelled_while_queued))
    assert returned, "the cancelled call never returned"
    assert cancelled is True
    monkeypatch.setattr(anyio.to_thread, "run_sync", real_run_sync)

    # A worker that picks the job up after all decodes nothing.
    remembered = len(target.memory)
    with pytest.raises(DecodeCancelled):
        queued[0]()
    assert len(target.memory) == remembered
    # And the target serves the next call as before.
    again = anyio.run(target.generate, _request())
    assert again.token_ids == reference.token_ids


def test_a_call_cancelled_behind_another_decode_returns_without_waiting_for_it(
    target: HFTarget,
) -> None:
    reference = target.generate_sync(_request("vanilla"))
    cancel = threading.Event()
    cancel.set()
    target._serial.acquire()  # another call is decoding
    try:
        returned, outcome = _returns(lambda: target.generate_sync(_request(), cancel=cancel))
    finally:
        target._serial.release()
    assert returned, "the cancelled call waited for the other call's decode"
    assert isinstance(outcome, DecodeCancelled)
    assert target.generate_sync(_request("vanilla")).token_ids == reference.token_ids


SWEEP = [step * 0.002 for step in range(26)]
"""Cancellation delays 0, 2, …, 50 ms."""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["vanilla", "toolspec", "ooo"])
def test_every_call_cancelled_in_its_first_50_ms_returns(
    embedded: tuple[object, object], mode: str
) -> None:
    from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest

    model, tokenizer = embedded
    target = HFTarget(model, tokenizer, "hermes")

    class Immediate:
        """A sidecar whose hint is the call the target writes, at once."""

        async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
            box.set_function("get_weather")
            box.set_slot("city", "Paris")
            box.finish()
            return box.snapshot()

    caller = FastToolCaller(
        target, Immediate() if mode == "ooo" else None, mode=mode, max_new_tokens=48  # type: ignore[arg-type]
    )

    async def sweep() -> tuple[str, list[bool], str]:
        before = await caller.call(MESSAGES, TOOLS, dispatch=False)
        cancelled = []
        for delay in SWEEP:
            with anyio.move_on_after(delay) as scope:
                await caller.call(MESSAGES, TOOLS, dispatch=False)
            cancelled.append(scope.cancelled_caught)
        after = await caller.call(MESSAGES, TOOLS, dispatch=False)
        return before.raw_text, cancelled, after.raw_text

    returned, outcome = _returns(lambda: anyio.run(sweep))
    assert returned, f"a call cancelled within 50 ms never returned ({mode})"
    assert not isinstance(outcome, BaseException), outcome
    before, cancelled, after = outcome
    assert cancelled[0]  # a call cancelled at once is cancelled, not answered
    assert after == before and "get_weather" in before
