"""The ``ooo-agent bench`` command end to end on a tiny random model (seconds, CPU).

All modes on two measured items and one warm-up; identity with vanilla is checked for real
(the speculative modes are lossless), and a corrupted mode must make the command fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.bench import runner as bench_runner
from ooo_agent.bench.oracle import ORACLE_LABEL, OracleSidecar
from ooo_agent.calls import RawCall
from ooo_agent.cli import main
from ooo_agent.sidecar.base import HintBox, SidecarRequest
from ooo_agent.targets.base import Generation, Mode, Target, TargetRequest

pytestmark = pytest.mark.timeout(120)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time in a zone.",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string"}},
            "required": ["zone"],
        },
    },
}


def _items() -> list[dict[str, Any]]:
    questions = [
        ("What is the weather in Paris in celsius?", {"get_weather": {"city": ["Paris"]}}),
        ("What time is it in Tokyo?", {"get_time": {"zone": ["Asia/Tokyo"]}}),
        ("Weather in Rome?", {"get_weather": {"city": ["Rome"]}}),
    ]
    return [
        {
            "id": f"tiny_{i}",
            "category": "tiny",
            "messages": [{"role": "user", "content": q}],
            "tools": [WEATHER, TIME],
            "gold": [gold],
        }
        for i, (q, gold) in enumerate(questions)
    ]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from sidecar_tiny import save_tiny_model

    root = tmp_path_factory.mktemp("bench")
    model_dir = save_tiny_model(root / "tiny-target")
    data = root / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in _items()))
    return model_dir, data


def _bench(setup: tuple[Path, Path], out: Path, *extra: str) -> int:
    model_dir, data = setup
    return main([
        "bench", "--data", str(data), "--n", "2", "--warmup", "1", "--target", str(model_dir),
        "--max-new-tokens", "12", "--out", str(out), *extra,
    ])  # fmt: skip


def test_whole_command_all_modes(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _bench(setup, out, "--sidecar", "oracle") == 0
    printed = capsys.readouterr().out
    assert ORACLE_LABEL in printed  # the table names the oracle on the ooo row

    lines = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert len(lines) == 3 * 4  # (1 warm-up + 2 measured) x 4 modes
    assert [r["warmup"] for r in lines[::4]] == [True, False, False]
    modes = {r["mode"] for r in lines}
    assert modes == {"vanilla", "toolspec", "ooo", "hf-pld"}
    # The mode order rotates per request: vanilla runs first, then last, then third.
    vanilla_positions = [r["position"] for r in lines if r["mode"] == "vanilla"]
    assert vanilla_positions == [0, 3, 2]
    for record in lines:
        assert record["latency_s"] > 0 and record["forward_passes"] >= 1
        assert not record["failure"]
        if record["mode"] != "vanilla":
            assert record["identical"] is True, record  # lossless: same tokens as vanilla
    by_key = {(r["item_id"], r["mode"]): r for r in lines}
    for item in ("tiny_0", "tiny_1", "tiny_2"):
        vanilla = by_key[(item, "vanilla")]
        assert vanilla["forward_passes"] == vanilla["new_tokens"]  # one per token
        assert by_key[(item, "ooo")]["sidecar_status"] == "ok"
        assert by_key[(item, "toolspec")]["sidecar_slot_steps"] == {}
        # The hint is recorded (test_a_record_keeps_the_sidecar_hint checks one that exists):
        # the random model writes no call here, so the oracle has none to hint and nothing
        # arrives; toolspec runs no wave.
        assert vanilla["calls"] == []
        assert by_key[(item, "ooo")]["sidecar_predicted"] is None
        assert by_key[(item, "ooo")]["sidecar_slot_steps"] == {}
        assert by_key[(item, "toolspec")]["sidecar_predicted"] is None
        # Decode steps commit every token but the prefill's, in both greedy implementations.
        pld = by_key[(item, "hf-pld")]
        for record in (vanilla, pld):
            assert record["accepted_tokens"] == record["new_tokens"] - 1
        assert pld["decode_steps"] == pld["forward_passes"] - 1

    summary = json.loads((out / "summary.json").read_text())
    assert summary["sidecar"] == {"label": ORACLE_LABEL, "kind": "oracle"}
    assert "upper bound, not a result" in summary["title"]
    rows = {m["mode"]: m for m in summary["modes"]}
    assert set(rows) == {"vanilla", "toolspec", "ooo", "hf-pld"}
    assert ORACLE_LABEL in rows["ooo"]["label"]
    assert rows["toolspec"]["identity"] == 1.0 and rows["ooo"]["identity"] == 1.0
    assert rows["vanilla"]["n"] == 2 and rows["vanilla"]["speedup_vs_vanilla"] is None
    speedup = rows["ooo"]["speedup_vs_vanilla"]
    assert speedup["low"] <= speedup["point"] <= speedup["high"]
    assert summary["settings"]["prefix_reuse"] is True
    assert summary["identity_failures"] == []
    # What each speculative mode's target learned of its drafters (vanilla drafts nothing,
    # hf-pld is transformers' own loop).
    rates = summary["acceptance_rates"]
    assert set(rates) == {"toolspec", "ooo"}
    for learned in rates.values():
        assert set(learned) == {"first", "next"}
        seen = [r["seen"] for table in learned.values() for r in table.values()]
        assert seen and all(n >= 0 for n in seen) and sum(seen) > 0
        assert all(0 <= r["rate"] <= 1 for table in learned.values() for r in table.values())
    from ooo_agent.targets.hf import DEFAULT_MAX_DRAFT_TOKENS, DEFAULT_NODE_BUDGET

    assert summary["settings"]["node_budget"] == DEFAULT_NODE_BUDGET  # the effective values
    assert summary["settings"]["max_draft_tokens"] == DEFAULT_MAX_DRAFT_TOKENS
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _Corrupting:
    """A target wrapper that changes the last output token (a lossy 'speculation')."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner

    @property
    def format(self) -> Any:
        return self.inner.format

    @property
    def modes(self) -> tuple[Mode, ...]:
        return tuple(self.inner.modes)

    async def generate(self, request: TargetRequest) -> Generation:
        generation = await self.inner.generate(request)
        ids = [*generation.token_ids[:-1], generation.token_ids[-1] + 1]
        return Generation(generation.text + "!", None, ids, generation.stats)


