"""LangChain / LangGraph drop-in: :class:`OoOChatModel`, a ``BaseChatModel`` over a
:class:`~ooo_agent.FastToolCaller`, and :func:`toolset_from_langchain`.

The chat model only *produces* calls: LangChain and LangGraph run the tools themselves, so the
caller runs with ``dispatch=False``. Calls still go through our validator, so the
``AIMessage.tool_calls`` it returns always name a bound tool with schema-valid arguments;
anything else lands in ``invalid_tool_calls``.

Example::

    from langgraph.prebuilt import create_react_agent
    model = OoOChatModel(caller=FastToolCaller(target))
    agent = create_react_agent(model.bind_tools([add, multiply]), [add, multiply])

Needs the ``langchain`` extra (``pip install "ooo-agent[langchain]"``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    InvalidToolCall,
    convert_to_openai_messages,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import ToolCall as LCToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from ooo_agent.caller import FastToolCaller
from ooo_agent.calls import CallError, CallResult
from ooo_agent.integrations._openai import (
    finish_reason,
    keep_first_call,
    normalize_tool_choice,
    stats_to_dict,
    tools_for_choice,
)
from ooo_agent.tools import Tool, Toolset

__all__ = ["OoOChatModel", "to_openai_messages", "toolset_from_langchain"]

T = TypeVar("T")


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
        ``True`` mean ``"required"``; a bare name means that tool).
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
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
        choice = normalize_tool_choice(kwargs.get("tool_choice"))
        toolset = tools_for_choice(Toolset.coerce(list(kwargs.get("tools") or [])), choice)
        parallel = bool(kwargs.get("parallel_tool_calls", True))
        result = await self.caller.call(
            to_openai_messages(messages),
            toolset,
            dispatch=False,  # LangChain / LangGraph run the tools
            tool_choice=choice,
            parallel_tool_calls=parallel,
            max_new_tokens=kwargs.get("max_new_tokens", self.max_new_tokens),
        )
        if not parallel:
            keep_first_call(result)
        message = self._to_ai_message(result, stop)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return run_sync(self._agenerate(messages, stop, None, **kwargs))

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

