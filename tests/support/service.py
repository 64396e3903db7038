"""The test run's service: its label, its config, and an in-process service with a blocking stub.

Importing this module labels every sandbox this run starts (also in CLI subprocesses, through the
environment); ``tests/conftest.py`` imports it before any test runs.
"""

from __future__ import annotations

import os
import textwrap
import uuid
from dataclasses import replace

import grpc
import pytest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
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
                            bwrap_allow_host_root=ALLOW_HOST_ROOT,
                            # (tests send refused calls fast; the pace itself: test_front_door)
                            auth_refusal_burst=1000)


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


def check_backend(backend: str) -> None:
    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox import make_sandbox

    try:
        make_sandbox(replace(TEST_CONFIG, sandbox_backend=backend)).check_blocking()
    except SandboxUnavailable as exc:
        need = ("a Docker engine and the sandbox image" if backend == "docker"
                else "bubblewrap (scripts/setup.sh installs it)")
        pytest.fail(f"{backend} tests need {need}: {exc}", pytrace=False)


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


def requires(service, need: str) -> None:
    """Skips a test whose layer does not exist in this host's bubblewrap sandboxes (running it could hurt
    the host, or could only fail)."""
    gap = bwrap_gap(service, need)
    if gap:
        pytest.skip(f"cannot hold: {gap}")


def probe(tests: str, timeout_s: float = 5, **extra) -> dict:
    """A python_assert spec whose tests run ``tests`` (dedented) inside the sandbox."""
    return {"kind": "python_assert", "tests": textwrap.dedent(tests), "timeout_s": timeout_s, **extra}


def brief(r: dict) -> str:
    """A result's verdict, detail and stderr's tail, for an assertion's message."""
    return f"{r['verdict']}: {r['detail']!r} (stderr {r['stderr_tail'][-300:]!r})"
