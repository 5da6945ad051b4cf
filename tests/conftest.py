"""Shared test configuration: async tests (marked ``anyio``) run on the asyncio backend."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
