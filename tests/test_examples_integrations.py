"""The integration examples and the server load test, each run as a subprocess (as CI does).

The examples replay recorded model outputs here (``OOO_AGENT_EXAMPLES_REPLAY=1``): fast and
deterministic, while parsing, validation, dispatch, LangGraph and the HTTP server run for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_script(
    path: str, *args: str, timeout: float = 120, replay: bool = True, strict: bool = False
) -> str:
    """Run a script; ``strict`` turns every DeprecationWarning into an error."""
    env = dict(os.environ)
    if strict:
        env["PYTHONWARNINGS"] = "error::DeprecationWarning"
    if replay:
        env["OOO_AGENT_EXAMPLES_REPLAY"] = "1"
    else:
        env.pop("OOO_AGENT_EXAMPLES_REPLAY", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(ROOT / path), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"{path} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_quickstart_example_replays_when_asked() -> None:
    """``OOO_AGENT_EXAMPLES_REPLAY=1``: the quickstart plays its recorded outputs, no model."""
    out = run_script("examples/quickstart.py")
    assert out.startswith("target: recorded model outputs (OOO_AGENT_EXAMPLES_REPLAY is set)")
    assert "call   get_weather({'city': 'Paris'}) -> " in out
    assert "call   convert_currency({'amount': 120.0, 'source': 'EUR', 'target': 'USD'}) -> 129.6" in out
    assert "error  unknown_tool: Unknown tool `get_forecast`" in out


@pytest.mark.slow
def test_quickstart_example() -> None:
    """The README's quickstart: the embedded model when installed (else recorded outputs)."""
    out = run_script("examples/quickstart.py", timeout=600, replay=False)
    assert out.startswith("target: ")
    for question in ("What's the weather in Paris?", "How much is 120 EUR in USD?"):
        assert f"> {question}" in out
    # Every request ends in a dispatched call, a reported error or plain text; the first is
    # the weather in Paris (the embedded model and the recording agree on it).
    assert "call   get_weather({'city': 'Paris'" in out


TOOL_CHOICE_LINES = [
    "  tool_choice='none'               text: 'The weather in Paris is: CELESTIAL.'",
    "  tool_choice='auto'               get_weather({'city': 'Paris'}) -> ",
    "  tool_choice='convert_currency'   convert_currency({'amount': 120.0, 'source': 'EUR', "
    "'target': 'USD'}) -> 129.6",
    "  tool_choice='auto'               convert_currency({'amount': 120.0, 'source': 'EUR', "
    "'target': 'USD'}) -> 129.6",
    "  tool_choice='get_weather'        get_weather({'city': 'Paris'}) -> ",
]


def test_tool_choice_example() -> None:
    out = run_script("examples/tool_choice.py")
    for line in TOOL_CHOICE_LINES:
        assert line in out


@pytest.mark.slow
def test_tool_choice_example_on_the_embedded_model() -> None:
    """The recording the example replays is what the embedded model writes."""
    out = run_script("examples/tool_choice.py", timeout=600, replay=False)
    if "[target] embedded model" not in out:
        pytest.skip("the embedded model is not installed")
    for line in TOOL_CHOICE_LINES:
        assert line in out


def test_agent_loop_example() -> None:
    out = run_script("examples/agent_loop.py")
    assert "replaying recorded model outputs" in out
    assert 'call    check_stock({"item":"pears"})' in out
    assert "result  check_stock -> 0" in out
    assert "reject" in out  # the recorded slip is rejected and retried
    assert "result  place_order -> ordered 20 pears" in out
    assert "[done] stop_reason=answer turns=4 calls=2 rejected=1" in out


def test_langgraph_agent_example() -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain.agents")
    out = run_script("examples/langgraph_agent.py", strict=True)  # the non-deprecated factory
    assert "replaying recorded model outputs" in out
    assert "tool add -> 5" in out and "tool multiply -> 20" in out
    assert "answer: (2 + 3) * 4 = 20" in out


def test_openai_client_example() -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("openai")
    out = run_script("examples/openai_client.py")
    assert "recorded outputs" in out
    assert "finish_reason: tool_calls" in out
    assert 'tool call: get_weather({"city":"Paris"})' in out
    assert "answer: It is 21 degrees and sunny in Paris." in out
    assert 'streamed call: get_weather({"city":"Paris"})' in out
    assert "tool_choice=none: Paris is the capital of France." in out
    assert "x-ooo-stats: {" in out


def test_load_server_benchmark_has_no_failures() -> None:
    pytest.importorskip("fastapi")
    out = run_script("benchmarks/load_server.py", "--requests", "200", "--concurrency", "16")
    report = json.loads(out.strip().splitlines()[-1])
    assert report["requests"] == 200 and report["ok"] == 200 and report["failed"] == 0
    assert report["answered_with_calls"] == 200  # the recording is a call
    assert report["p50_ms"] <= report["p99_ms"]
    assert report["throughput_rps"] > 0
