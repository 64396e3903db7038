"""Per-tenant quotas, counted per verification (a batch of 64 counts 64).

Two limits per tenant, both optional: ``max_concurrency`` (verifications in
flight) and ``rate`` (verifications per second, a token bucket of ``burst``
tokens). A batch is admitted whole or refused whole, with QuotaExceeded
(RESOURCE_EXHAUSTED) carrying how long to wait (the servicer says it in the
message and in ``retry-after-ms``); a batch that could never fit
is InvalidSpec (INVALID_ARGUMENT), since waiting would not help. Each tenant
has its own counters, so one tenant over its quota is refused without
touching another's. Limits hold per server process: N replicas admit N times
as much.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from verifier_service.errors import InvalidSpec, QuotaExceeded
from verifier_service.tenancy.auth import Tenant

MIN_HINT_S = 0.05
MAX_HINT_S = 10.0
DEFAULT_HINT_S = 0.5   # a concurrency hint before any batch of the tenant has finished
EWMA_WEIGHT = 0.2


class TokenBucket:
    def __init__(self, rate: float, size: int, clock: Callable[[], float]):
        self.rate = rate
        self.size = size
        self.clock = clock
        self.tokens = float(size)
        self.stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.size, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self, n: int) -> float:
        """Takes ``n`` tokens and returns 0, or takes none and returns the seconds until ``n`` are there."""
        self._refill()
        if self.tokens >= n:
            self.tokens -= n
            return 0.0
        return (n - self.tokens) / self.rate

    def give_back(self, n: int) -> None:
        self.tokens = min(self.size, self.tokens + n)


@dataclass
class _State:
    limits: tuple
    bucket: TokenBucket | None
    in_flight: int = 0
    batch_s: float | None = None  # moving average of an admitted batch's time in flight


class Ticket:
    """An admitted batch; ``release`` when it is done (``refund`` when it never ran)."""

    def __init__(self, quotas: TenantQuotas, tenant: str, n: int):
        self._quotas, self.tenant, self.n = quotas, tenant, n
        self.started = quotas.clock()
        self._open = True

    def release(self, refund: bool = False) -> None:
        if self._open:
            self._open = False
            self._quotas._release(self, refund)


class TenantQuotas:
    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._states: dict[str, _State] = {}

    def _state(self, tenant: Tenant) -> _State:
        limits = (tenant.rate, tenant.bucket_size)
        state = self._states.get(tenant.name)
        if state is None or state.limits != limits:  # new tenant, or its limits changed on reload
            bucket = TokenBucket(tenant.rate, tenant.bucket_size, self.clock) if tenant.rate else None
            state = self._states[tenant.name] = _State(limits, bucket, *(
                (state.in_flight, state.batch_s) if state is not None else ()))
        return state

    def in_flight(self, tenant_name: str) -> int:
        state = self._states.get(tenant_name)
        return state.in_flight if state is not None else 0

    def acquire(self, tenant: Tenant, n: int) -> Ticket:
        state = self._state(tenant)
        if tenant.max_concurrency:
            if n > tenant.max_concurrency:
                raise InvalidSpec(f"a batch of {n} completions never fits tenant {tenant.name!r}'s concurrency "
                                  f"quota ({tenant.max_concurrency} in flight): send batches of at most "
                                  f"{tenant.max_concurrency}")
            if state.in_flight + n > tenant.max_concurrency:
                hint = _clamp(state.batch_s if state.batch_s is not None else DEFAULT_HINT_S)
                raise QuotaExceeded(f"tenant {tenant.name!r} is over its concurrency quota: {state.in_flight} "
                                    f"verifications in flight, limit {tenant.max_concurrency}", hint)
        if state.bucket is not None:
            if n > state.bucket.size:
                raise InvalidSpec(f"a batch of {n} completions never fits tenant {tenant.name!r}'s rate quota "
                                  f"(burst {state.bucket.size}): send batches of at most {state.bucket.size}")
            wait = state.bucket.take(n)
            if wait:
                hint = _clamp(wait)
                raise QuotaExceeded(f"tenant {tenant.name!r} is over its rate quota ({tenant.rate:g} verifications/s, "
                                    f"burst {state.bucket.size})", hint)
        state.in_flight += n
        return Ticket(self, tenant.name, n)

    def _release(self, ticket: Ticket, refund: bool) -> None:
        state = self._states.get(ticket.tenant)
        if state is None:
            return
        state.in_flight -= ticket.n
        if refund:
            if state.bucket is not None:
                state.bucket.give_back(ticket.n)
            return
        took = self.clock() - ticket.started
        state.batch_s = took if state.batch_s is None else (1 - EWMA_WEIGHT) * state.batch_s + EWMA_WEIGHT * took


def _clamp(seconds: float) -> float:
    return min(MAX_HINT_S, max(MIN_HINT_S, seconds))
