"""The gRPC door's authentication: every Verifier RPC's API key (or verified client certificate) -> its tenant,
set in ``current_tenant`` for the handler, or UNAUTHENTICATED. Who is calling is the app's answer
(``App.authenticate``); this module only reads the call's metadata and TLS peer and maps the refusal."""

from __future__ import annotations

import asyncio

import grpc

from verifier_service.service.app import App
from verifier_service.spec import SERVICE_NAME
from verifier_service.tenancy.auth import Tenant, current_tenant

PROTECTED_PREFIX = f"/{SERVICE_NAME}/"  # the Verifier RPCs; health and reflection stay open


def certificate_names(context) -> list[str]:
    """The verified client certificate's CN and subject alternative names (mutual TLS), else []."""
    try:
        auth = context.auth_context() or {}
    except Exception:  # noqa: BLE001 - a context without TLS: no names
        return []
    names = []
    for key in ("x509_common_name", "x509_subject_alternative_name"):
        names += [v.decode() if isinstance(v, bytes) else str(v) for v in auth.get(key, [])]
    return names


def peer_address(context) -> str:
    """The client's address without its port ('ipv4:127.0.0.1:5555' -> 'ipv4:127.0.0.1')."""
    try:
        peer = context.peer() or "?"
    except Exception:  # noqa: BLE001 - a context without a peer
        return "?"
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates each Verifier RPC with the app's tenants as loaded now (a reload applies to the next call)."""

    def __init__(self, app: App):
        self.app = app

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or not method.startswith(PROTECTED_PREFIX):
            return handler
        metadata = tuple(handler_call_details.invocation_metadata or ())
        return _wrapped(handler, lambda context: self._authenticate(method, metadata, context))

    async def _authenticate(self, method: str, metadata, context) -> Tenant:
        tenant, problem = self.app.authenticate(method.rsplit("/", 1)[-1], metadata, certificate_names(context))
        if tenant is None:
            delay = self.app.refusal_delay(peer_address(context))
            if delay:  # (past auth_refusal_burst a second from this address)
                await asyncio.sleep(delay)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, problem)
        assert tenant is not None  # abort raises
        return tenant


def _wrapped(handler: grpc.RpcMethodHandler, authenticate) -> grpc.RpcMethodHandler:
    """The same handler, authenticating before it runs (the context, with the TLS peer, exists only here)."""
    kwargs = dict(request_deserializer=handler.request_deserializer,
                  response_serializer=handler.response_serializer)
    if handler.unary_unary is not None:
        inner = handler.unary_unary

        async def unary_unary(request, context):
            current_tenant.set(await authenticate(context))  # each RPC runs in a task of its own
            return await inner(request, context)

        return grpc.unary_unary_rpc_method_handler(unary_unary, **kwargs)
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(request_iterator, context):
            current_tenant.set(await authenticate(context))
            return await inner_su(request_iterator, context)

        return grpc.stream_unary_rpc_method_handler(stream_unary, **kwargs)
    inner_stream = handler.unary_stream or handler.stream_stream
    make = (grpc.unary_stream_rpc_method_handler if handler.unary_stream is not None
            else grpc.stream_stream_rpc_method_handler)

    async def streaming(request, context):
        current_tenant.set(await authenticate(context))
        async for response in inner_stream(request, context):
            yield response

    return make(streaming, **kwargs)
