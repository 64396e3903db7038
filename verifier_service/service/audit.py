"""The audit log: one JSON line per verified batch (and per refused call).

A line says who (tenant), what (verifier: the catalog id or ``kind:<kind>``,
with counts when a batch mixes them), how many, the verdict counts, how long
it took, the status and the request id (``x-request-id`` metadata, else a
fresh one). It never holds what the model wrote, unless the tenant's
``audit_content`` is true; then each sample's id, completion, verdict and
reward are added. Lines go to ``audit_log`` (a file, appended) or, without
one, to the ``verifier_service.audit`` logger.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timezone
from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.service.context import current_request_id

log = logging.getLogger("verifier_service.audit")


def request_id(metadata) -> str:
    """The RPC's request id (set by the RPC interceptor), else the metadata's, else a fresh one."""
    if current_request_id.get():
        return current_request_id.get()
    for item in metadata or ():
        key, value = item if isinstance(item, tuple) else (item.key, item.value)
        if key.lower() == "x-request-id" and isinstance(value, str) and value:
            return value[:128]
    return uuid.uuid4().hex[:16]


def _one_or_counts(counter: Counter) -> Any:
    return next(iter(counter)) if len(counter) == 1 else dict(sorted(counter.items()))


class Repeats:
    """Bounds lines of one kind: ``burst`` per ``interval_s`` for each key; past that they are counted, and the
    first line of the key's next interval says how many were left out (one line per interval, with a count),
    so that no client can fill a node's disk with refusals."""

    def __init__(self, burst: int = 20, interval_s: float = 10.0):
        self.burst = burst
        self.interval_s = interval_s
        self._keys: dict[Any, list[float]] = {}  # key -> [window start, lines in it, lines left out]
        self._lock = threading.Lock()

    def admit(self, key: Any) -> tuple[bool, int]:
        """(write this line?, how many lines of the key were left out before it)."""
        now = time.monotonic()
        with self._lock:
            state = self._keys.get(key)
            if state is None or now - state[0] >= self.interval_s:
                left_out = int(state[2]) if state is not None else 0
                if len(self._keys) > 10000:  # keys of past intervals (addresses of a flood): forgotten
                    self._keys = {k: v for k, v in self._keys.items() if now - v[0] < self.interval_s}
                self._keys[key] = [now, 1, 0]
                return True, left_out
            if state[1] < self.burst:
                state[1] += 1
                return True, 0
            state[2] += 1
            return False, 0


class AuditLog:
    def __init__(self, path: str = "", repeats: Repeats | None = None):
        self.path = path
        self._lock = threading.Lock()
        self.repeats = repeats if repeats is not None else Repeats()

    @property
    def enabled(self) -> bool:
        return bool(self.path) or log.isEnabledFor(logging.INFO)

    def write(self, record: dict[str, Any]) -> None:
        stamped = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **record}
        line = json.dumps(stamped, ensure_ascii=False, separators=(",", ":"))
        if not self.path:
            # JSON logs put these fields at the top level of the log line (not as a JSON string in msg)
            log.info("%s", line, extra={"audit_fields": stamped})
            return
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as out:
                out.write(line + "\n")
        except OSError as exc:  # the audit file broke: say so in the service log, keep serving
            log.error("cannot append to the audit log %s (%s): %s", self.path, exc.strerror, line)

    def batch(self, *, method: str, tenant, requests, results, labels: list[str] | None, status: str,
              message: str, duration_s: float, metadata) -> None:
        """One line for one batch; ``labels`` are the catalog ids used (else taken from the requests)."""
        if not self.enabled:
            return
        labels = [label or request.verifier or f"kind:{request.spec.kind}"
                  for label, request in zip(labels or [""] * len(requests), requests, strict=True)]
        record: dict[str, Any] = {
            "audit": "verify", "method": method, "request_id": request_id(metadata),
            "tenant": tenant.name if tenant is not None else None,
            "verifier": _one_or_counts(Counter(labels)) if labels else None,
            "count": len(requests), "status": status, "duration_s": round(duration_s, 6)}
        if results is not None and any(r.sandbox_image for r in results):
            record["sandbox_image"] = next(r.sandbox_image for r in results if r.sandbox_image)
        if results is not None:
            record["verdicts"] = dict(sorted(Counter(pb.Verdict.Name(r.verdict) for r in results).items()))
        if message:
            record["message"] = message
        if tenant is not None and tenant.audit_content and results is not None:
            record["samples"] = [{"id": r.id, "completion": q.completion, "verdict": pb.Verdict.Name(r.verdict),
                                  "reward": r.reward if r.HasField("reward") else None}
                                 for q, r in zip(requests, results, strict=True)]
        self.write(record)

    def refused(self, *, method: str, tenant, status: str, message: str, metadata) -> None:
        """A call refused before it was read (authentication): ``Repeats`` lines per method and status and
        interval, the first of the next interval counting those left out (``left_out``)."""
        if not self.enabled:
            return
        write, left_out = self.repeats.admit(("refused", method, status))
        if not write:
            return
        record = {"audit": "verify", "method": method, "request_id": request_id(metadata),
                  "tenant": tenant.name if tenant is not None else None, "status": status, "message": message}
        if left_out:
            record["left_out"] = left_out
        self.write(record)
