"""What every sandbox backend shares: a warm pool of runners, or one fresh sandbox per job.

A backend (Docker containers, bubblewrap processes) says how to start one
sandbox running the runner, how to get rid of it and how to tell whether the
kernel's OOM killer ended it; this class decides when to start, reuse and
replace them. Two modes (``sandbox_pool``):

- warm pool (default): ``max_concurrency`` sandboxes run the runner in
  ``--serve`` mode, one job at a time each. After a job the runner kills every
  process and scrubs the scratch dirs; a sandbox is replaced (in the
  background, so callers do not wait for a start) after ``pool_max_jobs`` jobs,
  ``pool_max_age_s`` seconds, or any anomaly: a cancelled job, a runner that
  died, leftovers it could not scrub. A step that hit a limit is killed and
  scrubbed after like any other, so its sandbox stays. The tenant whose job
  made a sandbox go holds its share until the new one is up.
- one fresh sandbox per job: slower (a sandbox start per check), kept for
  hosts where a long-lived sandbox is not wanted and as a benchmark baseline.

Images: a job names the image family it needs (``Job.image``: "" for the
default image, "langs" for the languages image); a backend maps a family to
what it starts (``family_of``). The warm pool keeps ``max_concurrency``
sandboxes in all, split between the families in proportion to recent demand
(``Demand``): a job whose family has no sandbox, or fewer than its share,
takes the place of an idle sandbox of another family.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verifier_service.config import ServiceConfig
from verifier_service.errors import SandboxUnavailable
from verifier_service.sandbox.artifacts import ArtifactCache
from verifier_service.sandbox.base import Job, SandboxRun, StepResult, step_backstop_s
from verifier_service.sandbox.fair import FairShare
from verifier_service.sandbox.protocol import USAGE_PARTS, RunnerStream, exchange, exchange_async

log = logging.getLogger(__name__)

HOST_SLACK_S = 15.0  # sandbox start + teardown on top of the steps' own limits
# Sandboxes one job may go through when they die under it: two deaths the job may have caused make it
# RUNTIME_ERROR; deaths by kills from outside (an operator, docker kill) do not count, and three sandboxes lost
# that way are an infrastructure fault.
MAX_ATTEMPTS = 3
DEMAND_DECAY = 0.98  # each job weighs the earlier ones down by this much: the split follows about the last 50 jobs
DEMAND_FLOOR = 0.02  # a family below this share of recent jobs keeps no warm sandbox of its own
FAMILY_RETRY_S = 30.0


class Demand:
    """Recent jobs per image family (exponentially decayed), and the warm sandboxes each family should have."""

    def __init__(self) -> None:
        self.weights: dict[str, float] = {}

    def record(self, family: str) -> None:
        for name in self.weights:
            self.weights[name] *= DEMAND_DECAY
        self.weights[family] = self.weights.get(family, 0.0) + 1.0

    def targets(self, total: int) -> dict[str, int]:
        """Sandboxes per family, ``total`` in all: by share of recent jobs (largest remainders), at least one
        for every family above ``DEMAND_FLOOR``, the default family ("") taking what no family claims."""
        weight = sum(self.weights.values())
        if weight <= 0:
            return {"": total}
        shares = {f: w / weight for f, w in self.weights.items() if w / weight >= DEMAND_FLOOR}
        norm = sum(shares.values())
        exact = {f: total * share / norm for f, share in shares.items()}
        counts = {f: max(1, int(x)) for f, x in exact.items()}
        for f in sorted(exact, key=lambda f: exact[f] - int(exact[f]), reverse=True):
            if sum(counts.values()) >= total:
                break
            counts[f] += 1
        while sum(counts.values()) > total and any(c > 1 for c in counts.values()):
            biggest = max((f for f in counts if counts[f] > 1), key=lambda f: counts[f] - exact[f])
            counts[biggest] -= 1
        while sum(counts.values()) > total:  # fewer sandboxes than families: the least asked-for go without
            counts[min((f for f in counts if counts[f]), key=lambda f: exact[f])] -= 1
        counts.setdefault("", 0)
        counts[""] += max(0, total - sum(counts.values()))
        return counts


@dataclass
class Instance:
    """One started sandbox: its runner's stream and what the backend needs to remove it."""

    id: str
    stream: RunnerStream
    family: str = ""  # the image family it runs (Job.image)
    started: float = field(default_factory=time.monotonic)
    jobs: int = 0
    handle: Any = None


