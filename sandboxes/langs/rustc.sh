#!/bin/sh
# rustc.sh ARGS...: rustc with the crates built once by rust-crates.sh (rand, regex, md5: --extern) where they are
# here (the languages image; a bubblewrap host: built for its rustc by the service, sandbox/bwrap_langs.py); rustc
# alone elsewhere (a program that uses a crate then fails to compile, which the service answers as INFRA_ERROR:
# kinds/compiled.py). `rustc.sh --crates` prints the crates and their versions (`verifier-service doctor`).
d=/opt/rlvr-langs/rust-crates
if [ "${1:-}" = "--crates" ]; then
    cat "$d/VERSIONS" 2>/dev/null || echo "none (sandboxes/langs/rust-crates.sh was not run for this rustc)"
    exit 0
fi
if [ -f "$d/rustc.args" ]; then
    exec rustc "$@" "@$d/rustc.args"
fi
exec rustc "$@"
