"""The verifier service of the e2e pipeline: started as a child process on 127.0.0.1, found again, stopped.

Processes do not survive between the GPU machine's calls, so every stage that needs the service asks
``ensure_service``: it reuses the one recorded in ``STATE/service.json`` when that still answers its health check,
else starts a new one (``verifier-service serve`` with the configured sandbox backend) and waits until it is
SERVING. The pipeline stops what it started when it exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from verifier_service.testing import CLI_MODULE, ServedProcess, serving

ROOT = Path(__file__).resolve().parents[2]
STATE_FILE = "service.json"


class ServiceError(RuntimeError):
    """The verifier service could not be started or does not answer."""


@dataclass(frozen=True)
class ServiceSettings:
    backend: str = "bwrap"              # bwrap on the GPU machine (no Docker there); docker where it runs
    bwrap_path: str = "bwrap"
    bwrap_python: str = ""              # '' = the service's own interpreter
    port: int = 0                       # 0: a free port
    max_concurrency: int = 16            # warm sandboxes: the GPU machine has 16 cores
    start_timeout_s: float = 120.0

    def serve_args(self, port: int) -> list[str]:
        args = ["serve", "--host", "127.0.0.1", "--port", str(port), "--sandbox-backend", self.backend,
                "--max-concurrency", str(self.max_concurrency)]
        if self.backend == "bwrap":
            args += ["--bwrap-path", self.bwrap_path]
            if self.bwrap_python:
                args += ["--bwrap-python", self.bwrap_python]
        return args


def healthy(address: str, timeout_s: float = 2.0) -> bool:
    return serving(address, timeout_s)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class ServiceHandle:
    """A running service: its address, and the process when this pipeline started it."""

    def __init__(self, address: str, proc: subprocess.Popen | None, log_path: Path | None):
        self.address = address
        self.proc = proc
        self.log_path = log_path

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # the service drains and removes its sandboxes
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def doctor(settings: ServiceSettings, out: Path) -> int:
    """``verifier-service doctor`` for the configured backend, its report written to ``out``."""
    args = settings.serve_args(0)[5:]  # the backend flags, without serve, host and port
    proc = subprocess.run([sys.executable, "-m", CLI_MODULE, "doctor", *args], capture_output=True,
                          text=True, cwd=ROOT, env=_env(), timeout=300, check=False)
    out.write_text(proc.stdout + proc.stderr)
    return proc.returncode


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def ensure_service(state: Path, settings: ServiceSettings) -> ServiceHandle:
    """The recorded service when it still answers, else a new one (SERVING, or ServiceError with its log)."""
    record_path = state / STATE_FILE
    if record_path.exists():
        record = json.loads(record_path.read_text())
        if _alive(record.get("pid", -1)) and healthy(record["address"]):
            return ServiceHandle(record["address"], None, Path(record["log"]))
    log_path = state / "logs" / f"service-{int(time.time())}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    served = ServedProcess(*settings.serve_args(0)[5:], port=settings.port or None, env=_env(), cwd=ROOT,
                           log_path=log_path, new_session=True)
    try:
        served.start(timeout=settings.start_timeout_s)
    except RuntimeError as exc:
        served.stop()
        raise ServiceError(f"the verifier service did not start: {exc}") from exc
    record_path.write_text(json.dumps({"pid": served.pid, "address": served.address, "log": str(log_path),
                                       "backend": settings.backend}))
    return ServiceHandle(served.address, served.proc, log_path)
