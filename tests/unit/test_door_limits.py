"""Issue 38's bounds as units (no sandbox): repeated log lines, a tenant's metrics, connection counting, body
budgets, schema formats. The same bounds through the real service: tests/system/test_front_door.py."""

from __future__ import annotations

import asyncio
import json
import logging
import zlib

import pytest

from verifier_service.doors.http.app import own_series
from verifier_service.doors.http.calls import HttpError
from verifier_service.doors.http.limits import BodyBudget, Connections, Held, read_body
from verifier_service.doors.logs import RepeatFilter
from verifier_service.errors import InvalidSpec
from verifier_service.kinds.json_schema import CHECKED_FORMATS, check_schema, schema_problem
from verifier_service.service.audit import Repeats


def _record(msg: str, args=(), level=logging.WARNING, **extra) -> logging.LogRecord:
    record = logging.LogRecord("verifier_service.http", level, __file__, 1, msg, args, None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_repeated_lines_are_counted_not_written():
    repeats = Repeats(burst=3, interval_s=3600)
    rf = RepeatFilter(repeats)
    written = [rf.filter(_record("http %s %d", ("POST /get_reward", 401), logging.INFO, repeat_key="10.0.0.1"))
               for _ in range(100)]
    assert written.count(True) == 3
    # another client, another status, an ordinary info line: their own
    assert rf.filter(_record("http %s %d", ("POST /get_reward", 401), logging.INFO, repeat_key="10.0.0.2"))
    assert rf.filter(_record("http %s %d", ("POST /get_reward", 403), logging.INFO, repeat_key="10.0.0.1"))
    assert all(rf.filter(_record("rpc %s %s", ("Verify", "OK"), logging.INFO)) for _ in range(50))
    # many clients together: at most 10x one client's lines
    many = [rf.filter(_record("http %s %d", ("POST /run_code", 401), logging.INFO, repeat_key=f"10.1.{i}.1"))
            for i in range(200)]
    assert many.count(True) == 30
    # the next interval's first line says how many were left out
    repeats.interval_s = 0
    again = _record("http %s %d", ("POST /get_reward", 401), logging.INFO, repeat_key="10.0.0.1")
    assert rf.filter(again) and "97 more like this" in again.getMessage()


def test_an_accept_error_loses_its_traceback():
    try:
        raise OSError(24, "Too many open files")
    except OSError:
        import sys

        record = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "socket.accept() out of system resource",
                                   (), sys.exc_info())
    assert RepeatFilter(Repeats()).filter(record) and record.exc_info is None


def test_a_tenant_reads_only_its_own_series():
    text = (b'# HELP rlvr_tenant_refusals_total batches refused\n# TYPE rlvr_tenant_refusals_total counter\n'
            b'rlvr_tenant_refusals_total{code="403",tenant="a"} 1.0\n'
            b'rlvr_tenant_refusals_total{code="403",tenant="ab"} 2.0\n'
            b'# HELP rlvr_rpcs_total rpcs\n# TYPE rlvr_rpcs_total counter\nrlvr_rpcs_total{code="OK"} 5.0\n')
    own = own_series(text, "a").decode()
    assert 'tenant="a"' in own and 'tenant="ab"' not in own and "rlvr_rpcs_total" not in own
    assert own.startswith("# HELP rlvr_tenant_refusals_total")


def test_connections_are_counted_per_door_and_per_address():
    connections = Connections(limit=5, per_peer=2)
    assert connections.admit("a") is None and connections.admit("a") is None
    assert "http_max_connections_per_peer=2" in connections.admit("a")
    for peer in ("b", "b", "c"):
        assert connections.admit(peer) is None
    assert "http_max_connections=5" in connections.admit("d")
    connections.release("a")
    assert connections.admit("d") is None and connections.open == 5


def test_body_budgets_per_tenant_and_in_all():
    budget = BodyBudget(total=100, per_tenant=60)
    budget.hold("a", 60)
    with pytest.raises(HttpError, match="http_tenant_body_budget_bytes=60") as tenant:
        budget.hold("a", 1)
    assert tenant.value.status == 429
    budget.hold("b", 40)
    with pytest.raises(HttpError, match="http_body_budget_bytes=100"):
        budget.hold("c", 1)
    budget.release("a", 60)
    budget.hold("c", 50)
    assert budget.held == 90


