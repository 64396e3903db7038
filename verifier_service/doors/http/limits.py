"""The HTTP door's limits under hostile clients: connections per door and per client address, and the request
body (its size as sent and once inflated, the time it may take, and the bytes the door holds at once per tenant
and in all). Each refusal names its limit and the setting that changes it (docs/security.md)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import resource
import zlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

from verifier_service.doors.http.calls import HttpError

log = logging.getLogger("verifier_service.http")
CHUNK = 64 * 1024  # the most of a body inflated at once
LARGE_BODY = 1 << 20  # a body over this many bytes waits for its tenant's turn to be read (``BodyTurns``)
LINGER_S = 2.0  # what is left of a refused body is read (and dropped) for at most this long (``_drop_rest``)
# Content-Encoding -> zlib's wbits (deflate: zlib's format; the raw form some clients send is found by its header)
ENCODINGS = {"gzip": 31, "x-gzip": 31, "deflate": 15}
# Threads of their own: a flood of compressed bodies queues here, not in the default executor that other tenants'
# calls use (large extractions, large JSON bodies)
INFLATING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="inflate")


def fd_limit() -> int:
    """The process's soft open-file limit (``serve`` raised it to the hard one at start)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _busy(reason: str) -> bytes:
    body = json.dumps({"error": reason}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class Connections:
    """Counts the door's open connections, in all and per client address; ``protocol(inner)`` wraps each
    connection's aiohttp protocol so that one over a cap is answered 503 (naming the cap) and closed before
    aiohttp sees it."""

    def __init__(self, limit: int, per_peer: int):
        self.limit = limit
        self.per_peer = per_peer
        self.open = 0
        self.by_peer: collections.Counter[str] = collections.Counter()
        self.refused = 0

    def admit(self, peer: str) -> str | None:
        """None when admitted (counted), else why not."""
        if self.open >= self.limit:
            return (f"this service holds {self.open} HTTP connections, its limit (http_max_connections="
                    f"{self.limit}); retry later")
        if self.by_peer[peer] >= self.per_peer:
            return (f"your address holds {self.by_peer[peer]} HTTP connections to this service, its limit "
                    f"(http_max_connections_per_peer={self.per_peer}); reuse connections")
        self.open += 1
        self.by_peer[peer] += 1
        return None

    def release(self, peer: str) -> None:
        self.open -= 1
        self.by_peer[peer] -= 1
        if self.by_peer[peer] <= 0:
            del self.by_peer[peer]

    def protocol(self, inner) -> asyncio.Protocol:
        return _Counted(self, inner)


class _Counted(asyncio.Protocol):
    """One connection: counted while open, or refused at once; everything else is the aiohttp protocol's."""

    def __init__(self, owner: Connections, inner):
        self.owner = owner
        self.inner = inner
        self.peer: str | None = None

    def connection_made(self, transport) -> None:
        peername = transport.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        problem = self.owner.admit(peer)
        if problem is not None:
            self.owner.refused += 1
            # one kind of line for the whole door (a flood may come from many addresses)
            log.warning("http connection refused: %s", problem.split(";")[0].split(" holds ")[0],
                        extra={"repeat_key": "connections"})
            transport.write(_busy(problem))
            transport.close()
            return
        self.peer = peer
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.peer is not None:
            self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.peer is not None else None

    def connection_lost(self, exc) -> None:
        if self.peer is not None:
            self.owner.release(self.peer)
            self.peer = None
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.peer is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.peer is not None:
            self.inner.resume_writing()


class BodyTurns:
    """How many large request bodies (over ``LARGE_BODY`` bytes, or of no declared length) of one tenant the door
    reads at once (``http_tenant_body_reads``). The others wait before their first byte is read: their
    senders are held by TCP's flow control, not by this service's event loop, which a tenant sending many large
    bodies at once would otherwise fill with its reads (every other tenant's calls wait behind them). Small bodies
    never wait."""

    def __init__(self, per_tenant: int):
        self.per_tenant = per_tenant
        self._turns: dict[str, asyncio.Semaphore] = {}
        self._waiting: collections.Counter[str] = collections.Counter()

    @contextlib.asynccontextmanager
    async def turn(self, tenant: str, declared: int | None) -> AsyncIterator[None]:
        if declared is not None and declared <= LARGE_BODY:
            yield
            return
        turns = self._turns.setdefault(tenant, asyncio.Semaphore(self.per_tenant))
        self._waiting[tenant] += 1
        try:
            async with turns:
                yield
        finally:
            self._waiting[tenant] -= 1
            if not self._waiting[tenant]:
                del self._waiting[tenant], self._turns[tenant]


class BodyBudget:
    """Request body bytes the door holds at once, per tenant and in all: a body is read (and inflated) in chunks,
    each chunk held against both budgets until its request is answered."""

    def __init__(self, total: int, per_tenant: int):
        self.total = total
        self.per_tenant = per_tenant
        self.held = 0
        self.by_tenant: collections.Counter[str] = collections.Counter()

    def hold(self, tenant: str, n: int) -> None:
        if self.by_tenant[tenant] + n > self.per_tenant:
            raise HttpError(429, f"tenant {tenant!r} has {self.by_tenant[tenant]} bytes of request bodies in this "
                                 f"service, its limit (http_tenant_body_budget_bytes={self.per_tenant}); wait for "
                                 "answers, or send smaller requests", {"Retry-After": "1"})
        if self.held + n > self.total:
            raise HttpError(429, f"this service holds {self.held} bytes of request bodies, its limit "
                                 f"(http_body_budget_bytes={self.total}); retry", {"Retry-After": "1"})
        self.held += n
        self.by_tenant[tenant] += n

    def release(self, tenant: str, n: int) -> None:
        self.held -= n
        self.by_tenant[tenant] -= n
        if self.by_tenant[tenant] <= 0:
            del self.by_tenant[tenant]


class Inflater:
    """A compressed body undone chunk by chunk, never past what the caller has room for. zlib releases the GIL
    while it inflates, so in a thread a compressed body costs the event loop (every other tenant's calls) nothing:
    the door reads bodies as sent (the server's own inflating, on the event loop, is off)."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self._zlib: zlib._Decompress | None = None

    async def inflate(self, chunk: bytes, room: int) -> AsyncIterator[bytes]:
        """What ``chunk`` inflates to, in pieces of at most ``CHUNK`` (each held against the budget before the
        next is made), and no more than ``room`` bytes in all (more would be over the limit anyway)."""
        if self._zlib is None:  # deflate as zlib's format, or raw (RFC 1951) when the zlib header is not there
            raw = self.encoding == "deflate" and (chunk[0] & 0x0F) != 8
            self._zlib = zlib.decompressobj(-15 if raw else ENCODINGS[self.encoding])
        inflating = self._zlib
        while room > 0:
            most = min(room, CHUNK)
            try:
                piece = await asyncio.get_running_loop().run_in_executor(INFLATING, inflating.decompress, chunk,
                                                                         most)
            except zlib.error:
                raise HttpError(400, f"the request body is not valid {self.encoding} data") from None
            room -= len(piece)
            chunk = inflating.unconsumed_tail
            if piece:
                yield piece
            if not chunk and len(piece) < most:  # (a full piece may leave output inside zlib: ask again)
                return

    def check_end(self) -> None:
        if self._zlib is not None and (not self._zlib.eof or self._zlib.unused_data):
            raise HttpError(400, f"the request body is not valid {self.encoding} data (it ends early, or goes on "
                                 "past its end)")


async def _one(chunk: bytes) -> AsyncIterator[bytes]:
    yield chunk


def inflater(request) -> Inflater | None:
    """The ``Inflater`` of the request's Content-Encoding (None: sent as is); 415 for an encoding not accepted."""
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding not in ENCODINGS:
        raise HttpError(415, f"Content-Encoding {encoding!r} is not accepted here: send the body as is, or as "
                             "gzip or deflate")
    return Inflater(encoding)


async def read_body(request, limit: int, timeout_s: float, budget: BodyBudget, tenant: str, held: list[int],
                    turns: BodyTurns | None = None) -> list[bytes]:
    """The request's body (inflated, ``Inflater``) as its pieces, read as they came from the connection: refused
    (413) as soon as it is over ``limit`` as declared or as inflated so far, never inflated past it; 408 past
    ``timeout_s`` from its first byte's turn (``turns``: a tenant's large bodies are read a few at a time); each
    piece is held against ``budget`` (``held[0]`` counts it, for the caller to release). The pieces are not joined
    here: joining 16 MB is one step of the event loop of several milliseconds (a large body goes to a pure worker
    piece by piece, and is joined there). One deadline for the whole body, not one per read: a timer per read
    of a 15 MB body was a task and a timer handle per 64 KB on the event loop."""
    try:
        return await _read_body(request, limit, timeout_s, budget, tenant, held, turns)
    except HttpError:  # what is left of a refused body: read (and dropped) up to the limit, the rest never is
        await _drop_rest(request, limit)
        raise


async def _drop_rest(request, most: int) -> None:
    """Reads and drops at most ``most`` bytes (the body limit) of what is left of a refused body, for at most
    ``LINGER_S``: a client that sends its whole body before it reads the answer (urllib, aiohttp's client) then
    reads the refusal, if its body was within twice the limit. A body with more left is not read: the connection
    is closed once the refusal is sent (the server's own lingering is off; it would read a refused body of any
    size, a gigabyte, at the event loop's full speed, for as long as it lingers)."""
    async def drop() -> None:
        dropped = 0
        while dropped <= most:
            chunk = await request.content.readany()
            if not chunk:
                return
            dropped += len(chunk)

    with contextlib.suppress(asyncio.TimeoutError, OSError, ValueError):
        if not request.content.is_eof():
            await asyncio.wait_for(drop(), LINGER_S)


async def _read_body(request, limit: int, timeout_s: float, budget: BodyBudget, tenant: str, held: list[int],
                     turns: BodyTurns | None) -> list[bytes]:
    declared = request.content_length
    if declared is not None and declared > limit:
        raise HttpError(413, f"the request body ({declared} bytes) is over this service's limit of {limit} bytes "
                             "(http_max_body_bytes): send fewer or smaller items per request")
    inflating = inflater(request)
    pieces: list[bytes] = []  # (a growing buffer would copy itself over and over)
    async with turns.turn(tenant, declared) if turns is not None else contextlib.nullcontext():
        try:  # (one timer for the whole body)
            await asyncio.wait_for(_read_pieces(request.content.readany, limit, budget, tenant, held, inflating,
                                                pieces), timeout_s)
        except asyncio.TimeoutError:
            raise HttpError(408, f"the request body took more than {timeout_s:g} s to arrive (http_body_timeout_s); "
                                 f"{sum(map(len, pieces))} bytes came", {"Connection": "close"}) from None
    return pieces


async def _read_pieces(read, limit: int, budget: BodyBudget, tenant: str, held: list[int], inflating: Inflater | None,
                       pieces: list[bytes]) -> None:
    """Reads (``read``: the connection's next piece) until the body's end, into ``pieces``."""
    size = 0
    while True:
        chunk = await read()
        if not chunk:
            if inflating is not None:
                inflating.check_end()
            return
        async for piece in (inflating.inflate(chunk, limit - size + 1) if inflating else _one(chunk)):
            if size + len(piece) > limit:
                inflated = " once inflated" if inflating else ""
                raise HttpError(413, f"the request body is over this service's limit of {limit} "
                                     f"bytes{inflated} (http_max_body_bytes): send fewer or smaller items per "
                                     "request")
            budget.hold(tenant, len(piece))
            held[0] += len(piece)
            pieces.append(piece)
            size += len(piece)
