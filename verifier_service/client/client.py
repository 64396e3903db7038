"""An asyncio client of the verifier service, built only through ``connect``.

``connect`` health-checks the service, so a wrong address fails at once with a
message saying how to start one. Every RPC goes through one call path that
turns transport errors into ``RemoteError`` (status code + retryable flag).
``Credentials`` add the API key and TLS; a RESOURCE_EXHAUSTED answer with a
retry hint (a tenant over its quota) is retried after the hinted wait, for at
most ``max_throttle_s`` in all.

The target may name several replicas (addresses separated by commas, a list,
or ``dns:///name:port``): calls are spread with round_robin and a call that
fails with UNAVAILABLE goes again, on another replica, as ``RetryPolicy``
says (``balancing.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.client.balancing import RetryPolicy, channel_options, channel_target
from verifier_service.credentials import Credentials, retry_after_s
from verifier_service.errors import RemoteError, ServiceUnreachable

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Verifier"].full_name
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)
START_HINT = "start one with `verifier-service serve --port PORT` (or `docker compose up verifier`)"


def health_status(address: str, timeout_s: float = 2.0) -> int | None:
    """The Verifier service's health status at ``address`` (plaintext, blocking), or None when nothing answers
    (for scripts and tests that start a service and wait for it; ``VerifierClient.connect`` is the client's)."""
    with grpc.insecure_channel(address) as channel:
        try:
            return health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout_s).status
        except grpc.RpcError:
            return None


class VerifierClient:
    def __init__(self, channel: grpc.aio.Channel, target: str, credentials: Credentials | None = None,
                 max_throttle_s: float = 120.0, retry: RetryPolicy = RetryPolicy()):
        self._channel = channel
        self.retry = retry
        self.retried = 0  # calls sent again after UNAVAILABLE
        self._stub = pb_grpc.VerifierStub(channel)
        self.target = target
        self._metadata = credentials.metadata if credentials is not None else ()
        self.max_throttle_s = max_throttle_s

    @classmethod
    async def connect(cls, target: str | Sequence[str], timeout_s: float = 10.0,
                      max_message_bytes: int = 64 * 1024 * 1024, credentials: Credentials | None = None,
                      max_throttle_s: float = 120.0, retry: RetryPolicy = RetryPolicy()) -> VerifierClient:
        credentials = credentials if credentials is not None else Credentials.from_env()
        resolved, authority = channel_target(target)
        target = target if isinstance(target, str) else ",".join(target)
        channel = credentials.aio_channel(resolved, options=channel_options(max_message_bytes, authority))
        try:
            response = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout_s, wait_for_ready=True)
        except grpc.aio.AioRpcError as exc:
            await channel.close()
            raise ServiceUnreachable(f"no verifier service answers at {target} ({exc.code().name}: "
                                     f"{exc.details()}); {START_HINT}; {credentials.connect_hint()}") from exc
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            await channel.close()
            raise ServiceUnreachable(f"the verifier service at {target} is NOT_SERVING: its sandbox backend "
                                     "is down (see the service's log: Docker unreachable or image missing)")
        return cls(channel, target, credentials, max_throttle_s, retry)

    async def _call(self, method, request, timeout_s: float | None):
        waited, failures = 0.0, 0
        while True:
            try:
                return await method(request, timeout=timeout_s, metadata=self._metadata)
            except grpc.aio.AioRpcError as exc:
                hint = retry_after_s(exc) if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else None
                if hint is not None and waited + hint <= self.max_throttle_s:
                    waited += hint
                    await asyncio.sleep(hint)
                    continue
                failures += 1
                if self.retry.retries(exc.code(), failures):  # idempotent: another replica answers the same
                    self.retried += 1
                    await asyncio.sleep(self.retry.delay(failures))
                    continue
                raise RemoteError(f"{exc.code().name}: {exc.details()}", exc.code().name,
                                  exc.code() in RETRYABLE) from exc

    async def verify(self, request: pb.VerifyRequest, timeout_s: float | None = None) -> pb.VerifyResult:
        return await self._call(self._stub.Verify, request, timeout_s)

    async def verify_batch(self, requests: Sequence[pb.VerifyRequest], timeout_s: float | None = None,
                           batch_id: str = "") -> list[pb.VerifyResult]:
        response = await self._call(self._stub.VerifyBatch,
                                    pb.VerifyBatchRequest(requests=requests, batch_id=batch_id), timeout_s)
        return list(response.results)

    async def list_verifiers(self, timeout_s: float | None = 10.0) -> pb.ListVerifiersResponse:
        return await self._call(self._stub.ListVerifiers, pb.ListVerifiersRequest(), timeout_s)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> VerifierClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
