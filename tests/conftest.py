"""Shared fixtures: a real verifier service on a loopback port, backed by a real sandbox.

Sandbox tests never mock the sandbox. The ``service`` fixture runs on Docker;
a test or module marked ``backends("docker", "bwrap")`` runs once per backend
(and gets the ``docker`` or ``bwrap`` marker for each). When a backend is not
there they fail with the message that says how to get it: both are part of the
default run. Every sandbox a test starts must be gone when it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import replace

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
from verifier_service.sandbox.bwrap import LABELS_ENV, sandbox_processes
from verifier_service.sandbox.docker import LABEL
from verifier_service.spec import request_from_json, result_to_json
from verifier_service.testing import InProcessService

# Containers of this test run carry this label (also in CLI subprocesses, through the environment), so the
# leftover checks never confuse them with another run's or a service's on the same Docker engine.
TEST_RUN_LABEL = f"rlvr.test_run={uuid.uuid4().hex[:12]}"
os.environ["RLVR_VERIFIER_SANDBOX_LABELS"] = TEST_RUN_LABEL
# Where this host's interpreter is out of an unprivileged uid's reach (a root pyenv), bwrap sandboxes can only run
# as host root, which the service refuses unless allowed (issue 36, item 5; setup.sh and doctor say so): the tests
# allow it, in CLI subprocesses too (RLVR_TEST_BWRAP_HOST_ROOT=0: they refuse it as a service would).
ALLOW_HOST_ROOT = os.environ.get("RLVR_TEST_BWRAP_HOST_ROOT", "1") == "1"
if ALLOW_HOST_ROOT:
    os.environ.setdefault("RLVR_VERIFIER_BWRAP_ALLOW_HOST_ROOT", "true")
# RLVR_TEST_BWRAP_CGROUP / RLVR_TEST_BWRAP_PYTHON run the bwrap tests in another configuration of this host
# (e.g. `off`: as on a host with no cgroup to delegate; /usr/bin/python3: an unprivileged host uid).
# RLVR_VERIFIER_SANDBOX_IMAGE (and RLVR_VERIFIER_SANDBOX_LANGS_IMAGE, the languages image) point the Docker tests
# at another build of the sandbox images (a branch's own tag).
TEST_CONFIG = ServiceConfig(host="127.0.0.1", port=0, memory_mb=256,
                            sandbox_image=os.environ.get("RLVR_VERIFIER_SANDBOX_IMAGE", "rlvr-sandbox-python:latest"),
                            sandbox_langs_image=os.environ.get("RLVR_VERIFIER_SANDBOX_LANGS_IMAGE",
                                                               "rlvr-sandbox-langs:latest"),
                            sandbox_labels=TEST_RUN_LABEL, pids_limit=64,
                            default_timeout_s=10.0, max_concurrency=4, pure_workers=2, health_interval_s=0.5,
                            shutdown_grace_s=1.0, output_limit_bytes=256 * 1024,
                            bwrap_cgroup=os.environ.get("RLVR_TEST_BWRAP_CGROUP", "auto"),
                            bwrap_python=os.environ.get("RLVR_TEST_BWRAP_PYTHON", ""),
                            bwrap_allow_host_root=ALLOW_HOST_ROOT)


class RunningService(InProcessService):
    """A VerifierApp served from its own event loop in a background thread, with a blocking stub."""

    def __init__(self, config: ServiceConfig):
        super().__init__(config)
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.VerifierStub(self.channel)
        RUNNING.append(self)

    def verify(self, completion: str, spec: dict, id: str = "t", timeout: float = 120) -> dict:
        request = request_from_json({"id": id, "completion": completion, "spec": spec})
        return result_to_json(self.stub.Verify(request, timeout=timeout))

    def verify_batch(self, items: list[tuple[str, dict]], timeout: float = 180) -> list[dict]:
        requests = [request_from_json({"id": str(i), "completion": c, "spec": s}) for i, (c, s) in enumerate(items)]
        response = self.stub.VerifyBatch(pb.VerifyBatchRequest(requests=requests), timeout=timeout)
        return [result_to_json(r) for r in response.results]

    def close(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        self.channel.close()
        super().close(grace=1.0)


RUNNING: list[RunningService] = []  # services of this test session that are up


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


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.1):
    """Polls ``predicate`` until it returns a true value or ``timeout`` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()) and time.monotonic() < deadline:
        time.sleep(interval)
    return value


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


def pytest_generate_tests(metafunc):
    """``backends(...)``-marked tests that use a service run once per backend named."""
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None and "sandbox_backend" in metafunc.fixturenames:
        metafunc.parametrize("sandbox_backend", marker.args, indirect=True, scope="session")


