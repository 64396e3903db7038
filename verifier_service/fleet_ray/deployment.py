"""The verifier as a Ray Serve application: replicas placed, health-checked, restarted and autoscaled by Ray.

``VerifierReplica`` is one Serve replica: its own in-process service (``core.CoreHandle``: warm pool, sandbox
backend, pure workers), every RPC through ``call(method, request bytes, metadata, timeout_s)``
(``verifier_service.ray_wire``). Serve spreads the replicas over the cluster's nodes (``max_replicas_per_node``
makes that strict), restarts one whose actor, worker or node dies, and calls ``check_health``: a replica whose
sandbox backend is down fails it and is replaced. With ``autoscaling`` the replica count follows the batches in
flight (Serve's ongoing requests; a batch is one request, so ``target_ongoing_requests`` is in batches).

``SessionHost`` is a plain named Ray actor (not Serve) holding sandbox sessions: a session is live interpreter
state in one sandbox, so its cells must reach the process that holds it; Serve routes each request to any
replica, while a named actor is addressed directly (the session id names it: ``ray_wire.routed_id``).

``deploy`` starts the application (and, optionally, session hosts and the gRPC ingress); ``shutdown`` removes
them. The backend per replica: ``sandbox_backend="auto"`` takes Docker where the node's engine answers and has
the sandbox image, bubblewrap otherwise.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import verifier_service.ray_wire as ray_wire
from verifier_service.config import ServiceConfig
from verifier_service.fleet_ray.core import CoreHandle
from verifier_service.ray_wire import Reply

log = logging.getLogger(__name__)


@dataclass
class FleetConfig:
    """How the fleet runs on Ray; ``service`` is each replica's own ``ServiceConfig`` (its fields, as a dict)."""

    service: dict[str, Any] = field(default_factory=dict)
    replicas: int = 1  # fixed count (ignored with autoscaling)
    autoscaling: dict[str, Any] | None = None  # Serve's autoscaling_config: min/max_replicas, target_ongoing_requests
    num_cpus: float = 1.0  # logical CPUs a replica reserves (its sandboxes run in its process tree)
    max_ongoing_requests: int = 16  # batches one replica takes at once (more wait in the caller's handle)
    max_replicas_per_node: int | None = None  # 1: never two replicas on one node
    health_check_period_s: float = 5.0
    health_check_timeout_s: float = 30.0
    graceful_shutdown_timeout_s: float = 20.0
    session_hosts: int = 0  # named actors holding sandbox sessions (0: no sessions)
    session_host_cpus: float = 1.0
    grpc_port: int = 0  # the gRPC ingress for callers outside the cluster (0: none)
    grpc_host: str = "0.0.0.0"
    grpc_replicas: int = 1  # ingress replicas, one per node at most
    app_name: str = ray_wire.APP_NAME


def resolve_backend(values: dict[str, Any]) -> dict[str, Any]:
    """``sandbox_backend="auto"``: Docker where this node's engine answers and holds the image, else bubblewrap."""
    if values.get("sandbox_backend", "auto") != "auto":
        return values
    backend = "bwrap"
    try:
        import docker

        client = docker.from_env(timeout=5)
        try:
            client.ping()
            client.images.get(values.get("sandbox_image") or ServiceConfig().sandbox_image)
            backend = "docker"
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - no engine, no image, no permission: this node uses bubblewrap
        log.info("no usable Docker engine on this node (%s): the bwrap backend", type(exc).__name__)
    return {**values, "sandbox_backend": backend}


def service_config(values: dict[str, Any]) -> ServiceConfig:
    values = resolve_backend(dict(values))
    # a replica never listens: the fleet's ingress is Serve's (handles) or fleet_ray.ingress
    values.update(port=0, http_port=0, metrics_port=values.get("metrics_port", 0), workers=1)
    return ServiceConfig(**values)


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


class VerifierReplica:
    """One Serve replica: an in-process verifier service."""

    async def __init__(self, service: dict[str, Any]):
        self.core = CoreHandle(service_config(service))
        await self.core.start()
        log.info("verifier replica up on node %s (%s backend)", _node_id()[:12], self.core.config.sandbox_backend)

    async def call(self, method: str, payload: bytes, metadata=(), timeout_s: float | None = None) -> Reply:
        return await self.core.call(method, payload, metadata, timeout_s)

    async def check_health(self) -> None:
        problem = self.core.problem()
        if problem:
            raise RuntimeError(f"sandbox backend unavailable: {problem}")

    def where(self) -> dict[str, Any]:
        """This replica's node, process and backend (tests, the benchmark, operators)."""
        import os

        return {"node_id": _node_id(), "pid": os.getpid(), "backend": self.core.config.sandbox_backend,
                "pending": self.core.pending()}

    async def __del__(self):
        await self.core.stop()


