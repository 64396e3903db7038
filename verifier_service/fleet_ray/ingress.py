"""The gRPC ingress of the fleet on Ray: callers outside the cluster reach it with any Verifier client.

A Serve deployment (at most one replica per node) whose replicas each serve the Verifier gRPC service on the
same port (``SO_REUSEPORT``: several on one host share it), plus the standard health service. Each RPC is
forwarded as bytes through ``RayRouter`` (the same router a caller inside the cluster uses): verification to
the Verifier app's handle, a session's calls to the actor that holds it. So ``VerifierClient.connect(host:port)``,
``VerifierRewards``, ``SessionClient`` and the CLI's ``--server`` speak to the fleet unchanged, and get the
verdicts a caller inside the cluster gets. A replica lost under a call answers UNAVAILABLE, which those
clients retry. ``VerifyStream`` is not forwarded (UNIMPLEMENTED): send VerifyBatch calls.
"""

from __future__ import annotations

import logging

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

import verifier_service.ray_wire as ray_wire
from verifier_service.client.ray_fleet import RayRouter
from verifier_service.spec import SERVICE_NAME

log = logging.getLogger(__name__)


def _pairs(metadata) -> tuple[tuple[str, str], ...]:
    out = []
    for item in metadata or ():
        key, value = (item.key, item.value) if hasattr(item, "key") else item
        if isinstance(value, str):  # binary (-bin) metadata is not the service's
            out.append((key, value))
    return tuple(out)


class GrpcIngress:
    async def __init__(self, host: str, port: int, app: str = ray_wire.APP_NAME,
                       max_message_bytes: int = 64 * 1024 * 1024):
        self.router = RayRouter(app)
        self.server = grpc.aio.server(options=[("grpc.so_reuseport", 1),
                                               ("grpc.max_receive_message_length", max_message_bytes),
                                               ("grpc.max_send_message_length", max_message_bytes)])
        handlers = {name: grpc.unary_unary_rpc_method_handler(self._forwarder(name))
                    for name in ray_wire.VERIFY_METHODS + ray_wire.SESSION_METHODS}
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.port = self.server.add_insecure_port(f"{host}:{port}")
        await self.server.start()
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("verifier gRPC ingress on %s:%d -> Serve app %r", host, self.port, app)

    def _forwarder(self, method: str):
        async def forward(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            reply = await self.router.call(method, request, _pairs(context.invocation_metadata()),
                                           context.time_remaining())
            if not reply.ok:
                await context.abort(grpc.StatusCode[reply.code], reply.details, trailing_metadata=reply.trailing)
            return reply.payload

        return forward

    def where(self) -> dict:
        import os

        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(), "port": self.port}

    async def __del__(self):
        await self.health.enter_graceful_shutdown()
        await self.server.stop(5)


def application(host: str = "0.0.0.0", port: int = 50051, replicas: int = 1, app: str = ray_wire.APP_NAME,
                num_cpus: float = 0.5):
    """The ingress as a Serve application: ``replicas`` replicas, one per node at most, each on ``port``."""
    from ray import serve

    return serve.deployment(name="GrpcIngress", num_replicas=replicas, max_replicas_per_node=1,
                            ray_actor_options={"num_cpus": num_cpus})(GrpcIngress).bind(host, port, app)
