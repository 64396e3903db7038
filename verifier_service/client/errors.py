"""What a failed call means on the client side: the service's status code mapped back to an error class.

The service answers a refusal with the code of ``verifier_service.errors.STATUS``; ``remote_error`` is that
table's inverse: an ``INVALID_ARGUMENT`` answer raises ``RemoteInvalidSpec``, which is both a
``RemoteError`` (status code, details, whether to retry) and an ``InvalidSpec``, so a caller catches
the same class on either side of the wire. ``RemoteRefusal`` is every answer that says the caller must
change the request (retrying cannot help); ``ServiceUnreachable`` (in ``errors``) says why nothing answered.
"""

from __future__ import annotations

import grpc

from verifier_service.client.balancing import RETRYABLE
from verifier_service.errors import (
    STATUS,
    InvalidSpec,
    Overloaded,
    PermissionDenied,
    RemoteError,
    SessionGone,
    UnknownVerifier,
    VersionMismatch,
)


class RemoteRefusal(RemoteError):
    """The service refused the request: the caller must change it (the key, the spec, the verifier)."""


class RemoteInvalidSpec(RemoteRefusal, InvalidSpec):
    """INVALID_ARGUMENT: a spec or a field of the request is wrong."""


class RemotePermissionDenied(RemoteRefusal, PermissionDenied):
    """PERMISSION_DENIED: the tenant may not use this verifier (or inline specs)."""


class RemoteNotFound(RemoteRefusal, UnknownVerifier, SessionGone):
    """NOT_FOUND: no such catalog verifier, or a sandbox session that is gone; the message says which and why."""


RemoteUnknownVerifier = RemoteNotFound  # the names callers catch: one class, since the service answers both NOT_FOUND
RemoteSessionGone = RemoteNotFound


class RemoteVersionMismatch(RemoteRefusal, VersionMismatch):
    """FAILED_PRECONDITION: the pinned catalog content differs from the published one."""


class Unauthenticated(RemoteRefusal):
    """UNAUTHENTICATED: no API key, or one the service does not know."""


class RemoteOverloaded(RemoteError, Overloaded):
    """RESOURCE_EXHAUSTED after the client's waits: the service (or the tenant's quota) is full."""


class MessageTooLarge(RemoteError):
    """RESOURCE_EXHAUSTED that says a message (the request, or the answer) was over a gRPC size limit: not
    throttling, and the same call fails again whole; a batch is verified in halves instead."""


class RemoteUnavailable(RemoteError):
    """UNAVAILABLE after the client's retries: no replica took the call."""


class RemoteDeadlineExceeded(RemoteError):
    """DEADLINE_EXCEEDED: the caller's time budget ran out (retries included)."""


_CLIENT_CLASS = {
    InvalidSpec: RemoteInvalidSpec, Overloaded: RemoteOverloaded, PermissionDenied: RemotePermissionDenied,
    UnknownVerifier: RemoteNotFound, VersionMismatch: RemoteVersionMismatch, SessionGone: RemoteNotFound,
}
# status code -> class: the inverse of the service's STATUS table, and the codes the transport adds
ERROR_CLASSES: dict[grpc.StatusCode, type[RemoteError]] = {
    **{grpc.StatusCode[code]: _CLIENT_CLASS[cls] for cls, code in reversed(STATUS)},
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.UNAVAILABLE: RemoteUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: RemoteDeadlineExceeded,
}


def over_message_limit(code: grpc.StatusCode, details: str) -> bool:
    """Whether a failed call was a message over a gRPC size limit (the sender's or the receiver's), which gRPC
    answers RESOURCE_EXHAUSTED like a busy service: retrying it unchanged cannot help."""
    return code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details


def remote_error(code: grpc.StatusCode, details: str) -> RemoteError:
    """The typed error of a call that ended with ``code`` (``RemoteError`` itself for codes no table names)."""
    cls = MessageTooLarge if over_message_limit(code, details) else ERROR_CLASSES.get(code, RemoteError)
    return cls(f"{code.name}: {details}", code.name, code in RETRYABLE, details)
