"""Serving the verifier in tests, benchmarks and examples (as starlette and flask ship a test client).

- ``free_port()``: a loopback TCP port nothing listens on right now.
- ``ServedProcess``: ``verifier-service serve`` as a subprocess on a fixed loopback port (kept across
  restarts), its output in a log file; ``start`` waits until it reports SERVING, ``stop`` is a graceful
  SIGTERM (the service drains and removes its sandboxes), ``kill`` a SIGKILL, ``log_tail`` the last lines.
- ``InProcessService``: a ``VerifierApp`` served from its own event loop in a background thread of this
  process (for tests that reach into the app: its sandbox, its engine); ``http_url`` is its HTTP front door
  when the config sets ``http_port``.

Nothing here is used by the service itself; it sits above every other layer.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from verifier_service.client.loop import LoopThread
from verifier_service.config import ServiceConfig

CLI_MODULE = "verifier_service.tools.cli"  # what ``python -m`` runs for the ``verifier-service`` command


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picked it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serving(address: str, timeout_s: float = 2.0) -> bool:
    """Whether the service at ``address`` answers its health check with SERVING."""
    from grpc_health.v1 import health_pb2

    from verifier_service.client import health_status

    return health_status(address, timeout_s) == health_pb2.HealthCheckResponse.SERVING


class ServedProcess:
    """``verifier-service serve`` in its own process, on ``host:port`` (a free loopback port by default).

    ``args`` are more ``serve`` flags; ``env`` is added to this process's environment; ``log_path`` receives
    the service's stdout and stderr (a temporary file by default); ``module`` is what ``python -m`` runs
    (another checkout's entry point, for benchmarks that compare revisions through ``cwd`` and ``env``);
    ``new_session`` starts it in a session of its own (a service meant to outlive its starter).
    """

    def __init__(self, *args: str, host: str = "127.0.0.1", port: int | None = None,
                 env: dict[str, str] | None = None, cwd: str | Path | None = None,
                 log_path: str | Path | None = None, module: str = CLI_MODULE, python: str = sys.executable,
                 new_session: bool = False):
        self.host = host
        self.port = port or free_port(host)
        self.args = tuple(args)
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.module = module
        self.python = python
        self.new_session = new_session
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="verifier-service-", suffix=".log")
            os.close(fd)
            log_path = name
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    def command(self) -> list[str]:
        return [self.python, "-m", self.module, "serve", "--host", self.host, "--port", str(self.port), *self.args]

    def start(self, timeout: float = 90.0, wait: bool = True) -> ServedProcess:
        """Starts the process; with ``wait``, returns once it is SERVING (``RuntimeError`` with the log tail
        when it exits or does not get there within ``timeout`` seconds, the process stopped)."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                         start_new_session=self.new_session)
        if wait:
            try:
                self.wait_serving(timeout)
            except BaseException:  # never left running when it did not start: nothing stops it later
                self.stop(timeout=10)
                raise
        return self

    def wait_serving(self, timeout: float = 90.0) -> None:
        assert self.proc is not None, "not started"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service at {self.address} exited with {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            if serving(self.address):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the service at {self.address} did not become SERVING in {timeout}s:\n{self.log_tail()}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait (SIGKILL after ``timeout``); the exit status, None when never started."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: no graceful stop."""
        assert self.proc is not None, "not started"
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> ServedProcess:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class InProcessService:
    """A ``VerifierApp`` served from its own event loop in a background thread; ``address`` is where it
    listens (the config's port, 0 for a free one). ``call`` runs a coroutine on its loop; ``close`` stops it."""

    def __init__(self, config: ServiceConfig):
        from verifier_service.serve import VerifierApp

        self.bridge = LoopThread("rlvr-in-process")
        self.loop = self.bridge.loop
        self.app = VerifierApp(config)
        try:
            port = self.call(self.app.start())
        except BaseException:
            self._stop_loop()
            raise
        host = "127.0.0.1" if config.host in ("", "0.0.0.0", "::", "[::]") else config.host
        self.address = f"{host}:{port}"
        # the HTTP front door (config http_port), e.g. http://127.0.0.1:8080
        self.http_url = f"http://{host}:{self.app.http_port}" if self.app.http_port else None

    def call(self, coro, timeout: float = 120):
        return self.bridge.call(coro, timeout)

    def close(self, grace: float = 1.0) -> None:
        self.call(self.app.stop(grace=grace))
        self._stop_loop()

    def _stop_loop(self) -> None:
        self.bridge.close()

    def __enter__(self) -> InProcessService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_all_serving(services: Sequence[ServedProcess], timeout: float = 120.0) -> None:
    """Waits for several services started with ``start(wait=False)`` (they start in parallel)."""
    deadline = time.monotonic() + timeout
    for service in services:
        service.wait_serving(max(1.0, deadline - time.monotonic()))
