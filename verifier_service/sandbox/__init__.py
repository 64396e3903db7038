"""Sandboxes that run untrusted code: the job format and the Docker backend."""

from verifier_service.sandbox.base import Job, SandboxRun, Step, StepResult

__all__ = ["Job", "SandboxRun", "Step", "StepResult"]
