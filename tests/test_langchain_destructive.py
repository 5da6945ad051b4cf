"""A destructive ooo tool bound to the LangChain chat model keeps its policy: no repairs."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain_core")
from ooo_agent.caller import FastToolCaller
from ooo_agent.integrations.langchain import OoOChatModel
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.tools import tool


@tool(destructive=True)
def delete_account(user_id: str, confirm: bool) -> str:
    """Delete an account for good."""
    return "deleted"


@tool
def archive_account(user_id: str, confirm: bool) -> str:
    """Archive an account."""
    return "archived"


def _answer(name: str) -> str:
    body = {"name": name, "arguments": {"user_id": "u1", "confirm": "true"}}
    return "<tool_call>\n" + json.dumps(body) + "\n</tool_call>"


def test_a_destructive_tool_gets_no_lenient_repairs_through_langchain() -> None:
    target = ReplayTarget([_answer("delete_account"), _answer("archive_account")])
    model = OoOChatModel(caller=FastToolCaller(target), model_name="replay")
    bound = model.bind_tools([delete_account, archive_account])
    refused = bound.invoke("delete u1")
    assert refused.tool_calls == [] and len(refused.invalid_tool_calls) == 1
    assert "confirm" in (refused.invalid_tool_calls[0]["error"] or "")
    repaired = bound.invoke("archive u1")  # not destructive: "true" → true
    assert [c["args"] for c in repaired.tool_calls] == [{"user_id": "u1", "confirm": True}]
