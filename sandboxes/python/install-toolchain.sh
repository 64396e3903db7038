#!/bin/sh
# Installs Python 3, pytest and g++ on a Debian-based image, whatever the base:
# a bare Debian (python3 from apt) or python:3.x-slim (python3 already there).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bc and the scientific stack Python tasks import (class 3 of issue 30): Debian's, pinned by the suite.
# Boost's headers and OpenSSL's (libcrypto, linked when present: kinds/languages.py) for the C and C++ programs
# that run in this image (HumanEval-X's C++ tests include boost/any.hpp and openssl/md5.h).
pkgs="g++ libc6-dev bc libboost-dev libssl-dev"
if ! command -v python3 >/dev/null 2>&1; then
    pkgs="$pkgs python3 python3-pytest python3-numpy python3-sympy python3-scipy python3-pandas"
fi
apt-get install -y --no-install-recommends $pkgs
if ! python3 -c "import pytest" >/dev/null 2>&1; then
    # python:3.x-slim ships its own Python, which Debian's python3-pytest does not serve.
    python3 -m pip install --no-cache-dir pytest
fi
apt-get clean
rm -rf /var/lib/apt/lists/*
python3 --version
g++ --version | head -n 1
python3 -m pytest --version
