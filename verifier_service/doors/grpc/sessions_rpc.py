"""The session RPCs' messages (OpenSession, ExecuteCell, ResetSession, CloseSession, CloseSessions), in and out of
the session manager's (``service/sessions.py``) types. The RPCs themselves are the servicer's (``servicer.py``)."""

from __future__ import annotations

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.sandbox.sessions import CellOutcome, SessionLimits
from verifier_service.service.sessions import Entry

STATUS_CODES = {"ok": pb.CELL_OK, "error": pb.CELL_ERROR, "timeout": pb.CELL_TIMEOUT,
                "memory_limit": pb.CELL_MEMORY_LIMIT, "output_limit": pb.CELL_OUTPUT_LIMIT,
                "infra_error": pb.CELL_INFRA_ERROR}


def limits_from_proto(message: pb.SessionLimits) -> SessionLimits:
    return SessionLimits(cell_timeout_s=message.cell_timeout_s, output_limit_bytes=message.output_limit_bytes,
                         memory_mb=message.memory_mb, budget_s=message.budget_s, idle_ttl_s=message.idle_ttl_s,
                         max_lifetime_s=message.max_lifetime_s)


def info(entry: Entry) -> pb.SessionInfo:
    s = entry.sandbox
    lim = s.limits
    return pb.SessionInfo(
        session_id=entry.id, language=entry.language, labels=entry.labels, open_s=entry.open_s, cells=s.cells,
        budget_left_s=s.budget_left_s,
        limits=pb.SessionLimits(cell_timeout_s=lim.cell_timeout_s, output_limit_bytes=lim.output_limit_bytes,
                                memory_mb=lim.memory_mb, budget_s=lim.budget_s, idle_ttl_s=lim.idle_ttl_s,
                                max_lifetime_s=lim.max_lifetime_s))


def cell_result(entry: Entry, outcome: CellOutcome) -> pb.CellResult:
    result = pb.CellResult(
        session_id=entry.id, status=STATUS_CODES.get(outcome.status, pb.CELL_ERROR), stdout=outcome.stdout,
        stderr=outcome.stderr, error=outcome.error, traceback=outcome.traceback, restarted=outcome.restarted,
        timings=pb.CellTimings(run_s=outcome.run_s, total_s=outcome.total_s), cell_index=entry.sandbox.cells,
        budget_left_s=entry.sandbox.budget_left_s, session_ended=outcome.session_ended)
    if outcome.value is not None:
        result.value = outcome.value
    return result
