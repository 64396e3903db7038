"""One call into the service, as every door hands it to the core: who asks (the tenant), for what (the method's
name, for the audit and metrics), under which request id, until when. No transport's objects."""

from __future__ import annotations

import re
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field

from verifier_service.tenancy.auth import Tenant

REQUEST_ID_KEY = "x-request-id"
_PRINTABLE_ID = re.compile(r"^[\x21-\x7e]{1,128}$")
# The request id of the call being served (set by each door as the call begins; read by the log lines and audit).
current_request_id: ContextVar[str] = ContextVar("rlvr_request_id", default="")


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


def request_id_from(metadata) -> str:
    """The caller's ``x-request-id`` (gRPC metadata or HTTP headers) if it is a sane one, else a fresh id."""
    for item in metadata or ():
        key, value = item if isinstance(item, tuple) else (item.key, item.value)
        if key.lower() == REQUEST_ID_KEY and isinstance(value, str) and _PRINTABLE_ID.match(value):
            return value
    return new_request_id()


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
