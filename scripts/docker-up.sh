#!/usr/bin/env bash
# Makes sure both sandbox backends can run: installs bubblewrap (the bwrap backend)
# when absent; makes sure a Docker engine answers: installs docker.io (and gVisor's
# runsc) when absent, registers runsc as a runtime, and starts dockerd when it is not
# running. Needs root (or sudo) for the install and start.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

if ! command -v bwrap >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "installing bubblewrap..."
        { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
            || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bubblewrap >/dev/null; }
    else
        echo "warning: no bubblewrap and no apt-get to install it; the bwrap sandbox backend is unavailable" >&2
    fi
fi

if docker info >/dev/null 2>&1; then
    exit 0
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v runsc >/dev/null 2>&1 || need+=(runsc)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ "${#need[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: no Docker engine and no apt-get to install one; install Docker, then run this again" >&2
        exit 2
    fi
    echo "installing ${need[*]}..."
    $SUDO apt-get update -qq
    # runsc is optional (gVisor); a distribution without it still gets Docker.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null \
        || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker.io debootstrap >/dev/null
fi

# Register gVisor as the "runsc" runtime (sandboxes may opt in with --sandbox-runtime runsc).
if command -v runsc >/dev/null 2>&1; then
    $SUDO python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
config = {}
if os.path.exists(path):
    with open(path) as f:
        text = f.read()
    config = json.loads(text) if text.strip() else {}
runtimes = config.setdefault("runtimes", {})
# --oci-seccomp: gVisor applies the container's seccomp profile (the service's deny-list) inside its kernel too.
wanted = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp"]}
if runtimes.get("runsc") != wanted:
    runtimes["runsc"] = wanted
    os.makedirs("/etc/docker", exist_ok=True)
    with open(path, "w") as f:
        json.dump(config, f, indent=2)
PY
fi

if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    $SUDO systemctl start docker || true
fi
if ! docker info >/dev/null 2>&1; then
    echo "starting dockerd..."
    $SUDO sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
fi
for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 1
done
echo "error: dockerd did not come up in 60 s; see /var/log/dockerd.log" >&2
exit 2
