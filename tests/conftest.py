"""Shared test configuration: async tests (marked ``anyio``) run on the asyncio backend; the
embedded tool-calling model for the tests that load it."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def embedded() -> tuple[object, object]:
    """The embedded tool-calling target's model and tokenizer (skips when not installed)."""
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.models import load_preset

    try:
        return load_preset("smollm2-135m-toolcall")
    except ModelNotAvailableError as exc:
        pytest.skip(f"embedded tool-calling adapter not available: {exc}")