class SessionHost:
    """A named actor holding sandbox sessions (its own service, used for sessions only)."""

    async def __init__(self, service: dict[str, Any]):
        self.core = CoreHandle(service_config(service))
        await self.core.start()

    async def call(self, method: str, payload: bytes, metadata=(), timeout_s: float | None = None) -> Reply:
        if method not in ray_wire.SESSION_METHODS:
            return Reply("UNIMPLEMENTED", f"a session host serves sessions only, not {method}")
        return await self.core.call(method, payload, metadata, timeout_s)

    def where(self) -> dict[str, Any]:
        import os

        return {"node_id": _node_id(), "pid": os.getpid()}

    async def stop(self) -> None:
        await self.core.stop()


def application(config: FleetConfig):
    """The Serve application (``serve.run(application(config), name=config.app_name)``)."""
    from ray import serve

    options: dict[str, Any] = {
        "name": "Verifier",
        "ray_actor_options": {"num_cpus": config.num_cpus},
        "max_ongoing_requests": config.max_ongoing_requests,
        "health_check_period_s": config.health_check_period_s,
        "health_check_timeout_s": config.health_check_timeout_s,
        "graceful_shutdown_timeout_s": config.graceful_shutdown_timeout_s,
    }
    if config.max_replicas_per_node:
        options["max_replicas_per_node"] = config.max_replicas_per_node
    if config.autoscaling:
        options["autoscaling_config"] = config.autoscaling
    else:
        options["num_replicas"] = config.replicas
    return serve.deployment(**options)(VerifierReplica).bind(config.service)


def start_session_hosts(config: FleetConfig) -> list:
    """``config.session_hosts`` named, detached actors, spread over the nodes, restarted by Ray when they die
    (a restarted host starts empty: its sessions ended, and their ids say so)."""
    import ray

    cls = ray.remote(SessionHost)
    hosts = []
    for index in range(config.session_hosts):
        hosts.append(cls.options(name=ray_wire.host_name(index), namespace=ray_wire.NAMESPACE, lifetime="detached",
                                 get_if_exists=True, max_restarts=-1, num_cpus=config.session_host_cpus,
                                 scheduling_strategy="SPREAD").remote(config.service))
    ray.get([h.where.remote() for h in hosts])  # started (or failed, with the reason) before we return
    return hosts


def deploy(config: FleetConfig):
    """Starts (or updates) the fleet on the Ray cluster this process is connected to; returns the app's handle."""
    from ray import serve

    if config.session_hosts:
        start_session_hosts(config)
    handle = serve.run(application(config), name=config.app_name, route_prefix=None)
    if config.grpc_port:
        from verifier_service.fleet_ray import ingress

        serve.run(ingress.application(config.grpc_host, config.grpc_port, config.grpc_replicas, config.app_name),
                  name=ray_wire.GRPC_APP_NAME, route_prefix=None)
    return handle


def shutdown(config: FleetConfig | None = None) -> None:
    """Removes the app and the session hosts (their sandboxes go with them)."""
    import ray
    from ray import serve

    app = config.app_name if config is not None else ray_wire.APP_NAME
    if ray_wire.GRPC_APP_NAME in serve.status().applications:
        serve.delete(ray_wire.GRPC_APP_NAME)
    serve.delete(app)
    for name in ray.util.list_named_actors(all_namespaces=True):
        if name.get("namespace") == ray_wire.NAMESPACE and name["name"].startswith(ray_wire.SESSION_HOST_PREFIX):
            actor = ray.get_actor(name["name"], namespace=ray_wire.NAMESPACE)
            try:
                ray.get(actor.stop.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a host that cannot stop cleanly is killed all the same
                log.warning("session host %s did not stop cleanly", name["name"])
            ray.kill(actor, no_restart=True)


def build(args: dict[str, Any]):
    """The application builder of a Serve config file (``import_path: verifier_service.fleet_ray.deployment:build``,
    deploy/ray/serve.yaml): ``args`` are ``FleetConfig`` fields (``service``: the replicas' ServiceConfig fields).
    Session hosts and the gRPC ingress are not Serve deployments of this app: start them with ``deploy``."""
    unknown = set(args) - {f.name for f in dataclasses.fields(FleetConfig)}
    if unknown:
        raise ValueError(f"unknown fleet settings {sorted(unknown)}; known: "
                         f"{', '.join(f.name for f in dataclasses.fields(FleetConfig))}")
    return application(FleetConfig(**args))
