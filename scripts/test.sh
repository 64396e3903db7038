#!/usr/bin/env bash
# The whole test suite, Docker tests included (they need the engine and image
# that scripts/setup.sh provides). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/docker-up.sh
.venv/bin/python -m verifier_service.codegen --check
.venv/bin/ruff check verifier_service trainer tests sandboxes examples
set +e
.venv/bin/python -m pytest -q -ra "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
