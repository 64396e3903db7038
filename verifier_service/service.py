"""The gRPC servicer: admission control, validation, fan-out, status codes.

Bad requests are INVALID_ARGUMENT with a message naming the request; more
pending work than ``max_pending`` is RESOURCE_EXHAUSTED (never an unbounded
queue); a cancelled or expired RPC cancels its verifications, which removes
their sandbox containers.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.engine import Engine, Prepared
from verifier_service.errors import InvalidSpec, Overloaded

log = logging.getLogger(__name__)


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


class VerifierServicer(pb_grpc.VerifierServicer):
    def __init__(self, engine: Engine):
        self.engine = engine
        self.admission = Admission(engine.config.max_pending)

    def _prepare(self, requests) -> list[Prepared]:
        limit = self.engine.config.max_batch_size
        if len(requests) > limit:
            raise InvalidSpec(f"batch holds {len(requests)} completions; the limit is {limit}")
        prepared = []
        for index, request in enumerate(requests):
            try:
                prepared.append(self.engine.prepare(request))
            except InvalidSpec as exc:
                label = f"request {index}" + (f" (id {request.id!r})" if request.id else "")
                raise InvalidSpec(f"{label}: {exc}") from exc
        return prepared

    async def _run(self, requests, context) -> list[pb.VerifyResult]:
        try:
            prepared = self._prepare(requests)
            self.admission.acquire(len(prepared))
        except InvalidSpec as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Overloaded as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        try:
            return await self.engine.verify_all(prepared)
        finally:
            self.admission.release(len(prepared))

    async def _guard(self, coro, context):
        """Unexpected faults become INTERNAL with a reference, never a stack trace to the client."""
        try:
            return await coro
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error (ref %s)", ref)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error; the server log has reference {ref}")

    async def Verify(self, request, context):
        results = await self._guard(self._run([request], context), context)
        return results[0]

    async def VerifyBatch(self, request, context):
        results = await self._guard(self._run(request.requests, context), context)
        return pb.VerifyBatchResponse(results=results, batch_id=request.batch_id)

    async def VerifyStream(self, request_iterator, context):
        finished: asyncio.Queue = asyncio.Queue()
        tasks: set[asyncio.Task] = set()
        state = {"reading": True, "outstanding": 0}

        async def one(batch):
            try:
                results = await self._run(batch.requests, context)
                await finished.put(pb.VerifyBatchResponse(results=results, batch_id=batch.batch_id))
            except BaseException as exc:  # noqa: BLE001 - handed to the stream loop, which ends the RPC
                await finished.put(exc)

        async def read_all():
            async for batch in request_iterator:
                state["outstanding"] += 1
                task = asyncio.create_task(one(batch))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
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
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error in VerifyStream (ref %s)", ref)
            await context.abort(grpc.StatusCode.INTERNAL, f"internal error; the server log has reference {ref}")
        finally:
            # Ending early (an error, a cancelled RPC): stop every batch still running and wait
            # until their sandboxes are gone, so nothing outlives the RPC.
            reader.cancel()
            pending = [reader, *tasks]
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=30)

    async def ListVerifiers(self, request, context):
        return self.engine.describe()
