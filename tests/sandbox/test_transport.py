"""How jobs reach a warm container's runner: its own Unix socket (the default with a local engine and runc), or
the container's attach stream through the engine (gVisor, remote engines, ``sandbox_transport=attach``).

The socket is the service's: the runner connects before its first job, the service takes only a peer that is the
container's init process, then removes the socket, so nothing in the sandbox can reach it afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox import docker as docker_backend
from verifier_service.sandbox.base import Job, Step
from verifier_service.sandbox.docker import DockerSandbox
from verifier_service.sandbox.protocol import DirectStream, SocketStream, exchange

from support.sandboxes import running_sandboxes
from support.service import TEST_CONFIG, TEST_RUN_LABEL

SPEC = {"kind": "python_assert", "extract": "raw", "tests": "assert look() == 'nothing to reach'"}
# From inside the sandbox: the job socket's directory, and every socket that could be the job stream.
LOOK = '''
import os, socket

def look():
    found = []
    try:
        found += os.listdir("/run/rlvr")
    except OSError:
        pass
    for name in os.listdir("/proc/1/fd") if os.access("/proc/1/fd", os.R_OK) else []:
        found.append("runner fd " + name)
    for path in ["/run/rlvr/" + n for n in found if n.endswith(".sock")]:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            found.append("connected to " + path)
        except OSError:
            pass
    return ", ".join(found) or "nothing to reach"
'''


def container_args(label: str) -> list[tuple[list[str], list[str]]]:
    out = []
    for cid in running_sandboxes(label):
        shown = subprocess.run(["docker", "inspect", "-f", "{{json .Args}} {{json .HostConfig.Binds}}", cid],
                               capture_output=True, text=True, timeout=30, check=True).stdout.split(" ", 1)
        out.append((json.loads(shown[0]), json.loads(shown[1]) or []))
    return out


@pytest.mark.backends("docker")
def test_warm_containers_take_their_jobs_over_a_socket_nothing_inside_can_reach(make_service):
    mine = f"rlvr.transport={os.urandom(4).hex()}"
    service = make_service(max_concurrency=2, sandbox_labels=f"{TEST_RUN_LABEL},{mine}")
    result = service.verify(LOOK, SPEC)
    assert result["verdict"] == "PASSED", result
    shown = container_args(mine)
    assert len(shown) == 2
    for args, binds in shown:
        assert args[-3:-1] == ["--serve", "--connect"] and args[-1].startswith("/run/rlvr/"), args
        (bind,) = binds
        source, target, mode = bind.split(":")
        assert (target, mode) == ("/run/rlvr", "ro")
        assert not os.path.exists(source), "the socket's directory outlived the runner's connection"
    idle = list(service.app.sandbox._idle._queue)  # (read only: the pool's idle sandboxes, the one used included)
    assert len(idle) == 2 and all(isinstance(i.stream, DirectStream) for i in idle)


@pytest.mark.backends("docker")
def test_the_attach_transport_still_runs_jobs(make_service):
    mine = f"rlvr.transport={os.urandom(4).hex()}"
    service = make_service(max_concurrency=1, sandbox_transport="attach", sandbox_labels=f"{TEST_RUN_LABEL},{mine}")
    result = service.verify("def add(a, b):\n    return a + b\n",
                            {"kind": "python_assert", "extract": "raw", "tests": "assert add(1, 2) == 3"})
    assert result["verdict"] == "PASSED", result
    ((args, binds),) = container_args(mine)
    assert "--connect" not in args and not binds


def _run_one_job(sandbox: DockerSandbox, instance) -> list[str]:
    payload, token = sandbox._payload(Job(steps=[Step("hello", ["python3", "-c", "print('hello')"], 10.0)]))
    run = exchange(instance.stream, payload, token, None, time.monotonic() + 60, threading.Event())
    assert run.completed, run.runner_error
    return [s.stdout for s in run.steps]


def test_a_runner_that_cannot_reach_its_socket_falls_back_to_the_attach_stream(docker_ready):
    # As when the engine runs elsewhere (or the service in a container of its own): the path the runner is told
    # does not exist where it runs. It says so on its stdout, and jobs go over the attach stream from then on.
    sandbox = DockerSandbox(replace(TEST_CONFIG, sandbox_transport="auto"))
    sandbox.check_blocking()
    real_listen = sandbox._listen

    def unreachable():
        listener, directory, name = real_listen()
        os.unlink(os.path.join(directory, name))
        return listener, directory, name

    sandbox._listen = unreachable
    instance = sandbox._start_instance(120, True)
    try:
        assert isinstance(instance.stream, SocketStream)
        assert sandbox._socket_failed and not sandbox.socket_transport()
        assert _run_one_job(sandbox, instance) == ["hello\n"]
    finally:
        sandbox._discard(instance)
    instance = sandbox._start_instance(120, True)  # the next one does not try the socket again
    try:
        assert isinstance(instance.stream, SocketStream)
        assert _run_one_job(sandbox, instance) == ["hello\n"]
    finally:
        sandbox._discard(instance)


def test_a_warm_runner_takes_jobs_over_its_socket(docker_ready):
    sandbox = DockerSandbox(replace(TEST_CONFIG, sandbox_transport="socket"))
    sandbox.check_blocking()
    instance = sandbox._start_instance(120, True)
    try:
        assert isinstance(instance.stream, DirectStream)
        assert _run_one_job(sandbox, instance) == ["hello\n"]
        assert _run_one_job(sandbox, instance) == ["hello\n"]
    finally:
        sandbox._discard(instance)


# ---- accepting the runner's connection (no Docker needed) --------------------------------------------------


def _connector(path: str) -> subprocess.Popen:
    """A process that connects to ``path`` and says hello: it stands for the container's init process."""
    code = ("import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
            "s.sendall(b'hi')\ntime.sleep(30)\n")
    return subprocess.Popen([sys.executable, "-c", code, path])


