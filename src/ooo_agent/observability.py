"""Logging, quiet model loading and OpenTelemetry spans.

Every module logs through ``logging.getLogger(__name__)`` (names under ``ooo_agent``); nothing
is printed unless the application configures logging. :func:`record_call` is the caller's
hook: once a call has finished it logs it at DEBUG (:func:`call_started` logs its start) (a sidecar fault at WARNING) and, when
OpenTelemetry is installed (the ``otel`` extra), emits one span per stage from the times the
call recorded in its :class:`~ooo_agent.calls.CallStats`::

    ooo_agent.call
    ├─ ooo_agent.generate      the target's turn
    │  ├─ ooo_agent.prefill
    │  └─ ooo_agent.decode
    ├─ ooo_agent.wave          the sidecar's wave (mode ``ooo``, or for pre-execution)
    ├─ ooo_agent.pre_execution read-only tools started on the wave's prediction
    ├─ ooo_agent.validation
    └─ ooo_agent.dispatch

Without OpenTelemetry, or without a configured tracer provider, this costs nothing but a check.
:func:`quiet_loading` silences model loading (progress bars, transformers' and PEFT's
warnings) unless the ``ooo_agent`` logger is enabled for DEBUG.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from ooo_agent.calls import CallResult

__all__ = ["TRACER_NAME", "call_started", "quiet_loading", "record_call", "set_verbose"]

TRACER_NAME = "ooo_agent"
"""The OpenTelemetry instrumentation scope of the spans."""

_log = logging.getLogger(__name__)
# A library prints nothing unless the application configures logging (not even WARNINGs,
# which Python's last-resort handler would otherwise write to stderr).
logging.getLogger("ooo_agent").addHandler(logging.NullHandler())
_call_log = logging.getLogger("ooo_agent.caller")
_load_log = logging.getLogger("ooo_agent.models")

F = TypeVar("F", bound=Callable[..., Any])

_SIDECAR_FAULTS = ("error", "garbage", "timeout")


def set_verbose(verbose: bool = True) -> None:
    """Log ``ooo_agent`` to stderr: warnings and errors, or with ``verbose`` everything (DEBUG,
    model loading's own progress bars and warnings included).

    What the ``ooo-agent`` command does (``--verbose``); a library user configures ``logging``.
    """
    logger = logging.getLogger("ooo_agent")
    handler = next((h for h in logger.handlers if getattr(h, "_ooo_cli", False)), None)
    if handler is None:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler._ooo_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logger.setLevel(logging.DEBUG if verbose else logging.NOTSET)


# ------------------------------------------------------------------------- quiet loading
@contextlib.contextmanager
def _quiet(gguf: bool = False) -> Iterator[None]:
    """Progress bars off and loading warnings ignored; the previous state restored after.

    ``gguf``: also the bar of transformers' GGUF dequantization, which uses tqdm directly."""
    if _load_log.isEnabledFor(logging.DEBUG):
        yield  # verbose: show everything the libraries print
        return
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        # transformers' deprecation notices as PEFT and the GGUF conversion trigger them.
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|peft)\b")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"(transformers|peft)\b")
        hub = _module("huggingface_hub.utils")
        if hub is not None:  # restored last: transformers' switch flips the hub's bars too
            hub_was_off = bool(hub.are_progress_bars_disabled())
            stack.callback(
                hub.disable_progress_bars if hub_was_off else hub.enable_progress_bars
            )
            hub.disable_progress_bars()
        hf_logging = _module("transformers.utils.logging")
        if hf_logging is not None:
            if hf_logging.is_progress_bar_enabled():
                hf_logging.disable_progress_bar()
                stack.callback(hf_logging.enable_progress_bar)
            level = hf_logging.get_verbosity()
            if level < hf_logging.ERROR:
                hf_logging.set_verbosity_error()
                stack.callback(hf_logging.set_verbosity, level)
        gguf_utils = _module("transformers.modeling_gguf_pytorch_utils") if gguf else None
        if gguf_utils is not None:
            bar = gguf_utils.tqdm
            gguf_utils.tqdm = functools.partial(bar, disable=True)
            stack.callback(setattr, gguf_utils, "tqdm", bar)
        yield


