"""The one place the Ray fleet touches the service: an in-process service without a listener (``CoreHandle``).

A Ray Serve replica or a session host builds one ``CoreHandle`` and hands it every call as ``(method, request
bytes, metadata, timeout_s)`` (``verifier_service.ray_wire``). It runs the call through the service's own path,
as a gRPC call would (the tenant from the API key, quotas, admission, catalog, engine, audit line, metrics), with
a small stand-in for the gRPC context whose ``abort`` becomes a ``Reply`` with the same status and message.

This module is the adapter the Ray code is written against: when the transport-neutral core
(``verifier_service/service/``: ``Call``, ``Verifier.verify(call, requests)``, sessions, app resources) lands,
``CoreHandle`` builds that core instead of ``VerifierApp`` and passes a ``Call`` where it passes ``_RayCall`` now;
nothing else in ``fleet_ray`` changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import grpc

import verifier_service.ray_wire as ray_wire
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import ServiceConfig
from verifier_service.ray_wire import Reply
from verifier_service.server.rpclog import current_request_id, request_id_from
from verifier_service.server.server import VerifierApp
from verifier_service.tenancy.auth import KEY_HELP, LOCAL_TENANT, current_tenant, hash_key, key_from_metadata
from verifier_service.wire import decode as wire_decode

log = logging.getLogger(__name__)

_SERVICE = pb.DESCRIPTOR.services_by_name["Verifier"]


def request_class(method: str) -> type:
    return getattr(pb, _SERVICE.methods_by_name[method].input_type.name)


def response_class(method: str) -> type:
    return getattr(pb, _SERVICE.methods_by_name[method].output_type.name)


class _Refused(grpc.aio.AbortError):
    """What ``_RayCall.abort`` raises: an ``AbortError`` to the servicer (it passes it on), a Reply to us."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing):
        super().__init__(details)
        self.reply = Reply(code.name, details, tuple((str(k), str(v)) for k, v in trailing or ()))


class _RayCall:
    """What the servicer reads of a gRPC context, for one call that came through Ray."""

    def __init__(self, metadata: tuple[tuple[str, str], ...], deadline: float | None):
        self._metadata = metadata
        self._deadline = deadline

    def invocation_metadata(self):
        return self._metadata

    def time_remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata=()) -> None:
        raise _Refused(code, details, trailing_metadata)


class CoreHandle:
    """The service in this process, no listener: ``start``, ``call``, ``problem`` (health), ``pending``, ``stop``."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self.app = VerifierApp(config)
        self._watch: asyncio.Task | None = None

    async def start(self) -> None:
        app = self.app
        await app.pure_pool.start()
        await app._check_sandbox()
        if app.sandbox_problem is None:
            removed = await asyncio.to_thread(app.sandbox.remove_orphans_blocking)
            if removed:
                log.warning("removed %d expired sandbox(es) left by an earlier run", removed)
        await app.sandbox.start()
        await app.sessions.start()
        self._watch = asyncio.create_task(self._watch_sandbox())

    async def _watch_sandbox(self) -> None:
        while True:
            await asyncio.sleep(self.config.health_interval_s)
            try:
                await self.app._check_sandbox()
            except Exception:
                log.exception("sandbox health check failed")

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        await self.app.stop(grace=0)

    def problem(self) -> str | None:
        """Why this replica cannot verify code now (its sandbox backend is down), None when it can."""
        return self.app.sandbox_problem

    def pending(self) -> int:
        """Completions admitted and not yet answered (the service's ``rlvr_pending_completions``)."""
        return self.app.servicer.admission.pending

    def live_metrics(self) -> dict[str, float]:
        return self.app._live_metrics()

    def _tenant(self, method: str, metadata):
        auth = self.app.auth
        if auth is None:
            return LOCAL_TENANT, None
        key, problem = key_from_metadata(metadata)
        if not problem:
            if not key:
                problem = "no API key: " + KEY_HELP
            else:
                tenant = auth.tenants.for_key(key)
                if tenant is not None:
                    return tenant, None
                problem = (f"API key not recognised (its hash starts {hash_key(key)[7:15]}); check the key, or "
                           "ask the service's operator for one")
        self.app.audit.refused(method=method, tenant=None, status="UNAUTHENTICATED", message=problem,
                               metadata=metadata)
        return None, Reply(grpc.StatusCode.UNAUTHENTICATED.name, problem)

    async def call(self, method: str, payload: bytes, metadata=(), timeout_s: float | None = None) -> Reply:
        """One Verifier RPC, by name, on serialized messages; never raises for the caller's or the model's faults."""
        if method not in ray_wire.VERIFY_METHODS + ray_wire.SESSION_METHODS:
            return Reply(grpc.StatusCode.UNIMPLEMENTED.name, f"{method!r} is not a method of the verifier on Ray")
        metadata = tuple((str(k).lower(), str(v)) for k, v in metadata or ())
        tenant, refusal = self._tenant(method, metadata)
        if refusal is not None:
            return refusal
        try:
            request = wire_decode(request_class(method).FromString, payload)
        except Exception as exc:  # noqa: BLE001 - the caller's bytes: a refusal naming why
            return Reply(grpc.StatusCode.INVALID_ARGUMENT.name,
                         f"the request is not a valid {method} message ({type(exc).__name__})")
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        context = _RayCall(metadata, deadline)
        token = current_tenant.set(tenant)
        rid = current_request_id.set(request_id_from(metadata))
        try:
            handler = getattr(self.app.servicer, method)
            response = await asyncio.wait_for(handler(request, context), timeout_s)
            return Reply(ray_wire.OK, payload=response.SerializeToString())
        except _Refused as refused:
            return refused.reply
        except (TimeoutError, asyncio.TimeoutError):
            return Reply(grpc.StatusCode.DEADLINE_EXCEEDED.name, f"{method} ran past its deadline of {timeout_s:g}s")
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error in %s (ref %s)", method, ref)
            return Reply(grpc.StatusCode.INTERNAL.name, f"internal error; the replica's log has reference {ref}")
        finally:
            current_request_id.reset(rid)
            current_tenant.reset(token)
