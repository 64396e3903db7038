#!/usr/bin/env bash
# One command on a fresh Debian/Ubuntu machine: Docker engine and bubblewrap, sandbox
# image, the Python package (in .venv), a check of the bwrap backend, then a real
# sandboxed verification of examples/requests.jsonl. Run from the repository root,
# as root or with sudo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/docker-up.sh

# docker compose v2 (compose.yaml): the distribution's docker-compose where it is v2 (Debian trixie on); on a release
# whose package is v1 (bookworm: 1.29), the plugin binary of Debian trixie's package, fetched by apt from a private
# trixie list (the archive's signatures checked against the system's Debian keyring) and unpacked, not installed:
# the system's packages and apt state stay as they were.
if ! docker compose version >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    candidate="$(apt-cache policy docker-compose 2>/dev/null | sed -n 's/^ *Candidate: *//p')"
    case "$candidate" in
        2.*|[3-9].*)
            echo "installing docker compose v2 (docker-compose $candidate)..."
            $SUDO apt-get install -y -qq docker-compose >/dev/null \
                || echo "warning: docker-compose $candidate did not install; compose.yaml needs docker compose v2" >&2 ;;
        *)
            echo "installing docker compose v2 (this distribution's docker-compose is ${candidate:-absent}: Debian" \
                 "trixie's plugin binary)..."
            work="$(mktemp -d)"
            mkdir -p "$work/lists/partial"
            echo "deb http://deb.debian.org/debian trixie main" > "$work/sources.list"
            apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
                      -o "Dir::State::Lists=$work/lists" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
            if (cd "$work" && $SUDO apt-get "${apt_opts[@]}" update -qq \
                    && $SUDO apt-get "${apt_opts[@]}" download -qq docker-compose \
                    && dpkg -x docker-compose_*.deb unpacked) >"$work/log" 2>&1 \
                    && $SUDO install -D -m 755 "$work/unpacked/usr/libexec/docker/cli-plugins/docker-compose" \
                        /usr/local/lib/docker/cli-plugins/docker-compose \
                    && docker compose version >/dev/null 2>&1; then
                echo "  $(docker compose version)"
            else
                echo "warning: docker compose v2 could not be fetched ($(tail -1 "$work/log" 2>/dev/null));" \
                     "compose.yaml needs it (its test is skipped)" >&2
            fi
            $SUDO rm -rf "$work" ;;
    esac
fi

# The sandbox images (the default one and the languages one), rebuilt whenever sandboxes/ or the runner changed
# since they were built.
digest="$(bash scripts/sandbox-digest.sh)"
label() { docker image inspect -f '{{index .Config.Labels "rlvr.sandbox.digest"}}' "$1" 2>/dev/null || true; }
if [ "$(label rlvr-sandbox-python:latest)" != "$digest" ]; then
    bash sandboxes/build.sh
elif [ "$(label rlvr-sandbox-langs:latest)" != "$digest" ]; then
    IMAGES=langs bash sandboxes/build.sh
else
    echo "sandbox images rlvr-sandbox-python:latest and rlvr-sandbox-langs:latest are up to date"
fi

PYTHON="${PYTHON:-python3}"
if [ -x .venv/bin/python ] && ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    echo "removing a half-made .venv (no pip in it: an earlier setup was interrupted)"
    rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv || { echo "error: python3 -m venv failed; apt-get install python3-venv" >&2; exit 2; }
fi
echo "installing the Python package into .venv..."
# torch first, pinned (TORCH_SPEC overrides), so the trainer extra's range (torch>=2.6) takes it
# instead of resolving a newer multi-GB build; an installed torch is kept.
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
if ! { .venv/bin/python -m pip install --upgrade pip \
        && { .venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install "$TORCH_SPEC"; } \
        && .venv/bin/python -m pip install -e '.[dev,trainer,ray]' \
        && .venv/bin/python -m pip install --no-deps "verl==0.9.1" "openrlhf==0.11.2"; } > .venv/pip-install.log 2>&1; then
    tail -n 40 .venv/pip-install.log >&2
    echo "error: pip install failed (full log: .venv/pip-install.log)" >&2
    exit 2
fi

echo "checking the Docker sandbox backend and its images' toolchains..."
.venv/bin/verifier-service doctor --sandbox-backend docker \
    || echo "warning: the docker sandbox backend does not run here (see above)" >&2

echo "checking the bubblewrap sandbox backend (for hosts without Docker)..."
if ! .venv/bin/verifier-service doctor --sandbox-backend bwrap; then
    if .venv/bin/verifier-service doctor --sandbox-backend bwrap --bwrap-allow-host-root true >/dev/null 2>&1; then
        echo "WARNING: bwrap sandboxes run here only as HOST ROOT (this interpreter is out of an unprivileged" >&2
        echo "WARNING: uid's reach, see above); the service refuses that unless --bwrap-allow-host-root true;" >&2
        echo "WARNING: the tests allow it (RLVR_TEST_BWRAP_HOST_ROOT=0 makes them refuse it too)" >&2
    else
        echo "warning: the bwrap sandbox backend does not run here (its tests will fail)" >&2
    fi
fi

echo "building the service image (compose.yaml's verifier) from a wheelhouse made here..."
PYTHON=.venv/bin/python bash scripts/service-image.sh

mkdir -p reports
echo "verifying examples/requests.jsonl in the Docker sandbox..."
.venv/bin/verifier-service verify --input examples/requests.jsonl --output reports/example-results.jsonl
echo "results: reports/example-results.jsonl"
