"""The application: verify for a tenant, run a program for a tenant, list what a tenant may use.

Every door (gRPC, HTTP, the in-process ``verifier_service.verify``) calls these with a ``Call``; what happens to a
call happens here once: the tenant's quota (a refusal is answered after part of the wait it asks for, so that
clients retrying in a loop cost little), admission (at most ``max_pending`` completions in the service, never an
unbounded queue), the catalog (a tenant's namespaces), validation, the engine, the stamp (catalog version, image
digest), the audit line and the metrics. A refusal is an exception of ``errors.py``; each door maps it once.
A cancelled call cancels its verifications, which removes their sandboxes.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import replace

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.engine.engine import Engine, Prepared
from verifier_service.engine.results import fit_results
from verifier_service.errors import (
    STATUS,
    InvalidSpec,
    Overloaded,
    PermissionDenied,
    QuotaExceeded,
    SandboxUnavailable,
    UnknownVerifier,
    VersionMismatch,
    refusal_message,
    status_name,
)
from verifier_service.sandbox.base import Job, SandboxRun
from verifier_service.service.audit import AuditLog
from verifier_service.service.context import Call
from verifier_service.tenancy.auth import Tenant, require_inline
from verifier_service.tenancy.catalog import Catalog
from verifier_service.tenancy.quota import TenantQuotas, Ticket

REFUSALS = tuple(cls for cls, _ in STATUS)
HOLD_MAX_S = 1.0  # the longest a quota refusal is held before it is answered
PREPARE_STEP_S = 0.001  # the longest a batch's preparation holds the event loop at a time (about; see _prepare)


class Admission:
    """Counts what is admitted and not yet answered: completions, and the bytes of their requests in all and per
    tenant (decoded requests stay in memory until answered: these bounds are the service's memory budget for
    them). A batch that would pass a bound is refused (RESOURCE_EXHAUSTED, retried by clients); a batch over a
    bound on its own can never pass, and is refused as the caller's (INVALID_ARGUMENT)."""

    def __init__(self, limit: int, max_bytes: int = 0, tenant_bytes: int = 0):
        self.limit = limit
        self.max_bytes = max_bytes        # 0: no bound
        self.tenant_bytes = tenant_bytes  # 0: no bound
        self.pending = 0
        self.pending_bytes = 0
        self.by_tenant: collections.Counter[str] = collections.Counter()

    def acquire(self, n: int, tenant: str = "", size: int = 0) -> None:
        bounds = [b for b in (self.max_bytes, self.tenant_bytes) if b]
        if bounds and size > min(bounds):
            raise InvalidSpec(f"the batch's requests are {size} bytes, over this service's budget of {min(bounds)} "
                              "bytes per tenant in flight (tenant_pending_bytes, max_pending_bytes): send smaller "
                              "batches")
        if self.pending + n > self.limit:
            raise Overloaded(f"server busy: {self.pending} completions pending, limit {self.limit}; "
                             f"retry later or send smaller batches")
        if self.tenant_bytes and self.by_tenant[tenant] + size > self.tenant_bytes:
            raise Overloaded(f"tenant {tenant!r} has {self.by_tenant[tenant]} bytes of requests being verified, "
                             f"its limit (tenant_pending_bytes={self.tenant_bytes}); retry when some are answered")
        if self.max_bytes and self.pending_bytes + size > self.max_bytes:
            raise Overloaded(f"server busy: {self.pending_bytes} bytes of requests pending, limit {self.max_bytes} "
                             "(max_pending_bytes); retry later or send smaller batches")
        self.pending += n
        self.pending_bytes += size
        if size:
            self.by_tenant[tenant] += size

    def release(self, n: int, tenant: str = "", size: int = 0) -> None:
        self.pending -= n
        self.pending_bytes -= size
        if size:
            self.by_tenant[tenant] -= size
            if self.by_tenant[tenant] <= 0:
                del self.by_tenant[tenant]