def _module(name: str) -> Any:
    """The module, or None when it (or what it needs) is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@overload
def quiet_loading(fn: F, /) -> F: ...


@overload
def quiet_loading(*, gguf: bool = False) -> Callable[[F], F]: ...


def quiet_loading(fn: F | None = None, /, *, gguf: bool = False) -> Any:
    """Decorate a model-loading function (bare, or ``@quiet_loading(gguf=True)`` for a GGUF
    conversion): it runs without progress bars and without transformers' / PEFT's warnings,
    unless ``ooo_agent`` logs at DEBUG, and logs its start and duration at DEBUG on
    ``ooo_agent.models``. The libraries' settings are restored afterwards."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            _load_log.debug("%s: loading", func.__qualname__)
            with _quiet(gguf):
                result = func(*args, **kwargs)
            elapsed = time.perf_counter() - started
            _load_log.debug("%s: done in %.2fs", func.__qualname__, elapsed)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate if fn is None else decorate(fn)


# ------------------------------------------------------------------------------ the hooks
def call_started(mode: str, tools: Sequence[str], messages: int) -> None:
    """Log a call's start at DEBUG (a call that hangs shows where it began)."""
    _call_log.debug("call start: mode=%s messages=%d tools=%s", mode, messages, list(tools))


def record_call(
    result: CallResult,
    arrival: float,
    *,
    mode: str = "",
    tools: Sequence[str] = (),
    messages: int = 0,
) -> None:
    """Log a finished call and emit its spans. ``arrival`` is its ``time.perf_counter()`` start.

    Never raises: observability must not break a call.
    """
    try:
        _log_call(result, mode, tools, messages)
        _emit_spans(result, arrival, mode, tools, messages)
    except Exception:  # pragma: no cover - a broken exporter must not break the call
        _log.exception("recording the call's telemetry failed")


def _log_call(result: CallResult, mode: str, tools: Sequence[str], messages: int) -> None:
    stats = result.stats
    sidecar = stats.sidecar
    if sidecar.status in _SIDECAR_FAULTS:
        _call_log.warning("sidecar wave %s: %s", sidecar.status, sidecar.error)
    if not _call_log.isEnabledFor(logging.DEBUG):
        return
    _call_log.debug(
        "call: mode=%s messages=%d tools=%d -> calls=%s errors=%d results=%d "
        "finish=%s tokens=%d+%d forwards=%d sidecar=%s total=%.3fs",
        mode,
        messages,
        len(tools),
        [c.name for c in result.calls],
        len(result.errors),
        len(result.results),
        stats.decode.finish_reason,
        stats.decode.prompt_tokens,
        stats.decode.new_tokens,
        stats.decode.forward_passes,
        sidecar.status,
        stats.total_s,
    )
    for error in result.errors:
        _call_log.debug("rejected %s call: %s", error.kind.value, error.message)


def _tracer() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace.get_tracer(TRACER_NAME)


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str, bool, int, float and their lists; None is left out."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, (list, tuple)) and all(
            isinstance(v, (str, bool, int, float)) for v in value
        ):
            out[key] = list(value)
        else:
            out[key] = str(value)
    return out


