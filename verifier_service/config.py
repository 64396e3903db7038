"""Typed service configuration: defaults < YAML file < environment < flags.

Every field carries ``metadata["help"]``: the same class drives the CLI flags
(``--max-concurrency``), the environment (``RLVR_VERIFIER_MAX_CONCURRENCY``)
and the YAML keys (``max_concurrency``). Nothing is built at import time.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import MISSING as _NO_DEFAULT
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from verifier_service.errors import VerifierError
from verifier_service.special_tokens import DEFAULT_SETTING as DEFAULT_STRIP_TOKENS

ENV_PREFIX = "RLVR_VERIFIER_"
SANDBOX_BACKENDS = ("docker", "bwrap")


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ServiceConfig:
    host: str = _f("127.0.0.1", "address to listen on ('[::]' for every interface)")
    port: int = _f(50051, "port to listen on (0 picks a free one)")
    sandbox_backend: str = _f("docker", "what isolates untrusted code: 'docker' (containers) or 'bwrap' (bubblewrap "
                                        "namespaces, for hosts without Docker)")
    sandbox_image: str = _f("rlvr-sandbox-python:latest", "Docker image that runs untrusted code")
    sandbox_langs_image: str = _f("rlvr-sandbox-langs:latest", "Docker image that runs Java, JavaScript, TypeScript, "
                                                               "Go and Rust (sandboxes/langs)")
    sandbox_runtime: str = _f("", "Docker runtime for sandboxes ('' = engine default, 'runsc' = gVisor)")
    docker_url: str = _f("", "Docker engine address ('' = DOCKER_HOST or the local socket)")
    sandbox_transport: str = _f("auto", "how jobs reach a warm container's runner: 'socket' (a Unix socket of the "
                                        "service's, bound in read-only: past the engine's stream copies), 'attach' "
                                        "(the container's stdin/stdout through the engine), or 'auto' (socket with "
                                        "a local engine and runc, attach otherwise: gVisor cannot reach host sockets)")
    sandbox_labels: str = _f("", "extra labels on every sandbox container: 'key=value,key2=value2'")
    bwrap_path: str = _f("bwrap", "bwrap backend: the bubblewrap binary (a name on PATH or a path)")
    bwrap_python: str = _f("", "bwrap backend: the interpreter that runs code in the sandbox ('' = this service's "
                               "own); its directories are bound read-only")
    bwrap_runner_dir: str = _f("", "bwrap backend: the sandbox runner's directory ('' = the one this package "
                                   "ships, verifier_service/runner)")
    bwrap_langs_cache: str = _f("", "bwrap backend: where Go's standard library and Rust's crates are built once "
                                    "for the host's toolchains, bound in every sandbox ('' = "
                                    "/var/cache/rlvr-verifier/bwrap-langs as root, else ~/.cache/rlvr-verifier/"
                                    "bwrap-langs); it must be reachable by the sandboxes' uid")
    bwrap_cgroup: str = _f("auto", "bwrap backend: cgroup limits per sandbox: 'auto' (where this process may make "
                                   "child cgroups), 'off', or a cgroup v2 directory delegated to the service")
    bwrap_unprivileged: str = _f("auto", "bwrap backend, service running as root: run each sandbox as an "
                                         "unprivileged host uid ('auto': when every path it needs is reachable; "
                                         "'on'; 'off': host root)")
    bwrap_allow_host_root: bool = _f(False, "bwrap backend, service running as root: allow sandboxes to run as host "
                                            "root (all capabilities dropped) where an unprivileged uid cannot reach "
                                            "the interpreter; false (the default): the backend refuses to start and "
                                            "says why (give --bwrap-python a world-readable interpreter)")
    bwrap_host_uid: int = _f(2_000_000_000, "bwrap backend: the unused host uid (and gid) sandboxes run as when "
                                            "unprivileged")
    sandbox_seccomp: bool = _f(True, "the service's seccomp deny-list in every sandbox (Docker: in place of Docker's "
                                     "default profile, also under gVisor; bwrap: bwrap --seccomp); false: Docker's "
                                     "default profile, none under bwrap")
    max_concurrency: int = _f(4, "sandbox containers running at once (the warm pool's size)")
    sandbox_pool: bool = _f(True, "keep warm sandbox containers (false: a fresh container per check)")
    # Each job is cleaned up after itself (every process killed and reaped, scratch dirs scrubbed, SysV IPC
    # checked): replacing a container is defence in depth, and a start costs about as much CPU as 30 jobs.
    pool_max_jobs: int = _f(1000, "jobs a warm container runs before it is replaced")
    pool_max_age_s: float = _f(600.0, "seconds a warm container lives before it is replaced")
    max_pending: int = _f(4096, "completions admitted (running + queued) before RESOURCE_EXHAUSTED")
    max_pending_bytes: int = _f(512 * 1024 * 1024, "bytes of requests (completions, specs) admitted and not yet "
                                "answered, every tenant together, before RESOURCE_EXHAUSTED")
    tenant_pending_bytes: int = _f(256 * 1024 * 1024, "bytes of requests one tenant has admitted and not yet "
                                   "answered before RESOURCE_EXHAUSTED (its share of max_pending_bytes)")
    max_batch_size: int = _f(2048, "completions in one VerifyBatch request")
    max_completion_bytes: int = _f(256 * 1024, "largest completion accepted")
    max_message_bytes: int = _f(64 * 1024 * 1024, "largest gRPC message accepted")
    max_message_values: int = _f(262144, "values (fields set, repeated items) of one gRPC message; one over 64 KiB "
                                         "is parsed first in a pure worker, and one holding more is "
                                         "RESOURCE_EXHAUSTED there")
    memory_mb: int = _f(512, "memory limit of a sandbox container (no swap)")
    pids_limit: int = _f(64, "process limit of a sandbox container")
    cpus: float = _f(1.0, "CPU limit of a sandbox container")
    tmpfs_mb: int = _f(64, "size of the sandbox's writable /tmp")
    file_size_mb: int = _f(16, "largest file a sandboxed process may write")
    open_files: int = _f(256, "open-file limit of a sandboxed process")
    output_limit_bytes: int = _f(1024 * 1024, "stdout a sandboxed step may print before it is killed")
    default_timeout_s: float = _f(10.0, "time limit of a check whose spec sets none")
    max_timeout_s: float = _f(120.0, "largest time limit a spec may ask for")
    spec_check_timeout_s: float = _f(10.0, "time limit of a spec's slow checks (a math gold's parse), run once per "
                                          "spec in a pure worker: a spec over it is refused (INVALID_ARGUMENT)")
    compile_timeout_s: float = _f(30.0, "time limit of compiling a C++ solution")
    max_job_s: float = _f(60.0, "longest a sandbox job may run in all (a compile and every case; its longest step "
                                "always gets its own limit): past it the job stops and its unfinished cases are "
                                "TIMEOUT")
    result_cache_size: int = _f(0, "results kept by (spec, completion, sandbox image); 0 = no cache")
    pure_workers: int = _f(2, "worker processes for the in-process verifiers (json, tool call, math, format)")
    loop_share: float = _f(0.25, "the part of the event loop's time one tenant may use above every other tenant "
                                 "that uses it too: past it, that tenant's next steps wait (0 = no bound)")
    loop_long_step_s: float = _f(0.0005, "a step of a tenant's call whose CPU time is past this counts (its CPU time "
                                        "/ this, at most 10) times its length against loop_share: every other "
                                        "call waits behind it whole (0 = each step counts its length)")
    health_interval_s: float = _f(5.0, "how often the sandbox backend is checked for the health service")
    workers: int = _f(1, "server processes sharing the port (SO_REUSEPORT), each with its own warm pool")
    shutdown_grace_s: float = _f(10.0, "seconds in-flight RPCs get to finish on shutdown")
    max_connection_age_s: float = _f(0.0, "close each client connection (gracefully) after this many seconds, so "
                                          "that clients re-resolve DNS and find new replicas (0 = never)")
    # Sandbox sessions (tool-integrated RL): a live interpreter per session, each in a sandbox of its own.
    max_sessions: int = _f(256, "live sandbox sessions this process holds at most (each owns one sandbox)")
    session_spares: int = _f(8, "warm sandboxes kept ready for opening sessions, from the first open on (0: each "
                                      "open starts one)")
    session_cell_timeout_s: float = _f(10.0, "a session cell's time limit when the client sets none (and the most "
                                             "it may ask: max_timeout_s)")
    session_output_limit_bytes: int = _f(64 * 1024, "a session cell's stdout + stderr cap by default (at most "
                                                    "output_limit_bytes)")
    session_budget_s: float = _f(600.0, "wall-clock seconds of all a session's cells by default (at most 10x that)")
    session_idle_ttl_s: float = _f(300.0, "a session idle this long is closed (the most a client may ask: 10x)")
    session_max_lifetime_s: float = _f(3600.0, "a session is closed this long after it opened, whatever it asked")
    tenant_max_sessions: int = _f(0, "live sessions of one tenant (0: only max_sessions); a tenant's own "
                                     "max_sessions in the tenants file wins")
    session_open_rate: float = _f(0.0, "sessions one tenant may open per second, burst 2x and at least 2 (0: no "
                                       "limit); a tenant's session_rate in the tenants file wins")
    log_level: str = _f("INFO", "logging level")
    log_format: str = _f("text", "log lines as 'text' or 'json' (one object per line, with the RPC's request id)")
    metrics_port: int = _f(0, "port of the Prometheus /metrics endpoint (0 = off; with workers > 1, worker i "
                              "serves on metrics_port + i)")
    metrics_host: str = _f("", "address the metrics endpoint binds ('' = the service's host)")
    http_port: int = _f(0, "port of the HTTP/JSON front door: SandboxFusion /run_code, OpenRLHF /get_reward, "
                           "open-instruct /test_program (0 = off; worker processes share it)")
    http_host: str = _f("", "address the HTTP front door binds ('' = the service's host)")
    http_max_body_bytes: int = _f(16 * 1024 * 1024, "largest HTTP request body accepted, as sent and once inflated "
                                                    "(gzip or deflate: read in chunks, never inflated past it); a "
                                                    "larger one is 413")
    http_max_body_values: int = _f(131072, "JSON values (array items, object keys and values) of one HTTP request "
                                           "body; a body over 64 KiB is parsed in a pure worker, and one holding "
                                           "more is 413 there")
    openrlhf_strip_tokens: str = _f(DEFAULT_STRIP_TOKENS, "special tokens taken off the end of an OpenRLHF "
                                    "response (/get_reward; it decodes with them), comma-separated ('' = none)")
    # The doors under hostile clients (docs/security.md, "Limits at the doors").
    http_max_connections: int = _f(1024, "open HTTP connections at once; one more is answered 503 and closed (also "
                                         "held under the open-file limit minus fd_reserve)")
    http_max_connections_per_peer: int = _f(64, "open HTTP connections from one client address; one more is "
                                                "answered 503 and closed")
    http_idle_timeout_s: float = _f(15.0, "an HTTP connection that has not sent a whole request header this long "
                                          "after it opened or after its last answer is closed (slow headers, idle "
                                          "keep-alive)")
    http_body_timeout_s: float = _f(60.0, "seconds an HTTP request body may take to arrive (408 past it)")
    http_body_budget_bytes: int = _f(64 * 1024 * 1024, "request body bytes the HTTP door holds at once, every "
                                                       "tenant together (over it: 429, retry)")
    http_tenant_body_budget_bytes: int = _f(32 * 1024 * 1024, "request body bytes the HTTP door holds at once for "
                                                              "one tenant (over it: 429, retry)")
    http_tenant_body_reads: int = _f(1, "large request bodies (over 1 MiB, or of no declared length) the HTTP door "
                                        "reads at once for one tenant; the others wait unread (their senders held "
                                        "by TCP flow control), so that one tenant's uploads do not fill the event "
                                        "loop every tenant's calls go through")
    fd_reserve: int = _f(1024, "file descriptors kept free for the Docker engine, the sandboxes and the logs: the "
                               "soft open-file limit is raised to the hard one at start, and the HTTP door holds at "
                               "most that limit minus this many connections")
    grpc_max_connection_idle_s: float = _f(300.0, "a gRPC connection with no call this long is closed (GOAWAY)")
    grpc_max_connections: int = _f(1024, "open gRPC connections at once; one more is closed as it is accepted")
    grpc_handshake_timeout_s: float = _f(20.0, "a gRPC connection that has not completed its handshake (TLS, HTTP/2 "
                                               "settings) this long after it opened is closed")
    grpc_max_calls_per_peer: int = _f(256, "gRPC calls in flight from one client address; one more is "
                                           "RESOURCE_EXHAUSTED (retry after 1 s)")
    auth_refusal_burst: int = _f(20, "refused authentications (no key, a wrong key) from one client address answered "
                                     "at once per second; each further one that second is answered after "
                                     "auth_refusal_delay_s (a keyless flood then holds its connections, not the "
                                     "service)")
    auth_refusal_delay_s: float = _f(1.0, "how long a refused authentication past auth_refusal_burst waits for its "
                                          "answer (HTTP 401, gRPC UNAUTHENTICATED)")
    stream_max_batches: int = _f(4, "VerifyStream batches read ahead and not yet answered, per stream: a client "
                                    "that stops reading answers stops being read")
    max_spec_bytes: int = _f(4 * 1024 * 1024, "largest spec of one request (serialized; checked before it is "
                                              "parsed): its schema, tests and cases together")
    jupyter_max_output_bytes: int = _f(8 * 1024 * 1024, "/run_jupyter: output of all a request's cells together "
                                                        "(stdout, stderr, values, tracebacks); past it the cells "
                                                        "left are not run")
    log_repeat_burst: int = _f(20, "log lines of one kind (same logger, message and client) per log_repeat_interval_s; "
                                   "more are counted and summed up in one line per interval")
    log_repeat_interval_s: float = _f(10.0, "the interval of log_repeat_burst")
    # Tenancy (docs/tenancy.md).
    tenants: str = _f("", "YAML file of tenants: API key hashes, quotas, catalog namespaces ('' = no authentication)")
    catalog: str = _f("", "directory of catalog verifiers (team/name@version files and catalog.lock)")
    tls_cert: str = _f("", "PEM certificate chain of the listener ('' = plaintext)")
    tls_key: str = _f("", "PEM private key of tls_cert")
    tls_client_ca: str = _f("", "PEM CA bundle: require client certificates signed by it (mutual TLS)")
    audit_log: str = _f("", "file the audit log's JSON lines are appended to ('' = the service log)")

    def validate(self) -> ServiceConfig:
        problems = []
        for name in ("max_concurrency", "max_pending", "max_pending_bytes", "tenant_pending_bytes", "max_batch_size",
                     "max_completion_bytes", "max_message_bytes", "max_message_values", "http_max_body_bytes",
                     "http_max_body_values", "memory_mb", "pids_limit", "tmpfs_mb", "file_size_mb",
                     "open_files", "output_limit_bytes", "pure_workers", "pool_max_jobs", "workers", "max_sessions",
                     "session_output_limit_bytes", "http_max_connections", "http_max_connections_per_peer",
                     "grpc_max_connections", "grpc_max_calls_per_peer", "http_body_budget_bytes", "auth_refusal_burst",
                     "http_tenant_body_budget_bytes", "http_tenant_body_reads",
                     "stream_max_batches", "max_spec_bytes", "jupyter_max_output_bytes", "log_repeat_burst",
                     "cpus", "default_timeout_s", "max_timeout_s", "spec_check_timeout_s", "compile_timeout_s",
                     "max_job_s", "health_interval_s",
                     "pool_max_age_s", "session_cell_timeout_s", "session_budget_s", "session_idle_ttl_s",
                     "session_max_lifetime_s", "http_idle_timeout_s", "http_body_timeout_s",
                     "grpc_max_connection_idle_s", "grpc_handshake_timeout_s", "log_repeat_interval_s",
                     "auth_refusal_delay_s"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive")
        if self.default_timeout_s > self.max_timeout_s:
            problems.append("default_timeout_s must not exceed max_timeout_s")
        for name in ("session_spares", "tenant_max_sessions", "session_open_rate", "max_connection_age_s", "fd_reserve",
                     "result_cache_size"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative")
        if not 0 <= self.loop_share <= 1:
            problems.append("loop_share must be between 0 and 1")
        if not 0 <= self.loop_long_step_s <= 1:
            problems.append("loop_long_step_s must be between 0 and 1")
        if any("=" not in item for item in self.sandbox_labels.split(",") if item.strip()):
            problems.append("sandbox_labels must be key=value pairs separated by commas")
        if self.sandbox_transport not in ("auto", "socket", "attach"):
            problems.append(f"sandbox_transport must be auto, socket or attach (got {self.sandbox_transport!r})")
        if self.sandbox_backend not in SANDBOX_BACKENDS:
            problems.append(f"sandbox_backend must be one of {', '.join(SANDBOX_BACKENDS)} "
                            f"(got {self.sandbox_backend!r})")
        if not self.bwrap_path:
            problems.append("bwrap_path must name the bubblewrap binary")
        if self.bwrap_cgroup not in ("auto", "off") and not self.bwrap_cgroup.startswith("/"):
            problems.append(f"bwrap_cgroup must be 'auto', 'off' or an absolute cgroup directory "
                            f"(got {self.bwrap_cgroup!r})")
        if self.bwrap_unprivileged not in ("auto", "on", "off"):
            problems.append(f"bwrap_unprivileged must be auto, on or off (got {self.bwrap_unprivileged!r})")
        if not 0 < self.bwrap_host_uid < 2**31 - 1:
            problems.append("bwrap_host_uid must be between 1 and 2**31 - 2")
        if self.workers > 1 and self.port == 0:
            problems.append("workers > 1 needs a fixed port (they share it)")
        if bool(self.tls_cert) != bool(self.tls_key):
            problems.append("tls_cert and tls_key go together")
        if self.tls_client_ca and not self.tls_cert:
            problems.append("tls_client_ca needs tls_cert and tls_key (mutual TLS runs over TLS)")
        if not 0 <= self.port <= 65535:
            problems.append("port must be in 0..65535")
        if not 0 <= self.http_port <= 65535:
            problems.append("http_port must be in 0..65535")
        if not 0 <= self.metrics_port <= 65535 - self.workers:
            problems.append("metrics_port must be in 0..65535 (one port per worker)")
        if self.log_format not in ("text", "json"):
            problems.append(f"log_format must be text or json (got {self.log_format!r})")
        if problems:
            raise VerifierError("invalid configuration: " + "; ".join(problems))
        return self


def _convert(name: str, typ: Any, raw: Any) -> Any:
    typ = {"int": int, "float": float, "str": str, "bool": bool}.get(typ, typ) if isinstance(typ, str) else typ
    if typ is bool:
        if isinstance(raw, bool):
            return raw
        if str(raw).lower() in ("true", "1", "yes", "false", "0", "no"):
            return str(raw).lower() in ("true", "1", "yes")
        raise VerifierError(f"config {name}: cannot read {raw!r} as true/false")
    try:
        return typ(raw)
    except (TypeError, ValueError) as exc:
        raise VerifierError(f"config {name}: cannot read {raw!r} as {typ.__name__}") from exc


# Settings of a listening service only: an embedded service (verify, inspect) listens on loopback for its own
# process, without TLS, tenants, metrics or worker processes.
SERVER_ONLY = ("host", "port", "workers", "shutdown_grace_s", "max_connection_age_s", "metrics_port", "metrics_host",
               "http_port", "http_host", "http_max_body_bytes", "openrlhf_strip_tokens", "http_max_connections",
               "http_max_connections_per_peer", "http_idle_timeout_s", "http_body_timeout_s", "http_body_budget_bytes",
               "http_tenant_body_budget_bytes", "http_tenant_body_reads", "fd_reserve", "grpc_max_connection_idle_s",
               "grpc_max_connections",
               "grpc_handshake_timeout_s", "grpc_max_calls_per_peer", "auth_refusal_burst", "auth_refusal_delay_s",
               "stream_max_batches", "jupyter_max_output_bytes",
               "tenants", "tls_cert", "tls_key", "tls_client_ca", "audit_log", "health_interval_s", "max_pending",
               "max_pending_bytes", "tenant_pending_bytes",
               "max_message_bytes", "max_batch_size", "max_sessions", "session_spares", "session_cell_timeout_s",
               "session_output_limit_bytes", "session_budget_s", "session_idle_ttl_s", "session_max_lifetime_s",
               "tenant_max_sessions", "session_open_rate")
SANDBOX_SETTINGS = ("sandbox_backend", "sandbox_image", "sandbox_langs_image", "sandbox_runtime", "docker_url",
                    "sandbox_transport",
                    "sandbox_labels", "bwrap_path", "bwrap_python", "bwrap_runner_dir", "bwrap_langs_cache",
                    "bwrap_cgroup",
                    "bwrap_unprivileged", "bwrap_allow_host_root", "bwrap_host_uid",
                    "sandbox_seccomp", "memory_mb", "pids_limit", "cpus",
                    "tmpfs_mb", "file_size_mb", "open_files", "max_concurrency", "sandbox_pool", "pool_max_jobs",
                    "pool_max_age_s", "log_level")


def add_config_flags(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None,
                     leave_out: tuple[str, ...] = (), title: str = "") -> None:
    """One ``--flag`` per config field (``only`` those, none of ``leave_out``); unset flags stay None so they
    do not override. ``title`` groups them under a heading of the command's help."""
    group = parser.add_argument_group(title) if title else parser
    group.add_argument("--config", type=Path, help="YAML file with service settings")
    for f in fields(ServiceConfig):
        if (only is not None and f.name not in only) or f.name in leave_out:
            continue
        group.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, default=None,
                           help=f"{f.metadata['help']} (default: {f.default!r})")


