"""``OOO_AGENT_REQUIRE_MODELS=1`` (set by ``make test``) turns a missing-model skip into a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_TESTS = """
import pytest

def test_needs_the_model():
    pytest.skip("embedded model not available: no GGUF here")

def test_skips_for_another_reason():
    pytest.skip("only on Windows")
"""


@pytest.mark.parametrize("required", [True, False])
def test_a_missing_model_fails_only_where_models_are_required(
    required: bool, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(_TESTS)
    monkeypatch.setenv("OOO_AGENT_REQUIRE_MODELS", "1" if required else "0")
    result = pytester.runpytest_inprocess()
    if required:
        result.assert_outcomes(failed=1, skipped=1)
        result.stdout.fnmatch_lines(["*OOO_AGENT_REQUIRE_MODELS=1 but the test skipped*"])
    else:
        result.assert_outcomes(skipped=2)
