"""Shared fixtures: a real verifier service on a loopback port, backed by a real sandbox.

Sandbox tests never mock the sandbox. The ``service`` fixture runs on Docker;
a test or module marked ``backends("docker", "bwrap")`` runs once per backend
(and gets the ``docker`` or ``bwrap`` marker for each). When a backend is not
there they fail with the message that says how to get it: both are part of the
default run. Every sandbox a test starts must be gone when it ends.

Only pytest hooks and fixtures live here; the helpers they use are in ``tests/support/`` (tests import them
from there, never from this file).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from support.sandboxes import live_sandboxes, remove_sandboxes, stray_sandboxes
from support.service import TEST_CONFIG, RunningService, check_backend


def pytest_generate_tests(metafunc):
    """``backends(...)``-marked tests that use a service run once per backend named."""
    marker = metafunc.definition.get_closest_marker("backends")
    if marker is not None and "sandbox_backend" in metafunc.fixturenames:
        metafunc.parametrize("sandbox_backend", marker.args, indirect=True, scope="session")


def pytest_collection_modifyitems(items):
    """Each backend's tests carry its marker (``-m bwrap``; the leftover checks key on it), also a test that uses a
    sandbox through a fixture without saying so (``service`` unparametrised is Docker's: ``-m "not docker"`` must
    leave it out)."""
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("sandbox_backend")
        marker = item.get_closest_marker("backends")
        if backend is None and marker is not None and len(marker.args) == 1:
            backend = marker.args[0]
        names = set(getattr(item, "fixturenames", ()))
        if backend is None and names & {"sandbox_backend", "docker_ready", "langs_service"}:
            backend = "docker"
        if backend is not None:
            item.add_marker(backend)


@pytest.fixture(scope="session")
def sandbox_backend(request) -> str:
    return getattr(request, "param", "docker")


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


@pytest.fixture
def pointed(service, monkeypatch):
    """The trainer's adapters' connection (trainer/adapters/remote.py) pointed at the test service."""
    from trainer.adapters import remote

    monkeypatch.setenv(remote.ADDRESS_ENV, service.address)
    monkeypatch.delenv(remote.CATALOG_ENV, raising=False)
    remote.reset()
    yield service
    remote.reset()


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
            remove_sandboxes(backend, left)
        assert not left, f"{backend} sandboxes left behind: {left}"


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture(scope="module")
def langs_service(docker_ready):
    """A Docker service for the languages' tests (tests/sandbox/test_languages*.py), one per module (gone before the
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