class Verifier:
    def __init__(self, engine: Engine, catalog: Catalog | None = None, quotas: TenantQuotas | None = None,
                 audit: AuditLog | None = None, metrics=None):
        self.engine = engine
        self.metrics = metrics  # verifier_service.service.metrics.Metrics, or None
        config = engine.config
        self.admission = Admission(config.max_pending, config.max_pending_bytes, config.tenant_pending_bytes)
        self.catalog = catalog if catalog is not None else Catalog()  # replaced on reload
        self.quotas = quotas if quotas is not None else TenantQuotas()
        self.audit = audit if audit is not None else AuditLog()

    # ---- verify ---------------------------------------------------------------------------------

    async def verify(self, call: Call, requests) -> list[pb.VerifyResult]:
        """Results of ``requests`` (``VerifyRequest``s) in order; a refusal raises (one of ``REFUSALS``)."""
        started = time.monotonic()
        results, labels = None, None

        def audit(status: str, message: str = "") -> None:
            self.audit.batch(method=call.method, tenant=call.tenant, requests=requests, results=results,
                             labels=labels if results is not None else None, status=status, message=message,
                             duration_s=time.monotonic() - started, metadata=call.metadata)

        tenant = call.tenant.name
        try:
            ticket = await self._admit(call, len(requests), audit)
            try:
                prepared, labels = await self._prepare(requests, call.tenant)
                # (counted as prepared: upb's ByteSize serialized each request again, 0.4 ms for 3 MB)
                size = sum(item.size for item in prepared)
                await self._check_specs(requests, prepared, call.tenant)
                self.admission.acquire(len(prepared), tenant, size)
            except BaseException:
                ticket.release(refund=True)
                raise
        except REFUSALS as exc:
            audit(status_name(exc), refusal_message(exc))  # before the door answers: the caller may read the log
            raise
        status = "INTERNAL"
        try:
            try:
                results = await self.engine.verify_all(prepared, tenant=call.tenant.name)
            finally:
                self.admission.release(len(prepared), tenant, size)
                ticket.release()
            self._stamp(results, prepared, labels)
            fit_results(results, self.engine.config.max_message_bytes)  # never an answer over the message limit
            if self.metrics is not None:
                self.metrics.observe(call.tenant.name, results)
            status = "OK"
            return results
        except asyncio.CancelledError:
            status = "CANCELLED"
            raise
        finally:
            audit(status)

    def list_verifiers(self, call: Call) -> pb.ListVerifiersResponse:
        response = self.engine.describe()
        response.catalog.extend(entry.to_proto() for entry in self.catalog.visible_to(call.tenant))
        return response

    # ---- run a program (SandboxFusion's /run_code: the program's whole output, not a verdict) ----------------

    async def run_program(self, call: Call, job: Job) -> SandboxRun:
        """Runs ``job`` on the sandbox, counted as one verification by the tenant's quota and admission.
        Raises a refusal (a tenant held to catalog verifiers: PermissionDenied), or ``SandboxUnavailable`` when
        the backend is down."""
        require_inline(call.tenant, "run a program of its own")
        ticket = await self._admit(call, 1)
        try:
            self.admission.acquire(1)
        except BaseException:
            ticket.release(refund=True)
            raise
        started = time.monotonic()
        try:
            if self.engine.sandbox is None:
                raise SandboxUnavailable("no sandbox backend is configured")
            run = await self.engine.sandbox.run(job, tenant=call.tenant.name)
        finally:
            self.admission.release(1)
            ticket.release()
        if self.metrics is not None:
            self.metrics.latency.labels("run_code").observe(time.monotonic() - started)
            self.metrics.tenant_verifications.labels(call.tenant.name).inc()
        return run

    # ---- the steps ------------------------------------------------------------------------------

    async def _admit(self, call: Call, n: int, audit=None) -> Ticket:
        """The tenant's quota ticket for ``n`` completions; over quota, the refusal after a hold (below)."""
        try:
            return self.quotas.acquire(call.tenant, n)
        except QuotaExceeded as exc:
            try:
                held = await self._hold(exc.retry_after_s, call)
            except asyncio.CancelledError:
                if audit is not None:
                    audit("CANCELLED", str(exc))
                raise
            raise QuotaExceeded(str(exc), max(0.001, exc.retry_after_s - held)) from None

    @staticmethod
    async def _hold(wait_s: float, call: Call) -> float:
        """Answers a quota refusal late, by up to the wait it asks for (the hint then carries what is left):
        a client that retries at once, ignoring the hint, retries no faster than its quota refills and
        costs the service fewer refusals. Returns the seconds held."""
        held = min(wait_s, HOLD_MAX_S)
        remaining = call.time_remaining()
        if remaining is not None:  # the refusal, not DEADLINE_EXCEEDED, must reach the client
            held = min(held, remaining / 2)
        if held > 0:
            await asyncio.sleep(held)
        return held

    def _prepare_one(self, request: pb.VerifyRequest, tenant: Tenant, catalog: Catalog) -> tuple[Prepared, str]:
        """The prepared request and the catalog id it uses ('' for an inline spec)."""
        if request.verifier:
            expanded, entry = catalog.expand(request, tenant)
            item = self.engine.prepare(expanded)
            # (its size: what the caller sent, not the catalog's spec, held once for every request)
            return replace(item, key=(*item.key, entry.id), size=request.ByteSize()), entry.id
        if request.HasField("fields"):
            raise InvalidSpec("fields go with a catalog verifier; an inline spec holds all its fields")
        if not tenant.inline_specs:
            raise PermissionDenied(f"tenant {tenant.name!r} may use catalog verifiers only (set verifier to "
                                   "team/name@version; ListVerifiers lists them), not inline specs")
        return self.engine.prepare(request), ""

    async def _check_specs(self, requests, prepared: list[Prepared], tenant: Tenant) -> None:
        """The specs' slow checks (off the event loop); the first request whose spec fails them is refused."""
        problems = await self.engine.spec_problems(prepared, tenant.name)
        if problems:
            index, problem = min(problems)
            raise InvalidSpec(f"{_which(index, requests[index])}: {problem}")

    async def _prepare(self, requests, tenant: Tenant) -> tuple[list[Prepared], list[str]]:
        """Each request prepared, against one version of the catalog. A large batch gives the event loop back
        every ``PREPARE_STEP_S`` of work: the other callers' steps (and ``LoopShare``'s hold on a tenant that
        floods the loop) come between, not after the whole batch."""
        limit = self.engine.config.max_batch_size
        if len(requests) > limit:
            raise InvalidSpec(f"batch holds {len(requests)} completions; the limit is {limit}")
        prepared, labels = [], []
        catalog = self.catalog  # (a reload between two steps does not change the batch's catalog)
        step_ends = time.perf_counter() + PREPARE_STEP_S
        for index, request in enumerate(requests):
            try:
                item, label = self._prepare_one(request, tenant, catalog)
            except (InvalidSpec, PermissionDenied, UnknownVerifier, VersionMismatch) as exc:
                raise type(exc)(f"{_which(index, request)}: {exc}") from exc
            prepared.append(item)
            labels.append(label)
            if time.perf_counter() > step_ends:
                await asyncio.sleep(0)
                step_ends = time.perf_counter() + PREPARE_STEP_S
        return prepared, labels

    def _stamp(self, results: list[pb.VerifyResult], prepared: list[Prepared], labels: list[str]) -> None:
        """What makes a reward reproducible: the exact catalog version, the sandbox image's digest."""
        sandbox = self.engine.sandbox
        for result, item, label in zip(results, prepared, labels, strict=True):
            if label:
                result.verifier_version = label
            if not item.kind.sandboxed or sandbox is None:
                continue  # (a pure kind's result names no image: nothing to look up per result)
            image = sandbox.image_id_of(item.kind.image(item.spec))
            if image:
                result.sandbox_image = image


def _which(index: int, request) -> str:
    """How a refusal names the request it is about: its place in the batch and its id."""
    return f"request {index}" + (f" (id {request.id!r})" if request.id else "")
