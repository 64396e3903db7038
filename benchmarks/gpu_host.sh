#!/usr/bin/env bash
# A benchmark module on the GPU machine's quiet CPU cores (no Docker, no network there): this service on its
# bwrap backend, with the Python wheels (DIR/whl: grpcio, protobuf, jsonschema, math-verify, ... for the host's
# Python) and bubblewrap (DIR/deb: it and the libraries it links) carried in DIR.
#   bash benchmarks/gpu_host.sh DIR MODULE ARGS...
#   e.g. bash benchmarks/gpu_host.sh .gpubench benchmarks.front_door_floods --backend bwrap --service-cpus 0-7
# DIR/whl, made here (a machine with network) for the GPU machine's Python 3.12: the package's dependencies, e.g.
#   pip download --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux2014_x86_64 \
#     --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d DIR/whl grpcio==1.85.1 \
#     grpcio-health-checking==1.85.1 grpcio-reflection==1.85.1 'protobuf>=7.35.1,<8' docker 'jsonschema[format-nongpl]' \
#     math-verify defusedxml rich pyyaml prometheus-client aiohttp orjson
#   (then drop what the machine has: sympy, mpmath; keep one grpcio); DIR/deb as in examples/e2e/gpu_wheels.sh
set -uo pipefail
DIR=$1; shift
if [ ! -e /tmp/bench-site/.installed ]; then  # (once per machine: a script may call this several times)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/bench-site \
        "$DIR"/whl/*.whl || exit 1
    mkdir -p /tmp/bw /tmp/bin
    for f in "$DIR"/deb/*.deb; do dpkg -x "$f" /tmp/bw; done
    touch /tmp/bench-site/.installed
fi
libs=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" /tmp/bw/usr/bin/bwrap > /tmp/bin/bwrap
chmod +x /tmp/bin/bwrap
/tmp/bin/bwrap --ro-bind / / --dev /dev --proc /proc true && echo "bwrap works" || echo "bwrap FAILED"
export PATH=/tmp/bin:$PATH PYTHONPATH=$PWD:/tmp/bench-site PYTHONUNBUFFERED=1
export RLVR_VERIFIER_SANDBOX_BACKEND=bwrap RLVR_VERIFIER_BWRAP_PATH=/tmp/bin/bwrap
python3 -m "$@"
