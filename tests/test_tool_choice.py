"""``tool_choice``: HFTarget decodes under it (the same tokens in every mode), and the caller holds
any target's calls to it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ooo_agent import CallErrorKind, FastToolCaller, HintBox, SidecarRequest, tool  # noqa: E402
from ooo_agent.decoding.choice import RequiredCall  # noqa: E402
from ooo_agent.targets.base import (  # noqa: E402
    Generation,
    TargetRequest,
    chosen_tool,
    normalize_tool_choice,
)
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from ooo_agent.targets.replay import ReplayTarget  # noqa: E402
from test_bench_runner import TIME  # noqa: E402  (get_time: zone)
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402
from test_hf_target import MESSAGES, TOOLS  # noqa: E402  (get_weather: city, unit)

TWO_TOOLS = [*TOOLS, TIME]
MODES = ("vanilla", "toolspec", "ooo")

# -- the normalised choice -------------------------------------------------------------------


def test_spellings_of_a_choice() -> None:
    named = {"type": "function", "function": {"name": "f"}}
    assert normalize_tool_choice(None) == "auto"
    assert normalize_tool_choice("any") == normalize_tool_choice(True) == "required"
    assert normalize_tool_choice("f") == normalize_tool_choice({"name": "f"}) == named
    assert chosen_tool(named) == "f" and chosen_tool("required") is None
    with pytest.raises(ValueError, match="tool_choice must be"):
        normalize_tool_choice(3)


# -- RequiredCall on a toy vocabulary ----------------------------------------------------------

PIECES = ["<", "tool", "_call", ">", "Sorry", "\n", "<tool", "x"]


def _decode(ids: Sequence[int]) -> str:
    return "".join(PIECES[i] for i in ids)


def _logits(best: str) -> torch.Tensor:
    return torch.tensor([5.0 if p == best else (1.0 if p == "<" else 0.0) for p in PIECES])


class Recording:
    def __init__(self) -> None:
        self.overrides = 0
        self.asked: list[str] = []

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        self.asked.append(_decode(generated))
        return greedy


def test_the_answer_opens_with_the_call_opening_then_the_inner_constraint_decides() -> None:
    inner = Recording()
    required = RequiredCall(
        {PIECES.index("<"), PIECES.index("<tool")}, "<tool_call>", _decode, inner=inner
    )
    written: list[int] = []
    for _ in range(5):  # the model wants prose every time
        written.append(required.choose(written, _logits("Sorry"), PIECES.index("Sorry")))
    assert _decode(written) == "<tool_call>Sorry"
    assert inner.asked == ["<tool_call>"]  # asked only once the opening is written
    assert required.overrides == 4


def test_a_model_that_opens_the_call_itself_is_left_alone() -> None:
    required = RequiredCall({PIECES.index("<")}, "<tool_call>", _decode)
    assert required.choose([], _logits("<"), PIECES.index("<")) == PIECES.index("<")
    assert required.overrides == 0
    bare = RequiredCall({PIECES.index("x")}, "", _decode)  # a format with no opening
    assert bare.choose([], _logits("Sorry"), PIECES.index("Sorry")) == PIECES.index("x")
    assert bare.choose(
        [PIECES.index("x")], _logits("Sorry"), PIECES.index("Sorry")
    ) == PIECES.index("Sorry")


# -- HFTarget ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parts() -> tuple[Any, Any]:
    tokenizer = byte_tokenizer()
    return tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21), tokenizer


def _runs(target: HFTarget, choice: Any, tools: Any = TOOLS, **kw: Any) -> list[Generation]:
    runs = []
    for mode in MODES:
        request = TargetRequest(
            MESSAGES, tools, mode=mode, max_new_tokens=48, tool_choice=choice, **kw
        )  # type: ignore[arg-type]
        runs.append(target.generate_sync(request))
    assert [g.token_ids for g in runs[1:]] == [runs[0].token_ids] * 2  # lossless under it
    return runs


def test_required_opens_a_call_in_every_mode(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    target = HFTarget(model, tokenizer, "hermes", node_budget=16, decline_below=1.0)
    auto = _runs(target, "auto")[0]
    assert not auto.text.startswith("<tool_call>")  # the random model would not, and declines
    for generation in _runs(target, "required"):
        assert generation.text.startswith("<tool_call>")  # decline_below stands aside
        assert not generation.stats.declined


def test_none_refuses_every_call_in_every_mode(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    target = HFTarget(model, tokenizer, "hermes", node_budget=16)
    required = _runs(target, "required")[0]
    box = HintBox()
    for generation in _runs(target, "none", hint_box=box):
        assert generation.raw_calls == [] and "<tool_call" not in generation.text
        assert not generation.stats.declined  # refused by the request, not by the policy
        assert generation.stats.call_probability is not None
    assert generation.token_ids != required.token_ids
    assert box.no_call == "tool_choice is 'none'"


def test_a_named_tool_is_the_only_one_a_call_may_name(parts: tuple[Any, Any]) -> None:
    model, tokenizer = parts
    target = HFTarget(model, tokenizer, "hermes", node_budget=16)
    for choice, name in [("get_time", "get_time"), ({"name": "get_weather"}, "get_weather")]:
        for generation in _runs(target, choice, TWO_TOOLS):
            assert generation.text.startswith(f'<tool_call>\n{{"name": "{name}"')
    with pytest.raises(ValueError, match="not among the tools"):
        target.generate_sync(TargetRequest(MESSAGES, TOOLS, tool_choice="get_time"))


def test_an_always_declining_threshold_is_accepted() -> None:
    from ooo_agent.decoding.decline import DeclinePolicy

    policy = DeclinePolicy({0}, math.inf, _decode)
    policy.choose([], _logits("<"), 0)
    assert policy.declined


# -- the caller, whatever the target -------------------------------------------------------------

CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
TWO_CALLS = CALL + '\n<tool_call>\n{"name": "echo", "arguments": {"text": "hi"}}\n</tool_call>'
ran: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append("add")
    return a + b


@tool
def echo(text: str) -> str:
    """Echo a text."""
    ran.append("echo")
    return text


@pytest.mark.anyio
async def test_none_dispatches_nothing_and_says_why() -> None:
    ran.clear()
    result = await FastToolCaller(ReplayTarget([TWO_CALLS])).call(
        [], [add, echo], tool_choice="none"
    )
    assert not result.calls and not result.results and ran == []
    assert [(e.kind, e.name) for e in result.errors] == [
        (CallErrorKind.TOOL_CHOICE, "add"),
        (CallErrorKind.TOOL_CHOICE, "echo"),
    ]
    assert "'none'" in result.errors[0].message


@pytest.mark.anyio
async def test_a_named_choice_dispatches_only_that_tool() -> None:
    ran.clear()
    caller = FastToolCaller(ReplayTarget([TWO_CALLS]))
    result = await caller.call(
        [], [add, echo], tool_choice={"type": "function", "function": {"name": "echo"}}
    )
    assert [c.name for c in result.calls] == ["echo"] and ran == ["echo"]
    assert [(e.kind, e.name) for e in result.errors] == [(CallErrorKind.TOOL_CHOICE, "add")]


@pytest.mark.anyio
async def test_required_without_a_call_is_an_error_and_with_one_is_not() -> None:
    prose = await FastToolCaller(ReplayTarget(["No."])).call([], [add], tool_choice="required")
    assert [e.kind for e in prose.errors] == [CallErrorKind.TOOL_CHOICE]
    assert "'required'" in prose.errors[0].message
    called = await FastToolCaller(ReplayTarget([CALL])).call([], [add], tool_choice="any")
    assert not called.errors and called.results[0].value == 3


@pytest.mark.anyio
async def test_impossible_choices_are_the_callers_error() -> None:
    caller = FastToolCaller(ReplayTarget([CALL]))
    with pytest.raises(ValueError, match="not among the tools"):
        await caller.call([], [add], tool_choice="echo")
    with pytest.raises(ValueError, match="needs at least one tool"):
        await caller.call([], [], tool_choice="required")
    with pytest.raises(ValueError, match="tool_choice must be"):
        await caller.call([], [add], tool_choice=3)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_none_runs_no_wave() -> None:
    class Counting:
        waves = 0

        async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
            Counting.waves += 1
            return None

    class AllModes(ReplayTarget):
        modes = ("vanilla", "toolspec", "ooo")

    caller = FastToolCaller(AllModes(["No."], cycle=True), Counting())
    await caller.call([], [add], tool_choice="none")
    assert Counting.waves == 0 and caller.mode == "ooo"
    await caller.call([], [add])
    assert Counting.waves == 1


@pytest.mark.anyio
async def test_no_parallel_calls_dispatches_only_the_first() -> None:
    ran.clear()
    caller = FastToolCaller(ReplayTarget([TWO_CALLS], cycle=True))
    one = await caller.call([], [add, echo], parallel_tool_calls=False)
    assert [c.name for c in one.calls] == ["add"] and ran == ["add"]
    assert [(e.kind, e.name) for e in one.errors] == [(CallErrorKind.TOOL_CHOICE, "echo")]
    ran.clear()
    both = await caller.call([], [add, echo])
    assert [c.name for c in both.calls] == ["add", "echo"] and ran == ["add", "echo"]


@pytest.mark.anyio
async def test_a_named_choice_leaves_the_sidecar_only_that_tool() -> None:
    seen: list[list[str]] = []

    class Recording:
        async def wave(self, request: SidecarRequest, box: HintBox) -> Any:
            seen.append([t.name for t in request.tools])
            return None

    class AllModes(ReplayTarget):
        modes = ("vanilla", "toolspec", "ooo")

    caller = FastToolCaller(AllModes([TWO_CALLS], cycle=True), Recording())
    await caller.call([], [add, echo], tool_choice="echo")
    await caller.call([], [add, echo], tool_choice="required")
    assert seen == [["echo"], ["add", "echo"]]
