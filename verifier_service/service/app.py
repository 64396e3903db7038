"""The application's resources, with no listener: the sandbox backend and its warm pool, the pure kinds'
workers, the engine, tenants, the catalog, the audit log, the metrics, the core (``Verifier``) and the session
manager; the sandbox's health (watched, swept of expired sandboxes) and a reload (SIGHUP). The doors
(``verifier_service.doors``) serve an ``App``; ``verifier_service.serve`` starts one with its doors, and the
synchronous ``verifier_service.verify`` runs one in-process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from verifier_service.config import ServiceConfig
from verifier_service.engine.engine import Engine
from verifier_service.engine.pool import PurePool
from verifier_service.errors import SandboxUnavailable, VerifierError
from verifier_service.sandbox import format_isolation, make_sandbox
from verifier_service.service.audit import AuditLog, Repeats
from verifier_service.service.metrics import Metrics
from verifier_service.service.sessions import SessionManager
from verifier_service.service.verifier import Verifier
from verifier_service.tenancy.auth import LOCAL_TENANT, Tenant, Tenants, authenticate
from verifier_service.tenancy.catalog import Catalog

log = logging.getLogger("verifier_service.server")
ORPHAN_SWEEP_S = 300.0  # how often expired sandbox containers (of crashed replicas) are swept


class App:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.sandbox = make_sandbox(config)
        self.pure_pool = PurePool(config.pure_workers)
        self.engine = Engine(config, self.sandbox, self.pure_pool)
        self.tenants = Tenants.load(config.tenants) if config.tenants else None
        catalog = Catalog.load(config.catalog, check=self.engine.prepare) if config.catalog else Catalog()
        self.audit = AuditLog(config.audit_log, Repeats(config.log_repeat_burst, config.log_repeat_interval_s))
        self.metrics = Metrics()
        self._refusals = Repeats(config.auth_refusal_burst, 1.0)  # refused authentications per client address
        self.verifier = Verifier(self.engine, catalog=catalog, audit=self.audit, metrics=self.metrics)
        self.sessions = SessionManager(config, self.sandbox, self.audit, self.metrics)
        for pool in (self.sandbox, self.pure_pool):  # the tenants' weights share the slots (a reload applies)
            pool.weigh_tenants(self.tenant_weight)
        self.metrics.watch(self._live_metrics)
        self.sandbox_problem: str | None = None
        # told each health check's problem (None: healthy), as the gRPC door's health service is
        self.health_listeners: list[Callable[[str | None], Awaitable[None]]] = []
        self._watch: asyncio.Task | None = None
        self._loop_watch: asyncio.Task | None = None

    def tenant_weight(self, name: str) -> float:
        """A tenant's ``weight`` in the tenants file as loaded now (1 for a tenant it does not name)."""
        tenant = self.tenants.tenants.get(name) if self.tenants is not None else None
        return tenant.weight if tenant is not None else 1.0

    def authenticate(self, method: str, metadata, identities: list[str] | tuple[str, ...] = ()
                     ) -> tuple[Tenant | None, str]:
        """(the calling tenant, "") by its API key in ``metadata`` (or its client certificate's ``identities``),
        or (None, why not), the refusal audited; the one local tenant when no tenants file is loaded. Each door
        maps the refusal to its own status (gRPC UNAUTHENTICATED, HTTP 401)."""
        if self.tenants is None:
            return LOCAL_TENANT, ""
        tenant, problem = authenticate(self.tenants, metadata, identities)
        if tenant is None:
            self.audit.refused(method=method, tenant=None, status="UNAUTHENTICATED", message=problem,
                               metadata=metadata)
        return tenant, problem

    def refusal_delay(self, peer: str) -> float:
        """Seconds the door waits before it answers a refused authentication from client address ``peer``: none
        for the first ``auth_refusal_burst`` of a second, ``auth_refusal_delay_s`` for each further one. A client
        without a key that sends as fast as it is answered then sends a few calls a second per connection it
        holds (a connection and a call in flight are bounded per address), and does not take the event loop
        from the tenants."""
        within, _ = self._refusals.admit(peer)
        return 0.0 if within else self.config.auth_refusal_delay_s

    async def start(self) -> None:
        """Starts the workers, checks the sandbox backend, warms its pool and watches its health."""
        await self.pure_pool.start()
        await self._check_sandbox()
        log.info("sandbox isolation (%s backend):\n%s", self.sandbox.backend,
                 format_isolation(self.sandbox.isolation()))
        if self.sandbox_problem is None:
            removed = await asyncio.to_thread(self.sandbox.remove_orphans_blocking)
            if removed:
                log.warning("removed %d expired sandbox container(s) left by an earlier run", removed)
        await self.sandbox.start()
        await self.sessions.start()
        self._watch = asyncio.create_task(self._watch_sandbox())
        self._loop_watch = asyncio.create_task(self.metrics.watch_loop())

    def reload(self) -> None:
        """SIGHUP: re-reads the tenants file and the catalog. A file that fails its checks (a catalog entry
        changed under a published version) is refused with the reason, and the loaded one stays."""
        try:
            if self.config.tenants and self.tenants is not None:
                self.tenants = Tenants.load(self.config.tenants)
                log.info("reloaded %d tenant(s) from %s", len(self.tenants.tenants), self.config.tenants)
            if self.config.catalog:
                self.verifier.catalog = Catalog.load(self.config.catalog, check=self.engine.prepare,
                                                     previous=self.verifier.catalog)
                log.info("reloaded the catalog: %d verifier(s)", len(self.verifier.catalog))
        except VerifierError as exc:
            log.error("reload refused, still serving what was loaded: %s", exc)

    def _live_metrics(self) -> dict[str, float]:
        sandbox, size = self.sandbox, self.config.max_concurrency
        idle = getattr(sandbox, "_idle", None)
        running = getattr(sandbox, "running", 0)
        return {
            "rlvr_rpcs_in_flight": self.metrics.in_flight,
            "rlvr_pending_completions": self.verifier.admission.pending,
            "rlvr_sandbox_running": running,
            "rlvr_sandbox_pool_size": size,
            "rlvr_sandbox_pool_idle": idle.qsize() if idle is not None else 0,
            "rlvr_sandbox_pool_utilisation": running / size if size else 0.0,
            "rlvr_sandbox_recycled_total": getattr(sandbox, "recycled", 0),
            "rlvr_sandbox_backend_up": 0.0 if self.sandbox_problem else 1.0,
            "rlvr_sandbox_jobs_total": getattr(sandbox, "jobs", 0),
            **{f"rlvr_sandbox_{part}_cpu_seconds_total": cpu
               for part, (cpu, _) in getattr(sandbox, "usage", {}).items()},
            **{f"rlvr_sandbox_{part}_page_faults_total": faults
               for part, (_, faults) in getattr(sandbox, "usage", {}).items()},
            **self.sessions.live_metrics(),
        }

    async def _check_sandbox(self) -> None:
        """Health: a problem while the backend fails its check or the warm pool cannot start sandboxes."""
        try:
            await self.sandbox.check()
            pool_error = getattr(self.sandbox, "pool_error", None)
            problem = f"the warm pool cannot start sandboxes: {pool_error}" if pool_error else None
        except SandboxUnavailable as exc:
            problem = str(exc)
        if problem != self.sandbox_problem:
            if problem:
                log.error("sandbox backend unavailable: %s", problem)
            elif self.sandbox_problem:
                log.info("sandbox backend available again")
        self.sandbox_problem = problem
        for listener in self.health_listeners:
            await listener(problem)

    async def _watch_sandbox(self) -> None:
        last_sweep = time.monotonic()
        while True:
            await asyncio.sleep(self.config.health_interval_s)
            try:
                await self._check_sandbox()
                if self.sandbox_problem is None and time.monotonic() - last_sweep > ORPHAN_SWEEP_S:
                    last_sweep = time.monotonic()
                    removed = await asyncio.to_thread(self.sandbox.remove_orphans_blocking)
                    if removed:
                        log.warning("removed %d expired sandbox container(s)", removed)
            except Exception:
                log.exception("sandbox health check failed")

    async def stop(self) -> None:
        for task in (self._watch, self._loop_watch):
            if task is not None:
                task.cancel()
        await self.sessions.shutdown()
        await self.sandbox.close()
        await self.pure_pool.close()
        self.metrics.close()
