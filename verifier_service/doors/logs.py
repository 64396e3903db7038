"""The service's log lines: text or JSON (``--log-format json``), each with its request id, repeated lines bounded.

``configure_logging`` sets up the root logger for ``serve``; ``RepeatFilter`` keeps a flood (refused calls from
many clients, an accept refused for want of descriptors) to a few lines per interval; ``JsonFormatter`` writes one
JSON object per record, with the gRPC call log's and the audit log's fields as top-level fields.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

from verifier_service.service.audit import Repeats
from verifier_service.service.context import current_request_id


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (the RPC's, or '') to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class RepeatFilter(logging.Filter):
    """Bounds repeated lines (``service/audit.Repeats``): warnings and errors, and the lines of refused calls
    (they carry ``repeat_key``: the client's address), by logger, message and key. An accept refused for want of
    descriptors is one line without its traceback. The first line of a key's next interval says how many were
    left out."""

    def __init__(self, repeats: Repeats):
        super().__init__()
        self.repeats = repeats
        # the same line from every client together: 10x one client's (a flood from many addresses stays bounded)
        self.every_client = Repeats(repeats.burst * 10, repeats.interval_s)

    def filter(self, record: logging.LogRecord) -> bool:
        key = getattr(record, "repeat_key", None)
        if key is None and record.levelno < logging.WARNING:
            return True
        if record.name == "asyncio" and record.exc_info and "accept" in str(record.msg):
            record.exc_info, record.exc_text = None, None  # (one per refused connection in an fd flood)
        args = record.args if isinstance(record.args, tuple) else ()
        kind = (record.name, record.levelno, str(record.msg), args)
        write, left_out = self.repeats.admit((*kind, key))
        if write and key is not None:
            write, more = self.every_client.admit(kind)
            left_out += more
        if write and left_out:
            record.msg = f"{record.msg} [{left_out} more like this left out of the log in the last interval]"
        return write


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, request_id, and the record's ``rpc`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
               "level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        rid = getattr(record, "request_id", "") or current_request_id.get()
        if rid:
            out["request_id"] = rid
        extra = getattr(record, "rpc", None)
        if isinstance(extra, dict):
            out.update(extra)
        audit = getattr(record, "audit_fields", None)
        if isinstance(audit, dict):  # an audit line: its fields, not its JSON text
            out["msg"] = f"audit {audit.get('audit', '')}".strip()
            out.update({k: v for k, v in audit.items() if k != "ts"})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(level: str, fmt: str, repeats: Repeats | None = None) -> None:
    """The root logger: ``text`` (with the request id) or ``json`` lines on stderr, repeated lines bounded
    (``RepeatFilter``)."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RepeatFilter(repeats if repeats is not None else Repeats()))
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
