"""The session manager: sandbox sessions by id, their admission, limits, expiry, metrics and audit lines.

Usable from Python without gRPC (``open``, ``execute``, ``reset``, ``close``, ``close_labelled``: the tenant is
an argument); the gRPC door (``doors/grpc/servicer.py``) serves it as the session RPCs.

- Admission: at most ``max_sessions`` live sessions in this process (RESOURCE_EXHAUSTED with a retry hint,
  never a queue), and each tenant's live sessions and open rate (``tenancy/session_quota.py``).
- Ids carry this process's boot id: a session of an earlier run of the service (it restarted: every session
  was dropped with its sandbox) or of another replica is told apart from one that ended here, and each gets a
  clear NOT_FOUND (``SessionGone``) saying which. Sessions of other tenants are not found either.
- Expiry: a session idle past its TTL, or older than its lifetime, is closed by a sweep every second.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import time
from dataclasses import dataclass, field

from verifier_service.config import ServiceConfig
from verifier_service.errors import (
    InvalidSpec,
    Overloaded,
    PermissionDenied,
    QuotaExceeded,
    SandboxUnavailable,
    SessionGone,
)
from verifier_service.sandbox.sessions import (
    CellOutcome,
    SandboxSession,
    SessionEnded,
    SessionLimits,
    SessionSandboxes,
)
from verifier_service.sandbox.warm import PooledSandbox
from verifier_service.service.audit import AuditLog
from verifier_service.tenancy.auth import Tenant, require_inline
from verifier_service.tenancy.session_quota import SessionQuotas

log = logging.getLogger(__name__)

LANGUAGES = ("python",)
FULL_HINT_S = 1.0  # retry hint when the replica holds max_sessions
ENDED_KEPT = 20000  # ended sessions remembered, to say why one is gone
SWEEP_S = 1.0
CELL_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)


@dataclass
class Entry:
    id: str
    tenant: str
    language: str
    labels: dict[str, str]
    sandbox: SandboxSession
    open_s: float
    opened_at: float = field(default_factory=time.monotonic)


class SessionManager:
    def __init__(self, config: ServiceConfig, sandbox: PooledSandbox, audit: AuditLog | None = None,
                 metrics=None):
        self.config = config
        self.audit = audit if audit is not None else AuditLog()
        self.sandboxes = SessionSandboxes(sandbox, config.session_spares, config.session_max_lifetime_s,
                                          self.grant(None), config.file_size_mb * 1024 * 1024, config.open_files)
        self.quotas = SessionQuotas(config.tenant_max_sessions, config.session_open_rate,
                                    replica_sessions=config.max_sessions)
        self.boot = secrets.token_hex(4)
        self.sessions: dict[str, Entry] = {}
        self.ended: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.opening = 0
        self.cells_by_status: collections.Counter[str] = collections.Counter()
        self.opened_total = 0
        self._sweeper: asyncio.Task | None = None
        self._latency = self._cells = None
        if metrics is not None:
            from prometheus_client import Counter, Histogram

            self._latency = Histogram("rlvr_session_cell_seconds", "a session cell's latency on the service",
                                      buckets=CELL_BUCKETS, registry=metrics.registry)
            self._cells = Counter("rlvr_session_cells", "session cells run, by status", ["status"],
                                  registry=metrics.registry)

    # ---- life of the manager ----------------------------------------------------

    async def start(self) -> None:
        await self.sandboxes.start()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep())

    async def shutdown(self) -> None:
        """Ends every session (their sandboxes removed) and the spares: the service stops."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        for entry in list(self.sessions.values()):
            self._forget(entry, "the service stopped")
        await self.sandboxes.close()

    def live_metrics(self) -> dict[str, float]:
        return {"rlvr_sessions_live": len(self.sessions), "rlvr_sessions_opening": self.opening,
                "rlvr_session_spares_idle": self.sandboxes.idle,
                "rlvr_sessions_opened_total": self.opened_total}

    # ---- the calls ---------------------------------------------------------------

    def grant(self, requested: SessionLimits | None) -> SessionLimits:
        """The limits a session gets: the service's defaults where the request says 0, refused beyond its maxima."""
        c = self.config
        r = requested or SessionLimits(0, 0, 0, 0, 0, 0)
        granted = SessionLimits(
            cell_timeout_s=r.cell_timeout_s or c.session_cell_timeout_s,
            output_limit_bytes=r.output_limit_bytes or c.session_output_limit_bytes,
            memory_mb=r.memory_mb or c.memory_mb,
            budget_s=r.budget_s or c.session_budget_s,
            idle_ttl_s=r.idle_ttl_s or c.session_idle_ttl_s,
            max_lifetime_s=min(r.max_lifetime_s or c.session_max_lifetime_s, c.session_max_lifetime_s))
        for name, most in (("cell_timeout_s", c.max_timeout_s), ("output_limit_bytes", c.output_limit_bytes),
                           ("memory_mb", c.memory_mb), ("budget_s", 10 * c.session_budget_s),
                           ("idle_ttl_s", 10 * c.session_idle_ttl_s)):
            value = getattr(granted, name)
            if value < 0 or value > most:
                raise InvalidSpec(f"session limit {name}={value:g} is outside 0..{most:g} (this service's maximum)")
        if granted.memory_mb < 32:
            raise InvalidSpec("session limit memory_mb must be at least 32 (an interpreter needs it)")
        return granted

    async def open(self, tenant: Tenant, language: str = "", limits: SessionLimits | None = None,
                   labels: dict[str, str] | None = None) -> Entry:
        started = time.monotonic()
        try:
            require_inline(tenant, "open a sandbox session (it runs code of its own)")
        except PermissionDenied as exc:
            self._audit({"audit": "session", "event": "open", "tenant": tenant.name, "status": "PERMISSION_DENIED",
                         "message": str(exc)[:300]})
            raise
        language = language or "python"
        if language not in LANGUAGES:
            raise InvalidSpec(f"sessions speak {', '.join(LANGUAGES)}; not {language!r}")
        labels = dict(labels or {})
        if len(labels) > 32 or any(len(k) > 128 or len(v) > 256 for k, v in labels.items()):
            raise InvalidSpec("session labels: at most 32, keys up to 128 and values up to 256 characters")
        granted = self.grant(limits)
        # The tenant's own limits and fair share first: one refused because the replica is full still counts as
        # asking, so the tenants that fill it open no more past their shares and it gets the next free place.
        self.quotas.admit(tenant)
        if len(self.sessions) + self.opening >= self.config.max_sessions:
            self.quotas.release(tenant.name)
            raise QuotaExceeded(f"this replica holds {len(self.sessions) + self.opening} sandbox sessions, its "
                                f"limit (max_sessions={self.config.max_sessions}); close some or retry later",
                                FULL_HINT_S)
        self.opening += 1
        try:
            sandbox = await self.sandboxes.open(granted)
        except BaseException as exc:
            self.quotas.release(tenant.name)
            if isinstance(exc, SandboxUnavailable):
                self._audit({"audit": "session", "event": "open", "tenant": tenant.name, "status": "UNAVAILABLE",
                                  "message": str(exc)[:300]})
                raise Overloaded(f"no sandbox for a session now: {exc}") from exc
            raise
        finally:
            self.opening -= 1
        entry = Entry(f"s-{self.boot}-{secrets.token_hex(12)}", tenant.name, language, labels, sandbox,
                      time.monotonic() - started)
        self.sessions[entry.id] = entry
        self.opened_total += 1
        self._audit({"audit": "session", "event": "open", "session": entry.id, "tenant": tenant.name,
                          "labels": labels, "status": "OK", "open_s": round(entry.open_s, 6)})
        return entry

    def find(self, tenant: Tenant, session_id: str) -> Entry:
        entry = self.sessions.get(session_id)
        if entry is not None and entry.tenant == tenant.name:
            return entry
        if entry is None and session_id in self.ended:
            raise SessionGone(f"session {session_id} is over: {self.ended[session_id]}")
        if entry is None and session_id.startswith("s-") and not session_id.startswith(f"s-{self.boot}-"):
            raise SessionGone(f"session {session_id} is not on this service: it was opened before the service "
                              "restarted (every session ends with its replica) or on another replica; its state "
                              "is gone, open a new session")
        raise SessionGone(f"no session {session_id!r} here")

    async def execute(self, tenant: Tenant, session_id: str, code: str, stdin: str = "", timeout_s: float = 0.0,
                      output_limit_bytes: int = 0) -> tuple[Entry, CellOutcome]:
        entry = self.find(tenant, session_id)
        if timeout_s < 0 or output_limit_bytes < 0:
            raise InvalidSpec("timeout_s and output_limit_bytes must not be negative")
        try:
            outcome = await entry.sandbox.execute(code, stdin, timeout_s, output_limit_bytes)
        except SessionEnded as exc:
            self._forget(entry, str(exc))
            raise SessionGone(f"session {session_id} is over: {exc}") from None
        if outcome.session_ended:
            self._forget(entry, outcome.session_ended)
        self.cells_by_status[outcome.status] += 1
        if self._cells is not None and self._latency is not None:
            self._cells.labels(outcome.status).inc()
            self._latency.observe(outcome.total_s)
        return entry, outcome

    async def reset(self, tenant: Tenant, session_id: str) -> Entry:
        entry = self.find(tenant, session_id)
        try:
            await entry.sandbox.reset()
        except SessionEnded as exc:
            self._forget(entry, str(exc))
            raise SessionGone(f"session {session_id} is over: {exc}") from None
        return entry

    async def close(self, tenant: Tenant, session_id: str) -> int:
        entry = self.find(tenant, session_id)
        self._forget(entry, "closed by its client")
        return 1

    async def close_labelled(self, tenant: Tenant, labels: dict[str, str]) -> int:
        if not labels:
            raise InvalidSpec("CloseSessions needs at least one label (it closes the sessions that have them all)")
        chosen = [e for e in self.sessions.values()
                  if e.tenant == tenant.name and all(e.labels.get(k) == v for k, v in labels.items())]
        for entry in chosen:
            self._forget(entry, f"closed by its client (labels {labels})")
        return len(chosen)

    def _audit(self, record: dict) -> None:
        if self.audit.enabled:
            self.audit.write(record)

    # ---- ending sessions ------------------------------------------------------------

    def _forget(self, entry: Entry, reason: str) -> None:
        """The session leaves the table (its sandbox is removed in the background) with one audit line."""
        if self.sessions.pop(entry.id, None) is None:
            return
        self.quotas.release(entry.tenant)
        self.ended[entry.id] = reason
        while len(self.ended) > ENDED_KEPT:
            self.ended.popitem(last=False)
        session = entry.sandbox
        if not session.ended:
            asyncio.get_running_loop().create_task(self.sandboxes.end(session, reason))
        self._audit({"audit": "session", "event": "close", "session": entry.id, "tenant": entry.tenant,
                          "labels": entry.labels, "reason": reason, "cells": session.cells,
                          "statuses": dict(sorted(session.statuses.items())), "cell_s": round(session.spent_s, 6),
                          "age_s": round(time.monotonic() - entry.opened_at, 3)})

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_S)
            now = time.monotonic()
            for entry in list(self.sessions.values()):
                s = entry.sandbox
                if s.busy:
                    continue
                if now - s.last_used > s.limits.idle_ttl_s:
                    self._forget(entry, f"idle for more than its TTL ({s.limits.idle_ttl_s:g} s)")
                elif now - s.opened > s.limits.max_lifetime_s:
                    self._forget(entry, f"past its lifetime ({s.limits.max_lifetime_s:g} s)")
