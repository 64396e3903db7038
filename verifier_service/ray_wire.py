"""What travels between a Ray caller and the verifier fleet on Ray: the contract of ``fleet_ray`` and its clients.

Both sides speak the service's own protobuf messages, serialized, so that a call through a Ray deployment handle
(from inside the cluster) and a call through the gRPC ingress (from outside) carry the same bytes to the same
servicer code, and so get the same verdicts. A call is ``(method, request bytes, metadata, timeout_s)``: the
method is a Verifier RPC's name (``VerifyBatch``, ``OpenSession``, ...), the metadata the gRPC metadata it would
carry (the API key, ``x-request-id``). The answer is a ``Reply``: plain data, so no exception class has to be
importable on the other side; ``code`` is a gRPC status name ("OK" or the refusal's).

Sessions live in named session-host actors (a session's sandbox holds live interpreter state that cannot move);
the id a caller sees is ``<host>~<id on that host>``, so every later call of the session goes to its host.
"""

from __future__ import annotations

from dataclasses import dataclass

APP_NAME = "rlvr-verifier"  # the Serve application of the Verifier deployment (ingress: its handle)
GRPC_APP_NAME = "rlvr-verifier-grpc"  # the Serve application of the gRPC ingress, when deployed
NAMESPACE = "rlvr-verifier"  # the Ray namespace of the session hosts (named actors)
SESSION_HOST_PREFIX = "rlvr-session-host-"
CALL = "call"  # the Serve method (and session-host actor method) every RPC goes through
SEPARATOR = "~"

VERIFY_METHODS = ("Verify", "VerifyBatch", "ListVerifiers")
SESSION_METHODS = ("OpenSession", "ExecuteCell", "ResetSession", "CloseSession", "CloseSessions")
OK = "OK"


@dataclass(frozen=True)
class Reply:
    """One call's answer: the status name, its message, trailing metadata (the retry hint), the response bytes."""

    code: str
    details: str = ""
    trailing: tuple[tuple[str, str], ...] = ()
    payload: bytes = b""

    @property
    def ok(self) -> bool:
        return self.code == OK


def host_name(index: int) -> str:
    return f"{SESSION_HOST_PREFIX}{index}"


def routed_id(host: str, session_id: str) -> str:
    """The id a caller sees for ``session_id`` of ``host``."""
    return f"{host}{SEPARATOR}{session_id}"


def split_id(routed: str) -> tuple[str, str] | None:
    """(host, id on that host) of an id made by ``routed_id``; None for any other text."""
    host, sep, inner = routed.partition(SEPARATOR)
    if not sep or not host.startswith(SESSION_HOST_PREFIX) or not host[len(SESSION_HOST_PREFIX):].isdigit():
        return None
    return host, inner