@pytest.mark.parametrize("fmt, good, bad", [
    ("date-time", "2026-12-04T06:00:00+01:00", "2026-13-04 noon"),
    ("time", "06:00:00Z", "6 o'clock"),
    ("uri", "https://example.org/a?b=c", "not a uri"),
    ("hostname", "example.org", "-bad-.host_"),
    ("duration", "P3DT4H", "three days"),
    ("json-pointer", "/a/b", "a/b"),
    ("uri-template", "https://x/{id}", "https://x/{id"),
    ("color", "red", "not-a-color"),
])
def test_formats_are_checked(fmt, good, bad):
    schema = {"type": "string", "format": fmt}
    check_schema(schema, "spec.schema")
    assert schema_problem(schema, good) is None
    assert schema_problem(schema, bad) is not None


def test_a_format_that_cannot_be_checked_is_refused():
    assert {"date-time", "uri", "hostname", "email", "ipv4", "uuid"} <= CHECKED_FORMATS
    with pytest.raises(InvalidSpec, match="'int32'"):
        check_schema({"type": "object", "properties": {"n": {"format": "int32"}}}, "spec.schema")
    # a property named "format", and data that looks like a format keyword, are no format keywords
    check_schema({"type": "object", "properties": {"format": {"type": "string"}},
                  "default": {"format": "int32"}, "enum": [{"format": "x"}]}, "spec.schema")


class _Content:
    """What ``read_body`` reads of aiohttp's request stream: the body in the pieces a connection delivered."""

    def __init__(self, sent: bytes, piece: int = 100_000):
        self.pieces = [sent[i:i + piece] for i in range(0, len(sent), piece)]

    async def readany(self) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""

    def is_eof(self) -> bool:
        return not self.pieces


class _Body(dict):
    """What ``read_body`` reads of an aiohttp request: headers, the declared length and the body as sent (and,
    as a ``web.Request`` does, it holds values by key)."""

    def __init__(self, sent: bytes, encoding: str = ""):
        self.headers = {"Content-Encoding": encoding} if encoding else {}
        self.content_length = len(sent)
        self.content = _Content(sent)


def _read(sent: bytes, encoding: str = "", limit: int = 1 << 20) -> bytes:
    async def read():  # (the stream is made on the loop that reads it)
        return b"".join(await read_body(_Body(sent, encoding), limit, 10.0, BodyBudget(1 << 30, 1 << 30), "t", Held()))
    return asyncio.run(read())


def _packed(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize("encoding, wbits", [("gzip", 31), ("x-gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_compressed_bodies_are_inflated_by_the_door(encoding, wbits):
    body = json.dumps({"query": ["x" * 300_000]}).encode()
    assert _read(_packed(body, wbits), encoding) == body
    assert _read(body, "identity") == body


def test_compressed_bodies_are_refused_past_the_limit_and_when_broken():
    with pytest.raises(HttpError, match="once inflated") as over:
        _read(_packed(b" " * (8 << 20), 31), "gzip", limit=1 << 20)
    assert over.value.status == 413
    whole = _packed(b"[1, 2, 3]", 31)
    for broken in (whole[:-6], whole + b"more", b"\x1f\x8b" + b"\x00" * 20):
        with pytest.raises(HttpError, match="not valid gzip data") as bad:
            _read(broken, "gzip")
        assert bad.value.status == 400
    with pytest.raises(HttpError, match="'br' is not accepted") as unknown:
        _read(b"[]", "br")
    assert unknown.value.status == 415


def test_a_refused_body_is_read_no_further_than_a_little_of_its_rest():
    """The rest of a refused body: at most the body limit of it read (and dropped), the rest left to the closed
    connection; a smaller rest is read whole (its client, sending before it reads, then reads the refusal)."""
    async def refuse(sent: bytes, limit: int) -> _Body:
        body = _Body(sent)
        with pytest.raises(HttpError) as refused:
            await read_body(body, limit, 10.0, BodyBudget(1 << 30, 1 << 30), "t", Held())
        assert refused.value.status == 413
        return body

    large = asyncio.run(refuse(b" " * (8 << 20), 1 << 20))  # over the limit as declared: not a byte of it read
    left = sum(map(len, large.content.pieces))
    assert (8 << 20) - (1 << 20) - 100_000 <= left < 8 << 20
    small = asyncio.run(refuse(b" " * 180_000, 100_000))  # (within twice the limit)
    assert small.content.is_eof()
