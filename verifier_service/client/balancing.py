"""Reaching several replicas: the channel target, gRPC's round_robin, and bounded retries.

A target is one address (``host:port``; a name resolving to several addresses
gets them all), a ``dns:///name:port`` target (a Kubernetes headless Service),
or several addresses (a list, or one string separated by commas). Several
addresses become one ``ipv4:`` / ``ipv6:`` target (names resolved once, at
connect). The channel's service config picks ``round_robin`` over every
address, with client-side health checking: a replica whose sandbox backend is
down (health NOT_SERVING) gets no calls until it recovers.

VerifyBatch is idempotent (the same inputs give the same verdicts), so a call
that fails with UNAVAILABLE (a replica died, the connection broke, none ready)
is sent again, on whichever replica round_robin picks next, after a bounded
exponential backoff with jitter (``RetryPolicy``); ``RETRYABLE`` is the one
table of what is retried and how. What still fails is the caller's to report:
the trainer scores it ``None``, never 0.
"""

from __future__ import annotations

import ipaddress
import json
import random
import socket
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from verifier_service.errors import VerifierError
from verifier_service.spec import SERVICE_NAME

# The one table of retryable status codes (the client, the channel's own retries and the trainer's reward
# functions read it): the code of a failed call -> how it goes again.
RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE: "replica",       # the client sends it again, to another replica, after a backoff
    grpc.StatusCode.RESOURCE_EXHAUSTED: "hint",   # the client waits as the service hints, within its bounds
    grpc.StatusCode.DEADLINE_EXCEEDED: "caller",  # the budget is spent: the caller may try again with a new one
}
RETRY_CODES = tuple(code for code, how in RETRYABLE.items() if how == "replica")  # RetryPolicy's, and gRPC's own
SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "xds:")  # a gRPC target URI stands alone


@dataclass(frozen=True)
class RetryPolicy:
    """How a call that failed with a code of ``RETRY_CODES`` is retried: ``attempts`` in all, the n-th wait
    drawn uniformly from [cap / 2, cap], cap = min(max_backoff_s, initial_backoff_s * multiplier**(n-1)); never
    past the caller's deadline (the client sends each attempt with the time left)."""

    attempts: int = 5
    initial_backoff_s: float = 0.25
    max_backoff_s: float = 4.0
    multiplier: float = 2.0

    def delay(self, failures: int) -> float:
        cap = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier ** max(0, failures - 1))
        return random.uniform(cap / 2, cap)  # at least half: a restarting replica needs a moment

    def retries(self, code: grpc.StatusCode, failures: int) -> bool:
        """Whether a call that has now failed ``failures`` times with ``code`` goes again."""
        return code in RETRY_CODES and failures < self.attempts


def addresses(target: str | Sequence[str]) -> list[str]:
    if isinstance(target, str):
        parts = [target] if target.strip().startswith(SCHEMES) else target.split(",")
    else:
        parts = list(target)
    parts = [p.strip() for p in parts if p and p.strip()]
    if not parts:
        raise VerifierError("no verifier address given (host:port, several separated by commas, or dns:///name:port)")
    return parts


def _split(address: str) -> tuple[str, str]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise VerifierError(f"verifier address {address!r} needs a port (host:port)")
    return host.strip("[]"), port


def channel_target(target: str | Sequence[str]) -> tuple[str, str | None]:
    """(gRPC target, authority to present or None) for one address, a ``dns:///`` target or several addresses."""
    parts = addresses(target)
    if len(parts) == 1:
        return parts[0], None
    if any("://" in p or p.startswith(SCHEMES) for p in parts):
        raise VerifierError("several addresses are host:port each; a dns:/// target stands alone")
    v4, v6, first_name = [], [], None
    for part in parts:
        host, port = _split(part)
        try:
            ips = [ipaddress.ip_address(host)]
        except ValueError:
            first_name = first_name or part
            try:
                infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
            except OSError as exc:
                raise VerifierError(f"cannot resolve verifier address {part!r}: {exc}") from exc
            ips = [ipaddress.ip_address(info[4][0]) for info in infos]
            if any(ip.version == 4 for ip in ips):  # localhost: both families, one is enough
                ips = [ip for ip in ips if ip.version == 4]
        for ip in dict.fromkeys(ips):
            (v4 if ip.version == 4 else v6).append(f"{ip}:{port}" if ip.version == 4 else f"[{ip}]:{port}")
    if v4 and v6:
        raise VerifierError("the verifier addresses mix IPv4 and IPv6; give one family")
    return ("ipv4:" + ",".join(v4)) if v4 else ("ipv6:" + ",".join(v6)), first_name


def service_config(health_check: bool = True) -> str:
    config: dict = {
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [{
            "name": [{"service": SERVICE_NAME}],
            # gRPC's own retries (small messages only, before any answer); RetryPolicy covers the rest.
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                            "backoffMultiplier": 2,
                            "retryableStatusCodes": [c.name for c, how in RETRYABLE.items() if how == "replica"]},
        }],
    }
    if health_check:
        config["healthCheckConfig"] = {"serviceName": SERVICE_NAME}
    return json.dumps(config)


def channel_options(max_message_bytes: int, authority: str | None = None,
                    health_check: bool = True) -> list[tuple[str, object]]:
    options: list[tuple[str, object]] = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.service_config", service_config(health_check)),
        ("grpc.enable_retries", 1),
        # a replica that was killed comes back on the same address: try it again soon
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 2000),
    ]
    if authority:
        options.append(("grpc.default_authority", authority))
    return options
