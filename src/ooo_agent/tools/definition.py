"""A tool's definition, built from a function, a pydantic model or an OpenAI dict.

:class:`ToolCore` is what a :class:`~ooo_agent.tools.Tool` and all its bound copies share:
the data the model sees, how arguments reach the handler, and cached validators. The three
``*_core`` functions are the only places a definition is derived.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, PydanticUserError

from ooo_agent.errors import ToolDefinitionError
from ooo_agent.tools.schema import clean_schema, normalize_schema
from ooo_agent.tools.signature import Binding, BindKind, context_parameter, function_spec

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "CallStyle",
    "ToolCore",
    "check_policy",
    "function_core",
    "model_core",
    "openai_core",
]

CallStyle = Literal["function", "model", "kwargs"]
"""How validated arguments reach the handler: as the function's parameters, as one model
instance, or as ``**arguments``."""


@dataclass(frozen=True)
class ToolCore:
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


def check_policy(name: object, timeout: float | None) -> None:
    """Reject names and timeouts no dispatcher could honour."""
    if not isinstance(name, str) or not name.strip():
        raise ToolDefinitionError(f"a tool name must be a non-empty string, got {name!r}")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ToolDefinitionError(f"tool {name!r}: timeout must be a positive number of seconds")


def function_core(
    fn: Any,
    *,
    name: str | None,
    description: str | None,
    localns: Mapping[str, Any] | None,
) -> tuple[ToolCore, Callable[..., Any]]:
    """The definition of a function, method, ``classmethod`` or ``staticmethod`` object, and
    the plain function behind it."""
    bind: BindKind | None = None
    if isinstance(fn, classmethod):
        fn, bind = fn.__func__, "class"
    elif isinstance(fn, staticmethod):
        fn, bind = fn.__func__, "none"
    if not callable(fn):
        raise ToolDefinitionError(f"cannot make a tool from {fn!r}: it is not callable")
    spec = function_spec(fn, name=name, description=description, bind=bind, localns=localns)
    core = ToolCore(
        name=spec.name,
        description=spec.description,
        parameters=spec.parameters,
        style="function",
        args_model=spec.args_model,
        bindings=spec.bindings,
        context_param=spec.context_param,
        bind=spec.bind,
    )
    return core, fn


def model_core(
    model: Any,
    handler: Callable[..., Any] | None,
    *,
    name: str | None,
    description: str | None,
) -> ToolCore:
    """The definition of a tool whose arguments are one pydantic model."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(f"from_model needs a pydantic model class, got {model!r}")
    try:
        parameters = clean_schema(model.model_json_schema())
    except (PydanticUserError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"cannot describe {model.__name__} as JSON: {exc}") from exc
    doc = parameters.pop("description", None)  # the model's docstring describes the tool
    return ToolCore(
        name=name or model.__name__,
        description=description if description is not None else str(doc or ""),
        parameters=parameters,
        style="model",
        args_model=model,
        context_param=context_parameter(handler) if handler is not None else None,
    )


def openai_core(spec: Any, handler: Callable[..., Any] | None) -> ToolCore:
    """The definition in an OpenAI tool dict or a bare ``{"name", "parameters"}`` one."""
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
    name = body.get("name")
    check_policy(name, None)
    return ToolCore(
        name=str(name),
        description=description if isinstance(description, str) else str(description),
        parameters=parameters,
        style="kwargs",
        context_param=context_parameter(handler) if handler is not None else None,
    )
