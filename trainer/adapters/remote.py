"""One verifier connection per process for the reward hooks, called from synchronous code.

The trainers call their reward hooks from plain threads (or processes); the hooks share one
``VerifierClient`` living on an event loop of its own thread, so a call costs one RPC, not a connection.
Labels name their verifier the way the service's JSONL does: an inline spec (``{"kind": ...}``), a catalog
reference (``{"verifier": "team/name@1", ...}``), or, with ``RLVR_VERIFIER_CATALOG`` naming a catalog
verifier, its per-sample fields (an object, or plain text that is the ``gold`` answer).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Sequence
from typing import Any

import verifier_service.messages as pb
from verifier_service.client.loop import LoopThread
from verifier_service.credentials import Credentials
from verifier_service.errors import InvalidSpec
from verifier_service.spec import request_from_json, spec_from_label

ADDRESS_ENV = "RLVR_VERIFIER_ADDRESS"
CATALOG_ENV = "RLVR_VERIFIER_CATALOG"
INFRA_SCORE_ENV = "RLVR_INFRA_SCORE"
DEFAULT_ADDRESS = "localhost:50051"
BATCH = 256  # completions per VerifyBatch call


class InfraError(RuntimeError):
    """The sandbox could not judge a sample, and no ``RLVR_INFRA_SCORE`` says what to score it."""


def spec_of(label: Any, verifier: str | None = None) -> dict[str, Any]:
    """A label (a dataset's ground truth) as the spec JSON of one request (``spec.spec_from_label``)."""
    verifier = os.environ.get(CATALOG_ENV, "") if verifier is None else verifier
    try:
        return spec_from_label(label, verifier)
    except InvalidSpec as exc:
        raise InvalidSpec(f"{exc}" + ("" if verifier else f"; or set {CATALOG_ENV} to a catalog verifier")) from None


class Remote:
    """A ``VerifierClient`` on a private event loop; ``verify`` is synchronous and thread-safe."""

    def __init__(self, address: str | None = None, credentials: Credentials | None = None):
        from verifier_service.client import VerifierClient

        self.address = address or os.environ.get(ADDRESS_ENV, DEFAULT_ADDRESS)
        self.bridge = LoopThread("rlvr-verifier")
        self.client = self.call(VerifierClient.connect(self.address,
                                                       credentials=credentials or Credentials.from_env()))

    def call(self, coro):
        """A coroutine of ``client``, run on its loop, waited for from any other thread."""
        return self.bridge.call(coro)

    def submit(self, completions: Sequence[str], labels: Sequence[Any]) -> concurrent.futures.Future:
        """Starts verifying; the future's result is the results in order (``asyncio.wrap_future`` awaits it)."""
        requests = [request_from_json({"id": str(i), "completion": c, "spec": spec_of(label)})
                    for i, (c, label) in enumerate(zip(completions, labels, strict=True))]
        calls = -(-len(requests) // BATCH)  # all at once: the service's admission paces them
        return self.bridge.submit(self.client.verify_many(requests, BATCH, parallel=calls))

    def verify(self, completions: Sequence[str], labels: Sequence[Any]) -> list[pb.VerifyResult]:
        return self.submit(completions, labels).result() if completions else []

    def close(self) -> None:
        self.call(self.client.close())
        self.bridge.close(5)


_shared: Remote | None = None
_lock = threading.Lock()


def shared() -> Remote:
    """This process's connection (made at the first call; a forked child makes its own)."""
    global _shared
    with _lock:
        if _shared is None or _shared.pid != os.getpid():
            _shared = Remote()
            _shared.pid = os.getpid()  # type: ignore[attr-defined]
        return _shared


def reset() -> None:
    """Closes this process's connection; the next call makes a new one (from the environment as it is then)."""
    global _shared
    with _lock:
        if _shared is not None and _shared.pid == os.getpid():
            _shared.close()
        _shared = None


def reward_of(result: pb.VerifyResult) -> float:
    """The result's reward; an INFRA_ERROR (no reward) scores ``RLVR_INFRA_SCORE`` or raises InfraError."""
    if result.HasField("reward") and result.verdict != pb.INFRA_ERROR:
        return result.reward
    fallback = os.environ.get(INFRA_SCORE_ENV, "")
    if fallback:
        return float(fallback)
    raise InfraError(f"the sandbox could not judge a sample (INFRA_ERROR: {result.detail[:200]}); no reward is "
                     f"made up for it: fix the service, or set {INFRA_SCORE_ENV}=<score> to score such samples")
