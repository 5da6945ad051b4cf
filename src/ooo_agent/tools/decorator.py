"""The :class:`Tool` class and the ``@tool`` decorator (public via :mod:`ooo_agent.tools`)."""

from __future__ import annotations

import copy
import functools
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio.to_thread
from pydantic import BaseModel

from ooo_agent.errors import ToolDefinitionError
from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.definition import (
    ToolCore,
    check_policy,
    function_core,
    model_core,
    openai_core,
)
from ooo_agent.tools.schema import strict_schema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["Tool", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


def _is_async_callable(fn: Callable[..., Any] | None) -> bool:
    if fn is None:
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def _mark_coroutine_function(obj: Any, handler: Callable[..., Any]) -> None:
    """Make ``inspect.iscoroutinefunction(obj)`` true, as it is for the async ``handler`` that
    ``obj`` wraps, so frameworks that inspect a callable (LangChain's ``@tool`` conversion,
    hence LangGraph's ``ToolNode``) await it instead of returning the coroutine.

    Python 3.12+ reads a marker (``inspect.markcoroutinefunction``); older versions read the
    function-like attributes, taken from the handler."""
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(obj)
        return
    func = getattr(handler, "__func__", handler)  # a bound method: its function
    code = getattr(func, "__code__", None)
    if isinstance(code, types.CodeType):
        obj.__code__ = code
        obj.__defaults__ = getattr(func, "__defaults__", None)
        obj.__kwdefaults__ = getattr(func, "__kwdefaults__", None)


class Tool:
    """A tool a model can call. Build one with :func:`tool`, :meth:`from_model` or
    :meth:`from_openai`; it stays callable as the function it wraps.

    Attributes:
        timeout: Seconds a call may run before :func:`ooo_agent.tools.dispatch.dispatch` gives up.
        sequential: When True the tool never runs alongside another call of the same turn.
        read_only: The tool has no side effects, so it may be run speculatively.
        destructive: The tool does what cannot be undone (deletes, pays, sends): its
            arguments get none of lenient mode's repairs, only what strict mode accepts.
        dedupe: Identical calls of one turn (same canonical arguments) run once and share
            the result (the default); False runs each of them.
    """

    def __init__(
        self,
        core: ToolCore,
        handler: Callable[..., Any] | None,
        *,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
        bound: bool = False,
        destructive: bool = False,
        dedupe: bool = True,
    ) -> None:
        check_policy(core.name, timeout)
        if read_only and destructive:
            raise ToolDefinitionError(
                f"tool {core.name!r}: a tool cannot be both read_only and destructive"
            )
        if handler is not None and not callable(handler):
            raise ToolDefinitionError(f"tool {core.name!r}: handler {handler!r} is not callable")
        self._core = core
        self._handler = handler
        self._bound = bound
        self.timeout = timeout
        self.sequential = bool(sequential)
        self.read_only = bool(read_only)
        self.destructive = bool(destructive)
        self.dedupe = bool(dedupe)
        if handler is not None and core.style == "function":
            functools.update_wrapper(self, handler, updated=())
            if self.is_async:
                _mark_coroutine_function(self, handler)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
        localns: Mapping[str, Any] | None = None,
        destructive: bool = False,
        dedupe: bool = True,
    ) -> Tool:
        """A tool from a function, method, ``classmethod`` or ``staticmethod`` object.

        ``localns`` resolves string annotations that name local classes (``@tool`` passes
        its caller's locals).
        """
        if isinstance(fn, Tool):
            raise ToolDefinitionError(f"{fn.name!r} is already a tool")
        core, func = function_core(fn, name=name, description=description, localns=localns)
        return cls(
            core,
            func,
            timeout=timeout,
            sequential=sequential,
            read_only=read_only,
            destructive=destructive,
            dedupe=dedupe,
        )

    @classmethod
    def from_model(
        cls,
        model: type[BaseModel],
        handler: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
        destructive: bool = False,
        dedupe: bool = True,
    ) -> Tool:
        """A tool whose arguments are ``model``; ``handler(instance)`` runs it.

        The name defaults to the model's class name and the description to its docstring. A
        handler parameter annotated :class:`ToolContext` receives the context.
        """
        core = model_core(model, handler, name=name, description=description)
        return cls(
            core,
            handler,
            timeout=timeout,
            sequential=sequential,
            read_only=read_only,
            destructive=destructive,
            dedupe=dedupe,
        )

    @classmethod
    def from_openai(
        cls,
        spec: Mapping[str, Any],
        handler: Callable[..., Any] | None = None,
        *,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
        destructive: bool = False,
        dedupe: bool = True,
    ) -> Tool:
        """A tool from an OpenAI tool dict (``{"type": "function", "function": {...}}``) or
        a bare function definition (``{"name", "description", "parameters"}``, as BFCL ships).

        Loose type names (``dict``, ``float``, ``tuple``, ``any``) are normalised to JSON
        Schema. Without a handler the tool is schema-only; with one, ``handler(**arguments)``
        runs it (plus the context, when the handler has a ToolContext parameter).
        """
        core = openai_core(spec, handler)
        return cls(
            core,
            handler,
            timeout=timeout,
            sequential=sequential,
            read_only=read_only,
            destructive=destructive,
            dedupe=dedupe,
        )

    # ------------------------------------------------------------------- definition
    @property
    def name(self) -> str:
        return self._core.name

    @property
    def description(self) -> str:
        return self._core.description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a copy: editing it changes nothing)."""
        return copy.deepcopy(self._core.parameters)

    @property
    def args_model(self) -> type[BaseModel] | None:
        """The pydantic model that types and coerces arguments (None for schema-only tools)."""
        return self._core.args_model

    @property
    def has_handler(self) -> bool:
        """False for schema-only tools (an OpenAI dict or model without a handler)."""
        return self._handler is not None

    @property
    def is_async(self) -> bool:
        return _is_async_callable(self._handler)

    @property
    def takes_context(self) -> bool:
        """True when the handler wants a :class:`ToolContext`."""
        return self._core.context_param is not None

    def schema(self, *, strict: bool = False) -> dict[str, Any]:
        """The parameters schema; with ``strict`` every object forbids undeclared keys."""
        schema = self._core.parameters
        return strict_schema(schema) if strict else copy.deepcopy(schema)

    def validator(self, *, strict: bool = False) -> Validator:
        """A cached Draft 2020-12 validator of :meth:`schema`."""
        cached = self._core.validators.get(strict)
        if cached is None:
            from jsonschema import Draft202012Validator

            cached = Draft202012Validator(self.schema(strict=strict))
            self._core.validators[strict] = cached
        return cached

    def to_openai(self, *, strict: bool = False) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.schema(strict=strict),
            },
        }

    def __repr__(self) -> str:
        flags = [f for f in ("sequential", "read_only", "destructive") if getattr(self, f)]
        if not self.dedupe:
            flags.append("no dedupe")
        if not self.has_handler:
            flags.append("schema-only")
        extra = f" [{', '.join(flags)}]" if flags else ""
        return f"<Tool {self.name!r}{extra}>"

    # ------------------------------------------------------------ calling, binding
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly (no validation): the tool stays a function."""
        if self._handler is None:
            raise TypeError(f"tool {self.name!r} is schema-only: there is no function to call")
        return self._handler(*args, **kwargs)

    def __get__(self, obj: Any, objtype: type | None = None) -> Tool:
        """Methods: ``obj.method`` is a tool bound to ``obj`` (``cls`` for classmethods)."""
        if self._bound or self._handler is None or self._core.bind == "none":
            return self
        if self._core.bind == "instance":
            if obj is None:
                return self
            target: Any = obj
        else:
            target = objtype if objtype is not None else type(obj)
        return Tool(
            self._core,
            types.MethodType(self._handler, target),
            timeout=self.timeout,
            sequential=self.sequential,
            read_only=self.read_only,
            bound=True,
            destructive=self.destructive,
            dedupe=self.dedupe,
        )

    async def invoke(
        self, arguments: Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """Validate ``arguments`` (already-parsed JSON) and run the tool.

        Async handlers are awaited; sync ones run in a worker thread so the event loop keeps
        going. Raises whatever the tool raises, ``pydantic.ValidationError`` /
        ``ValueError`` for invalid arguments and :class:`ToolDefinitionError` for a tool
        that cannot run (schema-only, or a method used from the class).
        """
        handler = self._handler
        if handler is None:
            raise ToolDefinitionError(f"tool {self.name!r} has no handler")
        core = self._core
        if core.bind != "none" and not self._bound:
            raise ToolDefinitionError(
                f"tool {self.name!r} is a method: use it from an instance (obj.{self.name})"
            )
        arguments = dict(arguments or {})
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        if core.style == "function":
            assert core.args_model is not None
            validated = core.args_model.model_validate(arguments)
            for binding in core.bindings:
                value = getattr(validated, binding.field)
                if binding.positional_only:
                    args.append(value)
                else:
                    kwargs[binding.param] = value
        elif core.style == "model":
            assert core.args_model is not None
            args.append(core.args_model.model_validate(arguments))
        else:
            from jsonschema.exceptions import best_match

            error = best_match(self.validator().iter_errors(arguments))
            if error is not None:
                raise ValueError(f"invalid arguments for {self.name!r}: {error.message}")
            kwargs.update(arguments)
        if core.context_param is not None:
            kwargs[core.context_param] = context or ToolContext(
                call_id="", tool_name=self.name
            )
        if self.is_async:
            return await handler(*args, **kwargs)
        call = functools.partial(handler, *args, **kwargs)
        # Abandon on cancel: a timeout must answer now; Python cannot stop the thread, which
        # finishes in the background.
        result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        if inspect.isawaitable(result):  # a sync wrapper around a coroutine function
            result = await result
        return result


@overload
def tool(fn: F, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    sequential: bool = False,
    read_only: bool = False,
    destructive: bool = False,
    dedupe: bool = True,
) -> Callable[[F], Tool]: ...


def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    sequential: bool = False,
    read_only: bool = False,
    destructive: bool = False,
    dedupe: bool = True,
) -> Tool | Callable[[Any], Tool]:
    """Turn a function (sync or async) or a method into a :class:`Tool`.

    Use bare (``@tool``) or with options (``@tool(name=..., timeout=...)``); the options are
    :class:`Tool`'s (``read_only``, ``destructive``, ``dedupe``, ...). The schema is read
    from the signature and docstring; a parameter annotated :class:`ToolContext` is supplied by
    the SDK and hidden from the model.

    Raises:
        ToolDefinitionError: the function cannot be described to a model.
    """
    # The caller's local names resolve string annotations of functions defined inside
    # functions (``from __future__ import annotations`` makes every annotation a string).
    caller = sys._getframe(1)
    localns = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else None
    del caller

    def decorate(func: Any) -> Tool:
        return Tool.from_function(
            func,
            name=name,
            description=description,
            timeout=timeout,
            sequential=sequential,
            read_only=read_only,
            localns=localns,
            destructive=destructive,
            dedupe=dedupe,
        )

    return decorate if fn is None else decorate(fn)
