"""What the subcommands share: :class:`CliError` and :func:`load_object`."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["CliError", "load_object"]


class CliError(Exception):
    """A problem with what the user asked for on the command line."""


def load_object(spec: str) -> Any:
    """The object named by ``module:attr`` (``attr`` may be dotted; ``module`` may be a
    ``.py`` file path). The current directory is importable, as for ``python -m``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"expected MODULE:ATTRIBUTE (like 'myapp.tools:toolset'), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if module_name.endswith(".py"):
            module = _load_file(Path(module_name))
        else:
            module = importlib.import_module(module_name)
    except CliError:
        raise
    except Exception as exc:  # an import runs arbitrary code: report anything it raises
        raise CliError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"{module_name!r} has no attribute {attr!r}") from None
    return obj


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(path.stem, module)
    spec.loader.exec_module(module)
    return module
