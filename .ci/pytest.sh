#!/usr/bin/env bash
# Runs pytest and refuses to pass when no test ran (pytest exit 5).
set -uo pipefail
cd "$(dirname "$0")/.."
# A test that skips for want of the embedded model fails here (tests/conftest.py).
export OOO_AGENT_REQUIRE_MODELS="${OOO_AGENT_REQUIRE_MODELS:-1}"
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
