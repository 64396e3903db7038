#!/usr/bin/env bash
# The verifier service image (compose.yaml's `verifier`, Dockerfile target `verifier`) from a wheelhouse made
# here, on the host: pip runs on the host, where its index, proxy and CA settings (pip.conf, PIP_INDEX_URL,
# PIP_CERT) already work; the image build itself reaches no network (no apt, no pip index: the base is the
# sandbox image, which has Python, and pip installs from the wheelhouse only).
#   SERVICE_IMAGE (rlvr-verifier:latest)  the tag to build
#   SERVICE_BASE_IMAGE (rlvr-sandbox-python:latest)  a Debian image with python3 (the sandbox image: setup.sh builds it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
BASE="${SERVICE_BASE_IMAGE:-rlvr-sandbox-python:latest}"
TAG="${SERVICE_IMAGE:-rlvr-verifier:latest}"
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    echo "error: the base image $BASE is not here: build it first (bash sandboxes/build.sh, or scripts/setup.sh)" >&2
    exit 2
fi
pyver="$(docker run --rm --network none --entrypoint python3 "$BASE" \
    -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
arch="$(uname -m)"
rm -rf wheelhouse && mkdir -p wheelhouse
echo "wheelhouse for Python $pyver on $arch (pip on this host)..."
{
    "$PYTHON" -m pip wheel --no-deps --no-build-isolation -w wheelhouse . \
    && "$PYTHON" -m pip download -d wheelhouse --only-binary=:all: --python-version "$pyver" \
        --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch" --platform "manylinux_2_34_$arch" \
        --platform "linux_$arch" wheelhouse/rlvr_verifier-*.whl pip
} > wheelhouse.log 2>&1 || { tail -n 30 wheelhouse.log >&2; echo "error: making the wheelhouse failed (log: wheelhouse.log)" >&2; exit 2; }
echo "building $TAG from $BASE (no network in the build)..."
docker build --network none --target verifier --build-arg "SERVICE_BASE_IMAGE=$BASE" -t "$TAG" . >> wheelhouse.log 2>&1 \
    || { tail -n 30 wheelhouse.log >&2; echo "error: docker build failed (log: wheelhouse.log)" >&2; exit 2; }
echo "built $TAG"
