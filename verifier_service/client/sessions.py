"""A blocking client of the service's sandbox sessions (OpenSession, ExecuteCell, ResetSession, CloseSession,
CloseSessions): what a tool-calling environment (``trainer/environment.py``) or a script uses.

A session lives on the replica that opened it, so a ``SessionClient`` talks to one address: given several
(a comma-separated list), it picks one at random, so that many clients spread over the replicas while each
keeps its sessions on one. Opening a session waits and tries again when the service answers
RESOURCE_EXHAUSTED (too many live sessions or opens: its ``retry-after-ms`` hint), for at most
``max_wait_s``; a cell is never sent twice. A session that is gone raises ``RemoteSessionGone`` (NOT_FOUND,
saying why); other failures raise the typed ``RemoteError`` of ``errors.py``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import grpc

from verifier_service._generated import verifier_pb2 as pb
from verifier_service._generated import verifier_pb2_grpc as pb_grpc
from verifier_service.client.balancing import addresses
from verifier_service.client.errors import remote_error
from verifier_service.credentials import Credentials, retry_after_s

DEFAULT_HINT_S = 0.5
RPC_SLACK_S = 15.0  # on top of a cell's own time limit before the call itself gives up


def _error(exc: grpc.RpcError):
    """The typed error of a failed session call (NOT_FOUND: ``RemoteSessionGone``, a session that is gone)."""
    return remote_error(exc.code(), exc.details() or "")


class SessionClient:
    def __init__(self, target: str | Sequence[str], credentials: Credentials | None = None,
                 max_wait_s: float = 120.0, max_message_bytes: int = 64 * 1024 * 1024):
        choices = addresses(target)
        self.address = random.choice(choices)
        self.credentials = credentials or Credentials()
        self.max_wait_s = max_wait_s
        options = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes)]
        self.channel = self.credentials.channel(self.address, options=options)
        self.stub = pb_grpc.VerifierStub(self.channel)

    def _call(self, method, request, timeout_s: float):
        try:
            return method(request, timeout=timeout_s, metadata=self.credentials.metadata)
        except grpc.RpcError as exc:
            raise _error(exc) from None

    def open(self, language: str = "python", limits: pb.SessionLimits | None = None,
             labels: dict[str, str] | None = None, timeout_s: float = 30.0) -> pb.SessionInfo:
        """A new session; waits as the service hints while it is full (at most ``max_wait_s``)."""
        request = pb.OpenSessionRequest(language=language, limits=limits, labels=labels or {})
        give_up = time.monotonic() + self.max_wait_s
        while True:
            try:
                return self.stub.OpenSession(request, timeout=timeout_s, metadata=self.credentials.metadata)
            except grpc.RpcError as exc:
                code = exc.code()
                retry = code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
                wait = retry_after_s(exc) or DEFAULT_HINT_S
                if not retry or time.monotonic() + wait > give_up:
                    raise _error(exc) from None
                time.sleep(wait * random.uniform(1.0, 1.25))

    def execute(self, session_id: str, code: str, stdin: str = "", timeout_s: float = 0.0,
                output_limit_bytes: int = 0, rpc_timeout_s: float | None = None) -> pb.CellResult:
        """Runs one cell; the call waits for the cell's own limit plus some slack (``rpc_timeout_s`` overrides)."""
        request = pb.ExecuteCellRequest(session_id=session_id, code=code, stdin=stdin, timeout_s=timeout_s,
                                        output_limit_bytes=output_limit_bytes)
        wait = rpc_timeout_s if rpc_timeout_s is not None else (timeout_s or 120.0) + RPC_SLACK_S
        return self._call(self.stub.ExecuteCell, request, wait)

    def run(self, session_id: str, code: str, **options) -> dict:
        """``execute`` with the result as a dict of plain values, the status by name (``"CELL_OK"``,
        ``"CELL_ERROR"``, ``"CELL_TIMEOUT"``, ...), as the verification results' verdicts are."""
        from google.protobuf.json_format import MessageToDict

        return MessageToDict(self.execute(session_id, code, **options), preserving_proto_field_name=True,
                             always_print_fields_with_no_presence=True)

    def reset(self, session_id: str, timeout_s: float = 30.0) -> pb.SessionInfo:
        return self._call(self.stub.ResetSession, pb.SessionRef(session_id=session_id), timeout_s)

    def close_session(self, session_id: str, timeout_s: float = 30.0) -> int:
        return self._call(self.stub.CloseSession, pb.SessionRef(session_id=session_id), timeout_s).closed

    def close_labelled(self, labels: dict[str, str], timeout_s: float = 30.0) -> int:
        """Closes every session of this caller (its tenant) that has all of ``labels``; how many."""
        return self._call(self.stub.CloseSessions, pb.CloseSessionsRequest(labels=labels), timeout_s).closed

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> SessionClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
