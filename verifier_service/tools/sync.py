"""A synchronous API for notebooks and scripts: ``verifier_service.verify(requests)`` -> results.

Requests are the JSON form of `verifier-service verify` (dicts with ``id``,
``completion`` and ``spec``) or ``VerifyRequest`` messages; results are the JSON
objects that command writes, in request order. Without ``server`` the service core
runs in this process (``service.app.App``: this process's sandbox backend, no
listener) for the call and stops after it; with ``server="host:port"`` the call goes to a running service.
It works where an event loop already runs (Jupyter): the work then runs on a
thread of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.client.loop import run_sync
from verifier_service.config import ServiceConfig
from verifier_service.errors import InvalidSpec, RemoteError, VerifierError
from verifier_service.spec import request_from_json, result_to_json


def verify(requests: Iterable[dict | pb.VerifyRequest], *, server: str | None = None,
           config: ServiceConfig | None = None, credentials=None, batch_size: int = 64,
           timeout_s: float | None = None) -> list[dict[str, Any]]:
    """Verifies ``requests`` and returns their results (JSON objects) in order.

    ``server``: HOST:PORT of a running service (default: an embedded one, configured by ``config``).
    ``credentials``: ``verifier_service.credentials.Credentials`` for ``server`` (default: from the
    environment). A request the service refuses raises ``InvalidSpec`` (or another ``VerifierError``)
    naming it; whatever a completion does is its result's verdict.
    """
    messages = []
    for index, request in enumerate(requests):
        if isinstance(request, pb.VerifyRequest):
            message = request
        else:
            try:
                message = request_from_json(request)
            except InvalidSpec as exc:
                raise InvalidSpec(f"request {index}: {exc}") from exc
        if not message.id:
            message.id = str(index)
        messages.append(message)
    if batch_size <= 0:
        raise VerifierError("batch_size must be positive")
    return run_sync(_verify(messages, server, config or ServiceConfig(), credentials, batch_size, timeout_s))


async def _verify(messages, server, config, credentials, batch_size, timeout_s) -> list[dict[str, Any]]:
    if server:
        return await _remote(messages, server, credentials, batch_size, timeout_s)
    from verifier_service.sandbox import make_sandbox
    from verifier_service.service.app import App
    from verifier_service.service.context import Call
    from verifier_service.tenancy.auth import LOCAL_TENANT

    if any(_sandboxed(m) for m in messages):
        make_sandbox(config).check_blocking()  # the clear "Docker missing / image not built" message
    app = App(replace(config, tenants="", workers=1))  # the core in this process: no listener, no loopback
    await app.start()
    try:
        out: list[dict[str, Any]] = []
        for start in range(0, len(messages), batch_size):
            call = Call.within(LOCAL_TENANT, "verify", timeout_s)
            try:
                results = await asyncio.wait_for(app.verifier.verify(call, messages[start:start + batch_size]),
                                                 timeout_s)
            except InvalidSpec as exc:
                raise InvalidSpec(_shifted(str(exc), start)) from exc
            except TimeoutError:  # as a server's answer would say it
                from verifier_service.client.errors import RemoteDeadlineExceeded

                raise RemoteDeadlineExceeded(f"DEADLINE_EXCEEDED: the batch ran past timeout_s={timeout_s}",
                                             "DEADLINE_EXCEEDED", True) from None
            out.extend(result_to_json(r) for r in results)
        return out
    finally:
        await app.stop()


async def _remote(messages, server, credentials, batch_size, timeout_s) -> list[dict[str, Any]]:
    from verifier_service.client import VerifierClient

    client = await VerifierClient.connect(server, credentials=credentials)
    try:
        out: list[dict[str, Any]] = []
        for start in range(0, len(messages), batch_size):
            try:
                results = await client.verify_batch(messages[start:start + batch_size], timeout_s)
            except RemoteError as exc:
                if exc.code == "INVALID_ARGUMENT":
                    raise InvalidSpec(_shifted(str(exc), start)) from exc
                raise
            out.extend(result_to_json(r) for r in results)
        return out
    finally:
        await client.close()


def _sandboxed(message: pb.VerifyRequest) -> bool:
    if message.verifier:
        return True  # a catalog entry: its kind is known to the service
    from verifier_service.kinds import all_kinds

    return message.spec.kind in {k.name for k in all_kinds() if k.sandboxed}


def _shifted(message: str, start: int) -> str:
    """The service names a request by its index in the batch; the caller's index is ``start`` more."""
    import re

    return re.sub(r"request (\d+)", lambda m: f"request {int(m.group(1)) + start}", message, count=1)
