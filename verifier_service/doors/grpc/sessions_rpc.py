"""The Verifier service's session RPCs (OpenSession, ExecuteCell, ResetSession, CloseSession, CloseSessions) on
the session manager (``sessions.py``): messages in and out, refusals as status codes.

A refusal of the manager is its ``STATUS`` code with the message: RESOURCE_EXHAUSTED (too many live sessions or
opens; ``retry-after-ms`` says when to try again), NOT_FOUND (a session that is gone, saying why),
INVALID_ARGUMENT (a bad limit, label or language). An unexpected fault is INTERNAL with a log reference.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.credentials import RETRY_AFTER_KEY
from verifier_service.errors import STATUS, QuotaExceeded
from verifier_service.sandbox.sessions import CellOutcome, SessionLimits
from verifier_service.server.rpclog import trailing_metadata
from verifier_service.server.sessions import Entry, SessionManager
from verifier_service.tenancy.auth import current_tenant

log = logging.getLogger(__name__)
REFUSALS = tuple(cls for cls, _ in STATUS)
STATUS_CODES = {"ok": pb.CELL_OK, "error": pb.CELL_ERROR, "timeout": pb.CELL_TIMEOUT,
                "memory_limit": pb.CELL_MEMORY_LIMIT, "output_limit": pb.CELL_OUTPUT_LIMIT,
                "infra_error": pb.CELL_INFRA_ERROR}


def limits_from_proto(message: pb.SessionLimits) -> SessionLimits:
    return SessionLimits(cell_timeout_s=message.cell_timeout_s, output_limit_bytes=message.output_limit_bytes,
                         memory_mb=message.memory_mb, budget_s=message.budget_s, idle_ttl_s=message.idle_ttl_s,
                         max_lifetime_s=message.max_lifetime_s)


def info(entry: Entry) -> pb.SessionInfo:
    s = entry.sandbox
    lim = s.limits
    return pb.SessionInfo(
        session_id=entry.id, language=entry.language, labels=entry.labels, open_s=entry.open_s, cells=s.cells,
        budget_left_s=s.budget_left_s,
        limits=pb.SessionLimits(cell_timeout_s=lim.cell_timeout_s, output_limit_bytes=lim.output_limit_bytes,
                                memory_mb=lim.memory_mb, budget_s=lim.budget_s, idle_ttl_s=lim.idle_ttl_s,
                                max_lifetime_s=lim.max_lifetime_s))


def cell_result(entry: Entry, outcome: CellOutcome) -> pb.CellResult:
    result = pb.CellResult(
        session_id=entry.id, status=STATUS_CODES.get(outcome.status, pb.CELL_ERROR), stdout=outcome.stdout,
        stderr=outcome.stderr, error=outcome.error, traceback=outcome.traceback, restarted=outcome.restarted,
        timings=pb.CellTimings(run_s=outcome.run_s, total_s=outcome.total_s), cell_index=entry.sandbox.cells,
        budget_left_s=entry.sandbox.budget_left_s, session_ended=outcome.session_ended)
    if outcome.value is not None:
        result.value = outcome.value
    return result


class SessionRpcs:
    """Mixed into the VerifierServicer; ``sessions`` is set by the app (None: sessions are off)."""

    sessions: SessionManager | None = None
    metrics = None

    async def _session_call(self, coro_fn, context):
        tenant = current_tenant.get()
        if self.sessions is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "sandbox sessions are not served by this process")
        try:
            return await coro_fn(tenant)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except REFUSALS as exc:
            code = next(c for cls, c in STATUS if isinstance(exc, cls))
            hint = ()
            message = str(exc)
            if isinstance(exc, QuotaExceeded):
                message += f"; retry in {exc.retry_after_s:.2f}s"
                hint = ((RETRY_AFTER_KEY, str(round(exc.retry_after_s * 1000))),)
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED and self.metrics is not None:
                self.metrics.refused(tenant.name, code.name)
            await context.abort(code, message, trailing_metadata=trailing_metadata(*hint))
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error in a session call (ref %s)", ref)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error; the server log has reference {ref}")

    async def OpenSession(self, request, context):
        async def call(tenant):
            entry = await self.sessions.open(tenant, request.language, limits_from_proto(request.limits),
                                             dict(request.labels))
            return info(entry)

        return await self._session_call(call, context)

    async def ExecuteCell(self, request, context):
        async def call(tenant):
            entry, outcome = await self.sessions.execute(tenant, request.session_id, request.code, request.stdin,
                                                         request.timeout_s, request.output_limit_bytes)
            return cell_result(entry, outcome)

        return await self._session_call(call, context)

    async def ResetSession(self, request, context):
        async def call(tenant):
            return info(await self.sessions.reset(tenant, request.session_id))

        return await self._session_call(call, context)

    async def CloseSession(self, request, context):
        async def call(tenant):
            return pb.CloseSessionsResponse(closed=await self.sessions.close(tenant, request.session_id))

        return await self._session_call(call, context)

    async def CloseSessions(self, request, context):
        async def call(tenant):
            return pb.CloseSessionsResponse(closed=await self.sessions.close_labelled(tenant, dict(request.labels)))

        return await self._session_call(call, context)
