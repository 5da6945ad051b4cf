"""`FastToolCaller`: one model turn, from messages to validated, dispatched tool calls.

The caller composes; it does not parse, validate or draft itself::

    tools → Toolset → OpenAI tool dicts
    ┌ sidecar.wave(request, box)        (mode "ooo"; started at the request's arrival)
    └ target.generate(request)          (never waits for the box)
    → format.parse → validate → dispatch → CallResult

``dispatch="speculated"`` is for frameworks that run the tools themselves (LangChain's
``ToolNode``, an HTTP client): the wave and the speculation run as with ``dispatch=True``, but
only verified calls that a speculation answers get a result; no tool is run for the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from typing import Any, Literal, TypeVar

import anyio
import anyio.from_thread
from anyio.abc import TaskGroup

from ooo_agent.calls import CallError, CallErrorKind, CallResult, RawCall, SidecarStats, ToolCall
from ooo_agent.formats.base import ChatFormat
from ooo_agent.observability import call_started, record_call
from ooo_agent.offered import OfferedTool, offer
from ooo_agent.rules import RuledTools
from ooo_agent.sidecar.base import Hint, HintBox, Sidecar, SidecarRequest, clean_hint
from ooo_agent.targets.base import (
    Generation,
    Mode,
    Target,
    TargetRequest,
    check_tool_choice,
    chosen_tool,
    tools_named,
)
from ooo_agent.tools import Tool, Toolset
from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.dispatch import dispatch as dispatch_calls
from ooo_agent.tools.speculation import Speculator
from ooo_agent.tools.validation import validate_calls

__all__ = ["DispatchMode", "FastToolCaller"]

ToolsLike = Toolset | Iterable[Tool | Mapping[str, Any] | Any]

T = TypeVar("T")

DispatchMode = bool | Literal["speculated"]
"""``True``: run every verified call; ``False``: run none; ``"speculated"``: return only the
results of verified calls that a speculative pre-execution answered, run nothing else."""

_log = logging.getLogger(__name__)


class FastToolCaller:
    """Fast, validated tool calling over any :class:`~ooo_agent.targets.base.Target`.

    Example::

        caller = FastToolCaller(HFTarget.from_preset("smollm2-135m-toolcall"))
        result = await caller.call([{"role": "user", "content": "Weather in Paris?"}], [get_weather])
        print(result.calls, result.results)

    Args:
        target: the model whose output is the answer (the only commit authority).
        sidecar: optional model predicting the call in one parallel wave (mode ``ooo``).
        mode: ``vanilla`` | ``toolspec`` | ``ooo``; by default the fastest the pair supports.
        sidecar_timeout: a wave still running after this many seconds is abandoned (the target
            is never affected; the stats say ``timeout``). A wave is also stopped as soon as
            the target says its answer holds no call (it declined; the stats say ``stopped``).
            A wave that ignores its cancellation (a sidecar blocking in a worker thread) is
            not waited for: it is left to end in the background (``stats.sidecar.abandoned``).
        strict: read only the format's own call syntax and take arguments exactly as the schema
            types them (undeclared keys rejected); lenient (False) also repairs what is
            unambiguous (docs/tools.md lists it). ``None`` follows the toolset's ``strict``.
        max_new_tokens: the target's token budget per turn.
        preexecute: start ``read_only`` tools on the sidecar's predicted call while the target
            is still decoding; a result is used only if the target's verified call is the same
            (see :mod:`ooo_agent.tools.speculation`). Needs a sidecar; works with any target.
        max_speculative: at most this many speculative executions per call.
        prefill_next_turn: while dispatched tools run, a target that can
            (``HFTarget.prefill_next_turn``) prefills the next turn's known start (the
            conversation and this turn's calls, up to the first result), so the next call on
            this conversation prefills only the results and what follows; after a wave, a
            sidecar that can (``HFSidecar.prefill_next_turn``) does the same for the next
            wave, without the call waiting for it.
        deps: handed to tools that take a :class:`~ooo_agent.tools.ToolContext` (``ctx.deps``),
            e.g. a database handle; ``ctx.messages`` is the conversation of the call.
    """

    def __init__(
        self,
        target: Target,
        sidecar: Sidecar | None = None,
        *,
        mode: Mode | None = None,
        sidecar_timeout: float | None = 10.0,
        strict: bool | None = None,
        max_new_tokens: int = 256,
        preexecute: bool = True,
        max_speculative: int = 4,
        deps: Any = None,
        prefill_next_turn: bool = True,
    ) -> None:
        self.target = target
        self.sidecar = sidecar
        supported = tuple(target.modes)
        if mode is None:
            preferred: tuple[Mode, ...] = ("ooo", "toolspec", "vanilla") if sidecar else ("toolspec", "vanilla")
            mode = next((m for m in preferred if m in supported), supported[0])
        if mode not in supported:
            raise ValueError(f"target supports modes {supported}, not {mode!r}")
        if mode == "ooo" and sidecar is None:
            raise ValueError("mode 'ooo' needs a sidecar")
        self.mode: Mode = mode
        self.sidecar_timeout = sidecar_timeout
        self.strict = strict
        self.max_new_tokens = max_new_tokens
        self.preexecute = preexecute
        self.max_speculative = max_speculative
        self.deps = deps
        self.prefill_next_turn = prefill_next_turn

    async def call(
        self,
        messages: Sequence[Mapping[str, Any]] | str,
        tools: ToolsLike,
        *,
        dispatch: DispatchMode = True,
        mode: Mode | None = None,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel_tool_calls: bool = True,
        max_new_tokens: int | None = None,
    ) -> CallResult:
        """Run one model turn and (by default) dispatch the validated calls.

        ``messages`` may be a plain string (one user message), as in :meth:`Agent.run`.
        ``dispatch=False`` returns the validated calls without running anything.
        ``dispatch="speculated"`` runs the sidecar's wave and speculation as ``True`` does, but
        ``result.results`` holds only the results of verified calls that a speculation of a
        ``read_only`` tool answered (call ids set); every other call is left to the caller of
        this method to run. Mispredictions are cancelled and dropped in every mode.

        ``tool_choice`` is OpenAI's: ``"auto"``, ``"none"`` (no call), ``"required"`` (at least
        one call) or ``{"type": "function", "function": {"name": ...}}`` (calls of that tool
        only); LangChain's ``"any"`` and a bare tool name are accepted too. ``HFTarget`` decodes
        under it; whatever the target, a call it forbids is not dispatched and comes back in
        ``result.errors`` (kind ``tool_choice``), as does a ``"required"`` turn without a call.
        ``parallel_tool_calls=False`` dispatches at most one call, the first valid one; any
        other comes back in ``result.errors`` (kind ``tool_choice``).

        Never raises for anything the model wrote: unknown tools, malformed JSON and schema
        violations come back in ``result.errors``; tool exceptions and timeouts in
        ``result.results``. A failing target (e.g. an HTTP error) raises ``TargetError``; a
        ``tool_choice`` naming a tool not offered, or ``"required"`` with no tools, raises
        ``ValueError``. These leave as themselves, never inside an ``ExceptionGroup``.
        """
        if dispatch not in (True, False, "speculated"):
            raise ValueError(f"dispatch must be True, False or 'speculated', not {dispatch!r}")
        run_all = bool(dispatch) and dispatch != "speculated"
        speculate = run_all or dispatch == "speculated"
        arrival = time.perf_counter()
        toolset = tools if isinstance(tools, Toolset) else Toolset.coerce(tools)
        choice = check_tool_choice(tool_choice, toolset.names)
        tool_dicts = toolset.to_openai()
        offered = offer(tool_dicts)  # what the target, the rules and the sidecar read
        mode = mode or self.mode
        result = CallResult()
        stats = result.stats
        history = as_messages(messages)
        call_started(mode, toolset.names, len(history))

        def context_for(call: ToolCall) -> ToolContext:
            return ToolContext(call_id=call.id, tool_name=call.name, messages=history, deps=self.deps)

        async with _task_group() as speculative_tasks:
            speculator = Speculator(
                toolset,
                speculative_tasks,
                max_concurrent=self.max_speculative,
                context_factory=context_for,
                stats=stats.speculation,
            )
            preexecute = self.preexecute and speculate and speculator.enabled
            run_wave = (
                self.sidecar is not None
                and bool(tool_dicts)
                and choice != "none"  # no call may come: nothing to hint
                and (mode == "ooo" or preexecute)
            )
            box = HintBox() if run_wave else None
            request = TargetRequest(
                messages=history,
                tools=offered,
                mode=mode,
                tool_choice=choice,
                parallel_tool_calls=parallel_tool_calls,
                max_new_tokens=max_new_tokens or self.max_new_tokens,
                hint_box=box,  # hints are read in mode "ooo"; a decline is told in every mode
                arrival=arrival,
                ruled=_ruling(self.target, history, offered),
            )
            generation, decoded_at, joined_at = await self._generate(
                request, box, stats.sidecar, speculator if preexecute else None
            )
            stats.decode = generation.stats
            stats.generate_s = decoded_at - arrival
            if box is not None:
                # The only time the call spends on the sidecar: joining (cancelling) its wave.
                stats.sidecar.wait_s = joined_at - decoded_at
                stats.sidecar.function_arrival_step = box.function_step
                stats.sidecar.slot_arrival_steps = dict(box.slot_steps)
                stats.sidecar.hint_tokens_accepted = generation.stats.accepted_by_drafter.get("hint", 0)
                stats.sidecar.function_from_target = box.function_from_target
                stats.sidecar.hint_dropped = box.dropped
                stats.sidecar.dropped_slots.update(box.refused)
                _record_usage(stats.sidecar, box)

            result.raw_text = generation.text
            started = time.perf_counter()
            strict = toolset.strict if self.strict is None else self.strict
            raw_calls, parse_errors, result.text = self._extract_calls(generation, strict)
            result.calls, errors = validate_calls(raw_calls, toolset, strict=strict)
            result.calls, refused = _held_to_choice(
                result.calls, choice, parallel_tool_calls, [*parse_errors, *errors]
            )
            result.errors = [*parse_errors, *errors, *refused]
            stats.validate_s = time.perf_counter() - started

            speculator.retain(result.calls if preexecute else [])
            if preexecute and not run_all and result.calls:
                started = time.perf_counter()
                result.results = await speculator.claim(result.calls)
                stats.dispatch_s = time.perf_counter() - started
            elif run_all and result.calls:
                warm = getattr(self.target, "prefill_next_turn", None)
                next_turn = [*history, result.assistant_message()]
                if self.prefill_next_turn and callable(warm):  # beside the tools, not after
                    speculative_tasks.start_soon(_prefill_quietly, warm, next_turn, tool_dicts)
                warm_wave = getattr(self.sidecar, "prefill_next_turn", None)
                if self.prefill_next_turn and box is not None and callable(warm_wave):
                    _unawaited(
                        speculative_tasks, _prefill_quietly, warm_wave, next_turn, tool_dicts
                    )
                started = time.perf_counter()
                result.results = await dispatch_calls(
                    result.calls,
                    toolset,
                    context_factory=context_for,
                    answer=speculator.answer if preexecute else None,
                )
                stats.dispatch_s = time.perf_counter() - started
            speculator.discard()  # mispredictions: cancelled, results dropped
        stats.total_s = time.perf_counter() - arrival
        record_call(result, arrival, mode=mode, tools=toolset.names, messages=len(history))
        return result

    def call_sync(
        self, messages: Sequence[Mapping[str, Any]] | str, tools: ToolsLike, **options: Any
    ) -> CallResult:
        """:meth:`call` for scripts: runs it in an event loop of its own and returns its result.

        Raises ``RuntimeError`` inside a running event loop (a notebook cell, an async
        function): ``await caller.call(...)`` there.
        """
        return run_sync(
            "FastToolCaller.call_sync", "await caller.call(...)", self.call, messages, tools, **options
        )

    async def _generate(
        self,
        request: TargetRequest,
        box: HintBox | None,
        sidecar_stats: SidecarStats,
        speculator: Speculator | None,
    ) -> tuple[Generation, float, float]:
        """The target's turn, with the sidecar's wave beside it; never waits for the wave.

        Returns the generation, when the target finished, and when the wave was joined.
        """
        generation: Generation | None = None
        failure: Exception | None = None
        decoded_at = 0.0
        async with anyio.create_task_group() as tg:
            if box is not None and self.sidecar is not None:
                sidecar_stats.status = "running"
                forced = chosen_tool(request.tool_choice)
                # A named tool_choice leaves the sidecar nothing to choose: it predicts that
                # tool's arguments only (a hint for another tool could never be used).
                tools = request.tools if forced is None else tools_named(request.tools, forced)
                ruled = request.ruled
                if ruled is not None and forced is not None:
                    ruled = ruled.only(forced)
                wave_request = SidecarRequest(request.messages, tools, request.arrival, ruled=ruled)
                tg.start_soon(self._run_wave, self.sidecar, wave_request, box, sidecar_stats, speculator)
                if speculator is not None:  # the target's first call names its tool: only
                    box.on_target_function(_loop_listener(speculator.keep_only))  # that one runs
            try:
                generation = await self.target.generate(request)
            except Exception as exc:  # re-raised bare below, not wrapped in an exception group
                failure = exc
            if speculator is not None:
                speculator.close()  # the answer is in: no speculation starts any more
            decoded_at = time.perf_counter()
            tg.cancel_scope.cancel()  # a wave still running has nothing left to contribute
        joined_at = time.perf_counter()
        if failure is not None:
            raise failure
        assert generation is not None
        if sidecar_stats.status == "running":
            sidecar_stats.status = "late"
        return generation, decoded_at, joined_at

    def _extract_calls(
        self, generation: Generation, strict: bool
    ) -> tuple[list[RawCall], list[CallError], str]:
        if generation.raw_calls is not None:
            return list(generation.raw_calls), [], generation.text
        fmt = self.target.format
        if fmt is None:
            return [], [], generation.text
        parsed = fmt.parse(generation.text, strict=strict)
        errors = list(parsed.errors)
        text = parsed.text
        markup = markup_error(fmt, text)
        if markup is not None:
            errors.append(markup)
            text = ""
        return list(parsed.calls), errors, text

    async def _run_wave(
        self,
        sidecar: Sidecar,
        request: SidecarRequest,
        box: HintBox,
        stats: SidecarStats,
        speculator: Speculator | None,
    ) -> None:
        """Run one wave, recording what happened; never lets a sidecar fault reach the call."""
        hint: Hint | None = None
        try:
            with anyio.CancelScope() as stop:
                # No call will come: stop the wave, and drop what its hint already started.
                box.on_no_call(_on_event_loop(stop.cancel, speculator))
                with anyio.fail_after(self.sidecar_timeout):
                    hint = await _wave_or_abandon(sidecar, request, box, stats)
            if stop.cancelled_caught:
                stats.status = "stopped"
                stats.error = box.no_call
                return
        except TimeoutError:
            stats.status = "timeout"
            stats.error = f"no answer within {self.sidecar_timeout}s"
            if stats.abandoned:
                stats.error += "; it ignored its cancellation and was abandoned"
            return
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:  # a broken sidecar must never break the call
            stats.status = "error"
            stats.error = f"{type(exc).__name__}: {exc}"
            return
        stats.latency_s = time.perf_counter() - request.arrival
        if not isinstance(hint, Hint):
            stats.status = "garbage"
            stats.error = f"wave returned {type(hint).__name__}, not a Hint"
            return
        names = {t.name for t in request.tools}
        if hint.function is not None and hint.function not in names:
            stats.status = "garbage"
            stats.error = f"predicted unknown tool {hint.function!r}"
            return
        hint, refused = clean_hint(hint)  # a hint is data: only clean JSON goes on
        stats.dropped_slots.update(refused)
        stats.status = "ok"
        if not hint.empty:
            predicted = {"name": hint.function, "arguments": dict(hint.slots)}
            stats.predicted = json.dumps(predicted, ensure_ascii=False, default=repr)
        if speculator is not None:
            speculator.offer(hint)


async def _prefill_quietly(
    prefill: Callable[..., Awaitable[Any]],
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
) -> None:
    """Run a target's or a sidecar's next-turn prefill; a failure (logged at DEBUG) only costs
    the next call its warm start."""
    try:
        await prefill(messages, tools)
    except Exception:
        _log.debug("next-turn prefill failed", exc_info=True)


def _unawaited(
    group: TaskGroup, function: Callable[..., Coroutine[Any, Any, Any]], *args: Any
) -> None:
    """Start ``function(*args)`` in an asyncio task of its own that the call does not wait for
    (held in ``_BACKGROUND`` until it ends); under another event loop than asyncio, in ``group``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        group.start_soon(function, *args)
        return
    task = loop.create_task(function(*args))
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def _held_to_choice(
    calls: list[ToolCall],
    choice: str | Mapping[str, Any],
    parallel: bool,
    errors: Sequence[CallError],
) -> tuple[list[ToolCall], list[CallError]]:
    """The calls ``choice`` and ``parallel`` (``parallel_tool_calls``) allow, and an error
    for each they forbid (or for a ``required`` turn with neither a call nor an error)."""
    if choice == "required" and not calls and not errors:
        why = "tool_choice is 'required', but the answer calls no tool"
        return [], [CallError(CallErrorKind.TOOL_CHOICE, why)]
    named = chosen_tool(choice)
    kept: list[ToolCall] = []
    refused: list[CallError] = []
    for call in calls:
        if choice == "none":
            why = "tool_choice is 'none': no tool may be called this turn"
        elif named is not None and call.name != named:
            why = f"tool_choice names {named!r}: {call.name!r} may not be called this turn"
        elif kept and not parallel:
            why = "parallel_tool_calls is false: only the first call is made this turn"
        else:
            kept.append(call)
            continue
        refused.append(CallError(CallErrorKind.TOOL_CHOICE, why, call.name, call.id))
    return kept, refused


