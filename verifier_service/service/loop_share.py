"""Each tenant's share of the event loop (issue 36).

The doors, the core and their pools run on one event loop, and asyncio runs whatever is ready first come, first
served. A tenant that keeps many cheap calls in flight (completions malformed at once, at the size limit) then
keeps the loop busy with its own steps, and every step of another tenant's call waits behind them: that call's
latency grows with the flood though no pool, quota or limit is full.

``LoopShare`` measures how long each step of a task holds the loop and charges it to the task's tenant
(``current_tenant``: the doors set it once the caller is authenticated, and the tasks a call starts inherit it).
A tenant whose recent use of the loop (a decayed sum with time constant ``window_s``) is more than
``busy_share`` of the time above that of every other tenant that uses the loop too waits before its next step
until it is back under that bar: the loop is then free for the others' steps. A step whose CPU time is past
``long_step_s`` counts (its CPU time / ``long_step_s``) times its length (``weight``): another call's next step
waits behind it whole, so a few long steps (receiving a 3 MB message, decoding it) lengthen the others' slowest
calls more than many short ones of the same total. The bar is the others' loop time as it was, not as counted.
Tenants that use the loop alike (two floods) are not held: they take turns as asyncio has them do. A tenant
alone on the loop is never held, nor are steps of no tenant (a call not yet authenticated, the pools' own
tasks); a held step waits at most ``max_wait_s`` at a time before it is looked at again.

It works as the loop's task factory: each task's coroutine is driven by ``_drive``, which passes every awaited
value, result, exception and cancellation between the task and the coroutine unchanged.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Coroutine
from typing import Any

from verifier_service.tenancy.auth import LOCAL_TENANT, current_tenant

LONG_STEP_MAX_FACTOR = 10.0  # (a single 100 ms step, decoding one huge batch, does not hold its tenant for seconds)
FORGET_BELOW_S = 1e-5  # a tenant whose decayed usage is under this no longer counts as using the loop


class LoopShare:
    def __init__(self, busy_share: float = 0.25, window_s: float = 0.25, max_wait_s: float = 0.05,
                 long_step_s: float = 0.0005):
        self.busy_share = busy_share
        self.window_s = window_s
        self.max_wait_s = max_wait_s
        self.long_step_s = long_step_s
        # tenant -> (decayed seconds of loop time, the same as counted (long steps weighted), as of when)
        self._used: dict[str, tuple[float, float, float]] = {}
        self.held_s = 0.0  # the waits imposed so far, in all (for metrics and tests)

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.set_task_factory(self._task)

    def _task(self, loop, coro, **kwargs):
        if asyncio.iscoroutine(coro):  # (gRPC's are Cython's: not types.CoroutineType)
            coro = self._drive(coro)  # a native coroutine: Python 3.12+ Tasks take nothing else
        return asyncio.Task(coro, loop=loop, **kwargs)

    def usage(self, tenant: str, now: float, counted: bool = False) -> float:
        """``tenant``'s recent loop time (decayed); ``counted``: as charged against it (long steps weighted)."""
        used, weighted, at = self._used.get(tenant, (0.0, 0.0, now))
        return (weighted if counted else used) * math.exp(-(now - at) / self.window_s)

    def charge(self, tenant: str, seconds: float, now: float, counted: float | None = None) -> None:
        """Adds a step of ``seconds`` to ``tenant``'s use of the loop, ``counted`` (default: ``seconds``) against
        it."""
        used, weighted, at = self._used.get(tenant, (0.0, 0.0, now))
        decay = math.exp(-(now - at) / self.window_s)
        self._used[tenant] = (used * decay + seconds, weighted * decay + (seconds if counted is None else counted), now)

    def weight(self, seconds: float, cpu_s: float | None = None) -> float:
        """What a step that held the loop ``seconds`` counts: its length, times (its CPU time / ``long_step_s``,
        at most ``LONG_STEP_MAX_FACTOR``) where that CPU time (``cpu_s``, else ``seconds``) is past
        ``long_step_s``. Every other call's next step waits behind a step whole, so a tenant's long steps delay
        the others more than as many short ones of the same total: at the same share of the loop, they make the
        others' slowest calls slower. The factor is of the step's CPU time, not its length: a short step that the
        machine took the core from (two busy cores) is not a long step of its tenant's. Measured by length, the
        victim tenant's own steps were weighted on 2 cores and the victim, not the flood, was held: its p99 under
        large HTTP bodies went from 6-8x idle to 19-26x."""
        busy = seconds if cpu_s is None else cpu_s
        if self.long_step_s and busy > self.long_step_s:
            return seconds * min(busy / self.long_step_s, LONG_STEP_MAX_FACTOR)
        return seconds

    def wait_s(self, tenant: str, now: float) -> float:
        """How long ``tenant``'s next step should wait (0: none). Its use as counted (long steps weighted) is set
        against the others' loop time as it was: a light tenant's step made long by a garbage collection that
        another's allocations set off, or by the machine, does not raise the bar of the tenant it waits behind."""
        if len(self._used) < 2 or tenant not in self._used:
            return 0.0
        used, others = self.usage(tenant, now, counted=True), 0.0
        for name in list(self._used):
            if name != tenant:
                other = self.usage(name, now)
                if other < FORGET_BELOW_S:
                    del self._used[name]
                others = max(others, other)
        bar = self.busy_share * self.window_s + others
        if others < FORGET_BELOW_S or used <= bar:
            return 0.0
        return min(self.max_wait_s, self.window_s * math.log(used / bar) + 1e-4)

    async def _drive(self, coro: Coroutine) -> Any:
        return await _Steps(self._steps(coro))

    def _steps(self, coro: Coroutine) -> Any:
        value: Any = None
        error: BaseException | None = None
        tenant = ""
        while True:
            while error is None and tenant and (wait := self.wait_s(tenant, time.monotonic())):
                self.held_s += wait
                try:
                    yield from asyncio.sleep(wait).__await__()
                except GeneratorExit:
                    coro.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 - a cancellation while held goes to the coroutine
                    error = exc
            started = time.perf_counter(), time.thread_time()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                self._account(started)
                return stop.value
            except BaseException:
                self._account(started)
                raise
            tenant = self._account(started)
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown into the task: the coroutine's to handle
                value, error = None, exc

    def _account(self, started: tuple[float, float]) -> str:
        """Charges the step that began at ``started`` (its clock and the thread's CPU time then) to the task's
        tenant; the tenant's name ('' for none)."""
        tenant = current_tenant.get()
        if tenant is LOCAL_TENANT:
            return ""
        wall, cpu = time.perf_counter() - started[0], time.thread_time() - started[1]
        self.charge(tenant.name, wall, time.monotonic(), self.weight(wall, cpu))
        return tenant.name


class _Steps:
    """An awaitable over ``LoopShare._steps``: awaiting it hands each value that generator yields to the task and
    passes back what the task sends or throws."""

    __slots__ = ("steps",)

    def __init__(self, steps):
        self.steps = steps

    def __await__(self):
        return self.steps
