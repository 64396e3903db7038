#!/usr/bin/env bash
# Prints a digest of everything the sandbox images are built from: sandboxes/python and sandboxes/langs (the
# images' recipes) and
# the runner that ships in the package (verifier_service/runner). The files are hashed under the
# names they have in the image's build context (python/..., runner/...; see sandboxes/build.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
list() {  # list DIR NAME: sha256sum lines of DIR's files, named NAME/...
    # (rust-crates/: Rust's crates built for a bubblewrap host's rustc, sandboxes/langs/rust-crates.sh; no image has it)
    (cd "$1/.." && find "$(basename "$1")" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' ! -path '*/rust-crates/*' \
        -print0 | sort -z \
        | xargs -0 sha256sum) | sed "s#  $(basename "$1")/#  $2/#"
}
{ list "$root/sandboxes/python" python; list "$root/sandboxes/langs" langs; list "$root/verifier_service/runner" runner; } | sha256sum | cut -c1-16