def _record_usage(stats: SidecarStats, box: HintBox) -> None:
    """The wave's prompt tokens (cached, run) and time split, as its sidecar counted them."""
    usage = box.usage
    stats.cached_tokens = usage.cached_tokens
    stats.prefill_tokens = usage.prefill_tokens
    stats.row_tokens = usage.row_tokens
    stats.prefill_s = usage.prefill_s
    stats.choice_s = usage.choice_s
    stats.rows_s = usage.rows_s


ABANDON_GRACE_S = 0.05
"""How long a cancelled wave may take to end before it is abandoned."""

_BACKGROUND: set[asyncio.Task[Any]] = set()
"""Abandoned waves and next-wave prefills still running (held here so that they are not
collected mid-run)."""


async def _wave_or_abandon(
    sidecar: Sidecar, request: SidecarRequest, box: HintBox, stats: SidecarStats
) -> Any:
    """``await sidecar.wave(request, box)``, in an asyncio task of its own: when the await is
    cancelled, the wave's cancel scope is cancelled and the wave given ``ABANDON_GRACE_S`` to
    end; one still running then (a sidecar blocking in a thread that ignores cancellation) is
    abandoned — it ends in the background, its answer ignored — and ``stats.abandoned`` is
    set. Under another event loop than asyncio the wave is awaited in place."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return await sidecar.wave(request, box)

    scope = anyio.CancelScope()

    async def wave() -> Any:
        with scope:  # cancelled as anyio cancels: a shielded wait in the sidecar holds it
            return await sidecar.wave(request, box)
        return None

    task = loop.create_task(wave())
    ended = anyio.Event()

    def on_end(done: asyncio.Task[Any]) -> None:
        _BACKGROUND.discard(done)
        if not done.cancelled():
            done.exception()  # retrieved: an abandoned wave's failure is not logged
        ended.set()

    _BACKGROUND.add(task)
    task.add_done_callback(on_end)
    try:
        await ended.wait()
    finally:
        if not task.done():
            scope.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(ABANDON_GRACE_S):
                await ended.wait()
            stats.abandoned = not task.done()
    return task.result()


def _on_event_loop(
    cancel: Callable[[], None], speculator: Speculator | None
) -> Callable[[str], None]:
    """A :meth:`HintBox.on_no_call` listener that runs ``cancel()`` and ends the speculation
    (none starts any more, running ones are cancelled) on the event loop
    (:func:`_loop_listener`)."""

    def stop(reason: str) -> None:
        cancel()
        if speculator is not None:
            speculator.close()
            speculator.discard()

    return _loop_listener(stop)


def _ruling(
    target: Target, messages: Sequence[Mapping[str, Any]], tools: Sequence[OfferedTool]
) -> RuledTools | None:
    """The request's tools under the target's rules (``target.rules``), made once for the
    target and the sidecar alike; None for a target without rules of its own."""
    rules = getattr(target, "rules", None)
    return None if rules is None else RuledTools(messages, tools, rules)


def _loop_listener(action: Callable[[str], None]) -> Callable[[str], None]:
    """A :class:`HintBox` listener that runs ``action(value)`` on the event loop, from whichever
    thread the target reports in: the loop's own (an async target) or a worker thread anyio
    started (``HFTarget`` decodes in one). From any other thread nothing is done (the wave and
    the speculation then run on, as they would without the report)."""
    loop_thread = threading.get_ident()

    def listener(value: str) -> None:
        if threading.get_ident() == loop_thread:
            action(value)
            return
        # RuntimeError: not a thread of this event loop, where nothing is safe to do.
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(action, value)

    return listener


def markup_error(fmt: ChatFormat, text: str) -> CallError | None:
    """A :attr:`CallErrorKind.MARKUP` error when ``text`` (a reply outside its parsed calls)
    holds one of the format's own tags, e.g. an echoed ``<tool_response>`` block."""
    found = [tag for tag in fmt.markup_tags if tag in text]
    if not found:
        return None
    return CallError(
        CallErrorKind.MARKUP,
        f"Your reply contained {found[0]} markup, which only the system writes: it is neither "
        "an answer nor a call. Answer the user in plain text, using the tool results above, "
        "or make a proper tool call.",
        raw=text,
    )


