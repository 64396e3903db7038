"""This test run's sandboxes on the host: Docker containers and bubblewrap processes, and the leftovers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from verifier_service.sandbox.bwrap import LABELS_ENV, sandbox_processes
from verifier_service.sandbox.docker import LABEL

from support.service import RUNNING, TEST_RUN_LABEL


def runsc_registered() -> bool:
    """Whether the Docker engine has gVisor's runtime (runsc)."""
    out = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                         timeout=30, check=False)
    return "runsc" in out.stdout


def sandbox_containers() -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--no-trunc", "--filter", f"label={LABEL}",
                          "--filter", f"label={TEST_RUN_LABEL}"],
                         capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.split()


def running_sandboxes(label: str) -> list[str]:
    """Running sandbox containers of this test run that also carry ``label``."""
    out = subprocess.run(["docker", "ps", "-q", "--filter", f"label={TEST_RUN_LABEL}", "--filter", f"label={label}"],
                         capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.split()


def bwrap_sandboxes() -> list[str]:
    """This test run's bubblewrap sandboxes on the host (ids as the backend names them)."""
    return [f"bwrap-{pid}" for pid, marks in sandbox_processes().items()
            if TEST_RUN_LABEL in marks.get(LABELS_ENV, "").split(",")]


def live_sandboxes(backend: str) -> list[str]:
    return sandbox_containers() if backend == "docker" else bwrap_sandboxes()


def stray_sandboxes(backend: str) -> list[str]:
    """Sandboxes that no running service owns (its warm pool): leftovers."""
    owned = set().union(*(s.app.sandbox._live for s in RUNNING)) if RUNNING else set()
    return [c for c in live_sandboxes(backend) if c not in owned]


def stray_containers() -> list[str]:
    return stray_sandboxes("docker")


def remove_sandboxes(backend: str, left: list[str]) -> None:
    if backend == "docker":
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, timeout=60)
        return
    for sandbox in left:
        with contextlib.suppress(OSError):
            os.kill(int(sandbox.removeprefix("bwrap-")), signal.SIGKILL)
