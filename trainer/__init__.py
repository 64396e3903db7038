"""The trainer side: clients of the verifier service for GRPO training.

For now it exposes the asyncio client; TRL reward functions built on it live
in this package as they are added.
"""

from verifier_service.client import VerifierClient

__all__ = ["VerifierClient"]
