"""An asyncio client of the verifier service: the one call path of every caller (CLI, trainer, scripts).

``connect`` health-checks the service, so a wrong address fails at once with a
message that says what went wrong (connection refused, unknown host, TLS,
malformed address) and how to start a service; ``open`` makes a client without
that check (the trainer checks once, blocking, with ``check_service``). Every
RPC goes through ``_call``, which turns transport errors into typed
``RemoteError`` classes (``errors.py``: the service's status table, inverted).
``Credentials`` add the API key and TLS; a RESOURCE_EXHAUSTED answer (a tenant
over its quota, a full service) waits as the service hints, for at most
``max_throttle_s`` in all.

The target may name several replicas (addresses separated by commas, a list,
or ``dns:///name:port``): calls are spread with round_robin and a call that
fails with UNAVAILABLE goes again, on another replica, as ``RetryPolicy``
says (``balancing.py``, whose ``RETRYABLE`` is the one table of what is
retried). A call's ``timeout_s`` is the caller's whole budget: each attempt
gets the time left, never a fresh deadline, and waits never run past it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.client.balancing import SCHEMES, RetryPolicy, _split, addresses, channel_options, channel_target
from verifier_service.client.errors import MessageTooLarge, RemoteDeadlineExceeded, over_message_limit, remote_error
from verifier_service.credentials import Credentials, retry_after_s
from verifier_service.errors import RemoteError, ServiceUnreachable, VerifierError
from verifier_service.spec import SERVICE_NAME

log = logging.getLogger(__name__)

START_HINT = "start one with `verifier-service serve --port PORT`"
COMPOSE_PLUGINS = ("/usr/libexec/docker/cli-plugins/docker-compose", "/usr/lib/docker/cli-plugins/docker-compose",
                   "/usr/local/lib/docker/cli-plugins/docker-compose", "~/.docker/cli-plugins/docker-compose")


def compose_v2() -> bool:
    """Whether ``docker compose`` (v2, the CLI plugin) is installed here: only then do hints suggest it."""
    import os

    return any(os.path.exists(os.path.expanduser(p)) for p in COMPOSE_PLUGINS)


def start_hint() -> str:
    return START_HINT + (" (or `docker compose up verifier`)" if compose_v2() else "")
MAX_THROTTLE_WAIT_S = 30.0  # the longest single wait on a retry hint


@dataclass
class CallStats:
    """What one call cost: RPCs sent, seconds waited on throttling hints."""

    attempts: int = 0
    throttled_s: float = 0.0


def health_status(address: str, timeout_s: float = 2.0) -> int | None:
    """The Verifier service's health status at ``address`` (plaintext, blocking), or None when nothing answers
    (for scripts and tests that start a service and wait for it; ``VerifierClient.connect`` is the client's)."""
    with grpc.insecure_channel(address) as channel:
        try:
            return health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout_s).status
        except grpc.RpcError:
            return None


def _is_ray(target) -> bool:
    return isinstance(target, str) and target.startswith("ray:")  # (client/ray_fleet.py's SCHEME)


def _target_text(target: str | Sequence[str]) -> str:
    return target if isinstance(target, str) else ",".join(target)


def _resolve(target: str | Sequence[str]) -> tuple[str, str | None]:
    """The gRPC target and authority, or ServiceUnreachable saying what is wrong with the address."""
    try:
        for part in addresses(target):
            scheme, sep, rest = part.partition("://")
            if sep and scheme.lower() in ("http", "https", "grpc", "grpcs"):
                raise VerifierError(f"{part!r} is a URL: give HOST:PORT ({rest.rstrip('/')}; gRPC, not HTTP; TLS is "
                                    "the --server-ca / RLVR_VERIFIER_TLS_CA setting, not a scheme)")
            if not part.startswith(SCHEMES) and "://" not in part:
                host, port = _split(part)
                if not host or not 0 < int(port) < 65536:
                    raise VerifierError(f"verifier address {part!r} needs a host and a port from 1 to 65535")
        return channel_target(target)
    except ServiceUnreachable:
        raise
    except VerifierError as exc:
        raise ServiceUnreachable(f"malformed verifier address: {exc}") from exc


def why_unreachable(code: grpc.StatusCode, details: str, timeout_s: float) -> str:
    """What a failed health check says about the connection, in words."""
    text = details.lower()
    if "ssl" in text or "handshake" in text or "certificate" in text or "tls" in text:
        return "the TLS handshake failed"
    if "dns" in text or "name resolution" in text or "domain name not found" in text or "resolve" in text:
        return "unknown host (the name does not resolve)"
    if "connection refused" in text:
        return "connection refused (nothing listens on that port)"
    if "socket closed" in text or "connection reset" in text or "end of file" in text or "eof" in text:
        return "the connection was closed before any answer (a TLS service spoken to in plaintext?)"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"no answer within {timeout_s:g}s"
    return f"{code.name}: {details}"


