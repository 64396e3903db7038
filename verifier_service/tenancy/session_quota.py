"""Per-tenant admission of sandbox sessions: live sessions and opens per second.

A tenant's ``max_sessions`` and ``session_rate`` (tenants file) win over the service's ``tenant_max_sessions``
and ``session_open_rate``; 0 leaves that limit off. A refusal is QuotaExceeded (RESOURCE_EXHAUSTED, retryable)
with how long to wait. Limits hold per server process, as the verification quotas do.

Where neither sets a tenant's live sessions, it gets a fair share of the replica's (``replica_sessions``, the
service's ``max_sessions``): ``replica_sessions * weight / (the weights of the tenants active now)``, at least
one, as the sandboxes of verifications are shared (``sandbox/fair.py``). A tenant is active while it holds a
session and for ``RECENT_S`` after it last tried to open one, refused or not: a tenant alone may fill the
replica, and once another asks, the first opens no more past its share, so each session the first closes
makes room for the other. Sessions are never taken back: a share is reached as sessions close, in seconds in
a rollout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from verifier_service.errors import QuotaExceeded
from verifier_service.tenancy.auth import Tenant
from verifier_service.tenancy.quota import TokenBucket

RECENT_S = 30.0  # a tenant counts as active this long after it last asked (as for the sandboxes: sandbox/fair.py)
LIVE_HINT_S = 1.0  # retry hint when a tenant holds its most live sessions: a rollout's sessions close in seconds


class SessionQuotas:
    def __init__(self, max_sessions: int = 0, open_rate: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 replica_sessions: int = 0, recent_s: float = RECENT_S):
        self.max_sessions = max_sessions
        self.open_rate = open_rate
        self.clock = clock
        self.replica_sessions = replica_sessions  # shared fairly where no limit is set (0: not shared)
        self.recent_s = recent_s
        self.live: dict[str, int] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._asked: dict[str, float] = {}  # when each tenant last tried to open a session
        self._weights: dict[str, float] = {}

    def limits(self, tenant: Tenant) -> tuple[int, float]:
        return tenant.max_sessions or self.max_sessions, tenant.session_rate or self.open_rate

    def share(self, tenant: Tenant) -> tuple[int, int]:
        """(the live sessions ``tenant`` may hold by its fair share of the replica's, the tenants active now)."""
        now = self.clock()
        for name in [n for n, asked in self._asked.items() if now - asked > 10 * self.recent_s
                     and not self.live.get(n)]:
            del self._asked[name]
            self._weights.pop(name, None)
        active = {n for n, live in self.live.items() if live} | {n for n, asked in self._asked.items()
                                                                 if now - asked < self.recent_s} | {tenant.name}
        total = sum(self._weights.get(n, 1.0) for n in active)
        return max(1, math.floor(self.replica_sessions * self._weights.get(tenant.name, 1.0) / total + 1e-9)), \
            len(active)

    def admit(self, tenant: Tenant) -> None:
        """Counts one more live session of ``tenant``, or raises QuotaExceeded."""
        cap, rate = self.limits(tenant)
        live = self.live.get(tenant.name, 0)
        self._asked[tenant.name] = self.clock()
        self._weights[tenant.name] = tenant.weight
        if cap and live >= cap:
            raise QuotaExceeded(f"tenant {tenant.name!r} holds {live} live sessions, its limit; close some "
                                "(CloseSession, CloseSessions by label) or retry later", LIVE_HINT_S)
        if not cap and self.replica_sessions:
            share, active = self.share(tenant)
            if live >= share < self.replica_sessions:  # (alone: the replica's own cap speaks)
                raise QuotaExceeded(f"tenant {tenant.name!r} holds {live} live sessions, its fair share of this "
                                    f"replica's {self.replica_sessions} while {active} tenants use sessions; close "
                                    "some (CloseSession, CloseSessions by label) or retry later", LIVE_HINT_S)
        if rate:
            bucket = self._buckets.get(tenant.name)
            if bucket is None or bucket.rate != rate:
                bucket = self._buckets[tenant.name] = TokenBucket(rate, max(2, int(2 * rate)), self.clock)
            wait = bucket.take(1)
            if wait:
                raise QuotaExceeded(f"tenant {tenant.name!r} is over its session open rate ({rate:g}/s)",
                                    min(10.0, max(0.01, wait)))
        self.live[tenant.name] = live + 1

    def release(self, tenant_name: str) -> None:
        self.live[tenant_name] = max(0, self.live.get(tenant_name, 0) - 1)
