"""Fair shares of a pool of slots (sandboxes, pure-check workers) between tenants.

A pool served first come, first served lets one tenant's flood of slow work
(checks that run to their limit, jobs that sleep) hold every slot while
another tenant's trivial calls wait behind it. ``FairShare`` hands out slots
by tenant instead:

- each tenant waits in its own queue; a freed slot goes to the waiting tenant
  that holds the fewest slots for its weight (ties: the one served longest
  ago), so tenants take turns, round robin;
- a tenant holds at most its share of the slots: ``slots * weight / (the
  weights of the tenants active now)``, at least one. A tenant is active while
  it holds or waits for a slot and for ``RECENT_S`` after its last request, so
  a trainer that calls between generation steps keeps its share free for its
  next batch instead of finding every slot taken by a flood that started in
  between. A tenant alone has every slot.

Weights come from ``weight_of`` (the service's tenants file: a tenant's ``weight``), 1 by default.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable

RECENT_S = 30.0  # a tenant's share stays reserved this long after its last request


class FairShare:
    def __init__(self, slots: int, recent_s: float = RECENT_S, clock: Callable[[], float] = time.monotonic,
                 weight_of: Callable[[str], float] | None = None):
        self.slots = slots
        self.weight_of = weight_of  # a tenant's weight by name (None: every tenant weighs 1)
        self.recent_s = recent_s
        self._clock = clock
        self.free = slots
        self.held: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future]] = {}
        self._seen: dict[str, float] = {}
        self._served: dict[str, float] = {}  # when each tenant was last given a slot (round robin)
        self._weights: dict[str, float] = {}
        self._timer: asyncio.TimerHandle | None = None

    def _active(self, now: float) -> list[str]:
        return [t for t, seen in self._seen.items()
                if self.held.get(t) or self._waiting.get(t) or now - seen < self.recent_s]

    def share(self, tenant: str, now: float | None = None) -> int:
        """The slots ``tenant`` may hold now."""
        now = self._clock() if now is None else now
        active = self._active(now)
        if tenant not in active:
            active.append(tenant)
        total = sum(self._weights.get(t, 1.0) for t in active)
        return max(1, math.floor(self.slots * self._weights.get(tenant, 1.0) / total + 1e-9))

    async def acquire(self, tenant: str) -> None:
        weight = self.weight_of(tenant) if self.weight_of is not None else 1.0
        now = self._clock()
        self._seen[tenant] = now
        self._weights[tenant] = weight
        for t in [t for t, seen in self._seen.items()  # forget tenants long gone
                  if now - seen > 10 * self.recent_s and not self.held.get(t) and not self._waiting.get(t)]:
            del self._seen[t], self._weights[t]
            self._served.pop(t, None)
        if self.free > 0 and not any(self._waiting.values()) and self.held.get(tenant, 0) < self.share(tenant, now):
            self._grant(tenant)
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(future)
        self._dispatch()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted as it was cancelled: give the slot back
                self.release(tenant)
            elif future in self._waiting[tenant]:
                self._waiting[tenant].remove(future)
            raise

    def release(self, tenant: str) -> None:
        self.held[tenant] -= 1
        self.free += 1
        self._dispatch()

    def _grant(self, tenant: str) -> None:
        self.free -= 1
        self.held[tenant] = self.held.get(tenant, 0) + 1
        self._served[tenant] = self._clock()

    def _dispatch(self) -> None:
        now = self._clock()
        while self.free > 0:
            waiting = [t for t, q in self._waiting.items() if q]
            if not waiting:
                return
            eligible = [t for t in waiting if self.held.get(t, 0) < self.share(t, now)]
            if not eligible:  # the free slots are other (recently active) tenants' shares: look again when
                self._wake_later(now)  # those tenants stop counting as active
                return
            tenant = min(eligible, key=lambda t: (self.held.get(t, 0) / self._weights.get(t, 1.0),
                                                  self._served.get(t, 0.0)))
            future = self._waiting[tenant].popleft()
            if future.done():  # its caller was cancelled and has not run yet to take it out
                continue
            self._grant(tenant)
            future.set_result(None)

    def _wake_later(self, now: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        idle = [now - seen for t, seen in self._seen.items() if not self.held.get(t) and not self._waiting.get(t)
                and now - seen < self.recent_s]
        delay = self.recent_s - max(idle) + 0.01 if idle else self.recent_s
        self._timer = asyncio.get_running_loop().call_later(max(0.01, delay), self._dispatch)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
