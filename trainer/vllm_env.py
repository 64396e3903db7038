"""The process environment vLLM needs before it starts, set by ``trainer train`` and ``trainer sample`` themselves.

What had to be set by hand before (docs/e2e-vllm-run.md):

- **torch.distributed rendezvous for colocate mode.** TRL's colocated vLLM runs inside the trainer's process with
  ``distributed_executor_backend="external_launcher"``, which joins a torch.distributed group from ``RANK``,
  ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``. ``torchrun`` / ``accelerate launch`` set
  them; a plain ``trainer train`` on one GPU did not. Each is set here only where it is missing (a launcher's
  values win), ``MASTER_PORT`` to a free loopback port so that two runs on one host do not collide.
- **``VLLM_USE_FLASHINFER_SAMPLER=0`` where FlashInfer is not installed.** vLLM's V2 model runner imports
  FlashInfer for its top-k/top-p sampler unless told not to, and fails with ``No module named 'flashinfer'``
  (the offline GPU bundle does not carry it, ../shared/gpu/README.md). Set only where the variable is unset.
"""

from __future__ import annotations

import importlib.util
import os
import socket

FLASHINFER_SAMPLER = "VLLM_USE_FLASHINFER_SAMPLER"


def free_port() -> int:
    """A TCP port of 127.0.0.1 that is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sampler_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Turns FlashInfer's sampler off where FlashInfer is not installed; returns what it set."""
    env = os.environ if environ is None else environ
    if FLASHINFER_SAMPLER in env or importlib.util.find_spec("flashinfer") is not None:
        return {}
    env[FLASHINFER_SAMPLER] = "0"
    return {FLASHINFER_SAMPLER: "0"}


def colocate_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The single-process torch.distributed variables for colocated vLLM (only those missing), plus
    ``sampler_environment``; returns what it set (recorded in the run record)."""
    env = os.environ if environ is None else environ
    wanted = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    set_here = {k: v for k, v in wanted.items() if k not in env}
    if "MASTER_PORT" not in env:
        set_here["MASTER_PORT"] = str(free_port())
    env.update(set_here)
    set_here.update(sampler_environment(env))
    return set_here


__all__ = ["colocate_environment", "sampler_environment"]