def test_identity_mismatch_fails_after_writing_the_report(
    setup: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = bench_runner.build_runners

    def corrupt_toolspec(*args: Any, **kwargs: Any) -> Any:
        kwargs["wrap"] = lambda mode, t: _Corrupting(t) if mode == "toolspec" else t
        return original(*args, **kwargs)

    monkeypatch.setattr(bench_runner, "build_runners", corrupt_toolspec)
    out = tmp_path / "out"
    status = _bench(setup, out, "--sidecar", "none", "--modes", "vanilla,toolspec")
    assert status != 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["identity_failures"] == ["tiny_2/toolspec", "tiny_0/toolspec", "tiny_1/toolspec"]
    rows = {m["mode"]: m for m in summary["modes"]}
    assert rows["toolspec"]["identity"] == 0.0


@pytest.mark.parametrize("steer", ["required-values", "typed-values"])
def test_decoding_steers_reach_a_local_sidecar_and_stay_lossless(
    steer: str, setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir, _ = setup
    out = tmp_path / "out"
    setting = f"sidecar_{steer.replace('-', '_')}"
    extra = ("--sidecar", str(model_dir), "--modes", "vanilla,ooo")
    assert _bench(setup, out, *extra, f"--sidecar-{steer}", "on") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"][setting] is True
    assert {m["mode"]: m for m in summary["modes"]}["ooo"]["identity"] == 1.0
    assert _bench(setup, tmp_path / "off", *extra) == 0  # auto: a folder is no preset: off
    summary = json.loads((tmp_path / "off" / "summary.json").read_text())
    assert summary["settings"][setting] is False
    for where in (("--sidecar-process",), ("--sidecar", "http://127.0.0.1:9")):
        status = _bench(setup, tmp_path / "no", *extra, *where, f"--sidecar-{steer}", "on")
        assert status != 0
        assert "in this process" in capsys.readouterr().err


def test_relevance_weight_needs_a_scored_choice_in_this_process(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir, _ = setup
    extra = ("--sidecar", str(model_dir), "--modes", "vanilla,ooo")
    scored = ("--sidecar-function-choice", "scored")
    out = tmp_path / "out"
    assert _bench(setup, out, *extra, *scored, "--sidecar-relevance-weight", "2") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["sidecar_relevance_weight"] == 2.0
    assert summary["settings"]["sidecar_relevance_parameter_weight"] == 0.5
    assert {m["mode"]: m for m in summary["modes"]}["ooo"]["identity"] == 1.0
    assert _bench(setup, tmp_path / "auto", *extra) == 0  # a folder is no preset: 0
    summary = json.loads((tmp_path / "auto" / "summary.json").read_text())
    assert summary["settings"]["sidecar_relevance_weight"] == 0.0
    refused = (
        ("--sidecar-process",),
        ("--sidecar", "http://127.0.0.1:9"),
        ("--sidecar-function-choice", "index"),
    )
    for where in refused:
        status = _bench(setup, tmp_path / "no", *extra, *where, "--sidecar-relevance-weight", "2")
        assert status != 0
        assert "in this process" in capsys.readouterr().err
    assert _bench(setup, tmp_path / "no", *extra, *scored, "--sidecar-relevance-weight", "-1")
    assert "at least 0" in capsys.readouterr().err
    parameters = ["--sidecar-relevance-parameter-weight"]
    assert _bench(setup, tmp_path / "no", *extra, *scored, *parameters, "-1") != 0
    assert "parameter-weight must be at least 0" in capsys.readouterr().err
    assert _bench(setup, out, *extra, *scored, *parameters, "0") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["sidecar_relevance_parameter_weight"] == 0.0


def _vanilla_argv(setup: tuple[Path, Path], out: Path) -> list[str]:
    """A short vanilla ``bench`` run over the tiny data file, written to ``out``."""
    model_dir, data = setup
    return ["bench", "--data", str(data), "--target", str(model_dir), "--max-new-tokens", "8",
            "--modes", "vanilla", "--out", str(out)]  # fmt: skip


def _schedule(out: Path) -> list[tuple[str, bool]]:
    """``(item id, warm-up)`` of a run's records, in the order they ran."""
    lines = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    return [(r["item_id"], r["warmup"]) for r in lines]


def test_skip_measures_a_later_range_and_warms_up_beyond_it(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = _vanilla_argv(setup, out)
    assert main([*argv, "--skip", "1", "--n", "1", "--warmup", "1"]) == 0
    # tiny_0 skipped, tiny_1 measured, tiny_2 the warm-up beyond it.
    assert _schedule(out) == [("tiny_2", True), ("tiny_1", False)]
    assert main([*argv, "--skip", "-1"]) != 0
    assert "--skip" in capsys.readouterr().err


def test_items_measures_the_named_items_in_order_and_warms_up_on_others(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [*_vanilla_argv(setup, out), "--warmup", "1"]
    assert main([*argv, "--items", "tiny_2,tiny_0"]) == 0
    assert _schedule(out) == [("tiny_1", True), ("tiny_2", False), ("tiny_0", False)]
    command = json.loads((out / "summary.json").read_text())["command"]
    assert command == "ooo-agent " + " ".join([*argv, "--items", "tiny_2,tiny_0"])  # not pytest's
    capsys.readouterr()
    for bad, said in [
        ("tiny_9", "no item tiny_9"),
        ("tiny_1,tiny_1", "distinct"),
        (",", "distinct"),
    ]:
        assert main([*argv, "--items", bad]) != 0
        assert said in capsys.readouterr().err
    assert main([*argv, "--items", "tiny_1", "--skip", "1"]) != 0
    assert "drop --skip" in capsys.readouterr().err


def test_ooo_without_a_sidecar_is_a_clear_error(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = _bench(setup, tmp_path / "out", "--sidecar", "none", "--modes", "vanilla,ooo")
    assert status == 1
    assert "needs a sidecar" in capsys.readouterr().err


@pytest.mark.anyio
async def test_oracle_hints_the_remembered_call_and_nothing_else() -> None:
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    oracle = OracleSidecar()
    oracle.remember(messages, [WEATHER], RawCall("get_weather", '{"city": "Paris", "unit": "c"}'))
    box = HintBox()
    hint = await oracle.wave(SidecarRequest(messages, [WEATHER]), box)
    assert hint.function == "get_weather" and dict(hint.slots) == {"city": "Paris", "unit": "c"}
    assert list(hint.slots) == ["city", "unit"] and hint.complete  # the target's key order

    unknown = await oracle.wave(
        SidecarRequest([{"role": "user", "content": "?"}], [WEATHER]), HintBox()
    )
    assert unknown.empty and unknown.complete
    oracle.remember(messages, [WEATHER], None)  # the target wrote no call: no hint
    assert (await oracle.wave(SidecarRequest(messages, [WEATHER]), HintBox())).empty
    with pytest.raises(ValueError):
        OracleSidecar(delay_s=-1)


def test_each_mode_gets_its_own_target_over_the_same_weights(setup: tuple[Path, Path]) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir, _ = setup
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    runners = bench_runner.build_runners(
        model, tokenizer, modes=["vanilla", "toolspec", "hf-pld"], fmt="hermes"
    )
    targets = [r.recorder.inner for r in runners.values()]
    assert len({id(t) for t in targets}) == 3  # no shared cache, memory or recycling table
    assert all(getattr(t, "model", None) is model for t in targets)
    assert [r.call_mode for r in runners.values()] == ["vanilla", "toolspec", "vanilla"]
    with pytest.raises(ValueError, match="needs a sidecar"):
        bench_runner.build_runners(model, tokenizer, modes=["ooo"])
    with pytest.raises(ValueError, match="unknown mode"):
        bench_runner.build_runners(model, tokenizer, modes=["fast"])


@pytest.mark.anyio
async def test_the_sidecar_hears_how_the_bench_target_decodes(setup: tuple[Path, Path]) -> None:
    """The recorder wrapping each mode's target passes on what the wave request says of it:
    without that, the sidecar's rows never followed the target's value conventions in a bench."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ooo_agent.bench.datasets import BenchItem

    class Heard(OracleSidecar):
        def __init__(self) -> None:
            super().__init__()
            self.requests: list[Any] = []  # the SidecarRequest of each wave

        async def wave(self, request: Any, box: Any) -> Any:
            self.requests.append(request)
            return await super().wave(request, box)

    model_dir, _ = setup
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    item = BenchItem(**_items()[0])
    heard = []
    for constrained in (False, True):
        sidecar = Heard()
        runners = bench_runner.build_runners(
            model, tokenizer, modes=["ooo"], fmt="hermes", sidecar=sidecar, max_new_tokens=8,
            rules=("mentioned", "values") if constrained else (),
        )  # fmt: skip
        await bench_runner._measure(runners["ooo"], item, 0, False)
        (request,) = sidecar.requests
        heard.append((request.named_optionals, request.value_conventions))
    assert heard == [(False, False), (True, True)]


@pytest.mark.anyio
async def test_a_record_keeps_the_sidecar_hint(setup: tuple[Path, Path]) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ooo_agent.bench.datasets import BenchItem

    model_dir, _ = setup
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    oracle = OracleSidecar()
    runners = bench_runner.build_runners(
        model, tokenizer, modes=["ooo"], fmt="hermes", sidecar=oracle, max_new_tokens=8
    )
    item = BenchItem(**_items()[0])
    oracle.remember(item.messages, item.tools, RawCall("get_weather", '{"city": "Paris"}'))
    record = await bench_runner._measure(runners["ooo"], item, 0, False)
    assert record.sidecar_status == "ok"
    # The oracle answers at arrival: its function and slot are there before the first step.
    assert record.sidecar_function_step == 0
    assert record.sidecar_slot_steps == {"city": 0}
    assert record.sidecar_predicted is not None
    assert json.loads(record.sidecar_predicted) == {
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }


def test_tree_size_options_reach_every_speculative_target_and_stay_lossless(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ooo_agent.targets.hf import HFTarget

    model_dir, _ = setup
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    runners = bench_runner.build_runners(
        model, tokenizer, modes=["vanilla", "toolspec"], node_budget=5, max_draft_tokens=3
    )
    for runner in runners.values():
        target = runner.recorder.inner
        assert isinstance(target, HFTarget)
        assert (target.node_budget, target.max_draft_tokens) == (5, 3)
    plain = bench_runner.build_runners(model, tokenizer, modes=["toolspec"])["toolspec"]
    default = HFTarget(model, tokenizer)
    assert isinstance(plain.recorder.inner, HFTarget)
    assert plain.recorder.inner.node_budget == default.node_budget
    assert plain.recorder.inner.max_draft_tokens == default.max_draft_tokens

    out = tmp_path / "out"
    extra = ("--sidecar", "none", "--modes", "vanilla,toolspec")
    assert _bench(setup, out, *extra, "--node-budget", "2", "--max-draft-tokens", "2") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["settings"]["node_budget"], summary["settings"]["max_draft_tokens"]) == (2, 2)
    assert {m["mode"]: m for m in summary["modes"]}["toolspec"]["identity"] == 1.0
    with pytest.raises(SystemExit):
        _bench(setup, tmp_path / "bad", *extra, "--node-budget", "0")
    assert "at least 1" in capsys.readouterr().err


def test_a_record_says_whether_the_target_declined(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    def declined(out: Path) -> list[bool]:
        lines = (out / "requests.jsonl").read_text().splitlines()
        return [json.loads(line)["declined"] for line in lines]

    always = tmp_path / "always"
    assert _bench(setup, always, "--modes", "vanilla,toolspec", "--decline-below", "1.0") == 0
    assert declined(always) and all(declined(always))
    never = tmp_path / "never"
    assert _bench(setup, never, "--modes", "vanilla") == 0
    assert declined(never) and not any(declined(never))
