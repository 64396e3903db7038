"""Shared fixtures: a real verifier service on a loopback port, backed by real Docker.

Docker tests never mock the sandbox. When no engine is reachable they fail
with the message that says how to start one: Docker is the product's core and
is part of the default run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
import uuid
from dataclasses import replace

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
from verifier_service.sandbox.docker import LABEL
from verifier_service.spec import request_from_json, result_to_json

# Containers of this test run carry this label (also in CLI subprocesses, through the environment), so the
# leftover checks never confuse them with another run's or a service's on the same Docker engine.
TEST_RUN_LABEL = f"rlvr.test_run={uuid.uuid4().hex[:12]}"
os.environ["RLVR_VERIFIER_SANDBOX_LABELS"] = TEST_RUN_LABEL
TEST_CONFIG = ServiceConfig(host="127.0.0.1", port=0, memory_mb=256, sandbox_labels=TEST_RUN_LABEL, pids_limit=64,
                            default_timeout_s=10.0, max_concurrency=4, pure_workers=2, health_interval_s=0.5,
                            shutdown_grace_s=1.0, output_limit_bytes=256 * 1024)


class RunningService:
    """A VerifierApp served from its own event loop in a background thread."""

    def __init__(self, config: ServiceConfig):
        from verifier_service.server import VerifierApp

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.app = VerifierApp(config)
        port = self.call(self.app.start())
        self.address = f"127.0.0.1:{port}"
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.VerifierStub(self.channel)
        RUNNING.append(self)

    def call(self, coro, timeout: float = 120):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

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
        self.call(self.app.stop(grace=1.0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


RUNNING: list[RunningService] = []  # services of this test session that are up


def sandbox_containers() -> list[str]:
    out = subprocess.run(["docker", "ps", "-a", "-q", "--no-trunc", "--filter", f"label={LABEL}",
                          "--filter", f"label={TEST_RUN_LABEL}"],
                         capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.split()


def stray_containers() -> list[str]:
    """Sandbox containers that no running service owns (its warm pool): leftovers."""
    owned = set().union(*(s.app.sandbox._live for s in RUNNING)) if RUNNING else set()
    return [c for c in sandbox_containers() if c not in owned]


@pytest.fixture(scope="session")
def docker_ready():
    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox.docker import DockerSandbox

    try:
        DockerSandbox(TEST_CONFIG).check_blocking()
    except SandboxUnavailable as exc:
        pytest.fail(f"Docker tests need a Docker engine and the sandbox image: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def service(docker_ready):
    running = RunningService(TEST_CONFIG)
    yield running
    running.close()
    left = sandbox_containers()  # the warm pool is gone with its service
    assert not left, f"sandbox containers left after the service stopped: {left}"


@pytest.fixture
def make_service(docker_ready):
    """Starts extra services with changed settings; each is stopped after the test."""
    started = []

    def make(**changes) -> RunningService:
        running = RunningService(replace(TEST_CONFIG, **changes))
        started.append(running)
        return running

    yield make
    for running in started:
        running.close()


@pytest.fixture(autouse=True)
def no_container_left_behind(request):
    """Every sandbox container a docker test starts must be gone when it ends (but for the
    warm pools of the services still up, which are checked when they stop)."""
    yield
    if request.node.get_closest_marker("docker") is not None:
        left = stray_containers()
        for _ in range(20):  # a recycled container is removed in the background: give it a moment
            if not left:
                break
            time.sleep(0.25)
            left = stray_containers()
        if left:
            subprocess.run(["docker", "rm", "-f", *left], capture_output=True, timeout=60)
        assert not left, f"sandbox containers left behind: {left}"


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
