"""Exceptions of the verifier service. One root, few leaves:

    VerifierError
    ├── InvalidSpec          the caller's spec is wrong   -> INVALID_ARGUMENT
    ├── Overloaded           too much work pending         -> RESOURCE_EXHAUSTED
    │   └── QuotaExceeded    over the tenant's quota       -> RESOURCE_EXHAUSTED + retry-after-ms
    ├── PermissionDenied     the tenant may not do this    -> PERMISSION_DENIED
    ├── UnknownVerifier      no such catalog entry         -> NOT_FOUND
    ├── VersionMismatch      the entry's hash differs      -> FAILED_PRECONDITION
    ├── SessionGone          no such sandbox session (now) -> NOT_FOUND
    ├── CatalogError         a catalog or tenants file is wrong (startup, publish)
    ├── SandboxUnavailable   the sandbox backend is down   -> INFRA_ERROR verdicts
    ├── ServiceUnreachable   (client) nothing answers at the address, and why
    └── RemoteError          (client) an RPC failed, with its status code and whether to retry;
                             typed by code in verifier_service.client.errors

A verdict about the *code* is never an exception: it is a ``Outcome`` (see
``verdict.py``). Only faults of the request or of the service raise.

``STATUS`` is the one table from a refusal to its status code (gRPC's names, the
wire contract's): the gRPC door answers with it, the client
(``verifier_service.client.errors``) maps a code back to a ``RemoteError`` that is
also an instance of the class here. No gRPC object here: the core and the HTTP
door import this module.
"""


class VerifierError(Exception):
    """Root of every exception this package raises on purpose."""


class InvalidSpec(VerifierError):
    """The verification spec (or request) is malformed: the caller must fix it."""


class Overloaded(VerifierError):
    """Admission refused: more work is pending than the service accepts."""


class QuotaExceeded(Overloaded):
    """A tenant is over its concurrency or rate quota; ``retry_after_s`` says when to try again."""

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PermissionDenied(VerifierError):
    """The authenticated tenant may not use this verifier (or inline specs)."""


class UnknownVerifier(VerifierError):
    """The request names a catalog entry this service does not have."""


class VersionMismatch(VerifierError):
    """The request pins a catalog entry's content hash, and the published content differs."""


class SessionGone(VerifierError):
    """The sandbox session is not (or no longer) on this service: closed, expired, ended, or its replica restarted;
    says which when it knows."""


class CatalogError(VerifierError):
    """A catalog entry, the catalog lock or the tenants file is wrong; says which file and why."""


class SandboxUnavailable(VerifierError):
    """The sandbox backend (Docker, bubblewrap) cannot run jobs; says how to fix it."""


class ServiceUnreachable(VerifierError):
    """No verifier service answers at the address (client side); says how to start one."""


class RemoteError(VerifierError):
    """The service answered an RPC with an error status (client side)."""

    def __init__(self, message: str, code: str, retryable: bool, details: str = ""):
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.details = details or message


# A refusal of the service -> the name of its gRPC status code (the first class that matches wins).
STATUS = ((InvalidSpec, "INVALID_ARGUMENT"), (Overloaded, "RESOURCE_EXHAUSTED"),
          (PermissionDenied, "PERMISSION_DENIED"), (UnknownVerifier, "NOT_FOUND"),
          (VersionMismatch, "FAILED_PRECONDITION"), (SessionGone, "NOT_FOUND"))


RETRY_AFTER_KEY = "retry-after-ms"  # the trailing metadata of a quota refusal on the gRPC wire: when to retry


def status_name(exc: BaseException) -> str:
    """The status a refusal is answered and audited with (``STATUS``)."""
    return next(code for cls, code in STATUS if isinstance(exc, cls))


def wire_refusal(exc: BaseException) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """A refusal as the gRPC wire carries it (the gRPC door, the Ray ingress): the status name, the message, and
    a quota's wait as trailing metadata."""
    wait = ((RETRY_AFTER_KEY, str(round(exc.retry_after_s * 1000))),) if isinstance(exc, QuotaExceeded) else ()
    return status_name(exc), refusal_message(exc), wait


def refusal_message(exc: BaseException) -> str:
    """What a caller is told of a refusal, on every door: its message, and a quota's wait."""
    if isinstance(exc, QuotaExceeded):
        return f"{exc}; retry in {exc.retry_after_s:.2f}s"
    return str(exc)