def _emit_spans(
    result: CallResult, arrival: float, mode: str, tools: Sequence[str], messages: int
) -> None:
    tracer = _tracer()
    if tracer is None:
        return
    from opentelemetry import trace

    # The stats hold perf_counter durations; spans want wall-clock nanoseconds.
    offset_ns = time.time_ns() - int(time.perf_counter() * 1e9)

    def at(t: float) -> int:
        return offset_ns + int(t * 1e9)

    stats = result.stats
    decode = stats.decode
    sidecar = stats.sidecar
    speculation = stats.speculation
    end = arrival + stats.total_s
    call = tracer.start_span(
        "ooo_agent.call",
        start_time=at(arrival),
        attributes=_clean(
            {
                "ooo.mode": mode or decode.mode,
                "ooo.messages": messages,
                "ooo.tools": list(tools),
                "ooo.calls": [c.name for c in result.calls],
                "ooo.errors": len(result.errors),
                "ooo.results": len(result.results),
                "ooo.total_s": stats.total_s,
                "ooo.generate_s": stats.generate_s,
                "ooo.validate_s": stats.validate_s,
                "ooo.dispatch_s": stats.dispatch_s,
                "ooo.finish_reason": decode.finish_reason,
                "ooo.prompt_tokens": decode.prompt_tokens,
                "ooo.new_tokens": decode.new_tokens,
                "ooo.forward_passes": decode.forward_passes,
                "ooo.sidecar.status": sidecar.status,
            }
        ),
    )
    parent = trace.set_span_in_context(call)

    def stage(name: str, start: float, stop: float, attributes: Mapping[str, Any]) -> None:
        span = tracer.start_span(
            f"ooo_agent.{name}",
            context=parent,
            start_time=at(start),
            attributes=_clean(attributes),
        )
        span.end(end_time=at(max(stop, start)))

    generated = arrival + stats.generate_s
    stage(
        "generate",
        arrival,
        generated,
        {"ooo.mode": decode.mode, "ooo.generate_s": stats.generate_s},
    )
    # The target's prefill and decode end its turn (tokenizing the prompt comes first).
    decode_start = max(arrival, generated - decode.decode_s)
    prefill_start = max(arrival, decode_start - decode.prefill_s)
    stage(
        "prefill",
        prefill_start,
        decode_start,
        {
            "ooo.prompt_tokens": decode.prompt_tokens,
            "ooo.prefill_tokens": decode.prefill_tokens,
            "ooo.prefill_s": decode.prefill_s,
        },
    )
    stage(
        "decode",
        decode_start,
        generated,
        {
            "ooo.mode": decode.mode,
            "ooo.new_tokens": decode.new_tokens,
            "ooo.forward_passes": decode.forward_passes,
            "ooo.decode_steps": decode.decode_steps,
            "ooo.mean_accepted": decode.mean_accepted,
            "ooo.accepted_by_drafter": [f"{k}={v}" for k, v in decode.accepted_by_drafter.items()],
            "ooo.draft_s": decode.draft_s,
            "ooo.decode_s": decode.decode_s,
            "ooo.constrained_tokens": decode.constrained_tokens,
            "ooo.finish_reason": decode.finish_reason,
            "ooo.call_probability": decode.call_probability,
            "ooo.declined": decode.declined,
        },
    )
    joined = generated + sidecar.wait_s
    if sidecar.status != "off":
        wave_end = arrival + sidecar.latency_s if sidecar.latency_s is not None else joined
        stage(
            "wave",
            arrival,
            wave_end,
            {
                "ooo.sidecar.status": sidecar.status,
                "ooo.sidecar.latency_s": sidecar.latency_s,
                "ooo.sidecar.wait_s": sidecar.wait_s,
                "ooo.sidecar.function_arrival_step": sidecar.function_arrival_step,
                "ooo.sidecar.hint_tokens_accepted": sidecar.hint_tokens_accepted,
                "ooo.sidecar.function_from_target": sidecar.function_from_target,
                "ooo.sidecar.predicted": sidecar.predicted,
                "ooo.sidecar.dropped_slots": sorted(sidecar.dropped_slots),
                "ooo.sidecar.error": sidecar.error,
            },
        )
    validated = joined + stats.validate_s
    stage(
        "validation",
        joined,
        validated,
        {
            "ooo.calls": [c.name for c in result.calls],
            "ooo.errors": len(result.errors),
            "ooo.error_kinds": [e.kind.value for e in result.errors],
            "ooo.validate_s": stats.validate_s,
        },
    )
    dispatched = validated + stats.dispatch_s
    if stats.dispatch_s > 0 or result.results:
        stage(
            "dispatch",
            validated,
            dispatched,
            {
                "ooo.results": len(result.results),
                "ooo.failed": sum(1 for r in result.results if not r.ok),
                "ooo.speculative": sum(1 for r in result.results if r.speculative),
                "ooo.dispatch_s": stats.dispatch_s,
            },
        )
    if speculation.started:
        predicted_at = arrival + sidecar.latency_s if sidecar.latency_s is not None else arrival
        stage(
            "pre_execution",
            predicted_at,
            max(dispatched, predicted_at),
            {
                "ooo.speculation.started": speculation.started,
                "ooo.speculation.used": speculation.used,
                "ooo.speculation.discarded": speculation.discarded,
                "ooo.speculation.saved_s": speculation.saved_s,
            },
        )
    call.end(end_time=at(end))
