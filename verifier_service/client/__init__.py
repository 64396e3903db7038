"""The client side: what a trainer, script or CLI uses to reach a running service.

``VerifierClient`` (``client.py``) is the one call path: a channel with
health-checked round-robin balancing and gRPC's own retries (``balancing.py``),
the caller's credentials (``verifier_service.credentials``), typed errors
(``errors.py``: a status code mapped back to the service's error class). This package imports
only the contract (``spec``, ``verdict``, ``errors``, ``config``, ``credentials``,
``_generated``), never the server, engine or sandboxes.
"""

from verifier_service.client.client import (
    START_HINT,
    CallStats,
    VerifierClient,
    check_service,
    health_status,
    why_unreachable,
)
from verifier_service.client.errors import (
    RemoteDeadlineExceeded,
    RemoteInvalidSpec,
    RemoteOverloaded,
    RemotePermissionDenied,
    RemoteRefusal,
    RemoteUnavailable,
    RemoteUnknownVerifier,
    RemoteVersionMismatch,
    Unauthenticated,
    remote_error,
)
from verifier_service.spec import SERVICE_NAME

__all__ = ["SERVICE_NAME", "START_HINT", "CallStats", "RemoteDeadlineExceeded", "RemoteInvalidSpec",
           "RemoteOverloaded", "RemotePermissionDenied", "RemoteRefusal", "RemoteUnavailable", "RemoteUnknownVerifier",
           "RemoteVersionMismatch", "Unauthenticated", "VerifierClient", "check_service", "health_status",
           "remote_error", "why_unreachable"]
