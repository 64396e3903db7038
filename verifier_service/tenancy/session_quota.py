"""Per-tenant admission of sandbox sessions: live sessions and opens per second.

A tenant's ``max_sessions`` and ``session_rate`` (tenants file) win over the service's ``tenant_max_sessions``
and ``session_open_rate``; 0 leaves that limit off. A refusal is QuotaExceeded (RESOURCE_EXHAUSTED, retryable)
with how long to wait. Limits hold per server process, as the verification quotas do.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from verifier_service.errors import QuotaExceeded
from verifier_service.tenancy.auth import Tenant
from verifier_service.tenancy.quota import TokenBucket

LIVE_HINT_S = 1.0  # retry hint when a tenant holds its most live sessions: a rollout's sessions close in seconds


class SessionQuotas:
    def __init__(self, max_sessions: int = 0, open_rate: float = 0.0, clock: Callable[[], float] = time.monotonic):
        self.max_sessions = max_sessions
        self.open_rate = open_rate
        self.clock = clock
        self.live: dict[str, int] = {}
        self._buckets: dict[str, TokenBucket] = {}

    def limits(self, tenant: Tenant) -> tuple[int, float]:
        return tenant.max_sessions or self.max_sessions, tenant.session_rate or self.open_rate

    def admit(self, tenant: Tenant) -> None:
        """Counts one more live session of ``tenant``, or raises QuotaExceeded."""
        cap, rate = self.limits(tenant)
        live = self.live.get(tenant.name, 0)
        if cap and live >= cap:
            raise QuotaExceeded(f"tenant {tenant.name!r} holds {live} live sessions, its limit; close some "
                                "(CloseSession, CloseSessions by label) or retry later", LIVE_HINT_S)
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
