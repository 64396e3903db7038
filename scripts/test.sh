#!/usr/bin/env bash
# The whole test suite, Docker and bubblewrap tests included (they need the engine,
# image and bwrap that scripts/setup.sh provides). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/docker-up.sh
# Headless Chromium renders the inspection report in tests/system/test_inspection.py (a test dependency only).
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if ! command -v chromium >/dev/null 2>&1; then
    echo "installing chromium for the report rendering test..."
    { $SUDO apt-get install -y -qq chromium || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; }; } \
        > .venv/chromium-install.log 2>&1 \
        || echo "warning: chromium not installed (see .venv/chromium-install.log); the report render test is skipped" >&2
fi
.venv/bin/python -m verifier_service.codegen --check
.venv/bin/ruff check verifier_service trainer tests sandboxes examples
.venv/bin/python -m mypy verifier_service/service verifier_service/doors verifier_service/serve.py  # the core and its doors
set +e
.venv/bin/python -m pytest -q -ra "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