def test_only_the_containers_init_process_is_accepted():
    sandbox = DockerSandbox(TEST_CONFIG)
    listener, directory, name = sandbox._listen()
    path = os.path.join(directory, name)
    assert oct(os.stat(directory).st_mode & 0o777) == "0o711"
    attach, attach_peer = socket.socketpair()
    intruder = socket.socket(socket.AF_UNIX)
    intruder.connect(path)  # first in the queue, but not the container's init process
    runner = _connector(path)
    try:
        conn = sandbox._accept(listener, runner.pid, attach)
        assert conn is not None and conn.recv(2) == b"hi"
        intruder.settimeout(5)
        assert intruder.recv(1) == b""  # closed by the service
        conn.close()
    finally:
        runner.kill()
        runner.wait()
        for s in (listener, attach, attach_peer, intruder):
            s.close()
        os.unlink(path)
        os.rmdir(directory)


def test_a_runner_that_says_it_cannot_connect_or_never_comes(monkeypatch):
    sandbox = DockerSandbox(TEST_CONFIG)
    listener, directory, name = sandbox._listen()
    attach, attach_peer = socket.socketpair()
    try:
        # (the attach stream frames each write with an 8-byte header)
        line = b'{"event": "transport", "socket": false, "error": "No such file"}\n'
        attach_peer.sendall(b"\x01\0\0\0" + len(line).to_bytes(4, "big") + line)
        assert sandbox._accept(listener, 1, attach) is None
        gone, gone_peer = socket.socketpair()
        gone_peer.sendall(b"\x02\0\0\0\0\0\0\x10Traceback ...\n")
        gone_peer.close()
        with pytest.raises(SandboxUnavailable, match=r"ended before it connected.*Traceback"):
            sandbox._accept(listener, 1, gone)
        gone.close()
        quiet, quiet_peer = socket.socketpair()
        monkeypatch.setattr(docker_backend, "CONNECT_TIMEOUT_S", 0.3)
        with pytest.raises(SandboxUnavailable, match="did not connect"):
            sandbox._accept(listener, 1, quiet)
        quiet.close()
        quiet_peer.close()
    finally:
        for s in (listener, attach, attach_peer):
            s.close()
        os.unlink(os.path.join(directory, name))
        os.rmdir(directory)