def _unreachable(target: str, code: grpc.StatusCode, details: str, timeout_s: float,
                 credentials: Credentials) -> ServiceUnreachable:
    return ServiceUnreachable(f"no verifier service answers at {target}: {why_unreachable(code, details, timeout_s)} "
                              f"({code.name}: {details}); {start_hint()}; {credentials.connect_hint()}")


_NOT_SERVING = ("is NOT_SERVING: its sandbox backend is down (see the service's log: Docker unreachable or the "
                "sandbox image missing)")


def check_service(target: str | Sequence[str], credentials: Credentials | None = None, timeout_s: float = 10.0,
                  max_message_bytes: int = 64 * 1024 * 1024) -> None:
    """Blocking: returns when the service at ``target`` is SERVING, else ServiceUnreachable saying why
    (a refused port or an unknown host fails at once, not after ``timeout_s``)."""
    credentials = credentials if credentials is not None else Credentials.from_env()
    if _is_ray(target):  # the fleet on Ray, through a deployment handle (client/ray_fleet.py)
        from verifier_service.client.ray_fleet import check_ray_service

        return check_ray_service(target, credentials.metadata, timeout_s)
    resolved, authority = _resolve(target)
    with credentials.channel(resolved, options=channel_options(max_message_bytes, authority)) as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout_s)
        except grpc.RpcError as exc:
            raise _unreachable(_target_text(target), exc.code(), exc.details() or "", timeout_s, credentials) \
                from exc
    if response.status != health_pb2.HealthCheckResponse.SERVING:
        raise ServiceUnreachable(f"the verifier service at {_target_text(target)} {_NOT_SERVING}")


