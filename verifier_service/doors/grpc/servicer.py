"""The gRPC servicer: each RPC on the service core (``service/verifier.py``), refusals as status codes.

Bad requests are INVALID_ARGUMENT with a message naming the request; more pending work than ``max_pending`` is
RESOURCE_EXHAUSTED (a quota refusal carries ``retry-after-ms``); an unexpected fault is INTERNAL with a log
reference, never a stack trace. A cancelled or expired RPC cancels its verifications.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.doors.grpc.rpclog import trailing_metadata
from verifier_service.doors.grpc.sessions_rpc import cell_result, info, limits_from_proto
from verifier_service.errors import wire_refusal
from verifier_service.service.context import Call, current_request_id
from verifier_service.service.sessions import SessionManager
from verifier_service.service.verifier import REFUSALS, Verifier
from verifier_service.tenancy.auth import current_tenant

log = logging.getLogger(__name__)


def refusal_status(exc: BaseException):
    """The one refusal -> status table of the gRPC door (``errors.STATUS``; a quota's wait as ``retry-after-ms``):
    (code, message, trailing metadata)."""
    name, message, wait = wire_refusal(exc)
    return grpc.StatusCode[name], message, trailing_metadata(*wait)


async def abort_refusal(context, exc: BaseException) -> None:
    code, message, trailing = refusal_status(exc)
    await context.abort(code, message, trailing_metadata=trailing)


async def _abort_internal(context, what: str) -> None:
    """An unexpected fault (called from an ``except``): logged with its traceback under a reference, and the
    call ended INTERNAL naming that reference, never a stack trace to the client."""
    ref = uuid.uuid4().hex[:12]
    log.exception("%s (ref %s)", what, ref)
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error; the server log has reference {ref}")


def call_of(context, method: str) -> Call:
    remaining = context.time_remaining()
    return Call.within(current_tenant.get(), method, remaining, current_request_id.get(),
                       tuple(context.invocation_metadata() or ()))


class VerifierServicer(pb_grpc.VerifierServicer):
    """Every RPC of the Verifier service: verification on the core, sessions on the session manager (None: this
    process serves no sessions)."""

    def __init__(self, verifier: Verifier, sessions: SessionManager | None = None):
        self.verifier = verifier
        self.sessions = sessions
        self.metrics = verifier.metrics

    async def _run(self, requests, context, method: str) -> list[pb.VerifyResult]:
        try:
            return await self.verifier.verify(call_of(context, method), requests)
        except REFUSALS as exc:
            await abort_refusal(context, exc)
            raise  # (abort raised)

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
        # Backpressure: at most stream_max_batches batches read and not yet answered; a client that stops reading
        # answers (the yield below waits on HTTP/2 flow control) stops being read, and holds no more than those.
        window = asyncio.Semaphore(self.verifier.engine.config.stream_max_batches)
        finished: asyncio.Queue = asyncio.Queue()
        tasks: set[asyncio.Task] = set()
        state = {"reading": True, "outstanding": 0}

        async def one(batch):
            try:
                # a refusal is raised, not aborted, here: the stream's own coroutine maps it (an abort from
                # another task ends the RPC as INTERNAL)
                results = await self.verifier.verify(call_of(context, "VerifyStream"), batch.requests)
                await finished.put(pb.VerifyBatchResponse(results=results, batch_id=batch.batch_id))
            except BaseException as exc:  # noqa: BLE001 - handed to the stream loop, which ends the RPC
                await finished.put(exc)

        async def read_all():
            try:
                async for batch in request_iterator:
                    await window.acquire()  # (this batch waits here until an answer is taken)
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
                if isinstance(item, REFUSALS):  # the stream ends with the refusal's status, set, not aborted (an
                    code, message, trailing = refusal_status(item)  # abort here raced the request reader: INTERNAL)
                    context.set_code(code)
                    context.set_details(message)
                    if trailing:
                        context.set_trailing_metadata(trailing)
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
                window.release()
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
        return self.verifier.list_verifiers(call_of(context, "ListVerifiers"))

    # ---- sessions ----------------------------------------------------------------------------

    async def _session_call(self, coro_fn, context):
        tenant = current_tenant.get()
        if self.sessions is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "sandbox sessions are not served by this process")
        try:
            return await coro_fn(tenant)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except REFUSALS as exc:  # (counted in the tenant's refusals once, by the RPC interceptor)
            await abort_refusal(context, exc)
        except Exception:  # noqa: BLE001 - logged with its traceback by _abort_internal
            await _abort_internal(context, "internal error in a session call")

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
