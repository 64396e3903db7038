"""One call into the service, as every door hands it to the core: who asks (the tenant), for what (the method's
name, for the audit and metrics), under which request id, until when. No transport's objects."""

from __future__ import annotations

import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field

from verifier_service.tenancy.auth import Tenant

REQUEST_ID_KEY = "x-request-id"
# The request id of the call being served (set by each door as the call begins; read by the log lines and audit).
current_request_id: ContextVar[str] = ContextVar("rlvr_request_id", default="")


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class Call:
    tenant: Tenant
    method: str                                           # "VerifyBatch", "POST /get_reward", ...
    request_id: str = ""
    deadline: float | None = None                         # time.monotonic() by which the caller gives up
    metadata: tuple[tuple[str, str], ...] = field(default=())  # the caller's headers, for the audit line

    @classmethod
    def within(cls, tenant: Tenant, method: str, timeout_s: float | None = None, request_id: str = "",
               metadata: tuple[tuple[str, str], ...] = ()) -> Call:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        return cls(tenant, method, request_id or current_request_id.get(), deadline, metadata)

    def time_remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