class PooledSandbox(abc.ABC):
    """The interface the engine and server use; subclasses implement the abstract methods."""

    backend = ""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self.pooled = config.sandbox_pool
        self._share = FairShare(config.max_concurrency)  # the sandboxes (pooled or fresh), shared between tenants
        self._idle: asyncio.Queue[Instance] | None = None  # the default family's idle sandboxes
        self._queues: dict[str, asyncio.Queue[Instance]] = {}  # idle sandboxes by image family ("" is _idle)
        self._count: dict[str, int] = {}  # sandboxes by family: idle, busy or starting (max_concurrency in all)
        self._waiters: dict[str, int] = {}  # callers waiting for an idle sandbox, by family
        # Why a family's sandboxes did not start (its image is missing), and when: its jobs fail at once with that
        # reason for FAMILY_RETRY_S, then a start is tried again.
        self._family_error: dict[str, tuple[str, float]] = {}
        self.demand = Demand()
        self.artifacts = ArtifactCache()  # compiled programs by source (kinds/stdio.py: one compile per source)
        self._live: set[str] = set()  # ids of the sandboxes this object started and has not removed
        self._replacing: set[asyncio.Task] = set()
        # starts under way in worker threads: a cancelled task does not stop its thread, so close() waits for
        # each and removes what it started (else a service stopped while its pool filled left sandboxes behind)
        self._starting: set[asyncio.Future] = set()
        self._closed = False
        self.pool_error: str | None = None
        self.image_id: str | None = None  # digest of what runs the code, once checked (the result cache's key)
        self.running = 0
        self.recycled = 0
        self.jobs = 0  # jobs a runner answered "done" to, and what they cost inside the sandboxes (the runner's
        self.usage = {part: [0.0, 0] for part in USAGE_PARTS}  # account: CPU seconds, page faults by process)

    def weigh_tenants(self, weight_of: Callable[[str], float]) -> None:
        """Shares the sandboxes by the tenants' weights (``FairShare``): ``weight_of(name)``."""
        self._share.weight_of = weight_of

    # ---- what a backend provides -------------------------------------------

    @abc.abstractmethod
    def check_blocking(self) -> None:
        """Raises SandboxUnavailable (saying how to fix it) unless jobs can run; sets ``image_id``."""

    @abc.abstractmethod
    def remove_orphans_blocking(self) -> int:
        """Removes sandboxes left by a service process that died; returns how many."""

    @abc.abstractmethod
    def isolation(self) -> list[tuple[str, str]]:
        """(layer, what is in force) rows for the startup report; complete after a successful check."""

    @abc.abstractmethod
    def _start_instance(self, lifetime_s: float, serve: bool, family: str = "") -> Instance:
        """Starts one sandbox of image ``family`` running the runner (blocking); SandboxUnavailable when it
        cannot."""

    def family_of(self, image: str) -> str:
        """The image family that runs jobs asking for ``image`` (a backend with one image answers "")."""
        return image

    def image_id_of(self, image: str) -> str | None:
        """The digest of what runs jobs asking for ``image`` (None until it is known): results carry it, and the
        result cache keys on it."""
        family = self.family_of(image)
        return self.image_id if not family else getattr(self, "image_ids", {}).get(family)

    @abc.abstractmethod
    def _discard(self, instance: Instance) -> None:
        """Stops and removes a sandbox with everything in it (blocking, best effort)."""

    @abc.abstractmethod
    def _oom_killed(self, instance: Instance) -> bool:
        """Whether the kernel's OOM killer ended something in the sandbox (asked before it is discarded)."""

    def _killed_outside(self, instance: Instance) -> bool:
        """Whether someone other than this service killed the sandbox (asked before it is discarded; a backend
        that cannot tell says no, so a death counts against the job)."""
        return False

    def _runner_job(self, job: Job) -> dict[str, Any]:
        c = self.config
        return job.to_runner_json(file_size_limit=c.file_size_mb * 1024 * 1024, open_files=c.open_files)

    async def check(self) -> None:
        await asyncio.to_thread(self.check_blocking)

    # ---- the warm pool -----------------------------------------------------

    async def start(self) -> None:
        """Fills the warm pool (no-op in one-sandbox-per-job mode)."""
        if not self.pooled or self._idle is not None:
            return
        self._idle = self._queue("")
        for _ in range(self.config.max_concurrency):
            self._replace("")

    def _queue(self, family: str) -> asyncio.Queue[Instance]:
        queue = self._queues.get(family)
        if queue is None:
            queue = self._queues[family] = asyncio.Queue()
        return queue

    def _needed_family(self) -> str:
        """The family furthest below its share of the pool (the default family when every one has its share)."""
        targets = self.demand.targets(self.config.max_concurrency)
        gaps = {f: t - self._count.get(f, 0) for f, t in targets.items() if f not in self._family_error}
        family = max(gaps, key=lambda f: (gaps[f], self._waiters.get(f, 0), f == ""))
        return family if gaps[family] > 0 or self._waiters.get(family, 0) else ""

    def _replace(self, family: str | None = None) -> asyncio.Task | None:
        """Starts one sandbox (of ``family``, else of the family that most needs one) in the background and adds
        it to its family's idle queue when ready; the task doing it (None once the pool is closed)."""
        if self._closed:
            return None
        family = self._needed_family() if family is None else family
        self._count[family] = self._count.get(family, 0) + 1
        task = asyncio.get_running_loop().create_task(self._add_instance(family))
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)
        return task

    async def _add_instance(self, family: str = "") -> None:
        delay = 0.5
        while not self._closed:
            lifetime = self.config.pool_max_age_s + HOST_SLACK_S + step_backstop_s(self.config.max_timeout_s)
            start = asyncio.ensure_future(asyncio.to_thread(self._start_instance, lifetime, True, family))
            self._starting.add(start)
            try:
                instance = await asyncio.shield(start)  # cancelled here (close): the start stays in _starting
                self._starting.discard(start)
            except SandboxUnavailable as exc:
                self._starting.discard(start)
                if family:
                    # Another family's image is missing: its jobs fail (they say why), the slot goes back to the
                    # default family.
                    self._family_error[family] = (str(exc), time.monotonic())
                    self._count[family] -= 1
                    family = ""
                    self._count[family] = self._count.get(family, 0) + 1
                    continue
                self.pool_error = str(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                continue
            if family:
                self._family_error.pop(family, None)
            else:
                self.pool_error = None
            instance.family = family
            if self._closed:
                await asyncio.to_thread(self._discard, instance)
                return
            self._queue(family).put_nowait(instance)
            return

    def _make_room(self, family: str) -> None:
        """Gives ``family`` the place of an idle sandbox of another family, where ``family`` has fewer sandboxes
        than its share (none at all, or a share of recent jobs it lacks); the idle sandbox of the family most
        above its own share goes."""
        targets = self.demand.targets(self.config.max_concurrency)
        have = self._count.get(family, 0)
        if have >= max(1, targets.get(family, 0)):
            return
        donors = [f for f, q in self._queues.items() if f != family and not q.empty()
                  and (have == 0 or self._count.get(f, 0) > targets.get(f, 0))]
        if not donors:
            return
        donor = max(donors, key=lambda f: self._count.get(f, 0) - targets.get(f, 0))
        self._retire(self._queues[donor].get_nowait(), family)

    async def _acquire(self, family: str = "") -> Instance:
        assert self._idle is not None
        self.demand.record(family)
        queue = self._queue(family)
        while True:
            failed = self._family_error.get(family)
            if failed is not None and not self._count.get(family, 0):
                if time.monotonic() - failed[1] < FAMILY_RETRY_S:
                    raise SandboxUnavailable(failed[0])
                del self._family_error[family]
            if queue.empty():
                self._make_room(family)
            if not queue.empty() and not self._waiters.get(family, 0):
                # No wait, so no turn of the event loop: the job goes out now, before the next item of the batch
                # is analysed (wait_for would hand the loop to every other item first). Only when nobody waits:
                # a sandbox put back goes to the longest waiter.
                instance = queue.get_nowait()
            else:
                self._waiters[family] = self._waiters.get(family, 0) + 1
                try:
                    instance = await asyncio.wait_for(queue.get(), timeout=2.0)
                except asyncio.TimeoutError:
                    if self.pool_error:
                        raise SandboxUnavailable(self.pool_error) from None
                    continue
                finally:
                    self._waiters[family] -= 1
            if time.monotonic() - instance.started > self.config.pool_max_age_s:
                self._retire(instance)
                continue
            return instance

    def _put_back(self, instance: Instance) -> None:
        """An idle sandbox back in its queue; or, when another family has callers waiting and no sandbox at all,
        in their place (a sandbox of theirs is started instead)."""
        starved = [f for f, n in self._waiters.items() if n and f != instance.family and not self._count.get(f, 0)
                   and f not in self._family_error]
        if starved and not self._waiters.get(instance.family, 0):
            self._retire(instance, starved[0])
            return
        self._queue(instance.family).put_nowait(instance)

    def _retire(self, instance: Instance, family: str | None = None) -> asyncio.Task | None:
        """Removes a sandbox (in the background) and starts one in its place: of ``family``, else of the family
        that most needs one; the task starting it."""
        self.recycled += 1
        self._count[instance.family] = self._count.get(instance.family, 1) - 1
        threading.Thread(target=self._discard, args=(instance,), daemon=True).start()
        return self._replace(family)

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._replacing)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # sandboxes still being started when their tasks were cancelled: wait for each, then remove it
        starting = list(self._starting)
        self._starting.clear()
        started = await asyncio.gather(*starting, return_exceptions=True)
        instances = [i for i in started if isinstance(i, Instance)]
        for queue in self._queues.values():
            while not queue.empty():
                instances.append(queue.get_nowait())
        await asyncio.gather(*(asyncio.to_thread(self._discard, i) for i in instances))
        await self._remove_remaining()

    @abc.abstractmethod
    async def _remove_remaining(self) -> None:
        """Removes the sandboxes of jobs still running (the subclass knows them by id)."""

    # ---- running a job -----------------------------------------------------

    async def run(self, job: Job, on_step: Callable[[StepResult], bool] | None = None,
                  deadline_s: float | None = None, tenant: str = "") -> SandboxRun:
        """Runs ``job`` in a sandbox. ``on_step`` sees each step result as it
        arrives and may return False to stop the job there (fast-fail).
        Cancelling the awaiting task removes the job's sandbox. ``tenant``: whose
        job it is; the sandboxes are shared fairly between tenants (``FairShare``).
        A job runs at most ``max_job_s`` in all (its longest step always gets its
        whole limit): past that it stops (``host_timeout``), whatever its cases'
        limits add up to."""
        queued = time.monotonic()
        bound = max(self.config.max_job_s, max((s.timeout_s for s in job.steps), default=0.0) + 1.0)
        deadline_s = bound if deadline_s is None else min(deadline_s, bound)
        await self._share.acquire(tenant)
        replacing: list[asyncio.Task | None] = []
        try:
            return await self._run(job, on_step, deadline_s, queued, replacing)
        finally:
            self._release_after(tenant, replacing)

    def _release_after(self, tenant: str, replacing: list[asyncio.Task | None]) -> None:
        """Gives ``tenant``'s slot back once the sandboxes its job made go (left unclean, killed, cancelled) are
        replaced. A sandbox replaced for its age or job count is nobody's doing: the slot is free at once.
        Starting a sandbox is the host's costliest work: a tenant whose jobs keep causing it waits for it within
        its own share, so its churn never takes another tenant's share. The job's answer does not wait for the
        start."""
        pending = [task for task in replacing if task is not None and not task.done()]
        if not pending:
            self._share.release(tenant)
            return
        started = asyncio.gather(*pending, return_exceptions=True)
        started.add_done_callback(lambda _: self._share.release(tenant))

    async def _run(self, job: Job, on_step, deadline_s: float, queued: float,
                   replacing: list[asyncio.Task | None]) -> SandboxRun:
        if self.pooled:
            await self.start()
            strikes = 0
            family = self.family_of(job.image)
            for attempt in range(MAX_ATTEMPTS):
                instance = await self._acquire(family)
                run = await self._run_pooled(instance, job, on_step, deadline_s, replacing)
                # A warm sandbox that died while idle fails before the job says anything: the
                # job ran nowhere, so it goes once more to a fresh sandbox instead of INFRA_ERROR.
                if not (run.runner_error and not run.steps and not run.oom_killed):
                    break
                strikes += not run.killed_outside  # a kill from outside (docker kill) is not the job's doing
                if strikes >= 2:
                    # A fresh sandbox died under this job as well: the job (the completion) takes sandboxes
                    # down. Its verdict must not be INFRA_ERROR, which a trainer drops without a penalty.
                    run.killed_sandbox = True
                    break
                if attempt + 1 == MAX_ATTEMPTS:
                    break  # sandboxes killed from outside, again and again: an infrastructure fault (INFRA_ERROR)
                log.warning("sandbox %s was gone (%s%s); running the job on another", instance.id[:12],
                            run.runner_error, ", killed from outside" if run.killed_outside else "")
            run.queue_s = time.monotonic() - queued - run.run_s
        else:
            run = await self._run_fresh(job, on_step, deadline_s, queued)
        if run.completed:
            self.jobs += 1
            for part, (cpu, faults) in run.usage.items():
                total = self.usage[part]
                total[0] += cpu
                total[1] += faults
        return run

    def _budget(self, job: Job, deadline_s: float | None) -> float:
        budget = job.backstop_s + HOST_SLACK_S  # the runner's backstop, not the steps' own-time limits
        return min(budget, max(deadline_s, 1.0)) if deadline_s is not None else budget

    def _payload(self, job: Job) -> tuple[bytes, str]:
        """The job's line for the runner, and the token the runner stamps on each of its answers: lines
        without it (written to the runner's stdout by a candidate, where the kernel lets it) are not the runner's."""
        token = secrets.token_hex(16)
        return json.dumps({**self._runner_job(job), "token": token}).encode() + b"\n", token

    async def _run_pooled(self, instance: Instance, job: Job, on_step, deadline_s,
                          replacing: list[asyncio.Task | None]) -> SandboxRun:
        self.running += 1
        started = time.monotonic()
        try:
            run = await exchange_async(instance.stream, *self._payload(job), on_step,
                                       started + self._budget(job, deadline_s))
        except asyncio.CancelledError:
            self.recycled += 1
            self._count[instance.family] = self._count.get(instance.family, 1) - 1
            await asyncio.to_thread(self._discard, instance)
            replacing.append(self._replace())
            raise
        finally:
            self.running -= 1
        instance.jobs += 1
        run.run_s = time.monotonic() - started
        # A step that hit a limit (its time, its output, a signal) was killed with everything it started, as every
        # step is at its end, and the runner scrubbed after it: the sandbox is as clean as after any job, and it
        # says so (``dirty`` otherwise). Replacing it would make every timeout or output flood cost a sandbox
        # start, the host's costliest work, paid by every tenant.
        if run.completed and not run.dirty and instance.jobs < self.config.pool_max_jobs:
            self._put_back(instance)
        else:
            if run.runner_error and not run.steps:
                # The sandbox died under us (OOM-killed runner, backend trouble): say which.
                run.oom_killed = await asyncio.to_thread(self._oom_killed, instance)
                if not run.oom_killed:
                    run.killed_outside = await asyncio.to_thread(self._killed_outside, instance)
            replaced = self._retire(instance)
            if (not run.completed or run.dirty) and not run.killed_outside:  # the job's doing (not the sandbox's
                replacing.append(replaced)  # age or job count, not an operator's kill): its tenant waits for it
        return run

    async def _run_fresh(self, job: Job, on_step, deadline_s, queued: float) -> SandboxRun:
        queue_s = time.monotonic() - queued
        self.running += 1
        cancel = threading.Event()
        holder: dict[str, Instance] = {}
        try:
            run = await asyncio.shield(asyncio.ensure_future(asyncio.to_thread(
                self._run_fresh_blocking, job, on_step, deadline_s, cancel, holder)))
        except asyncio.CancelledError:
            cancel.set()
            if "instance" in holder:
                await asyncio.to_thread(self._discard, holder["instance"])
            raise
        finally:
            self.running -= 1
        run.queue_s = queue_s
        return run

    def _run_fresh_blocking(self, job: Job, on_step, deadline_s, cancel, holder) -> SandboxRun:
        started = time.monotonic()
        budget = self._budget(job, deadline_s)
        instance = self._start_instance(budget, False, self.family_of(job.image))
        holder["instance"] = instance
        try:
            run = exchange(instance.stream, *self._payload(job), on_step, started + budget, cancel,
                           close_stdin=True)
            if not run.completed and not run.stopped_early:
                run.oom_killed = self._oom_killed(instance)
            run.run_s = time.monotonic() - started
            return run
        finally:
            self._discard(instance)