class VerifierClient:
    def __init__(self, channel: grpc.aio.Channel | None, target: str, credentials: Credentials | None = None,
                 max_throttle_s: float = 120.0, retry: RetryPolicy = RetryPolicy(), stub=None):
        self._channel = channel  # None for a client on Ray (``stub``: ray_fleet.RayStub)
        self.retry = retry
        self.retried = 0  # calls sent again after UNAVAILABLE
        self._stub = stub if stub is not None else pb_grpc.VerifierStub(channel)
        self.target = target
        self.credentials = credentials if credentials is not None else Credentials()
        self._metadata = self.credentials.metadata
        self.max_throttle_s = max_throttle_s

    @classmethod
    def open(cls, target: str | Sequence[str], max_message_bytes: int = 64 * 1024 * 1024,
             credentials: Credentials | None = None, max_throttle_s: float = 120.0,
             retry: RetryPolicy = RetryPolicy()) -> VerifierClient:
        """A client on a new channel to ``target``, no health check (call it on the loop that will use it);
        ``ray:`` / ``ray:<app>``: a ``RayVerifierClient`` on the fleet on Ray (client/ray_fleet.py)."""
        credentials = credentials if credentials is not None else Credentials.from_env()
        if _is_ray(target):
            from verifier_service.client import ray_fleet

            router = ray_fleet.RayRouter(ray_fleet.app_of(target))
            return cls(None, target, credentials, max_throttle_s,
                       ray_fleet.RAY_RETRY if retry == RetryPolicy() else retry, stub=ray_fleet.RayStub(router))
        resolved, authority = _resolve(target)
        channel = credentials.aio_channel(resolved, options=channel_options(max_message_bytes, authority))
        return cls(channel, _target_text(target), credentials, max_throttle_s, retry)

    @classmethod
    async def connect(cls, target: str | Sequence[str], timeout_s: float = 10.0,
                      max_message_bytes: int = 64 * 1024 * 1024, credentials: Credentials | None = None,
                      max_throttle_s: float = 120.0, retry: RetryPolicy = RetryPolicy()) -> VerifierClient:
        """``open`` and a health check: ServiceUnreachable, saying why, when the service does not answer
        SERVING (a refused port or an unknown host fails at once; a silent host after ``timeout_s``)."""
        client = cls.open(target, max_message_bytes, credentials, max_throttle_s, retry)
        if _is_ray(target):
            from verifier_service.client.ray_fleet import check

            await check(client._stub.router, client._metadata, timeout_s)
            return client
        try:
            # not wait_for_ready: a connection that fails (refused, unknown host, TLS) fails this call at once
            response = await health_pb2_grpc.HealthStub(client._channel).Check(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            await client.close()
            raise _unreachable(client.target, exc.code(), exc.details() or "", timeout_s, client.credentials) \
                from exc
        except BaseException:
            await client.close()
            raise
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            await client.close()
            raise ServiceUnreachable(f"the verifier service at {client.target} {_NOT_SERVING}")
        return client

    async def _call(self, method, request, timeout_s: float | None, stats: CallStats | None = None):
        """One call, retried as ``RETRYABLE`` says, within ``timeout_s`` in all (None: no deadline)."""
        stats = stats if stats is not None else CallStats()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        failures = 0

        def left() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        while True:
            stats.attempts += 1
            try:
                return await method(request, timeout=left(), metadata=self._metadata)
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                remaining = left()
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED and not over_message_limit(code, exc.details() or ""):
                    hint = retry_after_s(exc)
                    wait = min(hint if hint is not None else self.retry.delay(failures + 1), MAX_THROTTLE_WAIT_S)
                    if stats.throttled_s + wait <= self.max_throttle_s and (remaining is None or wait < remaining):
                        stats.throttled_s += wait
                        await asyncio.sleep(wait)
                        continue
                    raise remote_error(code, exc.details() or "") from exc
                failures += 1
                if self.retry.retries(code, failures):  # idempotent: another replica answers the same
                    delay = self.retry.delay(failures)
                    if remaining is None or delay < remaining:
                        self.retried += 1
                        await asyncio.sleep(delay)
                        continue
                raise remote_error(code, exc.details() or "") from exc

    async def verify(self, request: pb.VerifyRequest, timeout_s: float | None = None) -> pb.VerifyResult:
        return await self._call(self._stub.Verify, request, timeout_s)

    async def verify_batch(self, requests: Sequence[pb.VerifyRequest], timeout_s: float | None = None,
                           batch_id: str = "", stats: CallStats | None = None) -> list[pb.VerifyResult]:
        """One VerifyBatch call; ``timeout_s`` is the budget of all its attempts; ``stats`` (if given) counts
        the RPCs sent and the seconds waited on throttling. A batch whose request or answer is over a gRPC
        message limit is verified in halves (each fits, or halves again), within the same budget; one request
        that does not fit alone raises ``MessageTooLarge``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            response = await self._call(self._stub.VerifyBatch,
                                        pb.VerifyBatchRequest(requests=requests, batch_id=batch_id), timeout_s, stats)
        except MessageTooLarge as exc:
            if len(requests) < 2:
                raise
            half = len(requests) // 2
            log.warning("verifier batch of %d over the message limit (%s): verified in halves", len(requests),
                        exc.details)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            first = await self.verify_batch(requests[:half], left, batch_id, stats)
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            return first + await self.verify_batch(requests[half:], left, batch_id, stats)
        return list(response.results)

    async def verify_json(self, rows: Sequence[dict | pb.VerifyRequest], batch_size: int = 32, parallel: int = 4,
                          timeout_s: float | None = None) -> list[dict]:
        """The JSON form in and out, as ``verifier_service.verify`` takes and returns it: dicts with string
        verdicts (``result["verdict"] == "PASSED"``), the same type the synchronous API and ``verify --output``
        give. ``verify_batch`` / ``verify_many`` return the protobuf messages (``verdict`` an enum number)."""
        from verifier_service.spec import request_from_json, result_to_json

        requests = [row if isinstance(row, pb.VerifyRequest) else request_from_json(row) for row in rows]
        return [result_to_json(r) for r in await self.verify_many(requests, batch_size, parallel, timeout_s)]

    async def verify_each(self, requests: Sequence[pb.VerifyRequest], timeout_s: float,
                          stats: CallStats | None = None) -> list[pb.VerifyResult | None]:
        """Each request verified on its own, on one ``VerifyStream`` (one sample per message), its result taken
        as it comes: at the end of ``timeout_s`` only the samples the service has not answered are None (a slow
        completion costs its own sample, never the batch's). Identical requests (a GRPO group repeats
        completions) are sent once. UNAVAILABLE and RESOURCE_EXHAUSTED send the samples still unanswered again,
        as ``_call`` would, within the same budget; another refusal raises its typed ``RemoteError``."""
        stats = stats if stats is not None else CallStats()
        deadline = time.monotonic() + timeout_s
        results: list[pb.VerifyResult | None] = [None] * len(requests)
        slots: dict[bytes, list[int]] = {}
        for i, request in enumerate(requests):
            key = pb.VerifyRequest(spec=request.spec, completion=request.completion, verifier=request.verifier,
                                   fields=request.fields).SerializeToString(deterministic=True)
            slots.setdefault(key, []).append(i)
        todo = {str(n): indices for n, indices in enumerate(slots.values())}
        if not hasattr(self._stub, "VerifyStream"):  # a transport without streams (the fleet on Ray): a call each
            return await self._verify_each_unary(requests, todo, results, deadline, stats)
        failures = 0
        while todo:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            stats.attempts += 1
            batches = [pb.VerifyBatchRequest(requests=[requests[indices[0]]], batch_id=name)
                       for name, indices in todo.items()]
            call = self._stub.VerifyStream(iter(batches), timeout=remaining, metadata=self._metadata)
            try:
                async for response in call:
                    indices = todo.pop(response.batch_id, None)
                    if indices is None or len(response.results) != 1:
                        continue
                    for i in indices:
                        result = pb.VerifyResult()
                        result.CopyFrom(response.results[0])
                        result.id = requests[i].id
                        results[i] = result
                return results
            except grpc.aio.AioRpcError as exc:
                code, details = exc.code(), exc.details() or ""
                remaining = deadline - time.monotonic()
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    break  # the samples not answered by now score None; the others keep their results
                if code == grpc.StatusCode.INTERNAL and "from Core" in details:
                    # the service ended the stream while requests were still being written (a refusal): grpc
                    # reports that as its own INTERNAL; the samples left go one call each, which names the refusal
                    return await self._verify_each_unary(requests, todo, results, deadline, stats)
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED and not over_message_limit(code, details):
                    hint = retry_after_s(exc)
                    wait = min(hint if hint is not None else self.retry.delay(failures + 1), MAX_THROTTLE_WAIT_S)
                    if stats.throttled_s + wait <= self.max_throttle_s and wait < remaining:
                        stats.throttled_s += wait
                        await asyncio.sleep(wait)
                        continue
                    raise remote_error(code, details) from exc
                failures += 1
                delay = self.retry.delay(failures)
                if self.retry.retries(code, failures) and delay < remaining:
                    self.retried += 1
                    await asyncio.sleep(delay)
                    continue
                raise remote_error(code, details) from exc
            finally:
                call.cancel()
        return results

    async def _verify_each_unary(self, requests: Sequence[pb.VerifyRequest], todo: dict[str, list[int]],
                                 results: list[pb.VerifyResult | None], deadline: float,
                                 stats: CallStats) -> list[pb.VerifyResult | None]:
        """``verify_each`` where the transport has no streams: one VerifyBatch per distinct sample, all at once,
        each result kept as it comes; at the deadline the samples not answered are None."""
        async def one(indices: list[int]) -> None:
            answer = await self.verify_batch([requests[indices[0]]], timeout_s=max(0.0, deadline - time.monotonic()),
                                             stats=stats)
            for i in indices:
                result = pb.VerifyResult()
                result.CopyFrom(answer[0])
                result.id = requests[i].id
                results[i] = result

        tasks = [asyncio.ensure_future(one(indices)) for indices in todo.values()]
        done, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
        for task in pending:
            task.cancel()
        for task in done:
            exc = task.exception()
            if exc is not None and not isinstance(exc, RemoteDeadlineExceeded):
                raise exc
        return results

    async def verify_many(self, requests: Sequence[pb.VerifyRequest], batch_size: int = 32, parallel: int = 4,
                          timeout_s: float | None = None,
                          on_batch: Callable[[int], None] | None = None) -> list[pb.VerifyResult]:
        """Many requests as VerifyBatch calls of ``batch_size``, ``parallel`` at once, the results in order;
        ``on_batch(n)`` after each call (progress). A refused call raises the typed RemoteError, its message
        naming the requests (1-based) of that call."""
        chunks = [list(requests[i:i + batch_size]) for i in range(0, len(requests), batch_size)]
        results: list[list[pb.VerifyResult]] = [[] for _ in chunks]
        gate = asyncio.Semaphore(max(1, parallel))

        async def one(index: int, chunk: list[pb.VerifyRequest]) -> None:
            async with gate:
                try:
                    results[index] = await self.verify_batch(chunk, timeout_s)
                except RemoteError as exc:
                    first, last = index * batch_size + 1, index * batch_size + len(chunk)
                    raise type(exc)(f"the service rejected requests {first}-{last}: {exc}", exc.code,
                                    exc.retryable, exc.details) from exc
            if on_batch is not None:
                on_batch(len(chunk))

        await asyncio.gather(*(one(i, c) for i, c in enumerate(chunks)))
        return [r for chunk in results for r in chunk]

    async def list_verifiers(self, timeout_s: float | None = 10.0) -> pb.ListVerifiersResponse:
        return await self._call(self._stub.ListVerifiers, pb.ListVerifiersRequest(), timeout_s)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    def __reduce__(self):
        """A client on Ray pickles as its target and settings (it finds the fleet again where it is unpickled); a
        gRPC client's channel belongs to its event loop: pickle its target instead."""
        if self._channel is not None:
            raise TypeError(f"a VerifierClient on a gRPC channel ({self.target}) cannot be pickled: its channel "
                            "belongs to an event loop of this process; pickle the target and open a client there")
        return (_reopen, (self.target, self.credentials, self.max_throttle_s, self.retry))

    async def __aenter__(self) -> VerifierClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


def _reopen(target: str, credentials: Credentials, max_throttle_s: float, retry: RetryPolicy) -> VerifierClient:
    return VerifierClient.open(target, credentials=credentials, max_throttle_s=max_throttle_s, retry=retry)