def pytest_collection_modifyitems(items):
    """Each backend's tests carry its marker (``-m bwrap``; the leftover checks key on it)."""
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("sandbox_backend")
        marker = item.get_closest_marker("backends")
        if backend is None and marker is not None and len(marker.args) == 1:
            backend = marker.args[0]
        if backend is not None:
            item.add_marker(backend)


@pytest.fixture(scope="session")
def sandbox_backend(request) -> str:
    return getattr(request, "param", "docker")


def check_backend(backend: str) -> None:
    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox import make_sandbox

    try:
        make_sandbox(replace(TEST_CONFIG, sandbox_backend=backend)).check_blocking()
    except SandboxUnavailable as exc:
        need = ("a Docker engine and the sandbox image" if backend == "docker"
                else "bubblewrap (scripts/setup.sh installs it)")
        pytest.fail(f"{backend} tests need {need}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def docker_ready():
    check_backend("docker")


@pytest.fixture(scope="session")
def backend_ready(sandbox_backend):
    check_backend(sandbox_backend)


@pytest.fixture(scope="session")
def service(sandbox_backend, backend_ready):
    running = RunningService(replace(TEST_CONFIG, sandbox_backend=sandbox_backend))
    yield running
    running.close()
    left = live_sandboxes(sandbox_backend)  # the warm pool is gone with its service
    assert not left, f"{sandbox_backend} sandboxes left after the service stopped: {left}"


@pytest.fixture
def make_service(sandbox_backend, backend_ready):
    """Starts extra services with changed settings; each is stopped after the test."""
    started = []

    def make(**changes) -> RunningService:
        running = RunningService(replace(TEST_CONFIG, **{"sandbox_backend": sandbox_backend, **changes}))
        started.append(running)
        return running

    yield make
    for running in started:
        running.close()


def _remove(backend: str, left: list[str]) -> None:
    if backend == "docker":
        subprocess.run(["docker", "rm", "-f", *left], capture_output=True, timeout=60)
        return
    for sandbox in left:
        with contextlib.suppress(OSError):
            os.kill(int(sandbox.removeprefix("bwrap-")), signal.SIGKILL)


@pytest.fixture(autouse=True)
def no_sandbox_left_behind(request):
    """Every sandbox a docker or bwrap test starts must be gone when it ends (but for the
    warm pools of the services still up, which are checked when they stop)."""
    yield
    for backend in ("docker", "bwrap"):
        if request.node.get_closest_marker(backend) is None:
            continue
        left = stray_sandboxes(backend)
        for _ in range(20):  # a recycled sandbox is removed in the background: give it a moment
            if not left:
                break
            time.sleep(0.25)
            left = stray_sandboxes(backend)
        if left:
            _remove(backend, left)
        assert not left, f"{backend} sandboxes left behind: {left}"


def bwrap_gap(service, need: str) -> str | None:
    """Why ``need`` does not hold in the service's bubblewrap sandboxes on this host (None: it holds, or the
    service runs on Docker, where it always does)."""
    sandbox = service.app.sandbox
    if sandbox.backend != "bwrap":
        return None
    plan = sandbox.cgroup_plan
    if need == "pids" and not sandbox.process_limit():
        return (f"bwrap without a pids cgroup ({sandbox.cgroup_reason or 'not delegated'}) and as host root "
                f"(RLIMIT_NPROC does not bind root): no process limit")
    if need == "memory" and (plan is None or "memory" not in plan.controllers):
        return f"bwrap without a memory cgroup ({sandbox.cgroup_reason or 'not delegated'})"
    if need == "unprivileged" and sandbox.host_uid is None:
        return f"bwrap sandboxes run as host root here because {sandbox.uid_reason}"
    if need == "pytest" and not sandbox.interpreter.pytest:
        return f"the bwrap interpreter {sandbox.interpreter.path} has no pytest"
    if need == "g++" and not sandbox.gxx:
        return "no g++ on this host for the bwrap sandbox"
    return None


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture(scope="module")
def langs_service(docker_ready):
    """A Docker service for the languages' tests (tests/test_languages*.py), one per module (gone before the
    session's ``service`` checks that nothing is left): compiles get more time than the default 30 s (javac and
    rustc on a loaded CI machine), and the languages image must be there."""
    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox.docker import DockerSandbox

    config = replace(TEST_CONFIG, compile_timeout_s=180.0, default_timeout_s=30.0)
    try:
        DockerSandbox(config)._check_image(DockerSandbox(config)._client(), "langs")
    except SandboxUnavailable as exc:
        pytest.fail(f"the languages' tests need the languages image: {exc}", pytrace=False)
    running = RunningService(config)
    yield running
    running.close()
    left = stray_sandboxes("docker")  # (the session's service may be running beside it)
    assert not left, f"docker sandboxes left after the service stopped: {left}"
