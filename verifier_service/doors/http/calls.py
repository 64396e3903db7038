"""What every endpoint of the HTTP door shares: its error answer, the one refusal -> HTTP status table, and the
call into the service core (``service/verifier.py``) for the endpoints that verify."""

from __future__ import annotations

import math

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.errors import (
    InvalidSpec,
    Overloaded,
    PermissionDenied,
    QuotaExceeded,
    SessionGone,
    UnknownVerifier,
    VersionMismatch,
    refusal_message,
)
from verifier_service.service.context import Call, current_request_id
from verifier_service.service.verifier import REFUSALS, Verifier
from verifier_service.tenancy.auth import current_tenant

# A refusal of the service -> its HTTP status (the first class that matches wins).
HTTP_STATUS = ((InvalidSpec, 400), (Overloaded, 429), (PermissionDenied, 403), (UnknownVerifier, 404),
               (VersionMismatch, 409), (SessionGone, 404))


class HttpError(Exception):
    """An answer other than 200: the HTTP status, a message for the caller, and extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.body = body  # a body of the peer's own shape (e.g. FastAPI's 422), else {"error": message}


def refusal(exc: BaseException) -> HttpError:
    """The HTTP answer to a refusal of the core: its status, the message, and when to retry (429)."""
    status = next(code for cls, code in HTTP_STATUS if isinstance(exc, cls))
    headers = {}
    if isinstance(exc, QuotaExceeded):  # whole seconds, rounded up, as HTTP's Retry-After says it
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after_s))),
                   "X-Retry-After-Ms": str(round(exc.retry_after_s * 1000))}
    elif isinstance(exc, Overloaded):
        headers = {"Retry-After": "1"}
    return HttpError(status, refusal_message(exc), headers)


def call(method: str, headers=()) -> Call:
    """The ``Call`` of the HTTP request being served (its tenant set by the door's middleware)."""
    items = headers.items() if hasattr(headers, "items") else headers
    return Call.within(current_tenant.get(), method, request_id=current_request_id.get(),
                       metadata=tuple((k.lower(), v) for k, v in items))


async def verify(verifier: Verifier, requests: list[pb.VerifyRequest], headers, method: str
                 ) -> list[pb.VerifyResult]:
    """Verifies ``requests`` through the core; a refusal raises ``HttpError``."""
    try:
        return await verifier.verify(call(method, headers), requests)
    except REFUSALS as exc:
        raise refusal(exc) from exc
