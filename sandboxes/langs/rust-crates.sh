#!/bin/sh
# rust-crates.sh OUT [MOUNT]: builds the crates HumanEval-X's Cargo project gives its programs (rand, regex, md5:
# `use rand::Rng; use regex::Regex; use md5;` in every declaration) once, offline, from Debian's sources
# (librust-*-dev, a cargo directory registry under /usr/share/cargo/registry), with this machine's rustc; rustc.sh
# then passes them to every Rust compile (--extern), so that a job compiles no crate. OUT gets the rlibs (deps/),
# rustc.args (rustc's @file: the --extern and -L flags, with the paths as a sandbox sees OUT: MOUNT, default
# /opt/rlvr-langs/rust-crates) and VERSIONS (one line: the crates and their versions, for `doctor`).
#
# The major versions are pinned below (the API a program is written against): the build fails, rather than give
# programs another API, when Debian's sources leave them. HumanEval-X's Cargo.lock has rand 0.4.6, regex 1.7.1,
# md5 0.7.0; Debian (trixie) has rand 0.8 only (0.8's `gen_range` takes a range: `gen_range(0..4)`, where
# 0.4's took two bounds), regex 1.x and md5 0.7 (benchmarks/DATASETS.md says which tasks that changes).
# On a bubblewrap host (`apt-get install cargo librust-rand-dev librust-regex-dev librust-md5-dev`; Debian 12 also
# librust-aho-corasick-dev librust-memchr-dev) the service runs it itself, once per toolchain, into its
# bwrap_langs_cache (verifier_service/sandbox/bwrap_langs.py), bound at /opt/rlvr-langs/rust-crates in its
# sandboxes; a checkout's sandboxes/langs/rust-crates built by hand is bound there where the service builds none.
set -eu
out="$1"
mount="${2:-/opt/rlvr-langs/rust-crates}"
registry="${RUST_REGISTRY:-/usr/share/cargo/registry}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/.cargo"
cat > "$work/Cargo.toml" <<TOML
[package]
name = "rlvr-crates"
version = "0.0.0"
edition = "2021"

[lib]
path = "lib.rs"

[dependencies]
rand = "0.8"
regex = "1"
md5 = "0.7"

[profile.release]
debug = false
TOML
: > "$work/lib.rs"
cat > "$work/.cargo/config.toml" <<TOML
[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "$registry"

[net]
offline = true
TOML
(cd "$work" && CARGO_HOME="$work/home" CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}" cargo build --release --offline --quiet)
rm -rf "$out"
mkdir -p "$out/deps"
for f in "$work"/target/release/deps/*.rlib "$work"/target/release/deps/*.so; do  # (.so: proc macros)
    [ -e "$f" ] || continue  # (a glob that matched nothing: no proc macro among this build's crates)
    case "$(basename "$f")" in librlvr_crates-*) ;; *) cp "$f" "$out/deps/" ;; esac
done
: > "$out/rustc.args"
versions=""
for crate in rand regex md5; do
    # shellcheck disable=SC2012
    file="$(cd "$out/deps" && ls "lib$crate"-*.rlib)"
    [ "$(echo "$file" | wc -l)" = 1 ] || { echo "error: more than one $crate was built: $file" >&2; exit 1; }
    printf -- '--extern\n%s=%s/deps/%s\n' "$crate" "$mount" "$file" >> "$out/rustc.args"
    version="$(awk -v n="$crate" '$1 == "name" && $3 == "\"" n "\"" { getline; gsub(/"/, "", $3); print $3 }' \
        "$work/Cargo.lock")"
    versions="$versions${versions:+, }$crate $version"
done
printf -- '-L\ndependency=%s/deps\n' "$mount" >> "$out/rustc.args"
echo "$versions (built by $(rustc --version | cut -d' ' -f1-2), Debian's sources)" > "$out/VERSIONS"
echo "Rust crates: $(cat "$out/VERSIONS"), $(du -sh "$out" | cut -f1)"
