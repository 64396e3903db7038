#!/usr/bin/env bash
# Prints a digest of everything the sandbox image is built from.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../sandboxes"
find python runner -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16
