"""The deployment's service image and compose (issue 32, item 3).

The image is built by ``scripts/service-image.sh`` from a wheelhouse made on the host (no network inside the
build); the test runs it as compose runs it (the host's engine through its socket, jobs over the attach stream),
verifies through it, and removes everything it started. ``docker compose`` (v2) up / verify / down runs wherever
compose v2 is installed: ``scripts/setup.sh`` installs it (the distribution's package where it is v2; on Debian
bookworm, whose package is v1, the plugin binary of trixie's package).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from verifier_service.client.client import compose_v2
from verifier_service.testing import free_port

from support.service import TEST_RUN_LABEL

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("SERVICE_IMAGE", "rlvr-verifier:latest")
SANDBOX_IMAGE = os.environ.get("RLVR_VERIFIER_SANDBOX_IMAGE", "rlvr-sandbox-python:latest")
ROWS = [{"id": "add", "completion": "def add(a, b):\n    return a + b\n",
         "spec": {"kind": "python_assert", "tests": "assert add(1, 2) == 3"}},
        {"id": "fmt", "completion": "no digits", "spec": {"kind": "format", "pattern": r"\d+"}}]


def docker(*args: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=check)


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier_service.tools.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


@pytest.fixture(scope="module")
def service_image(docker_ready) -> str:
    """The service image of this checkout (setup.sh builds it; built here when absent)."""
    if docker("image", "inspect", IMAGE).returncode != 0:
        proc = subprocess.run(["bash", "scripts/service-image.sh"], cwd=ROOT, capture_output=True, text=True,
                              timeout=1800, env={**os.environ, "PYTHON": sys.executable, "SERVICE_IMAGE": IMAGE})
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return IMAGE


def leftovers(label: str) -> list[str]:
    return docker("ps", "-aq", "--filter", f"label={label}").stdout.split()


def test_the_service_image_serves_verifications_and_leaves_nothing(service_image, tmp_path):
    label = f"rlvr.image_test={uuid.uuid4().hex[:8]}"
    name = f"rlvr-ci-service-{uuid.uuid4().hex[:8]}"
    port = free_port()
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    started = docker("run", "-d", "--name", name, "-v", "/var/run/docker.sock:/var/run/docker.sock",
                     "-p", f"127.0.0.1:{port}:50051", "-e", "RLVR_VERIFIER_SANDBOX_TRANSPORT=attach",
                     "-e", f"RLVR_VERIFIER_SANDBOX_LABELS={TEST_RUN_LABEL},{label}",
                     "-e", f"RLVR_VERIFIER_SANDBOX_IMAGE={SANDBOX_IMAGE}",
                     "-e", "RLVR_VERIFIER_MAX_CONCURRENCY=2", service_image)
    try:
        assert started.returncode == 0, started.stderr
        ready = cli("wait", "--server", f"127.0.0.1:{port}", "--timeout", "120")
        assert ready.returncode == 0, ready.stderr + docker("logs", name).stderr[-2000:]
        proc = cli("verify", "--input", str(inputs), "--server", f"127.0.0.1:{port}", "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert [(r["id"], r["verdict"]) for r in map(json.loads, proc.stdout.splitlines())] == [
            ("add", "PASSED"), ("fmt", "MALFORMED")]
    finally:
        docker("stop", "-t", "20", name)  # a graceful stop: the service removes its sandboxes
        docker("rm", "-f", name)
        left = leftovers(label)
        if left:
            docker("rm", "-f", *left)
    assert not left, f"sandboxes left by the containerised service: {left}"


@pytest.mark.skipif(not compose_v2(), reason="docker compose v2 is not installed (scripts/setup.sh installs it)")
def test_compose_up_verify_down(service_image, tmp_path):
    project = f"rlvr-ci-{uuid.uuid4().hex[:8]}"
    label = f"rlvr.compose_test={project}"
    port = free_port()
    env = {**os.environ, "SERVICE_IMAGE": service_image, "VERIFIER_REPLICAS": "1", "VERIFIER_CONCURRENCY": "2",
           "VERIFIER_HOST_PORTS": f"127.0.0.1:{port}", "SANDBOX_LABELS": f"{TEST_RUN_LABEL},{label}"}

    def compose(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "compose", "-p", project, *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)

    try:
        up = compose("up", "-d", "--wait", "verifier")
        assert up.returncode == 0, up.stderr[-3000:]
        proc = cli("verify", "--server", f"127.0.0.1:{port}", "--verifier", "math/gsm8k-answer@1", "--input",
                   "examples/catalog/gsm8k-requests.jsonl", "--quiet",
                   env={"RLVR_VERIFIER_API_KEY": "rlvr_example-math-KpXfGFQaYuk4jsx9KcK9GSzk"})
        assert proc.returncode == 0, proc.stderr
        assert [json.loads(line)["verdict"] for line in proc.stdout.splitlines()] == ["PASSED", "PASSED", "FAILED"]
    finally:
        down = compose("down", "--remove-orphans", "--volumes", "--timeout", "20")
        left = leftovers(label) + docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"
                                         ).stdout.split()
        if left:
            docker("rm", "-f", *left)
    assert down.returncode == 0, down.stderr[-2000:]
    assert not left, f"left after compose down: {left}"
