"""Tools: ``@tool``, :class:`Tool` and :class:`Toolset`.

A :class:`Tool` is the pure data a model sees (name, description, JSON-schema parameters)
plus an optional handler and its execution policy (timeout, sequential, read-only)::

    @tool(timeout=5, read_only=True)
    async def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        '''Current weather in a city.

        Args:
            city: City name, e.g. "Paris".
            unit: Temperature unit.
        '''
        ...

    await get_weather("Paris")                 # still the function
    get_weather.to_openai()                    # {"type": "function", "function": {...}}
    await get_weather.invoke({"city": "Oslo"}) # validated, then called

Tools are built three ways: from a function or method (``@tool``), from a pydantic model
(:meth:`Tool.from_model`) or from an OpenAI / BFCL tool dict (:meth:`Tool.from_openai`).
"""

from __future__ import annotations

import copy
import difflib
import functools
import inspect
import math
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import anyio.to_thread
from pydantic import BaseModel, PydanticUserError

from ooo_agent._schema import clean_schema, normalize_schema, strict_schema
from ooo_agent._signature import (
    Binding,
    BindKind,
    context_parameter,
    function_spec,
)
from ooo_agent.context import ToolContext
from ooo_agent.errors import ToolDefinitionError, ToolsetError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["Tool", "ToolContext", "ToolLike", "Toolset", "tool"]

