"""One HTTP request as the servicer sees a call: its tenant, its metadata, its refusals as HTTP errors.

The front door's handlers verify through ``VerifierServicer`` itself (quotas, admission, catalog
expansion, validation, the engine, the audit line, the metrics), handing it an ``HttpCall`` where gRPC hands
a ``ServicerContext``: what the servicer would abort with becomes an ``HttpError`` with the matching HTTP
status and the same message.
"""

from __future__ import annotations

import time

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.credentials import RETRY_AFTER_KEY

# gRPC status -> HTTP status
HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403, grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.FAILED_PRECONDITION: 409, grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.DEADLINE_EXCEEDED: 504, grpc.StatusCode.INTERNAL: 500,
}


class HttpError(Exception):
    """An answer other than 200: the HTTP status, a message for the caller, and extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.body = body  # a body of the peer's own shape (e.g. FastAPI's 422), else {"error": message}


class HttpAbort(HttpError, grpc.aio.AbortError):
    """What ``HttpCall.abort`` raises: an ``AbortError`` to the servicer (which passes it on, as it passes on
    gRPC's own abort), an ``HttpError`` to the front door."""


class HttpCall:
    """What ``VerifierServicer._run`` reads of a gRPC context, for one HTTP request."""

    def __init__(self, headers, deadline_s: float | None = None):
        self._metadata = tuple((k.lower(), v) for k, v in headers.items())
        self._deadline = time.monotonic() + deadline_s if deadline_s else None

    def invocation_metadata(self):
        return self._metadata

    def time_remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata=()) -> None:
        headers = {}
        for key, value in trailing_metadata or ():
            if key == RETRY_AFTER_KEY:  # whole seconds, rounded up, as HTTP's Retry-After says it
                headers["Retry-After"] = str(max(1, -(-int(value) // 1000)))
                headers["X-Retry-After-Ms"] = value
        raise HttpAbort(HTTP_STATUS.get(code, 500), details, headers)


async def verify(servicer, requests: list[pb.VerifyRequest], headers, method: str) -> list[pb.VerifyResult]:
    """Verifies ``requests`` through the servicer's one path; a refusal raises ``HttpError``."""
    call = HttpCall(headers)
    return await servicer._guard(servicer._run(requests, call, method), call)
