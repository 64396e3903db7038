"""Request ids, structured (JSON) logs and per-RPC metrics, in one server interceptor.

Every Verifier RPC gets a request id: the caller's ``x-request-id`` metadata
(printable ASCII, at most 128 characters) or a fresh one. It is set in
``current_request_id`` for the handler (the audit log and every log record
carry it) and returned in the trailing metadata as ``x-request-id``. One log
line per RPC says method, tenant, status code, completions and duration.

The interceptor also decodes the request itself: a body that is not a valid
message of the method's type (truncated bytes, bad UTF-8 in a string, nesting
past protobuf's recursion limit) is INVALID_ARGUMENT, where gRPC would answer
INTERNAL. A message over ``PARSE_IN_PROCESS_BYTES`` is parsed first in a pure
worker (``PurePool.check_message``): the parser holds the GIL while it runs (a
second for 60 MB of small fields), and only one within ``max_message_values``
is then parsed here (RESOURCE_EXHAUSTED otherwise).

The log lines' format and their bounds are ``doors/logs.py``'s.
"""

from __future__ import annotations

import logging
import time

import grpc

from verifier_service._generated import verifier_pb2
from verifier_service.credentials import RETRY_AFTER_KEY
from verifier_service.doors.grpc.auth import PROTECTED_PREFIX, peer_address
from verifier_service.service.context import REQUEST_ID_KEY, current_request_id, request_id_from
from verifier_service.tenancy.auth import current_tenant
from verifier_service.wire import decode as wire_decode

log = logging.getLogger("verifier_service.rpc")
SERVICE_FAULTS = ("INTERNAL", "UNKNOWN", "UNAVAILABLE", "DATA_LOSS")  # logged as warnings; the rest is the caller's
def trailing_metadata(*extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """Trailing metadata holding the RPC's request id (for a handler that aborts with metadata of its own)."""
    rid = current_request_id.get()
    return (*extra, (REQUEST_ID_KEY, rid)) if rid else tuple(extra)


PEER_RETRY_MS = "1000"  # the retry hint of a call over grpc_max_calls_per_peer
PARSE_IN_PROCESS_BYTES = 64 * 1024  # a message over this is parsed first in a pure worker
PARSE_TIMEOUT_S = 30.0


class _Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class RpcInterceptor(grpc.aio.ServerInterceptor):
    """Outermost interceptor of the Verifier service: request id, decoding, one log line, metrics, and the calls
    in flight per client address (``max_calls_per_peer``, 0: no limit; one more is RESOURCE_EXHAUSTED before its
    request is read)."""

    def __init__(self, metrics=None, max_calls_per_peer: int = 0, pool=None, max_message_values: int = 0):
        self.metrics = metrics
        self.max_calls_per_peer = max_calls_per_peer
        self.pool = pool  # a PurePool: large messages are parsed there first (None: here)
        self.max_message_values = max_message_values
        self.calls: dict[str, int] = {}  # calls in flight by client address

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(PROTECTED_PREFIX):
            return handler
        rid = request_id_from(handler_call_details.invocation_metadata)
        return _wrap(handler, method.rsplit("/", 1)[-1], rid, self)

    # ---- bookkeeping around one RPC -------------------------------------------

    def begin(self, rid: str, context) -> tuple[float, str]:
        """(when the call began, its client's address). The address is read here, once, while the call is live:
        grpcio 1.85 dereferences a null pointer (SIGSEGV, the whole service) when ``context.peer()`` is asked
        after a stream was cancelled (found with VerifyStreams that stopped reading, then cancelled)."""
        current_request_id.set(rid)
        context.set_trailing_metadata(((REQUEST_ID_KEY, rid),))
        if self.metrics is not None:
            self.metrics.in_flight += 1
        peer = peer_address(context)
        self.calls[peer] = self.calls.get(peer, 0) + 1
        return time.monotonic(), peer

    async def admit(self, peer: str, context) -> None:
        """Aborts the call (RESOURCE_EXHAUSTED) when its client address has more than its calls in flight."""
        if self.max_calls_per_peer and self.calls.get(peer, 0) > self.max_calls_per_peer:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"{self.max_calls_per_peer} calls from {peer} are in flight, this service's limit "
                                "per client address (grpc_max_calls_per_peer); retry when some have finished",
                                trailing_metadata((RETRY_AFTER_KEY, PEER_RETRY_MS)))

    def end(self, method: str, began: tuple[float, str], context, completions: int,
            failure: BaseException | None) -> None:
        started, peer = began
        left = self.calls.get(peer, 1) - 1
        if left > 0:
            self.calls[peer] = left
        else:
            self.calls.pop(peer, None)
        code = _code_name(context, failure)
        duration = time.monotonic() - started
        tenant = current_tenant.get().name
        if self.metrics is not None:
            self.metrics.in_flight -= 1
            self.metrics.rpcs.labels(method, code).inc()
            self.metrics.rpc_latency.labels(method).observe(duration)
            if code != "OK" and code != "UNAUTHENTICATED":
                self.metrics.refused(tenant, code)
        level = logging.WARNING if code in SERVICE_FAULTS else logging.INFO
        extra: dict = {"rpc": {"method": method, "code": code, "tenant": tenant, "completions": completions,
                               "duration_ms": round(duration * 1000, 1)}}
        if code != "OK":  # refusals are bounded per client address (RepeatFilter)
            extra["repeat_key"] = peer
        log.log(level, "rpc %s %s", method, code, extra=extra)


