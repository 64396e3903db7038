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


class AuditLog:
    def __init__(self, path: str = ""):
        self.path = path
        self._lock = threading.Lock()

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
        """A call refused before it was read (authentication)."""
        if not self.enabled:
            return
        self.write({"audit": "verify", "method": method, "request_id": request_id(metadata),
                    "tenant": tenant.name if tenant is not None else None, "status": status, "message": message})
