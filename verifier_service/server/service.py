"""The gRPC servicer: admission control, validation, fan-out, status codes.

Bad requests are INVALID_ARGUMENT with a message naming the request; more
pending work than ``max_pending`` is RESOURCE_EXHAUSTED (never an unbounded
queue); a cancelled or expired RPC cancels its verifications, which removes
their sandbox containers. The tenant (set by the auth interceptor) is held to
its quotas (a refusal is answered after part of the wait it asks for, so that
clients retrying in a loop cost little) and to its catalog namespaces; every
batch leaves one audit line.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import replace

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.credentials import RETRY_AFTER_KEY
from verifier_service.engine.engine import Engine, Prepared
from verifier_service.engine.results import fit_results
from verifier_service.errors import (
    STATUS,
    InvalidSpec,
    Overloaded,
    PermissionDenied,
    QuotaExceeded,
    UnknownVerifier,
    VersionMismatch,
)
from verifier_service.server.audit import AuditLog
from verifier_service.server.rpclog import trailing_metadata
from verifier_service.server.sessions_rpc import SessionRpcs
from verifier_service.tenancy.auth import Tenant, current_tenant
from verifier_service.tenancy.catalog import Catalog
from verifier_service.tenancy.quota import TenantQuotas

REFUSALS = tuple(cls for cls, _ in STATUS)
HOLD_MAX_S = 1.0  # the longest a quota refusal is held before it is answered

log = logging.getLogger(__name__)


async def _abort_internal(context, what: str) -> None:
    """An unexpected fault (called from an ``except``): logged with its traceback under a reference, and the
    call ended INTERNAL naming that reference, never a stack trace to the client."""
    ref = uuid.uuid4().hex[:12]
    log.exception("%s (ref %s)", what, ref)
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error; the server log has reference {ref}")

class Admission:
    """Counts admitted completions; refuses a batch that would exceed the limit."""

    def __init__(self, limit: int):
        self.limit = limit
        self.pending = 0

    def acquire(self, n: int) -> None:
        if self.pending + n > self.limit:
            raise Overloaded(f"server busy: {self.pending} completions pending, limit {self.limit}; "
                             f"retry later or send smaller batches")
        self.pending += n

    def release(self, n: int) -> None:
        self.pending -= n


class VerifierServicer(SessionRpcs, pb_grpc.VerifierServicer):
    def __init__(self, engine: Engine, catalog: Catalog | None = None, quotas: TenantQuotas | None = None,
                 audit: AuditLog | None = None, metrics=None):
        self.engine = engine
        self.metrics = metrics  # verifier_service.metrics.Metrics, or None
        self.admission = Admission(engine.config.max_pending)
        self.catalog = catalog if catalog is not None else Catalog()  # replaced on reload
        self.quotas = quotas if quotas is not None else TenantQuotas()
        self.audit = audit if audit is not None else AuditLog()

    def _prepare_one(self, request: pb.VerifyRequest, tenant: Tenant) -> tuple[Prepared, str]:
        """The prepared request and the catalog id it uses ('' for an inline spec)."""
        if request.verifier:
            expanded, entry = self.catalog.expand(request, tenant)
            item = self.engine.prepare(expanded)
            return replace(item, key=item.key + b"\0" + entry.id.encode()), entry.id
        if request.HasField("fields"):
            raise InvalidSpec("fields go with a catalog verifier; an inline spec holds all its fields")
        if not tenant.inline_specs:
            raise PermissionDenied(f"tenant {tenant.name!r} may use catalog verifiers only (set verifier to "
                                   "team/name@version; ListVerifiers lists them), not inline specs")
        return self.engine.prepare(request), ""

    def _prepare(self, requests, tenant: Tenant) -> tuple[list[Prepared], list[str]]:
        limit = self.engine.config.max_batch_size
        if len(requests) > limit:
            raise InvalidSpec(f"batch holds {len(requests)} completions; the limit is {limit}")
        prepared, labels = [], []
        for index, request in enumerate(requests):
            try:
                item, label = self._prepare_one(request, tenant)
            except (InvalidSpec, PermissionDenied, UnknownVerifier, VersionMismatch) as exc:
                where = f"request {index}" + (f" (id {request.id!r})" if request.id else "")
                raise type(exc)(f"{where}: {exc}") from exc
            prepared.append(item)
            labels.append(label)
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

    async def _run(self, requests, context, method: str = "Verify") -> list[pb.VerifyResult]:
        tenant = current_tenant.get()
        started = time.monotonic()
        results, labels = None, None

        def audit(status: str, message: str = "") -> None:
            self.audit.batch(method=method, tenant=tenant, requests=requests, results=results,
                             labels=labels if results is not None else None, status=status, message=message,
                             duration_s=time.monotonic() - started, metadata=context.invocation_metadata())

        try:
            ticket = self.quotas.acquire(tenant, len(requests))
            try:
                prepared, labels = self._prepare(requests, tenant)
                self.admission.acquire(len(prepared))
            except BaseException:
                ticket.release(refund=True)
                raise
        except REFUSALS as exc:
            code = next(c for cls, c in STATUS if isinstance(exc, cls))
            message, hint = str(exc), ()
            if isinstance(exc, QuotaExceeded):
                try:
                    held = await self._hold(exc.retry_after_s, context)
                except asyncio.CancelledError:
                    audit("CANCELLED", message)
                    raise
                wait = max(0.001, exc.retry_after_s - held)
                message += f"; retry in {wait:.2f}s"
                hint = ((RETRY_AFTER_KEY, str(round(wait * 1000))),)
            audit(code.name, message)  # before abort: the client may read the log as soon as it has the status
            await context.abort(code, message, trailing_metadata=trailing_metadata(*hint))
        status = "INTERNAL"
        try:
            try:
                results = await self.engine.verify_all(prepared, tenant=tenant.name)
            finally:
                self.admission.release(len(prepared))
                ticket.release()
            self._stamp(results, prepared, labels)
            fit_results(results, self.engine.config.max_message_bytes)  # never an answer over the message limit
            if self.metrics is not None:
                self.metrics.observe(tenant.name, results)
            status = "OK"
            return results
        except asyncio.CancelledError:
            status = "CANCELLED"
            raise
        finally:
            audit(status)

    @staticmethod
    async def _hold(wait_s: float, context) -> float:
        """Answers a quota refusal late, by up to the wait it asks for (the hint then carries what is left):
        a client that retries at once, ignoring the hint, retries no faster than its quota refills and
        costs the service fewer refusals. Returns the seconds held."""
        held = min(wait_s, HOLD_MAX_S)
        remaining = context.time_remaining()
        if remaining is not None:  # the refusal, not DEADLINE_EXCEEDED, must reach the client
            held = min(held, remaining / 2)
        if held > 0:
            await asyncio.sleep(held)
        return held

    async def _guard(self, coro, context):
        """Unexpected faults become INTERNAL with a reference, never a stack trace to the client."""
        try:
            return await coro
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception:  # noqa: BLE001 - logged with its traceback by _abort_internal
            await _abort_internal(context, "internal error")

    async def Verify(self, request, context):
        results = await self._guard(self._run([request], context, "Verify"), context)
        return results[0]

    async def VerifyBatch(self, request, context):
        results = await self._guard(self._run(request.requests, context, "VerifyBatch"), context)
        return pb.VerifyBatchResponse(results=results, batch_id=request.batch_id)

    async def VerifyStream(self, request_iterator, context):
        finished: asyncio.Queue = asyncio.Queue()
        tasks: set[asyncio.Task] = set()
        state = {"reading": True, "outstanding": 0}

        async def one(batch):
            try:
                results = await self._run(batch.requests, context, "VerifyStream")
                await finished.put(pb.VerifyBatchResponse(results=results, batch_id=batch.batch_id))
            except BaseException as exc:  # noqa: BLE001 - handed to the stream loop, which ends the RPC
                await finished.put(exc)

        async def read_all():
            try:
                async for batch in request_iterator:
                    state["outstanding"] += 1
                    task = asyncio.create_task(one(batch))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            except BaseException as exc:  # a request that cannot be read ends the RPC there
                state["outstanding"] += 1
                await finished.put(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            await finished.put(None)

        reader = asyncio.create_task(read_all())
        try:
            while state["reading"] or state["outstanding"]:
                item = await finished.get()
                if item is None:
                    state["reading"] = False
                    continue
                state["outstanding"] -= 1
                if isinstance(item, BaseException):
                    raise item
                yield item
            await reader
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception:  # noqa: BLE001 - logged with its traceback by _abort_internal
            await _abort_internal(context, "internal error in VerifyStream")
        finally:
            # Ending early (an error, a cancelled RPC): stop every batch still running and wait
            # until their sandboxes are gone, so nothing outlives the RPC.
            reader.cancel()
            pending = [reader, *tasks]
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=30)

    async def ListVerifiers(self, request, context):
        response = self.engine.describe()
        response.catalog.extend(entry.to_proto() for entry in self.catalog.visible_to(current_tenant.get()))
        return response
