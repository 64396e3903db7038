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

from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.config import ServiceConfig
from verifier_service.credentials import server_credentials
from verifier_service.engine.engine import Engine
from verifier_service.engine.pool import PurePool
from verifier_service.errors import SandboxUnavailable, VerifierError
from verifier_service.sandbox import format_isolation, make_sandbox
from verifier_service.server.audit import AuditLog
from verifier_service.server.metrics import Metrics
from verifier_service.server.rpclog import RpcInterceptor
from verifier_service.server.service import VerifierServicer
from verifier_service.server.sessions import SessionManager
from verifier_service.spec import SERVICE_NAME
from verifier_service.tenancy.auth import AuthInterceptor, Tenants
from verifier_service.tenancy.catalog import Catalog

log = logging.getLogger(__name__)
ORPHAN_SWEEP_S = 300.0  # how often expired sandbox containers (of crashed replicas) are swept
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class VerifierApp:
    def __init__(self, config: ServiceConfig):
        self.config = config
        self.sandbox = make_sandbox(config)
        self.pure_pool = PurePool(config.pure_workers)
        self.engine = Engine(config, self.sandbox, self.pure_pool)
        self.tenants = Tenants.load(config.tenants) if config.tenants else None
        catalog = Catalog.load(config.catalog, check=self.engine.prepare) if config.catalog else Catalog()
        self.audit = AuditLog(config.audit_log)
        self.auth = AuthInterceptor(self.tenants, self.audit) if self.tenants is not None else None
        self.metrics = Metrics()
        self.servicer = VerifierServicer(self.engine, catalog=catalog, audit=self.audit, metrics=self.metrics)
        self.sessions = SessionManager(config, self.sandbox, self.audit, self.metrics)
        self.servicer.sessions = self.sessions
        self.metrics.watch(self._live_metrics)
        self.metrics_port: int | None = None
        self.http = None  # the HTTP front door (server/http), when http_port is set
        self.http_port: int | None = None
        self.health = health.aio.HealthServicer() if hasattr(health, "aio") else health.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.port: int | None = None
        self.sandbox_problem: str | None = None
        self._watch: asyncio.Task | None = None

    async def start(self) -> int:
        """Starts the workers and the server; returns the bound port."""
        if not port_shared(self.config):
            check_ports_free(self.config)  # a port in use stops the start before any worker or sandbox
        if self.config.http_port:  # bound first: a port that cannot be had stops the start before any sandbox
            from verifier_service.server.http import HttpFrontDoor

            self.http = HttpFrontDoor(self)
            http_host = self.config.http_host or self.config.host
            try:
                self.http_port = self.http.bind(http_host, self.config.http_port, shared=port_shared(self.config))
            except OSError as exc:
                raise VerifierError(f"cannot serve HTTP on {http_host}:{self.config.http_port}: "
                                    f"{exc.strerror or exc}") from exc
        await self.pure_pool.start()
        await self._check_sandbox()
        log.info("sandbox isolation (%s backend):\n%s", self.sandbox.backend,
                 format_isolation(self.sandbox.isolation()))
        if self.sandbox_problem is None:
            removed = await asyncio.to_thread(self.sandbox.remove_orphans_blocking)
            if removed:
                log.warning("removed %d expired sandbox container(s) left by an earlier run", removed)
        await self.sandbox.start()
        await self.sessions.start()
        limit = self.config.max_message_bytes
        interceptors = [RpcInterceptor(self.metrics)] + ([self.auth] if self.auth is not None else [])
        server = grpc.aio.server(interceptors=interceptors, options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            # only the worker processes of one `serve --workers N` share a port: a second service on a port in
            # use must fail, not take half its connections (a tenant-less one would bypass authentication)
            ("grpc.so_reuseport", 1 if port_shared(self.config) else 0),
            *self._connection_age(),
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
            self.port = 0
            bind_error = str(exc)
        else:
            bind_error = ""
        if not self.port and self.config.port:
            if self.http is not None:
                await self.http.stop()
            raise VerifierError(f"cannot serve gRPC on {address}: the port is in use (or not ours to bind)"
                                + (f": {bind_error}" if bind_error else ""))
        if self.http is not None:  # before the gRPC port: its SERVING then means both doors are open
            await self.http.start()
            log.info("HTTP front door on http://%s:%d (/run_code, /get_reward, /test_program, /test_program_stdio)",
                     self.config.http_host or self.config.host, self.http_port)
        await server.start()
        self.server = server
        self._watch = asyncio.create_task(self._watch_sandbox())
        if self.config.metrics_port:
            self.metrics_port = self.metrics.serve(self.config.metrics_host or self.config.host,
                                                   self.config.metrics_port)
            log.info("metrics on http://%s:%d/metrics", self.config.metrics_host or self.config.host,
                     self.metrics_port)
        log.info("verifier service listening on %s:%d (%s; sandbox backend %s, image %s)", self.config.host,
                 self.port, ("mutual TLS" if self.config.tls_client_ca else "TLS") if tls is not None else "plaintext",
                 self.config.sandbox_backend, self.config.sandbox_image)
        if self.tenants is None:  # a warning where others can connect
            log.log(logging.INFO if self.config.host in LOOPBACK else logging.WARNING,
                    "authentication off: no tenants file, every caller is the one local tenant (--tenants FILE "
                    "turns it on)")
        else:
            log.info("authentication on: %d tenant(s) from %s", len(self.tenants.tenants), self.config.tenants)
        log.info("catalog: %d verifier(s)%s", len(self.servicer.catalog),
                 f" from {self.config.catalog}" if self.config.catalog else "")
        return self.port

    def _connection_age(self) -> list[tuple[str, int]]:
        """Connections closed after max_connection_age_s (in-flight calls get max_timeout_s more): clients
        reconnect, re-resolve DNS and so spread over replicas added since."""
        if not self.config.max_connection_age_s:
            return []
        return [("grpc.max_connection_age_ms", int(self.config.max_connection_age_s * 1000)),
                ("grpc.max_connection_age_grace_ms", int((self.config.max_timeout_s + 30) * 1000))]

    def reload(self) -> None:
        """SIGHUP: re-reads the tenants file and the catalog. A file that fails its checks (a catalog entry
        changed under a published version) is refused with the reason, and the loaded one stays."""
        try:
            if self.config.tenants and self.auth is not None:
                self.auth.tenants = Tenants.load(self.config.tenants)
                log.info("reloaded %d tenant(s) from %s", len(self.auth.tenants.tenants), self.config.tenants)
            if self.config.catalog:
                self.servicer.catalog = Catalog.load(self.config.catalog, check=self.engine.prepare,
                                                     previous=self.servicer.catalog)
                log.info("reloaded the catalog: %d verifier(s)", len(self.servicer.catalog))
        except VerifierError as exc:
            log.error("reload refused, still serving what was loaded: %s", exc)

    def _live_metrics(self) -> dict[str, float]:
        sandbox, size = self.sandbox, self.config.max_concurrency
        idle = getattr(sandbox, "_idle", None)
        running = getattr(sandbox, "running", 0)
        return {
            "rlvr_rpcs_in_flight": self.metrics.in_flight,
            "rlvr_pending_completions": self.servicer.admission.pending,
            "rlvr_sandbox_running": running,
            "rlvr_sandbox_pool_size": size,
            "rlvr_sandbox_pool_idle": idle.qsize() if idle is not None else 0,
            "rlvr_sandbox_pool_utilisation": running / size if size else 0.0,
            "rlvr_sandbox_recycled_total": getattr(sandbox, "recycled", 0),
            "rlvr_sandbox_backend_up": 0.0 if self.sandbox_problem else 1.0,
            "rlvr_sandbox_jobs_total": getattr(sandbox, "jobs", 0),
            **{f"rlvr_sandbox_{part}_cpu_seconds_total": cpu
               for part, (cpu, _) in getattr(sandbox, "usage", {}).items()},
            **{f"rlvr_sandbox_{part}_page_faults_total": faults
               for part, (_, faults) in getattr(sandbox, "usage", {}).items()},
            **self.sessions.live_metrics(),
        }

    async def _check_sandbox(self) -> None:
        """Health: NOT_SERVING while the backend fails its check or the warm pool cannot start sandboxes."""
        try:
            await self.sandbox.check()
            pool_error = getattr(self.sandbox, "pool_error", None)
            problem = f"the warm pool cannot start sandboxes: {pool_error}" if pool_error else None
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
        if self.http is not None:
            await self.http.stop()
        if self.server is not None:
            await _maybe_await(self.health.enter_graceful_shutdown())
            await self.server.stop(self.config.shutdown_grace_s if grace is None else grace)
        await self.sessions.shutdown()
        await self.sandbox.close()
        await self.pure_pool.close()
        self.metrics.close()


SHARED_PORT_ENV = "RLVR_VERIFIER_SHARED_PORT"  # set by `serve --workers N` for its worker processes


def port_shared(config: ServiceConfig) -> bool:
    """Whether this process serves its ports together with sibling worker processes (SO_REUSEPORT)."""
    import os

    return config.workers > 1 or os.environ.get(SHARED_PORT_ENV) == "1"


def check_ports_free(config: ServiceConfig) -> None:
    """VerifierError naming the port when something listens on a port ``config`` serves (before ``serve
    --workers N`` starts its workers, which share the ports with each other and with nothing else)."""
    import socket

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


async def _maybe_await(value):
    if asyncio.iscoroutine(value):
        return await value
    return value


async def serve(config: ServiceConfig, on_reload=None) -> None:
    app = VerifierApp(config)
    try:
        await app.start()
    except BaseException:  # a port in use, found after the pools started: they go with the process
        await app.stop()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def reload() -> None:  # SIGHUP: this process, then the other workers
        app.reload()
        if on_reload is not None:
            on_reload()

    loop.add_signal_handler(signal.SIGHUP, reload)
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
        check_ports_free(config)  # the workers share the ports with each other (SO_REUSEPORT), with no one else
        # The children serve; they must not start workers of their own: no --workers flag (flags win
        # over the environment), and RLVR_VERIFIER_WORKERS=1 over a config file's value.
        child_argv, skip = [], False
        for arg in argv:
            if skip:
                skip = False
            elif arg in ("--workers", "--metrics-port"):
                skip = True
            elif not arg.startswith(("--workers=", "--metrics-port=")):
                child_argv.append(arg)
        env = dict(os.environ, RLVR_VERIFIER_WORKERS="1", **{SHARED_PORT_ENV: "1"})

        def child_env(index: int) -> dict[str, str]:  # worker i serves its metrics on metrics_port + i
            return dict(env, RLVR_VERIFIER_METRICS_PORT=str(config.metrics_port + index if config.metrics_port else 0))

        children = [subprocess.Popen([sys.executable, "-m", "verifier_service.tools.cli", *child_argv],
                                     env=child_env(i))
                    for i in range(1, config.workers)]
        log.info("started %d more worker process(es) on port %d", len(children), config.port)
    try:
        asyncio.run(serve(config, on_reload=lambda: [c.send_signal(signal.SIGHUP) for c in children]))
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(config.shutdown_grace_s + 5)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0
