"""Shared test configuration: async tests (marked ``anyio``) run on the asyncio backend; the
embedded tool-calling model for the tests that load it.

A test that needs the embedded model skips where it cannot be obtained (a checkout without the
``hf`` extra). ``make test`` sets ``OOO_AGENT_REQUIRE_MODELS=1``: there such a skip fails the
test instead, so a broken model install cannot leave the end-to-end checks silently unrun.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator
from typing import Any

import pytest

MISSING_MODEL = re.compile(r"not available|not obtainable|unavailable|not installed")
"""The skip reasons of tests whose model (or its package) is missing."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and os.environ.get("OOO_AGENT_REQUIRE_MODELS") == "1"):
        return
    reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
    if MISSING_MODEL.search(reason):
        report.outcome = "failed"
        report.longrepr = f"OOO_AGENT_REQUIRE_MODELS=1 but the test skipped: {reason}"


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
