"""The gRPC door's listener: the server with its interceptors (request ids and the call log, then the API key),
the servicer, health (NOT_SERVING while the app's sandbox backend is down) and reflection, on one ``App``."""

from __future__ import annotations

import asyncio
import logging
import os
import socket

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
from verifier_service.credentials import server_credentials
from verifier_service.doors.grpc.auth import AuthInterceptor
from verifier_service.doors.grpc.rpclog import RpcInterceptor
from verifier_service.doors.grpc.servicer import VerifierServicer
from verifier_service.errors import VerifierError
from verifier_service.service.app import App
from verifier_service.spec import SERVICE_NAME

log = logging.getLogger("verifier_service.server")


class GrpcDoor:
    def __init__(self, app: App):
        self.app = app
        self.config = app.config
        self.servicer = VerifierServicer(app.verifier, app.sessions)
        self.health = health.aio.HealthServicer() if hasattr(health, "aio") else health.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.interceptor: RpcInterceptor | None = None
        self.port: int | None = None
        self.tls = False
        app.health_listeners.append(self._set_health)

    async def _set_health(self, problem: str | None) -> None:
        status = health_pb2.HealthCheckResponse.NOT_SERVING if problem else health_pb2.HealthCheckResponse.SERVING
        for name in ("", SERVICE_NAME):
            await _maybe_await(self.health.set(name, status))

    def bind(self) -> int:
        """Builds the server and binds its port (not yet serving); returns the port."""
        limit = self.config.max_message_bytes
        self.interceptor = RpcInterceptor(self.app.metrics, self.config.grpc_max_calls_per_peer, self.app.pure_pool,
                                          self.config.max_message_values)
        interceptors = [self.interceptor] + ([AuthInterceptor(self.app)] if self.app.tenants is not None else [])
        server = grpc.aio.server(interceptors=interceptors, options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            # only the worker processes of one `serve --workers N` share a port: a second service on a port in
            # use must fail, not take half its connections (a tenant-less one would bypass authentication)
            ("grpc.so_reuseport", 1 if port_shared(self.config) else 0),
            *self._connection_age(),
            *self._connection_limits(),
        ])
        pb_grpc.add_VerifierServicer_to_server(self.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            server)
        address, tls = f"{self.config.host}:{self.config.port}", server_credentials(self.config)
        try:
            self.port = server.add_secure_port(address, tls) if tls is not None else server.add_insecure_port(address)
        except RuntimeError as exc:  # grpc: "Failed to bind to address"
            raise VerifierError(f"cannot serve gRPC on {address}: the port is in use (or not ours to bind): {exc}") \
                from exc
        if not self.port and self.config.port:
            raise VerifierError(f"cannot serve gRPC on {address}: the port is in use (or not ours to bind)")
        self.tls = tls is not None
        self.server = server
        return self.port

    async def start(self) -> None:
        assert self.server is not None, "bind() first"
        await self.server.start()

    def _connection_age(self) -> list[tuple[str, int]]:
        """Connections closed after max_connection_age_s (in-flight calls get max_timeout_s more): clients
        reconnect, re-resolve DNS and so spread over replicas added since."""
        if not self.config.max_connection_age_s:
            return []
        return [("grpc.max_connection_age_ms", int(self.config.max_connection_age_s * 1000)),
                ("grpc.max_connection_age_grace_ms", int((self.config.max_timeout_s + 30) * 1000))]

    def _connection_limits(self) -> list[tuple[str, int]]:
        """Against idle and abusive connections: at most grpc_max_connections open (more are closed as they are
        accepted); closed when their handshake is not done within grpc_handshake_timeout_s, or after
        grpc_max_connection_idle_s without a call; keepalive
        pings enforced (a client pinging more often than every
        5 min without calls, or at all without calls, is sent GOAWAY after 2 strikes)."""
        # (no grpc.max_concurrent_streams: with grpcio 1.85 the server crashed with SIGSEGV when VerifyStreams
        # that had stopped reading were cancelled; benchmarks/front_door_floods.py, phase unread_streams)
        return [("grpc.max_allowed_incoming_connections", self.config.grpc_max_connections),
                ("grpc.server_handshake_timeout_ms", int(self.config.grpc_handshake_timeout_s * 1000)),
                ("grpc.max_connection_idle_ms", int(self.config.grpc_max_connection_idle_s * 1000)),
                ("grpc.keepalive_permit_without_calls", 0),
                ("grpc.http2.min_recv_ping_interval_without_data_ms", 300_000),
                ("grpc.http2.max_ping_strikes", 2)]

    async def stop(self, grace: float) -> None:
        if self.server is not None:
            await _maybe_await(self.health.enter_graceful_shutdown())
            await self.server.stop(grace)


async def _maybe_await(value):
    if asyncio.iscoroutine(value):
        return await value
    return value


SHARED_PORT_ENV = "RLVR_VERIFIER_SHARED_PORT"  # set by `serve --workers N` for its worker processes


def port_shared(config: ServiceConfig) -> bool:
    """Whether this process serves its ports together with sibling worker processes (SO_REUSEPORT)."""
    return config.workers > 1 or os.environ.get(SHARED_PORT_ENV) == "1"


def check_ports_free(config: ServiceConfig) -> None:
    """VerifierError naming the port when something listens on a port ``config`` serves (before ``serve
    --workers N`` starts its workers, which share the ports with each other and with nothing else)."""
    for what, host, port in (("gRPC", config.host, config.port),
                             ("HTTP", config.http_host or config.host, config.http_port)):
        if not port:
            continue
        try:
            infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        except OSError as exc:
            raise VerifierError(f"cannot serve {what} on {host}:{port}: {exc}") from exc
        family, _, _, _, sockaddr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                raise VerifierError(f"cannot serve {what} on {host}:{port}: {exc.strerror or exc}") from exc
