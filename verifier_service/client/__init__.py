"""The client side: what a trainer, script or CLI uses to reach a running service.

``VerifierClient`` (``client.py``) is the one call path: a channel with
health-checked round-robin balancing and gRPC's own retries (``balancing.py``),
the caller's credentials (``verifier_service.credentials``). This package imports
only the contract (``spec``, ``verdict``, ``errors``, ``config``, ``credentials``,
``_generated``), never the server, engine or sandboxes.
"""

from verifier_service.client.client import SERVICE_NAME, START_HINT, VerifierClient, health_status

__all__ = ["SERVICE_NAME", "START_HINT", "VerifierClient", "health_status"]
