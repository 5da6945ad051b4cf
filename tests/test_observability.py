"""Quiet loading, logging through ``logging`` and OpenTelemetry spans of a call's stages."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings
from typing import Any

import anyio
import pytest

from ooo_agent import FastToolCaller, Hint, HintBox, SidecarRequest, tool
from ooo_agent.observability import quiet_loading, set_verbose
from ooo_agent.targets.base import Generation, Mode, TargetRequest
from ooo_agent.targets.replay import ReplayTarget


def call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


@tool(read_only=True)
def look_up(key: str) -> str:
    """Look a key up."""
    return key.upper()


@tool
def explode(x: int) -> int:
    """Fail on purpose."""
    raise RuntimeError("boom")


class TimedReplay(ReplayTarget):
    """A replay target in every mode that takes a few steps and reports decode statistics."""

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("vanilla", "toolspec", "ooo")

    async def generate(self, request: TargetRequest) -> Generation:
        for step in range(3):
            if request.hint_box is not None:
                request.hint_box.mark_step(step)
            await anyio.sleep(0.01)
        generation = await super().generate(request)
        stats = generation.stats
        stats.mode = request.mode
        stats.prompt_tokens, stats.prefill_tokens, stats.new_tokens = 12, 12, 7
        stats.forward_passes, stats.accepted_lengths = 4, [1, 3, 3]
        stats.prefill_s, stats.decode_s, stats.finish_reason = 0.004, 0.02, "tool_calls"
        return generation


class PredictingSidecar:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        if self.fail:
            raise RuntimeError("sidecar exploded")
        box.set_function("look_up")
        box.set_slot("key", "paris")
        box.finish()
        return box.snapshot()


USER = [{"role": "user", "content": "look up paris"}]


# ---------------------------------------------------------------------------------- spans
@pytest.fixture(scope="module")
def exporter() -> Any:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)  # once per process: OpenTelemetry keeps the first
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another tracer provider is already set in this process")
    return memory


@pytest.fixture
def spans(exporter: Any) -> Any:
    exporter.clear()
    return exporter


def by_name(finished: Any) -> dict[str, Any]:
    return {s.name.removeprefix("ooo_agent."): s for s in finished}


def test_a_call_emits_one_span_per_stage_with_its_stats(spans: Any) -> None:
    from opentelemetry import trace

    caller = FastToolCaller(TimedReplay([call("look_up", '{"key": "paris"}')]), PredictingSidecar())
    with trace.get_tracer("app").start_as_current_span("request") as app:
        result = anyio.run(caller.call, USER, [look_up])
    assert result.results[0].value == "PARIS" and result.results[0].speculative
    got = by_name(spans.get_finished_spans())
    stages = {"generate", "prefill", "decode", "wave", "pre_execution", "validation", "dispatch"}
    assert set(got) == stages | {"call", "request"}
    root = got["call"]
    assert root.parent.span_id == app.get_span_context().span_id  # under the caller's span
    for name in stages:
        span = got[name]
        assert span.parent.span_id == root.context.span_id, name
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time, name
    # The stages in the order they ran.
    assert got["prefill"].end_time <= got["decode"].start_time
    assert got["decode"].end_time == got["generate"].end_time
    assert got["generate"].end_time <= got["validation"].start_time
    assert got["validation"].end_time <= got["dispatch"].start_time
    # The call's statistics as attributes.
    attrs = root.attributes
    assert attrs["ooo.mode"] == "ooo" and tuple(attrs["ooo.calls"]) == ("look_up",)
    assert (attrs["ooo.prompt_tokens"], attrs["ooo.new_tokens"], attrs["ooo.forward_passes"]) == (
        12,
        7,
        4,
    )
    assert attrs["ooo.total_s"] == result.stats.total_s
    assert got["decode"].attributes["ooo.mean_accepted"] == pytest.approx(7 / 3)
    assert got["prefill"].attributes["ooo.prefill_tokens"] == 12
    assert got["wave"].attributes["ooo.sidecar.status"] == "ok"
    assert "paris" in got["wave"].attributes["ooo.sidecar.predicted"]
    assert got["pre_execution"].attributes["ooo.speculation.used"] == 1
    assert got["dispatch"].attributes["ooo.speculative"] == 1
    assert got["validation"].attributes["ooo.errors"] == 0


def test_rejected_calls_and_failed_tools_are_in_the_span_attributes(spans: Any) -> None:
    outputs = [call("explode", '{"x": "many"}') + "\n" + call("explode", '{"x": 1}')]
    result = anyio.run(FastToolCaller(TimedReplay(outputs)).call, USER, [explode])
    assert len(result.errors) == 1 and len(result.results) == 1
    got = by_name(spans.get_finished_spans())
    assert "wave" not in got and "pre_execution" not in got  # no sidecar
    assert got["validation"].attributes["ooo.errors"] == 1
    assert list(got["validation"].attributes["ooo.error_kinds"]) == [result.errors[0].kind.value]
    assert got["dispatch"].attributes["ooo.failed"] == 1


def test_without_opentelemetry_a_call_emits_nothing(
    spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import fails as if not installed
    result = anyio.run(FastToolCaller(TimedReplay([call("look_up", '{"key": "a"}')])).call, USER, [look_up])
    assert result.results[0].value == "A"
    assert spans.get_finished_spans() == ()


# -------------------------------------------------------------------------------- logging
def test_call_logs_at_debug_and_sidecar_fault_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="ooo_agent")
    caller = FastToolCaller(
        TimedReplay([call("look_up", '{"key": "paris"}')]), PredictingSidecar(fail=True)
    )
    anyio.run(caller.call, USER, [look_up])
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert (
        "ooo_agent.caller",
        logging.WARNING,
        "sidecar wave error: RuntimeError: sidecar exploded",
    ) in records
    debug = [m for name, level, m in records if name == "ooo_agent.caller" and level == logging.DEBUG]
    assert debug[0] == "call start: mode=ooo messages=1 tools=['look_up']"
    assert len(debug) == 2 and "calls=['look_up']" in debug[1] and "sidecar=error" in debug[1]
    assert any(
        name == "ooo_agent.dispatch" and "look_up" in m for name, _level, m in records
    )


def test_a_raising_tool_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ooo_agent")
    anyio.run(FastToolCaller(TimedReplay([call("explode", '{"x": 1}')])).call, USER, [explode])
    (record,) = [r for r in caplog.records if r.name == "ooo_agent.dispatch"]
    assert record.levelno == logging.INFO and "explode" in record.getMessage()
    assert record.exc_info is not None and str(record.exc_info[1]) == "boom"


def test_the_library_prints_nothing_unless_logging_is_configured() -> None:
    code = (
        "import anyio\n"
        "from ooo_agent import FastToolCaller\n"
        "from tests.test_observability import TimedReplay, PredictingSidecar, USER, call, look_up\n"
        "c = FastToolCaller(TimedReplay([call('look_up', '{\"key\": \"a\"}')]), PredictingSidecar(True))\n"
        "r = anyio.run(c.call, USER, [look_up])\n"
        "assert r.stats.sidecar.status == 'error'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the WARNING goes nowhere: no handler configured


def test_verbose_flag_turns_on_debug_logging() -> None:
    from ooo_agent.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["demo"]).verbose is False
    assert parser.parse_args(["-v", "demo"]).verbose is True
    assert parser.parse_args(["demo", "--verbose"]).verbose is True
    logger = logging.getLogger("ooo_agent")
    level = logger.level
    try:
        set_verbose()
        (handler,) = [h for h in logger.handlers if getattr(h, "_ooo_cli", False)]
        assert logger.isEnabledFor(logging.DEBUG) and handler.level == logging.DEBUG
        set_verbose(False)  # the command line's default: warnings and errors only
        assert not logger.isEnabledFor(logging.DEBUG) and handler.level == logging.WARNING
    finally:
        logger.setLevel(level)
        for handler in [h for h in logger.handlers if getattr(h, "_ooo_cli", False)]:
            logger.removeHandler(handler)


# -------------------------------------------------------------------------- quiet loading
def _noisy_load() -> str:
    """What a model load does: a transformers progress bar and a transformers FutureWarning."""
    from transformers.utils import logging as hf_logging

    for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
        pass
    warnings.warn_explicit(
        "`is_gradient_checkpointing` is deprecated", FutureWarning, "modeling_utils.py", 1,
        module="transformers.modeling_utils",
    )
    return "model"


def test_quiet_loading_silences_bars_and_warnings_and_restores_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hf_logging = pytest.importorskip("transformers.utils.logging")
    assert hf_logging.is_progress_bar_enabled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert quiet_loading(_noisy_load)() == "model"
    assert caught == []
    assert "Loading weights" not in capsys.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # the library's own setting is back
    # Unwrapped, the same load is noisy: the test above is not vacuous.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _noisy_load()
    assert [w.category for w in caught] == [FutureWarning]
    assert "Loading weights" in capsys.readouterr().err


def test_quiet_loading_shows_everything_when_ooo_agent_logs_at_debug(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    caplog.set_level(logging.DEBUG, logger="ooo_agent")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_loading(_noisy_load)()
    assert [w.category for w in caught] == [FutureWarning]
    assert "Loading weights" in capsys.readouterr().err
    messages = [r.getMessage() for r in caplog.records if r.name == "ooo_agent.models"]
    assert messages[0] == "_noisy_load: loading" and messages[1].startswith("_noisy_load: done in")


@pytest.mark.slow
def test_loading_the_embedded_preset_prints_nothing() -> None:
    code = (
        "from ooo_agent.errors import ModelNotAvailableError\n"
        "try:\n"
        "    from ooo_agent.targets.hf import HFTarget\n"
        "    HFTarget.from_preset('smollm2-135m-toolcall')\n"
        "except (ImportError, ModelNotAvailableError) as exc:\n"
        "    print('unavailable', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    if done.stdout.startswith("unavailable"):
        pytest.skip(done.stdout)
    assert done.stderr == ""
