"""A Python function's signature → an argument model and the JSON schema a model sees.

One pure function, :func:`function_spec`, does it with public pydantic only
(``create_model`` + ``model_json_schema``). Every parameter becomes a field under a private
name (``p0``, ``p1``...) aliased to the parameter's own name, so parameter names that clash
with pydantic's (``model_config``, ``json``, ``_private``) still work.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model
from pydantic.fields import FieldInfo

from ooo_agent.errors import ToolDefinitionError
from ooo_agent.tools.context import ToolContext
from ooo_agent.tools.docstrings import parse_docstring
from ooo_agent.tools.schema import clean_schema

__all__ = ["Binding", "FunctionSpec", "context_parameter", "function_spec"]

BindKind = Literal["none", "instance", "class"]


@dataclass(frozen=True)
class Binding:
    """How one validated field reaches the function."""

    param: str
    field: str
    positional_only: bool


@dataclass(frozen=True)
class FunctionSpec:
    """Everything derived from a function's signature and docstring."""

    name: str
    description: str
    args_model: type[BaseModel]
    parameters: dict[str, Any]
    bindings: tuple[Binding, ...]
    context_param: str | None
    bind: BindKind


def _strip_annotated(hint: Any) -> tuple[Any, list[Any]]:
    if get_origin(hint) is Annotated:
        base, *metadata = get_args(hint)
        return base, list(metadata)
    return hint, []


def _is_context_type(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, ToolContext)


def _mentions_context(hint: Any) -> bool:
    """True when ``hint`` is a union (or other generic) with ToolContext inside it."""
    if _is_context_type(hint):
        return True
    return any(_mentions_context(arg) for arg in get_args(hint))


def _annotated_function(fn: Any) -> Any:
    """The object that carries ``fn``'s annotations and globals (partials, callables)."""
    seen = 0
    while seen < 8:
        seen += 1
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif not hasattr(fn, "__globals__") and callable(fn) and not isinstance(fn, type):
            fn = type(fn).__call__
        else:
            break
    return inspect.unwrap(fn) if callable(fn) else fn


def _type_hints(fn: Callable[..., Any], localns: Mapping[str, Any] | None) -> dict[str, Any]:
    """Resolved parameter annotations of ``fn``; the return annotation is ignored (it may
    name a class that is still being defined, as in a method returning its own class)."""
    target = _annotated_function(fn)
    annotations = dict(getattr(target, "__annotations__", None) or {})
    annotations.pop("return", None)
    shim = types.SimpleNamespace(
        __annotations__=annotations, __globals__=getattr(target, "__globals__", {})
    )
    try:
        return typing.get_type_hints(shim, localns=dict(localns or {}), include_extras=True)
    except Exception as exc:  # NameError for an undefined forward ref, TypeError, ...
        raise ToolDefinitionError(
            f"cannot resolve the type hints of {_qualname(fn)}: {exc}. Define the types it "
            "uses at module level (or import them) so they can be resolved."
        ) from exc


def _qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The name of ``fn``'s :class:`ToolContext` parameter, if it declares one.

    Used for handlers of schema-only and model tools, whose signature is not a schema.
    """
    try:
        signature = inspect.signature(fn)
        hints = _type_hints(fn, None)
    except Exception:  # builtins, unresolvable hints: such a handler takes no context
        return None
    for param in signature.parameters.values():
        hint, _ = _strip_annotated(hints.get(param.name))
        if _is_context_type(hint):
            return param.name
    return None


def _field_for(
    param: inspect.Parameter, hint: Any, doc_params: Mapping[str, str]
) -> tuple[Any, Any]:
    """``(annotation, default)`` for ``create_model``, with alias and description merged in."""
    base, metadata = _strip_annotated(hint)
    described = any(isinstance(m, FieldInfo) and m.description for m in metadata)
    text = next((m for m in metadata if isinstance(m, str)), None)
    kept = [m for m in metadata if not isinstance(m, str)]
    default = param.default
    if isinstance(default, FieldInfo) and default.description:
        described = True
    description = None if described else (text or doc_params.get(param.name))
    # Only set what we mean: an explicit ``description=None`` would erase the user's own.
    ours = Field(alias=param.name, description=description) if description else Field(
        alias=param.name
    )
    annotation = Annotated[(base, *kept, ours)] if kept else Annotated[base, ours]
    if default is inspect.Parameter.empty:
        return annotation, ...
    return annotation, default


def _unpartial(fn: Any) -> Any:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _name_from(fn: Any) -> str:
    """``__name__`` of the function (behind any partial), else the callable's class name."""
    inner = _unpartial(fn)
    return str(getattr(inner, "__name__", None) or type(inner).__name__)


