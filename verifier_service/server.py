"""Building and serving the gRPC server, in two steps.

``VerifierApp`` owns the resources (sandbox backend, pure worker pool, health
watcher); ``start`` binds and starts the server, ``stop`` drains it
gracefully. ``serve`` runs one until SIGINT / SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
from verifier_service.engine import Engine
from verifier_service.errors import SandboxUnavailable
from verifier_service.pool import PurePool
from verifier_service.sandbox import format_isolation, make_sandbox
from verifier_service.service import VerifierServicer

log = logging.getLogger(__name__)
ORPHAN_SWEEP_S = 300.0  # how often expired sandbox containers (of crashed replicas) are swept
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Verifier"].full_name


class VerifierApp:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.sandbox = make_sandbox(config)
        self.pure_pool = PurePool(config.pure_workers)
        self.engine = Engine(config, self.sandbox, self.pure_pool)
        self.servicer = VerifierServicer(self.engine)
        self.health = health.aio.HealthServicer() if hasattr(health, "aio") else health.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.port: int | None = None
        self.sandbox_problem: str | None = None
        self._watch: asyncio.Task | None = None

    async def start(self) -> int:
        """Starts the workers and the server; returns the bound port."""
        await self.pure_pool.start()
        await self._check_sandbox()
        log.info("sandbox isolation (%s backend):\n%s", self.sandbox.backend,
                 format_isolation(self.sandbox.isolation()))
        if self.sandbox_problem is None:
            removed = await asyncio.to_thread(self.sandbox.remove_orphans_blocking)
            if removed:
                log.warning("removed %d expired sandbox container(s) left by an earlier run", removed)
        await self.sandbox.start()
        limit = self.config.max_message_bytes
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 1),  # several worker processes may serve one port
        ])
        pb_grpc.add_VerifierServicer_to_server(self.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            server)
        self.port = server.add_insecure_port(f"{self.config.host}:{self.config.port}")
        await server.start()
        self.server = server
        self._watch = asyncio.create_task(self._watch_sandbox())
        log.info("verifier service listening on %s:%d (sandbox backend %s)", self.config.host, self.port,
                 self.config.sandbox_backend)
        return self.port

    async def _check_sandbox(self) -> None:
        try:
            await self.sandbox.check()
            problem = None
        except SandboxUnavailable as exc:
            problem = str(exc)
        if problem != self.sandbox_problem:
            if problem:
                log.error("sandbox backend unavailable: %s", problem)
            elif self.sandbox_problem:
                log.info("sandbox backend available again")
        self.sandbox_problem = problem
        status = health_pb2.HealthCheckResponse.NOT_SERVING if problem else health_pb2.HealthCheckResponse.SERVING
        for name in ("", SERVICE_NAME):
            await _maybe_await(self.health.set(name, status))

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

    async def stop(self, grace: float | None = None) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.server is not None:
            await _maybe_await(self.health.enter_graceful_shutdown())
            await self.server.stop(self.config.shutdown_grace_s if grace is None else grace)
        await self.sandbox.close()
        await self.pure_pool.close()


async def _maybe_await(value):
    if asyncio.iscoroutine(value):
        return await value
    return value


async def serve(config: ServiceConfig) -> None:
    app = VerifierApp(config)
    await app.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        log.info("shutting down (grace %.0fs)", config.shutdown_grace_s)
    finally:
        await app.stop()


def serve_workers(config: ServiceConfig, argv: list[str]) -> int:
    """Serves in this process, plus ``workers - 1`` more on the same port (the kernel spreads the
    connections). Each worker has its own warm pool; SIGINT / SIGTERM stop them all."""
    import os
    import subprocess
    import sys

    children = []
    if config.workers > 1:
        # The children serve; they must not start workers of their own: no --workers flag (flags win
        # over the environment), and RLVR_VERIFIER_WORKERS=1 over a config file's value.
        child_argv, skip = [], False
        for arg in argv:
            if skip:
                skip = False
            elif arg == "--workers":
                skip = True
            elif not arg.startswith("--workers="):
                child_argv.append(arg)
        env = dict(os.environ, RLVR_VERIFIER_WORKERS="1")
        children = [subprocess.Popen([sys.executable, "-m", "verifier_service.cli", *child_argv], env=env)
                    for _ in range(config.workers - 1)]
        log.info("started %d more worker process(es) on port %d", len(children), config.port)
    try:
        asyncio.run(serve(config))
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(config.shutdown_grace_s + 5)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0
