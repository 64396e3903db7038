"""The one place the Ray fleet touches the service: the service core without a door (``CoreHandle``).

A Ray Serve replica or a session host builds one ``CoreHandle`` and hands it every call as ``(method, request
bytes, metadata, timeout_s)`` (``verifier_service.ray_wire``). It authenticates the API key as the doors do, makes
the core's ``Call`` (tenant, method, request id, deadline) and runs ``Verifier.verify`` / ``list_verifiers`` or the
session manager; a refusal comes back as a ``Reply`` with the status of ``errors.STATUS`` and the core's message.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import grpc

import verifier_service.ray_wire as ray_wire
from verifier_service._generated import verifier_pb2 as pb
from verifier_service.config import ServiceConfig
from verifier_service.doors.grpc.rpclog import large_message_refusal
from verifier_service.doors.grpc.sessions_rpc import cell_result, info, limits_from_proto
from verifier_service.errors import wire_refusal
from verifier_service.ray_wire import Reply
from verifier_service.service.app import App
from verifier_service.service.context import Call, current_request_id, request_id_from
from verifier_service.service.verifier import REFUSALS
from verifier_service.tenancy.auth import current_tenant
from verifier_service.wire import decode as wire_decode

log = logging.getLogger(__name__)

_SERVICE = pb.DESCRIPTOR.services_by_name["Verifier"]


def request_class(method: str) -> Any:
    return getattr(pb, _SERVICE.methods_by_name[method].input_type.name)


class CoreHandle:
    """The service core in this process, no door: ``start``, ``call``, ``problem`` (health), ``pending``, ``stop``."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self.app = App(config)

    async def start(self) -> None:
        await self.app.start()

    async def stop(self) -> None:
        await self.app.stop()

    def problem(self) -> str | None:
        """Why this replica cannot verify code now (its sandbox backend is down), None when it can."""
        return self.app.sandbox_problem

    def pending(self) -> int:
        """Completions admitted and not yet answered (the service's ``rlvr_pending_completions``)."""
        return self.app.verifier.admission.pending

    def live_metrics(self) -> dict[str, float]:
        return self.app._live_metrics()

    def _tenant(self, method: str, metadata):
        tenant, problem = self.app.authenticate(method, metadata)
        return (tenant, None) if tenant is not None else (None, Reply(grpc.StatusCode.UNAUTHENTICATED.name, problem))

    async def _run(self, call: Call, method: str, request):
        verifier, sessions, tenant = self.app.verifier, self.app.sessions, call.tenant
        if method == "VerifyBatch":
            return pb.VerifyBatchResponse(results=await verifier.verify(call, request.requests),
                                          batch_id=request.batch_id)
        if method == "Verify":
            return (await verifier.verify(call, [request]))[0]
        if method == "ListVerifiers":
            return verifier.list_verifiers(call)
        if method == "OpenSession":
            return info(await sessions.open(tenant, request.language, limits_from_proto(request.limits),
                                            dict(request.labels)))
        if method == "ExecuteCell":
            entry, outcome = await sessions.execute(tenant, request.session_id, request.code, request.stdin,
                                                    request.timeout_s, request.output_limit_bytes)
            return cell_result(entry, outcome)
        if method == "ResetSession":
            return info(await sessions.reset(tenant, request.session_id))
        if method == "CloseSession":
            return pb.CloseSessionsResponse(closed=await sessions.close(tenant, request.session_id))
        return pb.CloseSessionsResponse(closed=await sessions.close_labelled(tenant, dict(request.labels)))

    async def call(self, method: str, payload: bytes, metadata=(), timeout_s: float | None = None) -> Reply:
        """One Verifier RPC, by name, on serialized messages; never raises for the caller's or the model's faults."""
        if method not in ray_wire.VERIFY_METHODS + ray_wire.SESSION_METHODS:
            return Reply(grpc.StatusCode.UNIMPLEMENTED.name, f"{method!r} is not a method of the verifier on Ray")
        metadata = tuple((str(k).lower(), str(v)) for k, v in metadata or ())
        tenant, refusal = self._tenant(method, metadata)
        if refusal is not None:
            return refusal
        # (a large message is checked in a pure worker first, as the gRPC door does: the parser holds the GIL)
        refusal = await large_message_refusal(self.app.pure_pool, request_class(method).DESCRIPTOR.name, payload,
                                              self.config.max_message_values, tenant.name)
        if refusal is not None:
            return Reply(refusal[0].name, refusal[1])
        try:
            request = wire_decode(request_class(method).FromString, payload)
        except Exception as exc:  # noqa: BLE001 - the caller's bytes: a refusal naming why
            return Reply(grpc.StatusCode.INVALID_ARGUMENT.name,
                         f"the request is not a valid {method} message ({type(exc).__name__})")
        call = Call.within(tenant, method, timeout_s, request_id_from(metadata), metadata)
        token = current_tenant.set(tenant)
        rid = current_request_id.set(call.request_id)
        try:
            response = await asyncio.wait_for(self._run(call, method, request), timeout_s)
            return Reply(ray_wire.OK, payload=response.SerializeToString())
        except REFUSALS as exc:
            return Reply(*wire_refusal(exc))
        except (TimeoutError, asyncio.TimeoutError):
            return Reply(grpc.StatusCode.DEADLINE_EXCEEDED.name, f"{method} ran past its deadline of {timeout_s:g}s")
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error in %s (ref %s)", method, ref)
            return Reply(grpc.StatusCode.INTERNAL.name, f"internal error; the replica's log has reference {ref}")
        finally:
            current_request_id.reset(rid)
            current_tenant.reset(token)
