"""The HTTP door's limits under hostile clients: connections per door and per client address, and the request
body (its size as sent and once inflated, the time it may take, and the bytes the door holds at once per tenant
and in all). Each refusal names its limit and the setting that changes it (docs/security.md)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import os
import resource
import socket
import threading
import zlib
from collections.abc import AsyncIterator, MutableSequence
from concurrent.futures import ThreadPoolExecutor

from verifier_service.doors.http.calls import HttpError

log = logging.getLogger("verifier_service.http")
CHUNK = 64 * 1024  # the most of a body inflated at once
LARGE_BODY = 1 << 20  # a body over this waits for its tenant's turn (``BodyTurns``); of a declared length: ``Aside``
LINGER_S = 2.0  # what is left of a refused body is read (and dropped) for at most this long (``_drop_rest``)
ASIDE_PIECE = 1 << 20  # the most of a body received at once by ``Aside``
AFTER_ASIDE = 64 * 1024  # what a connection may send after a body received aside before it is closed
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
        self.transport: asyncio.Transport | None = None
        self.aside = ""  # "receiving": a body of it is being received by ``Aside``, not here; "received": it was
        self.stray = False  # bytes came here while it was being received (the body is then not whole)
        self.after = 0  # bytes it sent after such a body

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
        self.transport = transport
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.aside:
            self._beside(data)
        elif self.peer is not None:
            self.inner.data_received(data)

    def _beside(self, data: bytes) -> None:
        """Bytes of a connection whose body was received by ``Aside``: never parsed (the connection closes once
        the request is answered)."""
        assert self.transport is not None
        if self.aside == "receiving":  # (never expected: reading stays paused meanwhile)
            self.stray = True
            self.transport.pause_reading()
            return
        self.after += len(data)  # (a client that goes on sending is not read at the event loop's full speed)
        if self.after > AFTER_ASIDE:
            self.transport.abort()

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


class Aside:
    """Large bodies of a declared length received on a thread of their own, off the service's event loop: the
    socket's reads (a copy of every byte) of a 15 MB body were most of the event loop's time it cost, time in
    which every other tenant's calls waited. The connection's reading on the event loop is paused; a second event
    loop, on its own thread, receives the rest of the body from a duplicate of the socket (the copy runs in the
    kernel, without the GIL). The connection is closed once the request is answered (the server's parser never
    saw the body's end). Once a body is whole, the connection is read again (and what it sends dropped), so that a
    client that goes away is seen and its request's work cancelled."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # (a forked process has none of its threads)
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="http-bodies", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    @staticmethod
    def counted(request) -> _Counted | None:
        """The connection's ``_Counted`` where its body can be read aside: a plain TCP connection (not TLS), as
        this door serves them."""
        transport = getattr(request, "transport", None)
        if transport is None or transport.get_extra_info("sslcontext") is not None \
                or transport.get_extra_info("socket") is None:
            return None
        counted = transport.get_protocol()
        return counted if isinstance(counted, _Counted) and counted.peer is not None else None

    async def receive(self, request, counted: _Counted, size: int, pieces: MutableSequence[bytes] | None,
                      held: Held) -> None:
        """Appends the request's next ``size`` body bytes to ``pieces`` (None: drops them): first what the server's
        parser already holds, then the rest from the socket, on this reader's own loop. 400 if the client ends its
        side before."""
        while chunk := request.content.read_nowait():  # (reading one may let the parser feed the next: all of it)
            if pieces is not None:
                pieces.append(chunk)
            size -= len(chunk)
        if size <= 0:
            return
        held.aside = True  # (the door answers with Connection: close)
        transport = counted.transport
        assert transport is not None
        transport.pause_reading()
        counted.aside = "receiving"  # (for good: whatever this connection sends later is not parsed)
        sock = socket.socket(fileno=os.dup(transport.get_extra_info("socket").fileno()))
        got = await self._run(_receive(sock, size, pieces), sock)
        if counted.stray:
            raise HttpError(503, "this service could not receive the request body whole: retry",
                            {"Retry-After": "1", "Connection": "close"})
        if got < size:
            raise HttpError(400, f"the connection ended {size - got} bytes before the request body's declared end "
                                 "(Content-Length)", {"Connection": "close"})
        if pieces is not None:  # (a refused body's connection stays unread: it is closed once refused)
            counted.aside = "received"
            transport.resume_reading()

    async def _run(self, receiving, sock: socket.socket) -> int:
        """``receiving`` run on this reader's loop, awaited here; ``sock`` closed there once it ends, however it
        ends (cancelled here: the caller's deadline, or its client gone)."""
        here, there = asyncio.get_running_loop(), self.loop()
        answer: asyncio.Future[int] = here.create_future()
        tasks: list[asyncio.Task] = []

        def settle(task: asyncio.Task) -> None:  # (there)
            sock.close()
            if not task.cancelled():
                with contextlib.suppress(RuntimeError):  # (this loop closed meanwhile)
                    here.call_soon_threadsafe(_settle, answer, task)

        def start() -> None:  # (there)
            tasks.append(there.create_task(receiving))
            tasks[0].add_done_callback(settle)

        there.call_soon_threadsafe(start)
        try:
            return await answer
        finally:
            if not answer.done():  # (``start`` ran first: the loop there runs its callbacks in order)
                there.call_soon_threadsafe(lambda: tasks[0].cancel())


def _settle(answer: asyncio.Future, task: asyncio.Task) -> None:
    if not answer.done():
        failed = task.exception()
        if failed is not None:
            answer.set_exception(failed)
        else:
            answer.set_result(task.result())


async def _receive(sock: socket.socket, size: int, pieces: MutableSequence[bytes] | None) -> int:
    """On ``Aside``'s loop: up to ``size`` bytes from ``sock`` into ``pieces`` (appended to from that thread only
    while the event loop's side awaits this; None: dropped), in pieces of at most ``ASIDE_PIECE``; how many came
    before the peer ended its side."""
    got = 0
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    scratch = memoryview(bytearray(min(size, ASIDE_PIECE) if pieces is None else 0))  # (what is dropped goes here)
    while got < size:
        most = min(size - got, ASIDE_PIECE)
        if pieces is None:
            n = await loop.sock_recv_into(sock, scratch[:most])
        else:
            piece = await loop.sock_recv(sock, most)
            pieces.append(piece)
            n = len(piece)
        if not n:
            break
        got += n
    return got


ASIDE = Aside()


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


@dataclasses.dataclass
class Held:
    """What the door did with one request's body: its bytes held against the ``BodyBudget`` (the caller releases
    them once the request is answered), and how it was read."""
    bytes: int = 0
    read_here: bool = False  # (some of it) read on the event loop
    aside: bool = False  # received by ``Aside``: the connection closes once the request is answered


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


async def read_body(request, limit: int, timeout_s: float, budget: BodyBudget, tenant: str, held: Held,
                    turns: BodyTurns | None = None) -> list[bytes]:
    """The request's body (inflated, ``Inflater``) as its pieces, read as they came from the connection: refused
    (413) as soon as it is over ``limit`` as declared or as inflated so far, never inflated past it; 408 past
    ``timeout_s`` from its first byte's turn (``turns``: a tenant's large bodies are read a few at a time); each
    piece is held against ``budget`` (``held`` counts it, for the caller to release). A large body of a declared
    length is received by ``Aside``, its room held whole before a byte of it is read (compressed: received as sent,
    then inflated); one of no declared length (chunked) is read here, as its chunks come. The pieces are not joined
    here: joining 16 MB is one step of the event loop of several milliseconds (a large body goes to a pure worker
    piece by piece, and is joined there). One deadline for the whole body, not one per read: a timer per read of a
    15 MB body was a task and a timer handle per 64 KB on the event loop."""
    try:
        return await _read_body(request, limit, timeout_s, budget, tenant, held, turns)
    except HttpError:  # what is left of a refused body: read (and dropped) up to the limit, the rest never is
        if not held.aside:  # (a body received aside: the connection closes once answered)
            await _drop_rest(request, limit, held)
        raise


async def _drop_rest(request, most: int, held: Held) -> None:
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

    with contextlib.suppress(asyncio.TimeoutError, OSError, ValueError, HttpError):
        if request.content.is_eof():
            return
        counted = ASIDE.counted(request)
        declared = request.content_length
        if counted is not None and declared is not None and not held.read_here:
            # not a byte of it read here yet: dropped aside, off the event loop
            await asyncio.wait_for(ASIDE.receive(request, counted, min(declared, most), None, held), LINGER_S)
        else:
            await asyncio.wait_for(drop(), LINGER_S)


async def _read_body(request, limit: int, timeout_s: float, budget: BodyBudget, tenant: str, held: Held,
                     turns: BodyTurns | None) -> list[bytes]:
    declared = request.content_length
    if declared is not None and declared > limit:
        raise HttpError(413, f"the request body ({declared} bytes) is over this service's limit of {limit} bytes "
                             "(http_max_body_bytes): send fewer or smaller items per request")
    inflating = inflater(request)
    pieces: list[bytes] = []  # (a growing buffer would copy itself over and over)
    async with turns.turn(tenant, declared) if turns is not None else contextlib.nullcontext():
        counted = ASIDE.counted(request) if declared is not None and declared > LARGE_BODY else None
        try:  # (one timer for the whole body)
            if counted is not None and declared is not None:
                await asyncio.wait_for(_receive_aside(request, counted, declared, limit, budget, tenant, held,
                                                      inflating, pieces), timeout_s)
            else:
                held.read_here = True
                await asyncio.wait_for(_read_pieces(request.content.readany, limit, budget, tenant, held, inflating,
                                                    pieces), timeout_s)
        except asyncio.TimeoutError:
            raise HttpError(408, f"the request body took more than {timeout_s:g} s to arrive (http_body_timeout_s); "
                                 f"{sum(map(len, pieces))} bytes came", {"Connection": "close"}) from None
    return pieces


async def _receive_aside(request, counted: _Counted, declared: int, limit: int, budget: BodyBudget, tenant: str,
                         held: Held, inflating: Inflater | None, pieces: list[bytes]) -> None:
    """A body of a declared length received by ``Aside`` into ``pieces``, its room held before a byte of it is
    read; a compressed one is received as sent, then inflated (in threads, ``Inflater``), the room of each piece
    as sent given back once it is inflated."""
    budget.hold(tenant, declared)
    held.bytes += declared
    sent: collections.deque[bytes] = collections.deque()
    await ASIDE.receive(request, counted, declared, pieces if inflating is None else sent, held)
    if inflating is not None:
        async def read() -> bytes:
            if not sent:
                return b""
            piece = sent.popleft()
            budget.release(tenant, len(piece))
            held.bytes -= len(piece)
            return piece

        await _read_pieces(read, limit, budget, tenant, held, inflating, pieces)


async def _read_pieces(read, limit: int, budget: BodyBudget, tenant: str, held: Held, inflating: Inflater | None,
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
            held.bytes += len(piece)
            pieces.append(piece)
            size += len(piece)
