"""Keep the training machine's folders out of what a run ships (model card, report, config).

A model card records the command that trained the adapter; ``adapter_config.json`` records
the base model; ``train_report.json`` records where the adapter went. Absolute paths in any
of them name folders of one machine, meaningless (and private) anywhere else, so paths inside
the working directory are written relative to it and paths elsewhere keep only their last part.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = ["portable_arg", "portable_command", "portable_command_line", "portable_path"]


def portable_path(arg: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """``arg`` relative to ``cwd`` when it is an absolute path inside it; an absolute path
    elsewhere keeps only its last part (a model card must not name this machine's folders).
    Anything else (a relative path, a name, a number) is returned unchanged.

    >>> portable_path("/srv/u/repo/runs/d", "/srv/u/repo"), portable_path("/tmp/a", "/srv")
    ('runs/d', '.../a')
    """
    if not os.path.isabs(arg):
        return arg
    path = Path(os.path.normpath(arg))
    here = Path(os.path.normpath(cwd or os.getcwd()))
    for inner, outer in ((path, here), (path.resolve(), here.resolve())):  # as given, then real
        if inner.is_relative_to(outer):
            return str(inner.relative_to(outer)) or "."
    return f".../{path.name}"  # the name as given, not a link's target


def portable_arg(arg: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """One command-line word made portable; ``--option=/a/path`` keeps its option name."""
    if arg.startswith("-") and "=" in arg:
        key, value = arg.split("=", 1)
        return f"{key}={portable_path(value, cwd)}"
    return portable_path(arg, cwd)


def portable_command(
    program: Sequence[str], argv: Sequence[str], cwd: str | os.PathLike[str] | None = None
) -> str:
    """``program`` followed by ``argv`` as a model card records it, every path made portable.

    >>> portable_command(
    ...     ["ooo-agent", "train", "sidecar"],
    ...     ["--data", "/srv/u/repo/runs/d", "--out=/elsewhere/a"],
    ...     "/srv/u/repo",
    ... )
    'ooo-agent train sidecar --data runs/d --out=.../a'
    """
    return shlex.join(portable_arg(arg, cwd) for arg in (*program, *argv))


def portable_command_line(command: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """:func:`portable_command` for a command already joined into one shell line.

    A line that is not valid shell quoting is returned unchanged.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return portable_command(words[:1], words[1:], cwd)
