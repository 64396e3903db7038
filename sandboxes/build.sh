#!/usr/bin/env bash
# Builds the sandbox images without a container registry: the default image (Python, C, C++, Bash, SQLite
# through Python's sqlite3) and the languages image on top of it (Java, JavaScript, TypeScript, Go, Rust).
#
#   sandboxes/build.sh                      # local Debian base (debootstrap) + rlvr-sandbox-python + -langs
#   TAG=mine sandboxes/build.sh             # rlvr-sandbox-python:mine and rlvr-sandbox-langs:mine
#   IMAGES=python sandboxes/build.sh        # the default image only
#   BASE_IMAGE=python:3.13-slim sandboxes/build.sh   # with a registry: no debootstrap
#
# Environment: TAG (default latest), IMAGE (default rlvr-sandbox-python:$TAG), LANGS_IMAGE (default
# rlvr-sandbox-langs:$TAG), IMAGES (which to build: "python langs", the default, "python" or "langs"; both
# start from BASE_IMAGE), BASE_IMAGE
# (default rlvr-base:$SUITE, made here when absent), SUITE (trixie: its Python 3.13
# has immortal objects, so a forked interpreter copies fewer pages than 3.11's),
# MIRROR (the Debian mirror debootstrap uses).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TAG="${TAG:-latest}"
IMAGE="${IMAGE:-rlvr-sandbox-python:$TAG}"
LANGS_IMAGE="${LANGS_IMAGE:-rlvr-sandbox-langs:$TAG}"
IMAGES="${IMAGES:-python langs}"
SUITE="${SUITE:-trixie}"
BASE_IMAGE="${BASE_IMAGE:-rlvr-base:$SUITE}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

if ! docker info >/dev/null 2>&1; then
    echo "error: no Docker engine is reachable; run scripts/setup.sh (installs and starts dockerd)" >&2
    exit 2
fi

rootfs=""
context=""
trap 'rm -rf ${rootfs:+"$rootfs"} ${context:+"$context"}' EXIT
if [ "$BASE_IMAGE" = "rlvr-base:$SUITE" ] && ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { echo "error: debootstrap is missing: apt-get install debootstrap" >&2; exit 2; }
    rootfs="$(mktemp -d /tmp/rlvr-rootfs.XXXXXX)"
    echo "building base image $BASE_IMAGE with debootstrap ($SUITE from $MIRROR)..."
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" >/dev/null
    tar -C "$rootfs" -c . | docker import - "$BASE_IMAGE" >/dev/null
fi

digest="$(bash "$here/../scripts/sandbox-digest.sh")"
# The build context: the images' recipes (sandboxes/python, sandboxes/langs) and the runner, which ships inside
# the package (verifier_service/runner) so that the bwrap backend finds it in any install; the
# Dockerfiles see them as python/, langs/ and runner/.
context="$(mktemp -d /tmp/rlvr-sandbox-context.XXXXXX)"
cp -R "$here/python" "$context/python"
cp -R "$here/langs" "$context/langs"
rm -rf "$context/langs/rust-crates"  # (built for a bubblewrap host's rustc: langs/rust-crates.sh; the image builds its own)
cp -R "$here/../verifier_service/runner" "$context/runner"
find "$context" -name __pycache__ -prune -exec rm -rf {} + -o -name '*.pyc' -exec rm -f {} +
case " $IMAGES " in *" python "*)
    echo "building $IMAGE from $BASE_IMAGE (sandbox digest $digest)..."
    docker build --quiet --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "rlvr.sandbox.digest=$digest" \
        -t "$IMAGE" -f "$context/python/Dockerfile" "$context"
    docker image inspect --format 'built {{.RepoTags}} {{.Id}}' "$IMAGE"
esac
case " $IMAGES " in *" langs "*)
    echo "building $LANGS_IMAGE from $BASE_IMAGE (sandbox digest $digest)..."
    docker build --quiet --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "rlvr.sandbox.digest=$digest" \
        -t "$LANGS_IMAGE" -f "$context/langs/Dockerfile" "$context"
    docker image inspect --format 'built {{.RepoTags}} {{.Id}}' "$LANGS_IMAGE"
esac
