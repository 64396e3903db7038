"""The Docker sandbox backend: one fresh, locked-down container per job.

Every job gets its own container (so nothing one job does is visible to the
next): no network, read-only root, a tmpfs /tmp, uid 10001, every capability
dropped, no-new-privileges, memory / pids / CPU limits, and the runner's
per-step limits (time, file size, output, process-tree kill) inside. The job
travels over the container's stdin, so test inputs never touch the image or
the host's disk; step results stream back over stdout, one JSON line each.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable

from verifier_service.config import ServiceConfig
from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox.base import Job, SandboxRun, StepResult, queue_clock

log = logging.getLogger(__name__)

LABEL = "rlvr.verifier.sandbox"
EXPIRES_LABEL = "rlvr.verifier.expires"  # unix time after which the container's job is over
ORPHAN_GRACE_S = 60.0
SANDBOX_USER = "10001:10001"
HOST_SLACK_S = 15.0  # container start + teardown on top of the steps' own limits
FIX_DOCKER = ("start a Docker engine (as root: `dockerd &`, or run scripts/setup.sh, which installs "
              "docker.io and starts it) or point DOCKER_HOST / --docker-url at one")


def _docker():
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise SandboxUnavailable("the 'docker' Python package is missing: pip install docker") from exc
    return docker


class DockerSandbox:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._api_version: str | None = None
        self.running = 0

    # ---- engine access ---------------------------------------------------

    def _client(self):
        docker = _docker()
        kwargs = {"version": self._api_version or "auto", "timeout": 60}
        if self.config.docker_url:
            kwargs["base_url"] = self.config.docker_url
        else:
            import os
            kwargs["base_url"] = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            api = docker.APIClient(**kwargs)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(f"Docker engine is not reachable ({exc}); {FIX_DOCKER}") from exc
        self._api_version = api.api_version
        return api

    def check_blocking(self) -> None:
        """Raises SandboxUnavailable (saying how to fix it) unless jobs can run."""
        docker = _docker()
        api = self._client()
        try:
            api.ping()
            api.inspect_image(self.config.sandbox_image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"sandbox image {self.config.sandbox_image!r} is not built; build it with "
                "`sandboxes/build.sh` (or `verifier-service build-sandbox`)") from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise SandboxUnavailable(f"Docker engine is not reachable ({exc}); {FIX_DOCKER}") from exc
        finally:
            api.close()

    async def check(self) -> None:
        await asyncio.to_thread(self.check_blocking)

    def remove_orphans_blocking(self) -> int:
        """Removes sandbox containers whose job's time is long over: left by a
        process that died. Containers of live replicas sharing the engine are
        younger than their expiry label and are left alone."""
        api = self._client()
        removed = 0
        try:
            for c in api.containers(all=True, filters={"label": LABEL}):
                try:
                    expires = float(c.get("Labels", {}).get(EXPIRES_LABEL, "0"))
                except ValueError:
                    expires = 0.0
                if expires + ORPHAN_GRACE_S < time.time():
                    self._remove(c["Id"])
                    removed += 1
            return removed
        finally:
            api.close()

    # ---- running a job ----------------------------------------------------

    async def run(self, job: Job, on_step: Callable[[StepResult], bool] | None = None,
                  deadline_s: float | None = None) -> SandboxRun:
        """Runs ``job`` in a fresh container. ``on_step`` sees each step result
        as it arrives and may return False to stop the job there (fast-fail).
        Cancelling the awaiting task removes the container."""
        queued = time.monotonic()
        async with self._slots:
            queue_s = time.monotonic() - queued
            clock = queue_clock.get()
            if clock is not None:
                clock[0] += queue_s
            self.running += 1
            cancel = threading.Event()
            holder: dict[str, str] = {}
            try:
                run = await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(
                    self._run_blocking, job, on_step, deadline_s, cancel, holder)))
            except asyncio.CancelledError:
                cancel.set()
                await asyncio.to_thread(self._remove, holder.get("id"))
                raise
            finally:
                self.running -= 1
        run.queue_s = queue_s
        return run

    def _remove(self, cid: str | None) -> None:
        if not cid:
            return
        try:
            api = self._client()
            try:
                api.remove_container(cid, force=True)
            finally:
                api.close()
        except Exception as exc:  # noqa: BLE001 - best effort; the label lets a later sweep find it
            if "No such container" not in str(exc) and "is already in progress" not in str(exc):
                log.warning("could not remove sandbox container %s: %s", cid[:12], exc)

    def _host_config(self, api):
        c = self.config
        kwargs = dict(
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={c.tmpfs_mb}m,mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=f"{c.memory_mb}m",
            memswap_limit=f"{c.memory_mb}m",
            pids_limit=c.pids_limit,
            nano_cpus=int(c.cpus * 1e9),
            ulimits=[_docker().types.Ulimit(name="nofile", soft=c.open_files, hard=c.open_files)],
            log_config={"type": "json-file", "config": {"max-size": "1m", "max-file": "1"}},
            ipc_mode="private",
        )
        if c.sandbox_runtime:
            kwargs["runtime"] = c.sandbox_runtime
        return api.create_host_config(**kwargs)

    def _run_blocking(self, job: Job, on_step, deadline_s, cancel: threading.Event, holder: dict) -> SandboxRun:
        docker = _docker()
        c = self.config
        started = time.monotonic()
        budget = job.total_timeout_s + HOST_SLACK_S
        if deadline_s is not None:
            budget = min(budget, max(deadline_s, 1.0))
        payload = json.dumps(job.to_runner_json(
            file_size_limit=c.file_size_mb * 1024 * 1024, open_files=c.open_files)).encode()
        api = self._client()
        cid = None
        try:
            try:
                cid = api.create_container(
                    c.sandbox_image,
                    name=f"rlvr-sbx-{uuid.uuid4().hex[:16]}",
                    stdin_open=True,
                    network_disabled=True,
                    user=SANDBOX_USER,
                    working_dir="/tmp",
                    labels={LABEL: "1", EXPIRES_LABEL: f"{time.time() + budget:.0f}"},
                    host_config=self._host_config(api),
                )["Id"]
                holder["id"] = cid
                if cancel.is_set():
                    raise asyncio.CancelledError
                sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
                api.start(cid)
            except docker.errors.ImageNotFound as exc:
                raise SandboxUnavailable(
                    f"sandbox image {c.sandbox_image!r} is not built; build it with `sandboxes/build.sh`") from exc
            except (docker.errors.DockerException, OSError) as exc:
                raise SandboxUnavailable(f"could not start a sandbox container: {exc}") from exc
            raw = getattr(sock, "_sock", sock)
            run = self._exchange(raw, payload, on_step, started + budget, cancel)
            try:
                raw.close()
            except OSError:
                pass
            if not run.completed and not run.stopped_early:
                try:
                    state = api.inspect_container(cid)["State"]
                    run.oom_killed = bool(state.get("OOMKilled"))
                except docker.errors.DockerException:
                    pass
            run.run_s = time.monotonic() - started
            return run
        finally:
            if cid is not None:
                try:
                    api.remove_container(cid, force=True)
                except docker.errors.DockerException as exc:
                    if "No such container" not in str(exc) and "already in progress" not in str(exc):
                        log.warning("could not remove sandbox container %s: %s", cid[:12], exc)
            api.close()

    @staticmethod
    def _exchange(raw: socket.socket, payload: bytes, on_step, deadline: float,
                  cancel: threading.Event) -> SandboxRun:
        """Sends the job, then reads the multiplexed stdout/stderr stream."""
        run = SandboxRun(steps=[], completed=False)
        try:
            raw.settimeout(max(0.1, deadline - time.monotonic()))
            raw.sendall(payload)
            raw.shutdown(socket.SHUT_WR)
        except OSError as exc:
            run.runner_error = f"could not send the job to the sandbox: {exc}"
            return run
        buffer = b""
        stdout_line = b""
        stderr = bytearray()
        while True:
            if cancel.is_set():
                run.stopped_early = True
                return run
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.host_timeout = True
                return run
            raw.settimeout(min(remaining, 1.0))
            try:
                chunk = raw.recv(65536)
            except TimeoutError:
                continue
            except OSError as exc:
                run.runner_error = f"lost the sandbox stream: {exc}"
                return run
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 8:
                stream, size = buffer[0], struct.unpack(">I", buffer[4:8])[0]
                if len(buffer) < 8 + size:
                    break
                data, buffer = buffer[8:8 + size], buffer[8 + size:]
                if stream == 2:
                    stderr += data
                    del stderr[:-4096]
                    continue
                stdout_line += data
                while b"\n" in stdout_line:
                    line, stdout_line = stdout_line.split(b"\n", 1)
                    try:
                        event = json.loads(line)
                    except ValueError:
                        run.runner_error = f"unreadable runner output: {line[:200]!r}"
                        return run
                    if event.get("event") == "done":
                        run.completed = True
                        return run
                    step = StepResult.from_runner(event)
                    run.steps.append(step)
                    if on_step is not None and on_step(step) is False:
                        run.stopped_early = True
                        return run
        run.runner_error = "the sandbox runner ended without finishing the job" + (
            f": {bytes(stderr).decode('utf-8', 'replace')[-1000:]}" if stderr else "")
        return run
