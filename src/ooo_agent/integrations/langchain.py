"""LangChain / LangGraph drop-in: :class:`OoOChatModel`, a ``BaseChatModel`` over a
:class:`~ooo_agent.FastToolCaller`, with :func:`to_langchain_tools` and
:func:`toolset_from_langchain`.

The chat model only produces calls (the caller runs with ``dispatch=False``, or
``"speculated"`` to pre-execute read-only tools); every call in ``AIMessage.tool_calls`` has
passed our validator, anything else lands in ``invalid_tool_calls``. Usage, streaming and
pre-execution: docs/integrations.md. Needs the ``langchain`` extra.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    InvalidToolCall,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import ToolCall as LCToolCall
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import CallError, CallResult
from ooo_agent.integrations._openai import (
    finish_reason,
    keep_first_call,
    normalize_tool_choice,
    preexecuted_results,
    stats_to_dict,
    tools_for_choice,
)
from ooo_agent.tools import Tool, ToolContext, Toolset
from ooo_agent.tools.validation import canonical_arguments

__all__ = [
    "OoOChatModel",
    "PreexecutedResults",
    "PreexecutedTool",
    "is_read_only",
    "to_langchain_tools",
    "to_openai_messages",
    "toolset_from_langchain",
]

T = TypeVar("T")

ToolInput = str | dict[str, Any] | LCToolCall
"""What ``BaseTool.invoke`` takes: a string, an arguments dict or a ``ToolCall``."""


@dataclass
class _Preexecuted:
    name: str
    arguments: str  # canonical
    call_id: str | None
    value: Any
    stored_at: float


class PreexecutedResults:
    """Results of speculative pre-executions that wait for the framework to run their call.

    Keyed by tool name and canonical arguments; each result answers at most one call
    (:meth:`take` removes it). At most ``max_entries`` are kept (the oldest is dropped first)
    and a result older than ``ttl_s`` seconds is never used. Safe to share between threads
    and event loops.
    """

    def __init__(self, max_entries: int = 256, ttl_s: float | None = 600.0) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self.ttl_s = ttl_s
        self._entries: deque[_Preexecuted] = deque(maxlen=max_entries)
        self._lock = threading.Lock()

    def put(self, name: str, arguments: dict[str, Any], call_id: str | None, value: Any) -> None:
        """Keep ``value``, the result of ``name(**arguments)`` computed for call ``call_id``."""
        entry = _Preexecuted(name, canonical_arguments(arguments), call_id, value, time.monotonic())
        with self._lock:
            self._entries.append(entry)

    def take(
        self, name: str, arguments: dict[str, Any], call_id: str | None = None
    ) -> tuple[Any] | None:
        """``(value,)`` for an equal call, removed so it is used once; None when none is kept.

        An entry made for ``call_id`` is preferred over another equal call's.
        """
        key = canonical_arguments(arguments)
        now = time.monotonic()
        with self._lock:
            if self.ttl_s is not None:
                for stale in [e for e in self._entries if now - e.stored_at > self.ttl_s]:
                    self._entries.remove(stale)
            equal = [e for e in self._entries if e.name == name and e.arguments == key]
            if not equal:
                return None
            mine = [e for e in equal if call_id is not None and e.call_id == call_id]
            chosen = (mine or equal)[0]
            self._entries.remove(chosen)
        return (chosen.value,)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


_ANSWER: contextvars.ContextVar[tuple[Any] | None] = contextvars.ContextVar(
    "ooo_preexecuted_answer", default=None
)
"""The pre-executed value a :class:`PreexecutedTool` run returns instead of running its tool."""


class PreexecutedTool(BaseTool):
    """A LangChain tool that answers a call from pre-executed results when one matches.

    Same name, description and argument schema as the wrapped tool. When it is invoked with
    arguments canonically equal to a kept result (see :class:`PreexecutedResults`) it returns
    that result, consuming it, through LangChain's usual tool machinery (so a ``ToolNode`` gets
    the same ``ToolMessage`` it would get from the wrapped tool); otherwise the wrapped tool runs
    exactly as it would have. Build these with :meth:`OoOChatModel.speculative_tools`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseTool = Field(exclude=True)
    results: PreexecutedResults = Field(exclude=True)

    @classmethod
    def wrap(cls, inner: BaseTool, results: PreexecutedResults) -> PreexecutedTool:
        if isinstance(inner, PreexecutedTool):
            inner = inner.inner
        return cls(
            name=inner.name,
            description=inner.description,
            args_schema=inner.args_schema
            if inner.args_schema is not None
            else inner.get_input_schema(),
            return_direct=inner.return_direct,
            response_format=inner.response_format,
            metadata=inner.metadata,
            tags=inner.tags,
            inner=inner,
            results=results,
        )

    def _take(self, input: ToolInput) -> tuple[Any] | None:
        call_id: str | None = None
        arguments: Any = input
        if isinstance(input, dict) and input.get("type") == "tool_call" and "args" in input:
            arguments = input["args"]
            call_id = input.get("id")
        if not isinstance(arguments, dict):
            return None
        return self.results.take(self.name, arguments, call_id)

    def invoke(self, input: ToolInput, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        answer = self._take(input)
        if answer is None:
            return self.inner.invoke(input, config, **kwargs)
        token = _ANSWER.set(answer)
        try:
            return super().invoke(input, config, **kwargs)
        finally:
            _ANSWER.reset(token)

    async def ainvoke(
        self, input: ToolInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Any:
        answer = self._take(input)
        if answer is None:
            return await self.inner.ainvoke(input, config, **kwargs)
        token = _ANSWER.set(answer)
        try:
            return await super().ainvoke(input, config, **kwargs)
        finally:
            _ANSWER.reset(token)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        answer = _ANSWER.get()
        if answer is None:  # run directly, not through invoke: nothing to answer from
            return self.inner.invoke(kwargs)
        return answer[0]

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        answer = _ANSWER.get()
        if answer is None:
            return await self.inner.ainvoke(kwargs)
        return answer[0]


def is_read_only(item: Any) -> bool:
    """Whether a tool may be pre-executed: our ``@tool(read_only=True)`` with a function, or a
    LangChain tool whose ``metadata`` has ``{"read_only": True}`` and whose output is plain
    content (``response_format="content"``: an artifact could not be kept)."""
    if isinstance(item, PreexecutedTool):
        item = item.inner
    if isinstance(item, Tool):
        return item.read_only and item.has_handler
    if isinstance(item, BaseTool):
        return (item.metadata or {}).get("read_only") is True and item.response_format == "content"
    return False


class OoOChatModel(BaseChatModel):
    """A LangChain chat model whose turns come from a :class:`FastToolCaller`.

    Args:
        caller: the caller producing each turn (its target, sidecar and mode).
        model_name: reported in ``response_metadata``.
        max_new_tokens: the target's token budget per turn (``None``: the caller's).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    caller: FastToolCaller = Field(exclude=True)
    model_name: str = "ooo-agent"
    max_new_tokens: int | None = None
    _preexecuted: PreexecutedResults = PrivateAttr(default_factory=PreexecutedResults)

    @property
    def preexecuted(self) -> PreexecutedResults:
        """Verified pre-executed results waiting for their call (used by
        :meth:`speculative_tools`)."""
        return self._preexecuted

    def speculative_tools(
        self, tools: Sequence[BaseTool | Tool | Callable[..., Any]]
    ) -> list[BaseTool]:
        """The tools to give LangGraph's ``ToolNode`` (or to run yourself) so that calls this
        model pre-executed are answered from their verified results instead of running again.

        Read-only tools (see :func:`is_read_only`) become :class:`PreexecutedTool` wrappers;
        the others are returned as LangChain tools, unchanged. Our ``Tool`` and plain functions
        are converted to LangChain tools first::

            agent = create_agent(model, model.speculative_tools([search, add]))

        The tools are those of :func:`to_langchain_tools` (exceptions become error
        ``ToolMessage``s).
        """
        converted: list[BaseTool] = []
        for item in tools:
            lc = _as_langchain_tool(item)
            if is_read_only(lc):
                lc = PreexecutedTool.wrap(lc, self._preexecuted)
            converted.append(lc)
        return converted

    @property
    def _llm_type(self) -> str:
        return "ooo-agent"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "mode": self.caller.mode}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools (LangChain tools, pydantic models, functions or OpenAI dicts).

        The binding's kwargs carry ``tools=[{"type": "function", "function": ...}]`` — the
        shape LangGraph checks — and, when given, a normalised ``tool_choice`` (``"any"`` and
        ``True`` mean ``"required"``; a bare name means that tool). When some tools are
        read-only (:func:`is_read_only`), ``ooo_toolset`` carries them with their functions so
        that the caller can pre-execute them on the sidecar's prediction.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        runnable = [_caller_tool(t, f) for t, f in zip(tools, formatted, strict=True)]
        if any(t.has_handler or t.destructive for t in runnable):
            kwargs["ooo_toolset"] = Toolset(runnable)
        if tool_choice is not None:
            choice = normalize_tool_choice(tool_choice)
            names = {t["function"]["name"] for t in formatted}
            if isinstance(choice, dict) and choice["function"]["name"] not in names:
                raise ValueError(
                    f"tool_choice names {choice['function']['name']!r}, not a bound tool "
                    f"({sorted(names)})"
                )
            kwargs["tool_choice"] = choice
        return super().bind(tools=formatted, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = await self._turn(messages, stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return run_sync(self._agenerate(messages, stop, None, **kwargs))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """The turn as chunks (see :func:`message_chunks`): text, one per call, metadata."""
        message = await self._turn(messages, stop, **kwargs)
        for chunk in message_chunks(message):
            yield ChatGenerationChunk(message=chunk)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = run_sync(self._turn(messages, stop, **kwargs))
        for chunk in message_chunks(message):
            yield ChatGenerationChunk(message=chunk)

    async def _turn(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> AIMessage:
        """One model turn from the caller, as the ``AIMessage`` ``invoke`` returns."""
        choice = normalize_tool_choice(kwargs.get("tool_choice"))
        toolset = tools_for_choice(_bound_toolset(kwargs), choice)
        parallel = bool(kwargs.get("parallel_tool_calls", True))
        caller = self.caller
        preexecute = (
            caller.sidecar is not None and caller.preexecute and any(t.has_handler for t in toolset)
        )
        result = await caller.call(
            to_openai_messages(messages),
            toolset,
            # LangChain / LangGraph run the tools; only pre-executed results come back.
            dispatch="speculated" if preexecute else False,
            tool_choice=choice,
            parallel_tool_calls=parallel,
            max_new_tokens=kwargs.get("max_new_tokens", self.max_new_tokens),
        )
        if not parallel:
            keep_first_call(result)
        preexecuted: dict[str, str] = {}
        for call, tool_result in preexecuted_results(result):
            self._preexecuted.put(call.name, call.arguments, call.id, tool_result.value)
            preexecuted[call.id] = tool_result.content()
        message = self._to_ai_message(result, stop)
        if preexecuted:
            message.response_metadata["ooo_preexecuted"] = preexecuted
        return message

    def _to_ai_message(self, result: CallResult, stop: list[str] | None) -> AIMessage:
        text = result.text
        if stop and not result.calls:
            text = _cut_at_stop(text, stop)
        tool_calls = [
            LCToolCall(name=c.name, args=dict(c.arguments), id=c.id, type="tool_call")
            for c in result.calls
        ]
        invalid = [_invalid_tool_call(e) for e in result.errors]
        usage = UsageMetadata(
            input_tokens=result.stats.decode.prompt_tokens,
            output_tokens=result.stats.decode.new_tokens,
            total_tokens=result.stats.decode.prompt_tokens + result.stats.decode.new_tokens,
        )
        return AIMessage(
            content=text,
            tool_calls=tool_calls,
            invalid_tool_calls=invalid,
            usage_metadata=usage,
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": finish_reason(result),
                "ooo_stats": stats_to_dict(result.stats),
            },
        )


def message_chunks(message: AIMessage) -> list[AIMessageChunk]:
    """``message`` as the chunks a stream yields; added together they give it back.

    The text (when there is any), then one chunk per tool call (``tool_call_chunks`` with the
    call's index, id, name and JSON arguments), then a last chunk with the usage and the
    response metadata. Rejected calls go into ``response_metadata["ooo_invalid_tool_calls"]``:
    as chunks, LangChain would parse their arguments back into ``tool_calls``.
    """
    chunks: list[AIMessageChunk] = []
    if message.content:
        chunks.append(AIMessageChunk(content=message.content, id=message.id))
    for index, call in enumerate(message.tool_calls):
        arguments = json.dumps(call["args"], ensure_ascii=False)
        part = tool_call_chunk(name=call["name"], args=arguments, id=call["id"], index=index)
        chunks.append(AIMessageChunk(content="", tool_call_chunks=[part], id=message.id))
    metadata = dict(message.response_metadata)
    if message.invalid_tool_calls:
        metadata["ooo_invalid_tool_calls"] = [dict(c) for c in message.invalid_tool_calls]
    chunks.append(
        AIMessageChunk(
            content="",
            usage_metadata=message.usage_metadata,
            response_metadata=metadata,
            id=message.id,
            chunk_position="last",
        )
    )
    return chunks


def to_langchain_tools(tools: Sequence[BaseTool | Tool | Callable[..., Any]]) -> list[BaseTool]:
    """The tools as LangChain tools, for LangGraph's ``ToolNode`` or ``create_agent``.

    Our :class:`~ooo_agent.tools.Tool` (``@tool``) becomes a ``StructuredTool`` that runs
    sync (``invoke``) and async (``ainvoke``; an ``async`` tool is awaited), validates the
    arguments with our validator, keeps the tool's ``timeout``, and turns an exception (or a
    timeout, or invalid arguments) into a ``ToolMessage`` with ``status="error"`` whose content
    is ``Error: ...`` — so the model sees what went wrong instead of the run ending. LangChain
    tools are returned as they are; plain functions go through LangChain's ``@tool``.
    """
    return [_as_langchain_tool(item) for item in tools]


def to_openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages (``ToolMessage`` history included) → OpenAI message dicts."""
    converted = convert_to_openai_messages(list(messages))
    for message in converted:
        # Our formats read a plain string; LangChain keeps non-text blocks as lists.
        content = message.get("content")
        if isinstance(content, list):
            message["content"] = "".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
    return converted


def toolset_from_langchain(tools: Sequence[BaseTool | Callable[..., Any]]) -> Toolset:
    """A :class:`Toolset` whose tools run LangChain tools, validated by our validator.

    Each tool keeps its LangChain name, description and argument schema; dispatching a call
    runs ``tool.ainvoke(arguments)``. Plain functions are wrapped with LangChain's ``@tool``
    conversion first, so they behave exactly as LangChain would run them.
    """
    from langchain_core.tools import tool as lc_tool

    converted: list[Tool] = []
    for item in tools:
        lc = item if isinstance(item, BaseTool) else lc_tool(item)
        converted.append(_wrap_langchain_tool(lc))
    return Toolset.coerce(converted)


def _wrap_langchain_tool(lc: BaseTool) -> Tool:
    async def run(**arguments: Any) -> Any:
        return await lc.ainvoke(arguments)

    return Tool.from_openai(convert_to_openai_tool(lc), run)


def _caller_tool(item: Any, formatted: dict[str, Any]) -> Tool:
    """The bound tool as the caller sees it: the schema LangChain formatted and, only for a
    read-only tool, a function that runs it (so nothing else can ever be started early)."""
    if isinstance(item, PreexecutedTool):
        item = item.inner  # run the tool itself, never the cache
    if not is_read_only(item):
        # Our destructive tool stays destructive: no lenient repairs of its arguments.
        return Tool.from_openai(formatted, destructive=getattr(item, "destructive", False) is True)
    if isinstance(item, Tool):
        ours = item

        async def run_ours(ooo_tool_context: ToolContext, **arguments: Any) -> Any:
            return await ours.invoke(arguments, ooo_tool_context)

        return Tool.from_openai(
            formatted, run_ours, read_only=True, timeout=ours.timeout, sequential=ours.sequential
        )
    lc: BaseTool = item

    async def run_langchain(**arguments: Any) -> Any:
        return await lc.ainvoke(arguments)

    return Tool.from_openai(formatted, run_langchain, read_only=True)


def _bound_toolset(kwargs: dict[str, Any]) -> Toolset:
    """The toolset of a binding: ``ooo_toolset`` when it describes the bound ``tools``."""
    plain = Toolset.coerce(list(kwargs.get("tools") or []))
    runnable = kwargs.get("ooo_toolset")
    if isinstance(runnable, Toolset) and runnable.to_openai() == plain.to_openai():
        return runnable
    return plain


def _as_langchain_tool(item: Any) -> BaseTool:
    if isinstance(item, PreexecutedTool):
        return item.inner
    if isinstance(item, BaseTool):
        return item
    if isinstance(item, Tool):
        return _langchain_tool_from_ours(item)
    if callable(item):
        from langchain_core.tools import tool as lc_tool

        converted: BaseTool = lc_tool(item)
        return converted
    raise TypeError(f"cannot run {type(item).__name__} as a tool: {item!r:.100}")


def _langchain_tool_from_ours(ours: Tool) -> BaseTool:
    """Our ``Tool`` as a LangChain tool: its schema, validated and run by ``Tool.invoke``
    within its ``timeout``; a failure is raised as ``ToolException`` (an error ToolMessage)."""
    if not ours.has_handler:
        raise TypeError(f"tool {ours.name!r} is schema-only: there is no function to run")

    async def arun(**arguments: Any) -> Any:
        try:
            with anyio.move_on_after(ours.timeout):
                return await ours.invoke(arguments)
        except Exception as exc:
            raise ToolException(f"Error: {str(exc) or type(exc).__name__}") from exc
        raise ToolException(f"Error: timed out after {ours.timeout:g}s")

    def run(**arguments: Any) -> Any:
        return run_sync(arun(**arguments))

    return StructuredTool(
        name=ours.name,
        description=ours.description,
        args_schema=ours.parameters,
        func=run,
        coroutine=arun,
        handle_tool_error=True,
        metadata={"read_only": True} if ours.read_only else None,
    )


def _invalid_tool_call(error: CallError) -> InvalidToolCall:
    return InvalidToolCall(
        name=error.name,
        args=error.raw,
        id=error.call_id,
        error=error.message,
        type="invalid_tool_call",
    )


def _cut_at_stop(text: str, stop: Sequence[str]) -> str:
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also from inside a running event loop.

    Outside a loop it gets its own; inside one (a notebook, an async framework calling a sync
    API) it runs on a fresh loop in a worker thread, so the caller's loop is never re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    context = contextvars.copy_context()  # keep LangChain's callback context
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()

