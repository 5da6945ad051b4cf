"""The agent examples on the embedded model: each completes its task (the outcome, not only
the exit status).

Known gaps, held as strict expected failures so that a model that fixes one fails here until
the mark is removed: target v7 answers after a tool result (``ooo-agent demo``), but on these
examples it answers after the first step where a second is needed, or writes no text answer
(docs/lab-notes/2026-12-07-agent-turns.md)."""

from __future__ import annotations

import re

import pytest

from test_examples_integrations import run_script

pytestmark = pytest.mark.slow


def _embedded(out: str) -> None:
    assert "[target] embedded model" in out or "target: embedded" in out, out[:300]


def _answer(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("answer: "))


@pytest.mark.xfail(strict=True, reason="v7 checks pears (0 in stock), then answers without ordering")
def test_agent_loop_example_orders_the_missing_pears() -> None:
    out = run_script("examples/agent_loop.py", timeout=900, replay=False)
    _embedded(out)
    assert 'call    check_stock({"item":"pears"})' in out
    assert "result  place_order -> ordered 20 pears" in out  # the order was placed
    assert "stop_reason=answer" in out
    assert "20" in _answer(out) and "<tool_response>" not in _answer(out)


@pytest.mark.xfail(strict=True, reason="v7 answers the sum (5) without multiplying")
def test_langgraph_agent_example_answers_the_product() -> None:
    pytest.importorskip("langchain.agents")
    out = run_script("examples/langgraph_agent.py", timeout=900, replay=False)
    _embedded(out)
    assert "tool add -> 5" in out and "tool multiply -> 20" in out
    assert re.search(r"\b20\b", _answer(out)) and "<tool_response>" not in _answer(out)


@pytest.mark.xfail(strict=True, reason="v7 writes no text answer after the result")
def test_openai_client_example_answers_with_the_tool_result() -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("openai")
    out = run_script("examples/openai_client.py", timeout=900, replay=False)
    assert "recorded outputs" not in out
    assert 'tool call: get_weather({"city":"Paris"' in out
    answer = _answer(out)
    assert "21" in answer and "<tool_response>" not in answer
