"""The Docker sandbox backend: locked-down containers, warm or one per job.

Every container: no network, read-only root, a tmpfs /tmp, uid 10001, every
capability dropped, no-new-privileges, memory / pids / CPU limits, and the
runner's per-step limits (time, file size, output, process-tree kill) inside.
Jobs travel over the container's stdin, so test inputs never touch the image
or the host's disk; step results stream back over stdout, one JSON line each.

Two modes (``sandbox_pool``):
- warm pool (default): ``max_concurrency`` containers run the runner in
  ``--serve`` mode, one job at a time each. After a job the runner kills every
  process and scrubs the scratch dirs; a container is replaced (in the
  background, so callers do not wait for a start) after ``pool_max_jobs`` jobs,
  ``pool_max_age_s`` seconds, or any anomaly: a limit hit, a stopped or
  cancelled job, leftovers it could not scrub.
- one fresh container per job: slower (a container start per check), kept for
  engines where a long-lived container is not wanted and as a benchmark baseline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier_service.config import ServiceConfig
from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox.base import Job, SandboxRun, StepResult, queue_clock

log = logging.getLogger(__name__)

LABEL = "rlvr.verifier.sandbox"
EXPIRES_LABEL = "rlvr.verifier.expires"  # unix time after which the container has no business running
ORPHAN_GRACE_S = 60.0
SANDBOX_USER = "10001:10001"
HOST_SLACK_S = 15.0  # container start + teardown on top of the steps' own limits
FIX_DOCKER = ("start a Docker engine (as root: `dockerd &`, or run scripts/setup.sh, which installs "
              "docker.io and starts it) or point DOCKER_HOST / --docker-url at one")
FIX_IMAGE = "build it with `sandboxes/build.sh` (or `verifier-service build-sandbox`)"


def _docker():
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise SandboxUnavailable("the 'docker' Python package is missing: pip install docker") from exc
    return docker


class _Stream:
    """The multiplexed stdout/stderr of an attached container, read as runner events."""

    def __init__(self, raw: socket.socket):
        self.raw = raw
        self.buffer = b""
        self.line = b""
        self.stderr = bytearray()

    def send(self, data: bytes, deadline: float) -> None:
        self.raw.settimeout(max(0.1, deadline - time.monotonic()))
        self.raw.sendall(data)

    def events(self, deadline: float, cancel: threading.Event):
        """Yields runner events; returns on EOF; raises TimeoutError at the deadline, InterruptedError on cancel."""
        while True:
            while b"\n" in self.line:
                line, self.line = self.line.split(b"\n", 1)
                try:
                    yield json.loads(line)
                except ValueError:
                    raise ValueError(f"unreadable runner output: {line[:200]!r}") from None
            if cancel.is_set():
                raise InterruptedError
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self.raw.settimeout(min(remaining, 0.5))
            try:
                chunk = self.raw.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            self.buffer += chunk
            while len(self.buffer) >= 8:
                stream, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
                if len(self.buffer) < 8 + size:
                    break
                data, self.buffer = self.buffer[8:8 + size], self.buffer[8 + size:]
                if stream == 2:
                    self.stderr += data
                    del self.stderr[:-4096]
                else:
                    self.line += data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.raw.close()


@dataclass
class _Container:
    id: str
    stream: _Stream
    started: float = field(default_factory=time.monotonic)
    jobs: int = 0


class DockerSandbox:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.pooled = config.sandbox_pool
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._api_version: str | None = None
        self._idle: asyncio.Queue[_Container] | None = None
        self._live: set[str] = set()
        self._replacing: set[asyncio.Task] = set()
        self._closed = False
        self.pool_error: str | None = None
        self.image_id: str | None = None  # the sandbox image's digest, once checked
        self.running = 0
        self.recycled = 0
        self._extra_labels = dict(item.strip().split("=", 1) for item in config.sandbox_labels.split(",")
                                  if item.strip())

    # ---- engine access ---------------------------------------------------

    def _client(self):
        docker = _docker()
        base_url = self.config.docker_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            api = docker.APIClient(base_url=base_url, version=self._api_version or "auto", timeout=60)
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
            self.image_id = api.inspect_image(self.config.sandbox_image)["Id"]
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(f"sandbox image {self.config.sandbox_image!r} is not built; {FIX_IMAGE}") from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise SandboxUnavailable(f"Docker engine is not reachable ({exc}); {FIX_DOCKER}") from exc
        finally:
            api.close()

    async def check(self) -> None:
        await asyncio.to_thread(self.check_blocking)

    def remove_orphans_blocking(self) -> int:
        """Removes sandbox containers past their expiry: left by a process that died.
        Live containers (of this or another replica on the engine) have not expired."""
        api = self._client()
        removed = 0
        try:
            for c in api.containers(all=True, filters={"label": LABEL}):
                try:
                    expires = float(c.get("Labels", {}).get(EXPIRES_LABEL, "0"))
                except ValueError:
                    expires = 0.0
                if expires + ORPHAN_GRACE_S < time.time() and c["Id"] not in self._live:
                    self._remove(c["Id"])
                    removed += 1
            return removed
        finally:
            api.close()

    def _remove(self, cid: str | None) -> None:
        if not cid:
            return
        self._live.discard(cid)
        try:
            api = self._client()
            try:
                api.remove_container(cid, force=True)
            finally:
                api.close()
        except Exception as exc:  # noqa: BLE001 - best effort; the expiry label lets a later sweep find it
            if "No such container" not in str(exc) and "already in progress" not in str(exc):
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

    def _start_container(self, lifetime_s: float, serve: bool) -> _Container:
        """Creates, attaches and starts one container (blocking)."""
        docker = _docker()
        api = self._client()
        cid = None
        try:
            cid = api.create_container(
                self.config.sandbox_image,
                command=["--serve"] if serve else None,
                name=f"rlvr-sbx-{uuid.uuid4().hex[:16]}",
                stdin_open=True,
                network_disabled=True,
                user=SANDBOX_USER,
                working_dir="/tmp",
                labels={**self._extra_labels, LABEL: "1", EXPIRES_LABEL: f"{time.time() + lifetime_s:.0f}"},
                host_config=self._host_config(api),
            )["Id"]
            self._live.add(cid)
            sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            api.start(cid)
            return _Container(cid, _Stream(getattr(sock, "_sock", sock)))
        except docker.errors.ImageNotFound as exc:
            self._remove(cid)
            raise SandboxUnavailable(f"sandbox image {self.config.sandbox_image!r} is not built; {FIX_IMAGE}") from exc
        except (docker.errors.DockerException, OSError) as exc:
            self._remove(cid)
            raise SandboxUnavailable(f"could not start a sandbox container: {exc}") from exc
        finally:
            api.close()

    def _discard(self, container: _Container) -> None:
        container.stream.close()
        self._remove(container.id)

    # ---- the warm pool ---------------------------------------------------

    async def start(self) -> None:
        """Fills the warm pool (no-op in one-container-per-job mode)."""
        if not self.pooled or self._idle is not None:
            return
        self._idle = asyncio.Queue()
        for _ in range(self.config.max_concurrency):
            self._replace()

    def _replace(self) -> None:
        """Starts one container in the background and adds it to the idle queue when ready."""
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self._add_container())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _add_container(self) -> None:
        delay = 0.5
        while not self._closed:
            try:
                container = await asyncio.to_thread(
                    self._start_container, self.config.pool_max_age_s + HOST_SLACK_S + self.config.max_timeout_s,
                    True)
            except SandboxUnavailable as exc:
                self.pool_error = str(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            self.pool_error = None
            if self._closed:
                await asyncio.to_thread(self._discard, container)
                return
            assert self._idle is not None
            self._idle.put_nowait(container)
            return

    async def _acquire(self) -> _Container:
        assert self._idle is not None
        while True:
            try:
                container = await asyncio.wait_for(self._idle.get(), timeout=2.0)
            except asyncio.TimeoutError:
                if self.pool_error:
                    raise SandboxUnavailable(self.pool_error) from None
                continue
            if time.monotonic() - container.started > self.config.pool_max_age_s:
                self._retire(container)
                continue
            return container

    def _retire(self, container: _Container) -> None:
        self.recycled += 1
        threading.Thread(target=self._discard, args=(container,), daemon=True).start()
        self._replace()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._replacing):
            task.cancel()
        containers = []
        if self._idle is not None:
            while not self._idle.empty():
                containers.append(self._idle.get_nowait())
        await asyncio.gather(*(asyncio.to_thread(self._discard, c) for c in containers))
        for cid in list(self._live):  # containers of jobs still running
            await asyncio.to_thread(self._remove, cid)

    # ---- running a job ----------------------------------------------------

    async def run(self, job: Job, on_step: Callable[[StepResult], bool] | None = None,
                  deadline_s: float | None = None) -> SandboxRun:
        """Runs ``job`` in a sandbox. ``on_step`` sees each step result as it
        arrives and may return False to stop the job there (fast-fail).
        Cancelling the awaiting task removes the job's container."""
        queued = time.monotonic()
        if self.pooled:
            await self.start()
            for attempt in range(2):
                container = await self._acquire()
                run = await self._run_pooled(container, job, on_step, deadline_s)
                # A warm container that died while idle fails before the job says anything: the
                # job ran nowhere, so it goes once more to a fresh container instead of INFRA_ERROR.
                if not (run.runner_error and not run.steps and not run.oom_killed) or attempt:
                    break
                log.warning("sandbox container %s was gone (%s); running the job on another", container.id[:12],
                            run.runner_error)
            run.queue_s = time.monotonic() - queued - run.run_s
        else:
            async with self._slots:
                run = await self._run_fresh(job, on_step, deadline_s, queued)
        clock = queue_clock.get()
        if clock is not None:
            clock[0] += run.queue_s
        return run

    def _budget(self, job: Job, deadline_s: float | None) -> float:
        budget = job.total_timeout_s + HOST_SLACK_S
        return min(budget, max(deadline_s, 1.0)) if deadline_s is not None else budget

    def _payload(self, job: Job) -> bytes:
        c = self.config
        return json.dumps(job.to_runner_json(file_size_limit=c.file_size_mb * 1024 * 1024,
                                             open_files=c.open_files)).encode() + b"\n"

    async def _run_pooled(self, container: _Container, job: Job, on_step, deadline_s) -> SandboxRun:
        cancel = threading.Event()
        self.running += 1
        started = time.monotonic()
        try:
            run = await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(
                self._exchange, container.stream, self._payload(job), on_step,
                started + self._budget(job, deadline_s), cancel)))
        except asyncio.CancelledError:
            cancel.set()
            self.recycled += 1
            await asyncio.to_thread(self._discard, container)
            self._replace()
            raise
        finally:
            self.running -= 1
        container.jobs += 1
        run.run_s = time.monotonic() - started
        clean = run.completed and not run.dirty and not any(
            s.timed_out or s.output_limited or s.signal for s in run.steps)
        if clean and container.jobs < self.config.pool_max_jobs:
            assert self._idle is not None
            self._idle.put_nowait(container)
        else:
            if run.runner_error and not run.steps:
                # The container died under us (OOM-killed runner, engine trouble): say which.
                run.oom_killed = await asyncio.to_thread(self._oom_killed, container.id)
            self._retire(container)
        return run

    def _oom_killed(self, cid: str) -> bool:
        try:
            api = self._client()
            try:
                return bool(api.inspect_container(cid)["State"].get("OOMKilled"))
            finally:
                api.close()
        except Exception:  # noqa: BLE001 - only a diagnosis
            return False

    async def _run_fresh(self, job: Job, on_step, deadline_s, queued: float) -> SandboxRun:
        queue_s = time.monotonic() - queued
        self.running += 1
        cancel = threading.Event()
        holder: dict[str, _Container] = {}
        try:
            run = await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(
                self._run_fresh_blocking, job, on_step, deadline_s, cancel, holder)))
        except asyncio.CancelledError:
            cancel.set()
            if "container" in holder:
                await asyncio.to_thread(self._discard, holder["container"])
            raise
        finally:
            self.running -= 1
        run.queue_s = queue_s
        return run

    def _run_fresh_blocking(self, job: Job, on_step, deadline_s, cancel, holder) -> SandboxRun:
        started = time.monotonic()
        budget = self._budget(job, deadline_s)
        container = self._start_container(budget, serve=False)
        holder["container"] = container
        try:
            run = self._exchange(container.stream, self._payload(job), on_step, started + budget, cancel,
                                 close_stdin=True)
            if not run.completed and not run.stopped_early:
                run.oom_killed = self._oom_killed(container.id)
            run.run_s = time.monotonic() - started
            return run
        finally:
            self._discard(container)

    @staticmethod
    def _exchange(stream: _Stream, payload: bytes, on_step, deadline: float, cancel: threading.Event,
                  close_stdin: bool = False) -> SandboxRun:
        """Sends one job and reads its events up to the runner's "done"."""
        run = SandboxRun(steps=[], completed=False)
        try:
            stream.send(payload, deadline)
            if close_stdin:
                stream.raw.shutdown(socket.SHUT_WR)
        except OSError as exc:
            run.runner_error = f"could not send the job to the sandbox: {exc}"
            return run
        try:
            for event in stream.events(deadline, cancel):
                if event.get("event") == "done":
                    run.completed = True
                    run.dirty = bool(event.get("dirty"))
                    return run
                step = StepResult.from_runner(event)
                run.steps.append(step)
                if on_step is not None and on_step(step) is False:
                    run.stopped_early = True
                    return run
        except TimeoutError:
            run.host_timeout = True
            return run
        except InterruptedError:
            run.stopped_early = True
            return run
        except (OSError, ValueError) as exc:
            run.runner_error = f"lost the sandbox stream: {exc}"
            return run
        detail = bytes(stream.stderr).decode("utf-8", "replace")[-1000:]
        run.runner_error = "the sandbox runner ended without finishing the job" + (f": {detail}" if detail else "")
        return run