def as_messages(messages: Sequence[Mapping[str, Any]] | str) -> list[Mapping[str, Any]]:
    """``messages`` as a list; a plain string is one user message. Raises ``TypeError`` for a
    message that is not a mapping and ``ValueError`` for one without a ``role``."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    history = list(messages)
    for i, message in enumerate(history):
        if not isinstance(message, Mapping):
            raise TypeError(
                f"message {i} is a {type(message).__name__}, not a dict with 'role' and "
                "'content' (pass a plain string for one user message)"
            )
        if "role" not in message:
            raise ValueError(f"message {i} has no 'role': {message!r}")
    return history


@contextlib.asynccontextmanager
async def _task_group() -> AsyncIterator[TaskGroup]:
    """A task group whose body's exception leaves bare (a ``TargetError`` stays one), not in
    the ``ExceptionGroup`` anyio would raise; its tasks are cancelled first."""
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        try:
            yield group
        except Exception as exc:
            failure = exc
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


def run_sync(
    name: str, instead: str, function: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
) -> T:
    """``await function(*args, **kwargs)`` in an event loop of its own (``name``: the method,
    for the error raised inside a running loop, which suggests ``instead``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(functools.partial(function, *args, **kwargs))
    raise RuntimeError(
        f"{name}() cannot run inside a running event loop (a notebook cell or an async "
        f"function): use {instead} there"
    )
