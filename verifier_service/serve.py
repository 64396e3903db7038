"""The service process: one ``App`` (``service/app.py``) with its doors, the gRPC door (``doors/grpc``) and, with
``http_port``, the HTTP door (``doors/http``); the metrics port; signals (SIGINT / SIGTERM stop, SIGHUP reloads);
worker processes. ``verifier-service serve`` runs ``serve_workers``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import resource
import signal
from typing import Any

from verifier_service.config import ServiceConfig
from verifier_service.doors.grpc.server import SHARED_PORT_ENV, GrpcDoor, check_ports_free, port_shared
from verifier_service.errors import VerifierError
from verifier_service.service.app import App
from verifier_service.service.loop_share import LoopShare

log = logging.getLogger("verifier_service.server")
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def raise_fd_limit() -> tuple[int, int]:
    """Raises the soft open-file limit to the hard one (a flood of connections then meets the door's own caps long
    before the process runs out of descriptors); returns (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    return soft, hard


class VerifierApp(App):
    """An ``App`` with its doors: ``start`` binds and starts them (returns the gRPC port), ``stop`` drains them."""

    def __init__(self, config: ServiceConfig):
        super().__init__(config)
        self.grpc = GrpcDoor(self)
        self.servicer = self.grpc.servicer
        self.http: Any = None  # the HTTP door (doors/http), when http_port is set
        self.http_port: int | None = None
        self.metrics_port: int | None = None
        self.port: int | None = None

    async def start(self) -> int:  # type: ignore[override]
        """Starts the app and its doors; returns the gRPC door's port."""
        if not port_shared(self.config):
            check_ports_free(self.config)  # a port in use stops the start before any worker or sandbox
        if self.config.http_port:  # bound first: a port that cannot be had stops the start before any sandbox
            from verifier_service.doors.http import HttpFrontDoor

            self.http = HttpFrontDoor(self)
            http_host = self.config.http_host or self.config.host
            try:
                self.http_port = self.http.bind(http_host, self.config.http_port, shared=port_shared(self.config))
            except OSError as exc:
                raise VerifierError(f"cannot serve HTTP on {http_host}:{self.config.http_port}: "
                                    f"{exc.strerror or exc}") from exc
        soft, hard = raise_fd_limit()  # a flood of connections meets the doors' caps, not the process's fd limit
        log.info("open-file limit %d (hard %d); %d kept for the engine and the sandboxes (fd_reserve)", soft, hard,
                 self.config.fd_reserve)
        await super().start()
        self.port = self.grpc.bind()
        if self.http is not None:  # before the gRPC port: its SERVING then means both doors are open
            await self.http.start()
            log.info("HTTP front door on http://%s:%d (/run_code, /get_reward, /test_program, /test_program_stdio)",
                     self.config.http_host or self.config.host, self.http_port)
        await self.grpc.start()
        if self.config.metrics_port:
            self.metrics_port = self.metrics.serve(self.config.metrics_host or self.config.host,
                                                   self.config.metrics_port)
            log.info("metrics on http://%s:%d/metrics", self.config.metrics_host or self.config.host,
                     self.metrics_port)
        log.info("verifier service listening on %s:%d (%s; sandbox backend %s, image %s)", self.config.host,
                 self.port, ("mutual TLS" if self.config.tls_client_ca else "TLS") if self.grpc.tls else "plaintext",
                 self.config.sandbox_backend, self.config.sandbox_image)
        if self.tenants is None:  # a warning where others can connect
            log.log(logging.INFO if self.config.host in LOOPBACK else logging.WARNING,
                    "authentication off: no tenants file, every caller is the one local tenant (--tenants FILE "
                    "turns it on)")
        else:
            log.info("authentication on: %d tenant(s) from %s", len(self.tenants.tenants), self.config.tenants)
        log.info("catalog: %d verifier(s)%s", len(self.verifier.catalog),
                 f" from {self.config.catalog}" if self.config.catalog else "")
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.http is not None:
            await self.http.stop()
        await self.grpc.stop(self.config.shutdown_grace_s if grace is None else grace)
        await super().stop()


async def serve(config: ServiceConfig, on_reload=None) -> None:
    if 0 < config.loop_share < 1:  # before any call's task is made: each is driven by it
        LoopShare(config.loop_share, long_step_s=config.loop_long_step_s).install(asyncio.get_running_loop())
    app = VerifierApp(config)
    try:
        await app.start()
    except BaseException:  # a port in use, found after the pools started: they go with the process
        await app.stop()
        raise
    # What start-up made (modules, pools, servers) lives as long as the process: frozen, the collector's full
    # passes no longer walk it. Each such pass stops the event loop, so every tenant's calls, for as long as it
    # takes, and a flood of calls makes them frequent (measured: 16 full passes in one flood of large batches,
    # 373 ms at most and 3.2 s in all; frozen, 90 ms and 0.6 s).
    gc.freeze()
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
        def reload_children() -> None:
            for child in children:
                child.send_signal(signal.SIGHUP)

        asyncio.run(serve(config, on_reload=reload_children))
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(config.shutdown_grace_s + 5)
            except subprocess.TimeoutExpired:
                child.kill()
    return 0