def _code_name(context, failure: BaseException | None) -> str:
    try:
        code = context.code()
    except Exception:  # noqa: BLE001 - older grpc: no code() on the context
        code = None
    if code is not None:
        return code.name if isinstance(code, grpc.StatusCode) else str(code)
    if failure is None:
        return "OK"
    import asyncio

    return "CANCELLED" if isinstance(failure, asyncio.CancelledError) else "UNKNOWN"


async def large_message_refusal(pool, type_name: str, raw: bytes, limit: int, tenant: str = ""
                                ) -> tuple[grpc.StatusCode, str] | None:
    """For a message over ``PARSE_IN_PROCESS_BYTES``: checked first in a pure worker of ``pool``
    (``PurePool.check_message``), the status and message that refuse it, or None when this process may parse
    it (the gRPC door's decoding and the Ray fleet's replicas both ask)."""
    if len(raw) <= PARSE_IN_PROCESS_BYTES:
        return None
    status, why = await pool.check_message(type_name, raw, limit, PARSE_TIMEOUT_S, tenant)
    if status == "invalid":
        return grpc.StatusCode.INVALID_ARGUMENT, f"the request is not a valid message of this method ({why or ''})"
    if status == "limit":
        return grpc.StatusCode.RESOURCE_EXHAUSTED, (f"the message holds more than {limit} values (fields set, "
                                                    "repeated items; max_message_values): send fewer items per call")
    if status == "timeout":
        return grpc.StatusCode.RESOURCE_EXHAUSTED, (f"the message took more than {PARSE_TIMEOUT_S:g} s to parse: "
                                                    "send fewer items per call")
    if status == "dead":
        return grpc.StatusCode.UNAVAILABLE, "the process that parses large messages failed: retry"
    return None


def _decoder(deserializer, owner: RpcInterceptor):
    """(bytes -> message), async, that raises ``_Refused`` with a readable reason."""
    owner_type = getattr(deserializer, "__self__", None)
    type_name = owner_type.DESCRIPTOR.name if owner_type is not None and hasattr(owner_type, "DESCRIPTOR") else ""
    in_worker = owner.pool is not None and owner_type is getattr(verifier_pb2, type_name, None)

    def invalid(why: str) -> _Refused:
        return _Refused(grpc.StatusCode.INVALID_ARGUMENT, f"the request is not a valid message of this method "
                                                          f"({why})")

    async def decode(raw: bytes):
        if deserializer is None:
            return raw
        if in_worker:
            refusal = await large_message_refusal(owner.pool, type_name, raw, owner.max_message_values)
            if refusal is not None:
                raise _Refused(*refusal)
        try:
            return wire_decode(deserializer, raw)
        except Exception as exc:
            raise invalid(f"{type(exc).__name__}: {str(exc)[:200] or 'cannot parse'}") from exc

    return decode


def _count(request) -> int:
    requests = getattr(request, "requests", None)
    return len(requests) if requests is not None else 1


def _wrap(handler: grpc.RpcMethodHandler, method: str, rid: str, owner: RpcInterceptor) -> grpc.RpcMethodHandler:
    decode = _decoder(handler.request_deserializer, owner)
    kwargs = dict(request_deserializer=None, response_serializer=handler.response_serializer)

    async def invalid(context, exc: _Refused):
        await context.abort(exc.code, exc.message)

    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary_unary(raw, context):
            began, failure, completions = owner.begin(rid, context), None, 0
            try:
                await owner.admit(began[1], context)
                try:
                    request = await decode(raw)
                except _Refused as exc:
                    await invalid(context, exc)
                completions = _count(request)
                return await inner(request, context)
            except BaseException as exc:
                failure = exc
                raise
            finally:
                owner.end(method, began, context, completions, failure)

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kwargs)

    async def decoded(raw_iterator, context):
        async for raw in raw_iterator:
            try:
                yield await decode(raw)
            except _Refused as exc:
                await invalid(context, exc)

    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(raw_iterator, context):
            began, failure = owner.begin(rid, context), None
            try:
                await owner.admit(began[1], context)
                return await inner_su(decoded(raw_iterator, context), context)
            except BaseException as exc:
                failure = exc
                raise
            finally:
                owner.end(method, began, context, 0, failure)

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kwargs)

    streaming_in = handler.stream_stream is not None
    inner_stream = handler.stream_stream if streaming_in else handler.unary_stream
    make = grpc.stream_stream_rpc_method_handler if streaming_in else grpc.unary_stream_rpc_method_handler

    async def streaming(raw, context):
        began, failure, completions = owner.begin(rid, context), None, 0
        try:
            await owner.admit(began[1], context)
            if streaming_in:
                source = decoded(raw, context)
            else:
                try:
                    source = await decode(raw)
                except _Refused as exc:
                    await invalid(context, exc)
            async for response in inner_stream(source, context):
                completions += len(getattr(response, "results", ()))
                yield response
        except BaseException as exc:
            failure = exc
            raise
        finally:
            owner.end(method, began, context, completions, failure)

    return make(streaming, **kwargs)
