"""A hint is data, not code: no value a sidecar hands the drafters, and no failure while
they handle it, can fail a call (docs/sidecar.md). On a tiny random model with a real
byte-level tokenizer, which cannot encode a lone UTF-16 surrogate."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
from ooo_agent.caller import FastToolCaller  # noqa: E402
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest, clean_hint  # noqa: E402
from ooo_agent.sidecar.rows import parse_slot_value  # noqa: E402
from ooo_agent.targets.base import TargetRequest  # noqa: E402
from ooo_agent.targets.hf import HFTarget  # noqa: E402
from ooo_agent.tools import tool  # noqa: E402
from test_decoding_support import byte_tokenizer, tiny_model  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def target() -> HFTarget:
    tokenizer = byte_tokenizer()
    model = tiny_model("qwen2", "sdpa", vocab_size=len(tokenizer), seed=21)
    return HFTarget(model, tokenizer, "hermes", node_budget=16)


def _generate(target: HFTarget, mode: str, box: HintBox | None = None) -> list[int]:
    request = TargetRequest(MESSAGES, TOOLS, mode=mode, max_new_tokens=24, hint_box=box)  # type: ignore[arg-type]
    return list(target.generate_sync(request).token_ids)


def test_the_box_refuses_values_no_call_could_hold() -> None:
    box = HintBox()
    box.set_function("get_weather")
    box.set_slot("city", "\ud800")
    box.set_slot("unit", float("nan"))
    box.set_slot("days", [1, float("inf")])
    box.set_slot("when", object())
    box.set_slot("ok", ("Paris", {"k": 1}))
    hint = box.snapshot()
    assert hint.slots == {"ok": ["Paris", {"k": 1}]}  # a plain JSON copy: tuple → list
    assert set(box.refused) == {"city", "unit", "days", "when"}
    assert "surrogate" in box.refused["city"]
    box.set_function("get\udc00weather")
    assert box.snapshot().function == "get_weather" and "function" in box.refused


def test_the_row_parser_refuses_them_too() -> None:
    for answer in ('"\\ud800"', "NaN", "-Infinity", "1e400", '{"a": 1, "a": 2}', '["x", NaN]'):
        with pytest.raises(ValueError):
            parse_slot_value(answer)
    assert parse_slot_value('"\\ud83d\\ude00"') == "\U0001f600"
    clean, refused = clean_hint(Hint("f", {"a": "\ud800", "b": 2}))
    assert clean.slots == {"b": 2} and set(refused) == {"a"}


def test_a_surrogate_hint_does_not_fail_an_ooo_call(target: HFTarget) -> None:
    """It did: ``codec.encode`` raised inside the drafter (TargetError: decoding failed)."""
    box = HintBox()
    box.set_function("get_weather")
    box.set_slot("city", "\ud800")
    assert _generate(target, "ooo", box) == _generate(target, "toolspec")
    assert "city" in box.refused and box.dropped is None


def test_a_failure_in_hint_handling_drops_the_hint_not_the_call(
    target: HFTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _generate(target, "toolspec")

    # A value that got into the box past its checks: encoding the hint fails.
    box = HintBox()
    box.set_function("get_weather")
    box._slots["city"] = "\ud800"  # what the box's checks now keep out
    assert _generate(target, "ooo", box) == expected
    assert box.dropped is not None and "could not be read" in box.dropped
    assert box.snapshot().empty

    # Rendering the hint raises.
    def broken(hint: Hint) -> str:
        raise RuntimeError("render bug")

    monkeypatch.setattr(target, "_render_hint", broken)
    box = HintBox()
    box.set_function("get_weather")
    box.set_slot("city", "Paris")
    assert _generate(target, "ooo", box) == expected
    assert box.dropped is not None and "render bug" in box.dropped


class _SurrogateSidecar:
    """Publishes a lone surrogate and returns it in its final hint."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        box.set_function("get_weather")
        box.set_slot("city", "\ud800")
        box.set_slot("unit", "c")
        box.finish()
        return Hint("get_weather", {"city": "\ud800", "unit": "c"}, True)


@tool
def get_weather(city: str, unit: str = "c") -> str:
    """Weather for a city."""
    return f"sunny in {city}"


async def _call(target: HFTarget) -> Any:
    caller = FastToolCaller(target, _SurrogateSidecar(), mode="ooo", max_new_tokens=24)
    return await caller.call(MESSAGES, [get_weather], dispatch=False)


@pytest.mark.anyio
async def test_the_call_reports_what_it_refused(target: HFTarget) -> None:
    result = await _call(target)
    sidecar = result.stats.sidecar
    assert sidecar.status == "ok"
    assert "city" in sidecar.dropped_slots
    assert sidecar.predicted is not None and "\ud800" not in sidecar.predicted
    assert sidecar.predicted.encode("utf-8")
    assert sidecar.hint_dropped is None


@pytest.mark.anyio
async def test_the_call_reports_a_dropped_hint(
    target: HFTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(hint: Hint) -> str:
        raise RuntimeError("render bug")

    monkeypatch.setattr(target, "_render_hint", broken)
    result = await _call(target)
    assert result.stats.sidecar.hint_dropped is not None
    assert "render bug" in result.stats.sidecar.hint_dropped


class _Codec:
    """Characters as token ids; refuses text holding a lone surrogate, as tokenizers do."""

    def encode(self, text: str) -> list[int]:
        text.encode("utf-8")  # UnicodeEncodeError on a lone surrogate
        return [ord(c) for c in text]

    def decode(self, ids: Any) -> str:
        return "".join(chr(i) for i in ids)


class _Skeleton:
    def __init__(self, fail_with_hint: bool) -> None:
        self.fail_with_hint = fail_with_hint

    def continuations(self, generated: str, hint: Any = None) -> list[Any]:
        from ooo_agent.formats.base import TextDraft

        if hint is None:
            return [TextDraft('{"name": ', "schema")]
        if self.fail_with_hint:
            raise KeyError("skeleton bug on this hint")
        return [TextDraft(hint.slots["city"], "hint"), TextDraft('{"name": ', "schema")]


@pytest.mark.parametrize("fail_with_hint", [False, True])
def test_the_schema_drafter_drops_a_hint_it_cannot_use(fail_with_hint: bool) -> None:
    from ooo_agent.decoding.drafts.base import DraftContext
    from ooo_agent.decoding.drafts.hint import HintReader
    from ooo_agent.decoding.drafts.schema import SchemaDrafter

    box = HintBox()
    box.set_function("get_weather")
    box._slots["city"] = "\ud800"  # past the box's checks
    reader = HintReader(box)  # no render / encode: the drafter meets the value itself
    reader.poll(0)
    drafter = SchemaDrafter(_Skeleton(fail_with_hint), _Codec(), hint=reader)
    context = DraftContext(prompt_ids=[], generated_ids=[], step=0, decode_text=_Codec().decode)
    drafts = drafter.draft(context)
    assert [d.source for d in drafts] == ["schema"]
    assert box.dropped is not None and reader.hint is None
