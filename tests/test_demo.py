"""`ooo-agent demo`: the replay fallback always works; the embedded run when the model exists."""

from __future__ import annotations

import pytest

from ooo_agent import demo
from ooo_agent.cli import main


def test_demo_replays_recorded_outputs_when_no_model(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "_load_embedded", lambda console: None)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Replaying recorded outputs" in out
    calls = [r for r in demo.RECORDED if r.startswith("<tool_call>")]
    assert len(calls) == len(demo.DEMO_REQUESTS) - 1  # the last request fits no tool
    assert out.count("validated → ok") == sum(r.count("<tool_call>") for r in calls)
    assert "text: \"I'm sorry for your loss." in out  # the request no tool serves
    assert '"status": "processing"' in out  # get_order_status really ran
    # Each dispatched call is followed by the model's answer that uses its result.
    assert out.count("answer: ") == len(calls)
    assert "answer: 'Done. I found the status is processing.'" in out


def _embedded_or_skip() -> None:
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset

    try:
        load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded tool-calling adapter not available: {exc}")


@pytest.mark.slow
def test_demo_on_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    _embedded_or_skip()
    assert main(["demo", "What is the status of my order A1002?"]) == 0
    out = capsys.readouterr().out
    assert "Replaying" not in out
    assert "get_order_status" in out and "validated → ok" in out
    # The second turn answers in plain text with the tool's result (A1002 is processing).
    flat = " ".join(out.split())  # the console wraps long lines
    answer = flat[flat.index("answer: ") :].split(" sidecar ")[0]
    assert "processing" in answer[:200] and "<tool_response>" not in out
    assert "identical" in out and "NO" not in out
    # The ooo run's sidecar: its hint, or why there was none (timing decides which).
    assert "sidecar hint (" in out or "sidecar: no finished hint (" in out


@pytest.mark.slow
def test_the_demo_target_declines_a_request_no_tool_serves(capsys: pytest.CaptureFixture[str]) -> None:
    _embedded_or_skip()
    assert main(["demo", demo.DEMO_REQUESTS[-1]]) == 0
    out = capsys.readouterr().out
    assert "declined to call" in out and "validated" not in out
    assert "identical" in out and "NO" not in out
