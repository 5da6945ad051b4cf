"""API edges: documented exceptions leave bare (never in an ExceptionGroup), a string is one
user message, ``call_sync`` / ``run_sync`` for scripts, lazy heavy classes, and the README's
quickstart prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import ooo_agent
from ooo_agent import Agent, FastToolCaller, Hint, HintBox, SidecarRequest, TargetError, tool
from ooo_agent.formats import HermesFormat
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget

ROOT = Path(__file__).resolve().parent.parent
PARIS = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(read_only=True)
async def lookup(key: str) -> str:
    """Look a key up."""
    await anyio.sleep(3600)
    return key


class FailingTarget:
    """A target whose endpoint fails (after a checkpoint, so a wave can start)."""

    format = HermesFormat()
    modes = ("vanilla",)

    async def generate(self, request: TargetRequest) -> Generation:
        await anyio.sleep(0.01)
        raise TargetError("HTTP 503 from the endpoint")


class Predicts:
    """A sidecar predicting ``lookup(key="k")`` at once."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        return Hint("lookup", {"key": "k"}, complete=True)


@pytest.mark.anyio
async def test_a_failing_target_raises_target_error_itself() -> None:
    caller = FastToolCaller(FailingTarget(), Predicts(), mode="vanilla")  # type: ignore[arg-type]
    with pytest.raises(TargetError, match="HTTP 503") as caught:
        await caller.call("Look up k", [lookup, add])
    assert type(caught.value) is TargetError
    with pytest.raises(TargetError, match="HTTP 503") as caught:
        await Agent(caller).run("Look up k", [lookup, add])
    assert type(caught.value) is TargetError


@pytest.mark.anyio
async def test_an_exhausted_replay_target_raises_target_error() -> None:
    caller = FastToolCaller(ReplayTarget([PARIS]))
    first = await caller.call("1 + 2?", [add])
    assert [r.value for r in first.results] == [3]
    with pytest.raises(TargetError, match="ran out of recorded outputs: all 1 were played"):
        await caller.call("1 + 2?", [add])
    with pytest.raises(TargetError, match="ran out of recorded outputs"):
        await Agent(FastToolCaller(ReplayTarget([]))).run("1 + 2?", [add])


@pytest.mark.anyio
async def test_call_takes_a_string_as_one_user_message() -> None:
    target = ReplayTarget([PARIS])
    result = await FastToolCaller(target).call("What is 1 + 2?", [add])
    assert target.requests[0].messages == [{"role": "user", "content": "What is 1 + 2?"}]
    assert [r.value for r in result.results] == [3]


@pytest.mark.anyio
async def test_call_rejects_a_message_that_is_not_a_mapping() -> None:
    target = ReplayTarget([PARIS])
    with pytest.raises(TypeError, match="message 0 is a list, not a dict"):
        await FastToolCaller(target).call([["user", "hi"]], [add])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="message 0 has no 'role'"):
        await FastToolCaller(target).call([{"content": "hi"}], [add])
    assert target.requests == []  # nothing reached the model


def test_call_sync_and_run_sync_run_outside_an_event_loop() -> None:
    caller = FastToolCaller(ReplayTarget([PARIS, PARIS, "It is 3."]))
    result = caller.call_sync("What is 1 + 2?", [add], dispatch=False)
    assert [(c.name, c.arguments) for c in result.calls] == [("add", {"a": 1, "b": 2})]
    assert result.results == []
    run = Agent(caller).run_sync("What is 1 + 2?", [add])
    assert run.final_text == "It is 3." and [r.value for r in run.results] == [3]


@pytest.mark.anyio
async def test_call_sync_and_run_sync_refuse_inside_a_running_loop() -> None:
    caller = FastToolCaller(ReplayTarget([PARIS]))
    with pytest.raises(RuntimeError, match=r"await caller\.call\(\.\.\.\)"):
        caller.call_sync("What is 1 + 2?", [add])
    with pytest.raises(RuntimeError, match=r"await agent\.run\(\.\.\.\)"):
        Agent(caller).run_sync("What is 1 + 2?", [add])
    assert await caller.call("What is 1 + 2?", [add])  # the output was not consumed


def test_heavy_classes_load_lazily_and_every_exported_name_resolves() -> None:
    code = (
        "import sys, ooo_agent\n"
        "assert 'torch' not in sys.modules, 'import ooo_agent loaded torch'\n"
        "from ooo_agent import HFSidecar, HFTarget, OpenAISidecar, OpenAITarget\n"
        "print(HFSidecar.__module__, OpenAISidecar.__module__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ooo_agent.sidecar.hf", "ooo_agent.sidecar.openai"]
    for name in ooo_agent.__all__:
        assert getattr(ooo_agent, name) is not None, name


def test_the_readme_quickstart_prints_what_it_says() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quickstart") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    said = [line[2:] for line in code.group(1).splitlines() if line.startswith("# ")]
    printed = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "readme_quickstart"}
    with contextlib.redirect_stdout(printed):
        exec(compile(code.group(1), "README.md", "exec"), namespace)
    assert said and printed.getvalue().splitlines() == said