def function_spec(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    bind: BindKind | None = None,
    localns: Mapping[str, Any] | None = None,
) -> FunctionSpec:
    """Derive a tool's schema and argument model from ``fn``.

    ``bind`` forces the first parameter to be treated as ``self`` (``"instance"``) or ``cls``
    (``"class"``); by default an unannotated first parameter called ``self`` / ``cls`` is.

    Raises:
        ToolDefinitionError: ``*args``/``**kwargs``, an unannotated parameter, a misplaced
            ToolContext, or a type pydantic cannot describe as JSON.
    """
    tool_name = name or _name_from(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"cannot read the signature of {_qualname(fn)}: {exc}") from exc
    hints = _type_hints(fn, localns)
    doc = parse_docstring(inspect.getdoc(_unpartial(fn)))
    params = list(signature.parameters.values())

    if bind is None:
        bind = "none"
        if params and params[0].name in ("self", "cls") and params[0].name not in hints:
            bind = "instance" if params[0].name == "self" else "class"
    if bind != "none":
        if not params:
            raise ToolDefinitionError(f"method {_qualname(fn)} has no self/cls parameter")
        params = params[1:]

    fields: dict[str, Any] = {}
    bindings: list[Binding] = []
    context_param: str | None = None
    where = f"tool {tool_name!r} ({_qualname(fn)})"
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{where}: *{param.name} / **{param.name} cannot be described to a model; "
                "declare each parameter explicitly"
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"{where}: parameter {param.name!r} has no type annotation"
            )
        hint, _ = _strip_annotated(hints[param.name])
        if _is_context_type(hint):
            if context_param is not None:
                raise ToolDefinitionError(f"{where}: more than one ToolContext parameter")
            if param.default is not param.empty:
                raise ToolDefinitionError(
                    f"{where}: the ToolContext parameter {param.name!r} must not have a "
                    "default (the SDK always supplies it)"
                )
            if param.kind is param.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"{where}: the ToolContext parameter {param.name!r} cannot be positional-only"
                )
            context_param = param.name
            continue
        if _mentions_context(hints[param.name]):
            raise ToolDefinitionError(
                f"{where}: annotate the context parameter {param.name!r} as plain ToolContext "
                "(not inside a union or container)"
            )
        field_name = f"p{len(bindings)}"
        fields[field_name] = _field_for(param, hints[param.name], doc.params)
        bindings.append(
            Binding(param.name, field_name, param.kind is param.POSITIONAL_ONLY)
        )

    model_name = "".join(part.capitalize() for part in tool_name.split("_")) + "Args"
    try:
        args_model: type[BaseModel] = create_model(
            model_name or "Args", __config__=ConfigDict(extra="ignore"), **fields
        )
        parameters = clean_schema(args_model.model_json_schema())
    except (PydanticUserError, TypeError, ValueError, AttributeError) as exc:
        raise ToolDefinitionError(f"{where}: cannot describe the parameters as JSON: {exc}") from exc
    return FunctionSpec(
        name=tool_name,
        description=description if description is not None else doc.summary,
        args_model=args_model,
        parameters=parameters,
        bindings=tuple(bindings),
        context_param=context_param,
        bind=bind,
    )
