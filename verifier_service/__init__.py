"""RLVR verifier service: scores model completions with verifiable rewards.

``verifier_service.verify(requests)`` is the synchronous API (see ``verifier_service.tools.sync``);
``verifier_service.client.VerifierClient`` the asyncio one.
"""

__version__ = "0.1.0"


def verify(requests, **kwargs):
    """Verifies requests (JSON dicts or VerifyRequest messages) and returns their results in order:
    ``verifier_service.tools.sync.verify``."""
    from verifier_service.tools.sync import verify as _verify

    return _verify(requests, **kwargs)
