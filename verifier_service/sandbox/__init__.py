"""Sandboxes that run untrusted code: the job format and the backends.

``make_sandbox(config)`` picks the backend by ``sandbox_backend``: ``docker``
(containers, the default) or ``bwrap`` (bubblewrap namespaces, for hosts
without Docker). Both are ``PooledSandbox``es: the engine and server use only
that interface.
"""

from __future__ import annotations

from verifier_service.config import ServiceConfig
from verifier_service.sandbox.base import Job, SandboxRun, Step, StepResult
from verifier_service.sandbox.warm import PooledSandbox

Sandbox = PooledSandbox

__all__ = ["Job", "Sandbox", "SandboxRun", "Step", "StepResult", "format_isolation", "make_sandbox"]


def make_sandbox(config: ServiceConfig) -> Sandbox:
    """The sandbox backend ``config.sandbox_backend`` names (nothing is started yet)."""
    if config.sandbox_backend == "bwrap":
        from verifier_service.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(config)
    from verifier_service.sandbox.docker import DockerSandbox

    return DockerSandbox(config)


def format_isolation(rows: list[tuple[str, str]]) -> str:
    """The isolation report as aligned ``layer: what`` lines."""
    width = max((len(layer) for layer, _ in rows), default=0)
    return "\n".join(f"{layer.rjust(width)}: {what}" for layer, what in rows)
