"""Where ooo-agent keeps downloaded and converted models.

The root is, in order of precedence: an explicit argument, the ``OOO_AGENT_CACHE``
environment variable, ``$XDG_CACHE_HOME/ooo-agent``, ``~/.cache/ooo-agent``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root", "models_dir"]

CACHE_ENV = "OOO_AGENT_CACHE"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache root, resolved from ``cache_dir``, the environment, or the user default."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ooo-agent"


def models_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<cache root>/models``: one folder per converted model."""
    return cache_root(cache_dir) / "models"