# RLVR_VERIFIER_* variables the clients read (the service's settings are the ServiceConfig fields)
CLIENT_VARIABLES = ("ADDRESS", "API_KEY", "CATALOG", "TLS_CA")


def unknown_variables(environ) -> list[str]:
    """One line per ``RLVR_VERIFIER_*`` variable that nothing reads (a misspelling would be ignored silently)."""
    import difflib

    known = [ENV_PREFIX + f.name.upper() for f in fields(ServiceConfig)] + [ENV_PREFIX + n for n in CLIENT_VARIABLES]
    lines = []
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            lines.append(f"warning: {name} is not a setting and is ignored"
                         + (f" (did you mean {close[0]}?)" if close else " (verifier-service serve --help lists them)"))
    return lines


def warn_unknown_variables(environ) -> None:
    import sys

    for line in unknown_variables(environ):
        print(line, file=sys.stderr)


def load_config(args: argparse.Namespace | None = None, environ: dict[str, str] | None = None) -> ServiceConfig:
    environ = os.environ if environ is None else environ
    config = ServiceConfig()
    overrides: dict[str, Any] = {}
    path = getattr(args, "config", None) if args is not None else None
    if path is not None:
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise VerifierError(f"cannot read config file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise VerifierError(f"config file {path} must hold a mapping of settings")
        known = {f.name for f in fields(ServiceConfig)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise VerifierError(f"config file {path}: unknown setting(s) {unknown}")
        overrides.update(data)
    warn_unknown_variables(environ)
    for f in fields(ServiceConfig):
        env = environ.get(ENV_PREFIX + f.name.upper())
        if env is not None:
            overrides[f.name] = env
        if args is not None and getattr(args, f.name, None) is not None:
            overrides[f.name] = getattr(args, f.name)
    typed = {name: _convert(name, next(f.type for f in fields(ServiceConfig) if f.name == name), value)
             for name, value in overrides.items()}
    assert all(f.default is not _NO_DEFAULT for f in fields(ServiceConfig))
    return replace(config, **typed).validate()
