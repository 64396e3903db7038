"""The client side of the verifier fleet on Ray: a ``VerifierClient`` whose calls go through a Serve deployment
handle (from inside the Ray cluster: no ingress, no extra hop), and the router the gRPC ingress shares.

Target ``ray:`` (or ``ray:<app name>``, default ``rlvr-verifier``) anywhere a verifier address is taken
(``VerifierClient.open``/``connect``, ``VerifierRewards``, ``RLVR_VERIFIER_ADDRESS`` of the verl / OpenRLHF
hooks) makes a ``VerifierClient`` on the fleet: the process must be in the Ray cluster (a Ray task or actor, or a
driver after ``ray.init``; else ``ray.init(address="auto")`` is tried). Its stub is ``RayStub``: every call is
``(method, request bytes, metadata, timeout)`` to ``RayRouter`` (``verifier_service.ray_wire``), and an answer
other than OK is raised as the ``grpc.aio.AioRpcError`` a gRPC channel would raise, so the client's one call
path (throttling waits, retries, the caller's budget, halving a batch over the message limit, typed errors) is
the same code for both transports. A replica or node that dies under a batch is ``UNAVAILABLE``: the batch goes
again (VerifyBatch is idempotent) to a live replica within the caller's budget; samples answered INFRA_ERROR (a
sandbox that died before its replica did) go once more; what still fails raises (or stays INFRA_ERROR), and the
trainer scores it ``None``, never 0.

A client on Ray and its router pickle (TRL's AsyncGRPO sends reward functions to another process; verl ships
them to its reward workers): they carry the app name, credentials and retry policy, and find the handle again
on first use in the new process.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time

import grpc

import verifier_service.ray_wire as ray_wire
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client.balancing import RetryPolicy
from verifier_service.errors import ServiceUnreachable
from verifier_service.ray_wire import Reply

log = logging.getLogger(__name__)

SCHEME = "ray:"
# a replica or node lost mid-call: more attempts than over gRPC, since Serve needs a moment to route around it
RAY_RETRY = RetryPolicy(attempts=10, initial_backoff_s=0.2, max_backoff_s=2.0)


def app_of(target: str) -> str:
    return target[len(SCHEME):].strip("/") or ray_wire.APP_NAME


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ServiceUnreachable("a 'ray:' verifier target needs Ray: pip install 'rlvr-verifier[ray]'") from exc
    return ray


class RayRouter:
    """Routes one call: verification to the Serve app's handle, a session's calls to the actor that holds it."""

    def __init__(self, app: str = ray_wire.APP_NAME):
        self.app = app
        self._handle = None
        self._hosts: dict[str, object] = {}

    def __getstate__(self):
        return {"app": self.app}

    def __setstate__(self, state):
        self.__init__(state["app"])

    def handle(self):
        if self._handle is None:
            ray = _ray()
            if not ray.is_initialized():
                ray.init(address="auto", log_to_driver=False)
            from ray import serve

            self._handle = serve.get_app_handle(self.app)
        return self._handle

    async def call(self, method: str, payload: bytes, metadata=(), timeout_s: float | None = None) -> Reply:
        if method in ray_wire.SESSION_METHODS:
            return await self._session_call(method, payload, metadata, timeout_s)
        ray = _ray()
        try:
            response = self.handle().options(method_name=ray_wire.CALL).remote(method, payload, tuple(metadata),
                                                                               timeout_s)
        except ray.exceptions.RayError as exc:
            return Reply(grpc.StatusCode.UNAVAILABLE.name, f"the verifier app {self.app!r} is unavailable: {exc}")
        except Exception as exc:  # noqa: BLE001 - Serve raises plain errors for an app that is not deployed
            return Reply(grpc.StatusCode.UNAVAILABLE.name, f"the verifier app {self.app!r} is unavailable: {exc}")
        return await self._await(response, timeout_s, cancel=response.cancel)

    async def _await(self, awaitable, timeout_s: float | None, cancel=None) -> Reply:
        ray = _ray()
        try:
            return await asyncio.wait_for(_as_future(awaitable), timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            if cancel is not None:
                cancel()
            return Reply(grpc.StatusCode.DEADLINE_EXCEEDED.name, f"no answer within {timeout_s:g}s")
        except ray.exceptions.RayTaskError as exc:  # our code raised on the replica: a bug, not a lost replica
            return Reply(grpc.StatusCode.INTERNAL.name, f"internal error on the replica: {str(exc)[:300]}")
        except ray.exceptions.RayError as exc:  # the replica, its worker or its node died: another one answers
            return Reply(grpc.StatusCode.UNAVAILABLE.name, f"the replica was lost ({type(exc).__name__})")

    # ---- sessions: each lives on one host actor --------------------------------------

    def host_names(self) -> list[str]:
        ray = _ray()
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                 if a.get("namespace") == ray_wire.NAMESPACE and a["name"].startswith(ray_wire.SESSION_HOST_PREFIX)]
        return sorted(names)

    def host(self, name: str):
        actor = self._hosts.get(name)
        if actor is None:
            actor = self._hosts[name] = _ray().get_actor(name, namespace=ray_wire.NAMESPACE)
        return actor

    async def _on_host(self, name: str, method: str, payload: bytes, metadata, timeout_s) -> Reply:
        ray = _ray()
        try:
            ref = self.host(name).call.remote(method, payload, tuple(metadata), timeout_s)
        except (ValueError, ray.exceptions.RayError) as exc:
            self._hosts.pop(name, None)
            return Reply(grpc.StatusCode.NOT_FOUND.name, f"session host {name} is gone ({type(exc).__name__}); "
                                                         "its sessions ended with it")
        reply = await self._await(ref, timeout_s, cancel=lambda: ray.cancel(ref))
        if reply.code == grpc.StatusCode.UNAVAILABLE.name:  # the host died under the call: the session is gone
            self._hosts.pop(name, None)
            return Reply(grpc.StatusCode.NOT_FOUND.name, f"session host {name} died; its sessions ended with it")
        return reply

    async def _session_call(self, method: str, payload: bytes, metadata, timeout_s) -> Reply:
        if method == "CloseSessions":  # by labels: every host closes its own
            replies = await asyncio.gather(*(self._on_host(n, method, payload, metadata, timeout_s)
                                             for n in self.host_names()))
            closed = sum(pb.CloseSessionsResponse.FromString(r.payload).closed for r in replies if r.ok)
            return Reply(ray_wire.OK, payload=pb.CloseSessionsResponse(closed=closed).SerializeToString())
        if method == "OpenSession":
            names = self.host_names()
            if not names:
                return Reply(grpc.StatusCode.UNIMPLEMENTED.name, "this fleet has no session hosts "
                                                                 "(deploy with session_hosts > 0)")
            name = random.choice(names)
            reply = await self._on_host(name, method, payload, metadata, timeout_s)
            if not reply.ok:
                return reply
            info = pb.SessionInfo.FromString(reply.payload)
            info.session_id = ray_wire.routed_id(name, info.session_id)
            return Reply(ray_wire.OK, payload=info.SerializeToString())
        request = getattr(pb, _input_name(method)).FromString(payload)
        route = ray_wire.split_id(request.session_id)
        if route is None:
            return Reply(grpc.StatusCode.NOT_FOUND.name, f"no session {request.session_id!r} in this fleet "
                                                         "(not an id it gave out)")
        name, inner = route
        request.session_id = inner
        reply = await self._on_host(name, method, request.SerializeToString(), metadata, timeout_s)
        if reply.ok and method in ("ExecuteCell", "ResetSession"):
            message = getattr(pb, _output_name(method)).FromString(reply.payload)
            _reroute(message, name)
            return Reply(ray_wire.OK, payload=message.SerializeToString())
        return reply


def _reroute(message, host: str) -> None:
    """Writes the routed id into every session id field of an answer."""
    if message.session_id:
        message.session_id = ray_wire.routed_id(host, message.session_id)


_SERVICE = pb.DESCRIPTOR.services_by_name["Verifier"]


def _input_name(method: str) -> str:
    return _SERVICE.methods_by_name[method].input_type.name


def _output_name(method: str) -> str:
    return _SERVICE.methods_by_name[method].output_type.name


async def _as_future(awaitable):
    return await awaitable


def _metadata(pairs) -> grpc.aio.Metadata:
    return grpc.aio.Metadata(*((k, v) for k, v in pairs or ()))


class _RayMethod:
    """One RPC of ``RayStub``: awaited like a gRPC aio stub method; a refusal raises ``AioRpcError``."""

    def __init__(self, router: RayRouter, name: str):
        self.router = router
        self.name = name

    async def __call__(self, request, timeout: float | None = None, metadata=()):
        deadline = None if timeout is None else time.monotonic() + timeout
        response = await self._once(request, timeout, metadata)
        if self.name == "VerifyBatch":
            await self._judge_again(request, response, deadline, metadata)
        return response

    async def _once(self, request, timeout: float | None, metadata):
        reply = await self.router.call(self.name, request.SerializeToString(), metadata, timeout)
        if not reply.ok:
            raise grpc.aio.AioRpcError(grpc.StatusCode[reply.code], _metadata(()), _metadata(reply.trailing),
                                       reply.details)
        return getattr(pb, _output_name(self.name)).FromString(reply.payload)

    async def _judge_again(self, request, response, deadline: float | None, metadata) -> None:
        """Samples a replica answered INFRA_ERROR (its sandbox died: on a node going down, before the replica
        itself) go once more, to whichever replica Serve picks, within the budget; what comes back judged
        replaces them. A second INFRA_ERROR stays (the trainer drops it, never scores it 0)."""
        again = [i for i, r in enumerate(response.results) if r.verdict == pb.INFRA_ERROR]
        left = None if deadline is None else deadline - time.monotonic()
        if not again or (left is not None and left <= 0):
            return
        retry = pb.VerifyBatchRequest(requests=[request.requests[i] for i in again], batch_id=request.batch_id)
        try:
            second = await self._once(retry, left, metadata)
        except grpc.aio.AioRpcError:
            return  # the first answer stands
        for i, result in zip(again, second.results, strict=True):
            if result.verdict != pb.INFRA_ERROR:
                response.results[i].CopyFrom(result)


class RayStub:
    """The Verifier stub's unary methods, over Ray."""

    def __init__(self, router: RayRouter):
        self.router = router
        for name in ray_wire.VERIFY_METHODS + ray_wire.SESSION_METHODS:
            setattr(self, name, _RayMethod(router, name))


async def check(router: RayRouter, metadata=(), timeout_s: float = 10.0) -> None:
    """ServiceUnreachable unless a replica of the fleet answers (ListVerifiers) within ``timeout_s``."""
    started = time.monotonic()
    reply = await router.call("ListVerifiers", pb.ListVerifiersRequest().SerializeToString(), metadata, timeout_s)
    if reply.code in (grpc.StatusCode.UNAVAILABLE.name, grpc.StatusCode.DEADLINE_EXCEEDED.name,
                      grpc.StatusCode.INTERNAL.name):
        raise ServiceUnreachable(f"the verifier fleet {SCHEME}{router.app} did not answer in "
                                 f"{time.monotonic() - started:.1f}s: {reply.details}")


def check_ray_service(target: str, metadata=(), timeout_s: float = 10.0) -> None:
    """Blocking ``check``."""
    asyncio.run(check(RayRouter(app_of(target)), metadata, timeout_s))