CallStyle = Literal["function", "model", "kwargs"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Core:
    """What a tool and all its bound copies share: the definition and derived caches."""

    name: str
    description: str
    parameters: dict[str, Any]
    style: CallStyle
    args_model: type[BaseModel] | None = None
    bindings: tuple[Binding, ...] = ()
    context_param: str | None = None
    bind: BindKind = "none"
    validators: dict[bool, Validator] = field(default_factory=dict, compare=False)


def _check_policy(name: object, timeout: float | None) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ToolDefinitionError(f"a tool name must be a non-empty string, got {name!r}")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ToolDefinitionError(f"tool {name!r}: timeout must be a positive number of seconds")


def _is_async_callable(fn: Callable[..., Any] | None) -> bool:
    if fn is None:
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


class Tool:
    """A tool a model can call. Build one with :func:`tool`, :meth:`from_model` or
    :meth:`from_openai`; it stays callable as the function it wraps.

    Attributes:
        timeout: Seconds a call may run before :func:`ooo_agent.dispatch.dispatch` gives up.
        sequential: When True the tool never runs alongside another call of the same turn.
        read_only: The tool has no side effects, so it may be run speculatively.
    """

    def __init__(
        self,
        core: _Core,
        handler: Callable[..., Any] | None,
        *,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
        bound: bool = False,
    ) -> None:
        _check_policy(core.name, timeout)
        if handler is not None and not callable(handler):
            raise ToolDefinitionError(f"tool {core.name!r}: handler {handler!r} is not callable")
        self._core = core
        self._handler = handler
        self._bound = bound
        self.timeout = timeout
        self.sequential = bool(sequential)
        self.read_only = bool(read_only)
        if handler is not None and core.style == "function":
            functools.update_wrapper(self, handler, updated=())

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
    ) -> Tool:
        """A tool from a function, method, ``classmethod`` or ``staticmethod`` object."""
        bind: BindKind | None = None
        if isinstance(fn, classmethod):
            fn, bind = fn.__func__, "class"
        elif isinstance(fn, staticmethod):
            fn, bind = fn.__func__, "none"
        if isinstance(fn, Tool):
            raise ToolDefinitionError(f"{fn.name!r} is already a tool")
        if not callable(fn):
            raise ToolDefinitionError(f"cannot make a tool from {fn!r}: it is not callable")
        spec = function_spec(fn, name=name, description=description, bind=bind, localns=localns)
        core = _Core(
            name=spec.name,
            description=spec.description,
            parameters=spec.parameters,
            style="function",
            args_model=spec.args_model,
            bindings=spec.bindings,
            context_param=spec.context_param,
            bind=spec.bind,
        )
        return cls(core, fn, timeout=timeout, sequential=sequential, read_only=read_only)

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
    ) -> Tool:
        """A tool whose arguments are ``model``; ``handler(instance)`` runs it.

        The name defaults to the model's class name and the description to its docstring. A
        handler parameter annotated :class:`ToolContext` receives the context.
        """
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ToolDefinitionError(f"from_model needs a pydantic model class, got {model!r}")
        try:
            parameters = clean_schema(model.model_json_schema())
        except (PydanticUserError, TypeError, ValueError) as exc:
            raise ToolDefinitionError(f"cannot describe {model.__name__} as JSON: {exc}") from exc
        doc = parameters.pop("description", None)
        core = _Core(
            name=name or model.__name__,
            description=description if description is not None else str(doc or ""),
            parameters=parameters,
            style="model",
            args_model=model,
            context_param=context_parameter(handler) if handler is not None else None,
        )
        return cls(core, handler, timeout=timeout, sequential=sequential, read_only=read_only)

    @classmethod
    def from_openai(
        cls,
        spec: Mapping[str, Any],
        handler: Callable[..., Any] | None = None,
        *,
        timeout: float | None = None,
        sequential: bool = False,
        read_only: bool = False,
    ) -> Tool:
        """A tool from an OpenAI tool dict (``{"type": "function", "function": {...}}``) or
        a bare function definition (``{"name", "description", "parameters"}``, as BFCL ships).

        Loose type names (``dict``, ``float``, ``tuple``, ``any``) are normalised to JSON
        Schema. Without a handler the tool is schema-only; with one, ``handler(**arguments)``
        runs it (plus the context, when the handler has a ToolContext parameter).
        """
        if not isinstance(spec, Mapping):
            raise ToolDefinitionError(f"an OpenAI tool must be a dict, got {type(spec).__name__}")
        body = spec.get("function", spec) if spec.get("type", "function") == "function" else None
        if not isinstance(body, Mapping):
            raise ToolDefinitionError(f"not an OpenAI function tool: {dict(spec)!r:.200}")
        raw_parameters = body.get("parameters") or {}
        if not isinstance(raw_parameters, Mapping):
            raise ToolDefinitionError(f"tool {body.get('name')!r}: parameters must be an object")
        parameters = normalize_schema(raw_parameters)
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(parameters)
        except SchemaError as exc:
            raise ToolDefinitionError(
                f"tool {body.get('name')!r}: invalid parameters schema: {exc.message}"
            ) from exc
        description = body.get("description") or ""
        core = _Core(
            name=body.get("name"),  # type: ignore[arg-type]  # checked by _check_policy
            description=description if isinstance(description, str) else str(description),
            parameters=parameters,
            style="kwargs",
            context_param=context_parameter(handler) if handler is not None else None,
        )
        return cls(core, handler, timeout=timeout, sequential=sequential, read_only=read_only)

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
        flags = [f for f in ("sequential", "read_only") if getattr(self, f)]
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
) -> Tool | Callable[[Any], Tool]:
    """Turn a function (sync or async) or a method into a :class:`Tool`.

    Use bare (``@tool``) or with options (``@tool(name=..., timeout=...)``). The schema is read
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
        )

    return decorate if fn is None else decorate(fn)


ToolLike = Tool | Callable[..., Any] | Mapping[str, Any] | type[BaseModel]
"""Anything :meth:`Toolset.coerce` turns into a tool."""


def _as_tool(item: Any) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, Mapping):
        return Tool.from_openai(item)
    if isinstance(item, type) and issubclass(item, BaseModel):
        return Tool.from_model(item)
    if callable(item) or isinstance(item, classmethod | staticmethod):
        return Tool.from_function(item)
    raise ToolDefinitionError(f"cannot make a tool from {type(item).__name__}: {item!r:.100}")


class Toolset:
    """An ordered collection of tools with unique names.

    ``strict`` makes validation reject undeclared keys and exports schemas with
    ``additionalProperties: false`` on every object.

    >>> ts = Toolset([get_weather, search])          # doctest: +SKIP
    >>> ts.names, ts["search"], ts.to_openai()      # doctest: +SKIP
    """

    def __init__(self, tools: Iterable[ToolLike] = (), *, strict: bool = False) -> None:
        self.strict = bool(strict)
        self._tools: dict[str, Tool] = {}
        for item in tools:
            built = _as_tool(item)
            if built.name in self._tools:
                raise ToolsetError(
                    f"duplicate tool name {built.name!r}: give one of them another name "
                    "(@tool(name=...))"
                )
            self._tools[built.name] = built

    @classmethod
    def coerce(cls, tools: Toolset | ToolLike | Iterable[ToolLike] | None) -> Toolset:
        """A toolset from a Toolset (returned as is), one tool-like item, or an iterable of
        Tools, plain functions (wrapped with :func:`tool`), pydantic models and OpenAI dicts."""
        if tools is None:
            return cls()
        if isinstance(tools, Toolset):
            return tools
        if isinstance(tools, str | bytes):
            raise ToolDefinitionError(f"cannot make a tool from a string: {tools!r:.100}")
        if isinstance(tools, Tool | Mapping | type) or callable(tools):
            return cls([tools])
        if isinstance(tools, Iterable):
            return cls(tools)
        raise ToolDefinitionError(f"cannot make tools from {type(tools).__name__}")

    @classmethod
    def from_langchain(cls, tools: Iterable[Any]) -> Toolset:
        """LangChain tools (or functions) as a toolset: calls are validated by our validator,
        then run by ``tool.ainvoke``. Needs the ``langchain`` extra; see
        :func:`ooo_agent.integrations.langchain.toolset_from_langchain`."""
        from ooo_agent.integrations.langchain import toolset_from_langchain

        return toolset_from_langchain(list(tools))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name) if isinstance(name, str) else None

    def suggest(self, name: str) -> str | None:
        """The known name closest to ``name`` (a typo's likely intent), if any is close."""
        if not isinstance(name, str):
            return None
        lowered = {n.lower(): n for n in self._tools}
        if name.strip().lower() in lowered:
            return lowered[name.strip().lower()]
        close = difflib.get_close_matches(name, list(self._tools), n=1, cutoff=0.6)
        return close[0] if close else None

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            hint = self.suggest(name)
            did_you_mean = f" Did you mean {hint!r}?" if hint else ""
            raise ToolsetError(f"no tool named {name!r}.{did_you_mean} Tools: {list(self._tools)}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolset({list(self._tools)}{', strict=True' if self.strict else ''})"

    def to_openai(self) -> list[dict[str, Any]]:
        """Every tool as an OpenAI tool dict, in order."""
        return [t.to_openai(strict=self.strict) for t in self._tools.values()]
