"""Killable worker processes for the pure verifiers.

json_schema, tool_call, math and format run no untrusted code, but their
inputs come from the model: a regex can backtrack for ever, sympy can chew on
``9^{9^{9^9}}``. Each check runs in a worker process with a time limit; a
worker that overruns is killed and replaced, and the check gets TIMEOUT.
(math-verify's own timeouts use ``signal.alarm``, which only works on a main
thread, so they are switched off and this pool is the only guard.)

A large request (a client's, untrusted too) is parsed here first as well
(``parse_json``, ``check_message``): the JSON and protobuf parsers hold the GIL
for as long as they run, about a second for 16 MB of small JSON values or 60 MB
of small protobuf fields, so in the service's process every tenant's calls would
stop that long. What the service then parses itself is bounded by a count of
values.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from verifier_service.errors import VerifierError
from verifier_service.sandbox.fair import FairShare
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict

log = logging.getLogger(__name__)
CHUNK_MAX = 64  # checks per message to a worker (a chunk holds its worker: another tenant waits at most one chunk)


class _Channel:
    """Pickled messages over two pipes (multiprocessing's Connection framing)."""

    def __init__(self, read_fd: int, write_fd: int):
        self._in = Connection(read_fd, writable=False)
        self._out = Connection(write_fd, readable=False)

    def send(self, message) -> None:
        self._out.send(message)

    def recv(self):
        return self._in.recv()

    def send_bytes(self, data: bytes | bytearray) -> None:  # (as they are: not pickled, not copied)
        self._out.send_bytes(data)

    def recv_bytes(self) -> bytes:
        return self._in.recv_bytes()

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def close(self) -> None:
        self._in.close()
        self._out.close()


def json_value(raw: bytes | bytearray, max_values: int) -> tuple[str, Any]:
    """("ok", the value of the JSON text ``raw``), ("invalid", why it is not JSON), or ("limit", None) when it holds
    more than ``max_values`` values (each array item, object key and value, and the top value count one): what
    comes back to the service is bounded by that, not by what the client sent."""
    try:
        value = json.loads(raw)
    except RecursionError:
        return "invalid", "the request body is nested too deeply"
    except ValueError as exc:
        return "invalid", f"the request body is not valid JSON: {exc}"
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            count += len(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        if count > max_values:
            return "limit", None
    return "ok", value


def json_then(raw: bytes | bytearray, max_values: int, then: tuple[Callable, tuple] | None = None
              ) -> tuple[str, Any]:
    """``json_value``; then, when it is ("ok", value) and ``then`` is (a module-level function, its other
    arguments), ("ok", function(value, *arguments)), or ("refused", (status, message)) when that raises an
    exception with ``status`` and ``message`` attributes (a door's refusal: ``HttpError``). A door passes the
    step that turns a body into requests, so that what comes back to the service is already small (a large
    text the requests would not use stays here)."""
    status, value = json_value(raw, max_values)
    if status != "ok" or then is None:
        return status, value
    function, arguments = then
    try:
        return "ok", function(value, *arguments)
    except Exception as exc:
        if isinstance(getattr(exc, "status", None), int) and isinstance(getattr(exc, "message", None), str):
            return "refused", (exc.status, exc.message)
        raise


def message_problem(type_name: str, raw: bytes, max_values: int) -> tuple[str, str | None]:
    """("ok", None) if ``raw`` is a valid ``verifier_pb2`` message of ``type_name`` (as ``wire.decode`` reads
    it) with at most ``max_values`` values (each field set, each repeated item); else ("invalid", why) or
    ("limit", None)."""
    from verifier_service._generated import verifier_pb2
    from verifier_service.wire import decode

    try:
        message = decode(getattr(verifier_pb2, type_name).FromString, raw)
    except Exception as exc:  # noqa: BLE001 - the caller's message is not valid: it is told why
        return "invalid", f"{type(exc).__name__}: {str(exc)[:200] or 'cannot parse'}"
    count, stack = 0, [message]
    while stack:
        for field, value in stack.pop().ListFields():
            is_message = field.type == field.TYPE_MESSAGE
            if field.is_repeated:
                count += len(value)
                if is_message and not field.message_type.GetOptions().map_entry:  # (the maps hold strings)
                    stack.extend(value)
            else:
                count += 1
                if is_message:
                    stack.append(value)
        if count > max_values:
            return "limit", None
    return "ok", None


def _worker_main(conn: _Channel) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the service's to handle; it ends the workers
    from verifier_service.kinds import get_kind, preload_pure

    preload_pure()
    conn.send(("ready", None))

    from verifier_service.engine.results import outcome_proto

    def check(kind_name, text, spec):
        try:
            return "ok", get_kind(kind_name).verdict(text, spec)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - reported to the caller as INFRA_ERROR
            return "error", f"{type(exc).__name__}: {exc}"

    def check_encoded(kind_name, text, spec):
        """The result message's bytes (no id, no timings): no outcome to pickle, no message to build there."""
        status, value = check(kind_name, text, spec)
        if status != "ok":
            return status, value
        try:
            return "ok", outcome_proto(kind_name, spec, value).SerializeToString()
        except Exception as exc:  # noqa: BLE001
            return "error", f"{type(exc).__name__}: {exc}"

    def spec_problem(kind_name, spec):
        try:
            return "ok", get_kind(kind_name).spec_problem(spec)
        except RecursionError:
            return "ok", "the spec is nested too deeply to check"
        except Exception as exc:  # noqa: BLE001 - a spec the kind cannot check is refused, saying why
            return "ok", f"the spec could not be checked ({type(exc).__name__}: {exc})"

    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "spec_problem":
            conn.send(spec_problem(*message[1]))
        elif message[0] == "json":  # the body follows as bytes of its own
            max_values, then, count = message[1]
            raw = b"".join([conn.recv_bytes() for _ in range(count)])
            try:
                conn.send(json_then(raw, max_values, then))
            except Exception as exc:  # noqa: BLE001 - the door's own step failed: the service logs it (500)
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
        elif message[0] == "message":
            conn.send(message_problem(message[1][0], conn.recv_bytes(), message[1][1]))
        elif message[0] in ("stream", "stream_encoded"):  # a chunk of a batch: one answer per check as it finishes
            one = check_encoded if message[0] == "stream_encoded" else check
            for task in message[1]:
                conn.send(one(*task))


class _Worker:
    """A worker started as ``python -m verifier_service.engine.pool``: a fresh interpreter that never forks
    the (threaded) service and never re-imports the caller's ``__main__``."""

    def __init__(self) -> None:
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "verifier_service.engine.pool", str(to_child_r), str(to_parent_w)],
                pass_fds=(to_child_r, to_parent_w), stdin=subprocess.DEVNULL)
        finally:
            os.close(to_child_r)
            os.close(to_parent_w)
        self.conn = _Channel(to_parent_r, to_child_w)

    def wait_ready(self, timeout: float = 120.0) -> None:
        try:
            if self.conn.poll(timeout):
                self.conn.recv()
                return
        except (EOFError, OSError):
            pass
        self.kill()
        raise VerifierError("a pure-verifier worker process failed to start (see its traceback above)")

    def kill(self) -> None:
        self.process.kill()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            log.warning("pure worker %d did not exit after SIGKILL", self.process.pid)
        self.conn.close()


@dataclass
class _Held:
    worker: _Worker
    healthy: bool = False  # set by the exchange that used it: back to the idle queue, else replaced


class PurePool:
    def __init__(self, size: int):
        self.size = size
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: list[_Worker] = []
        self._share: FairShare | None = None
        self._weight_of: Callable[[str], float] | None = None
        self.replaced = 0

    def weigh_tenants(self, weight_of: Callable[[str], float]) -> None:
        """Shares the workers by the tenants' weights (``FairShare``): ``weight_of(name)``."""
        self._weight_of = weight_of
        if self._share is not None:
            self._share.weight_of = weight_of

    async def start(self) -> None:
        self._idle = asyncio.Queue()
        self._share = FairShare(self.size, weight_of=self._weight_of)
        # The service validates specs itself (math parses its gold): what that needs is imported now, before the
        # service serves, not on its event loop at the first math request (a minute on a loaded machine, every
        # tenant's calls stalled meanwhile).
        # (beside the workers' own start: they are processes of their own)
        from verifier_service.kinds import preload_pure

        _, *workers = await asyncio.gather(asyncio.to_thread(preload_pure),
                                           *(asyncio.to_thread(self._spawn) for _ in range(self.size)))
        for w in workers:
            self._idle.put_nowait(w)

    def _spawn(self) -> _Worker:
        w = _Worker()
        w.wait_ready()
        self._all.append(w)
        return w

    async def run(self, kind_name: str, text: str, spec: Spec, timeout_s: float, tenant: str = "") -> Outcome:
        """One check (``run_many`` of one)."""
        (outcome,) = await self.run_many([(kind_name, text, spec, timeout_s)], tenant=tenant)
        return outcome  # type: ignore[return-value]

    async def spec_problem(self, kind_name: str, spec: Spec, timeout_s: float, tenant: str = "") -> str | None:
        """``kind.spec_problem(spec)`` in a worker within ``timeout_s`` (over it, the worker is replaced and the
        spec refused), taken by the tenant's fair share like a check."""
        async with self._held(tenant) as held:
            status, problem = await asyncio.to_thread(self._ask, held.worker, ("spec_problem", (kind_name, spec)),
                                                      timeout_s)
            held.healthy = status == "ok"
        if status == "timeout":
            return (f"took over {timeout_s:g}s to check (spec_check_timeout_s); a {kind_name} spec must be "
                    "quick to check")
        if status == "dead":
            return "killed the process that checked it"
        return problem

    async def parse_json(self, raw: bytes | bytearray | list[bytes], max_values: int, timeout_s: float,
                         tenant: str = "", then: tuple[Callable, tuple] | None = None) -> tuple[str, Any]:
        """``json_then(raw, max_values, then)`` in a worker within ``timeout_s``, taken by the tenant's fair share
        like a check (``raw``: the text, or its pieces, sent as they are and joined in the worker): only the bounded
        value comes back (the service unpickles at most ``max_values`` values, never parses). Besides
        ``json_then``'s answers: ("timeout", None) (the worker is replaced) and ("dead", None)."""
        pieces = raw if isinstance(raw, list) else [raw]
        async with self._held(tenant) as held:
            status, value = await asyncio.to_thread(self._ask, held.worker, ("json", (max_values, then, len(pieces))),
                                                    timeout_s, *pieces)
            held.healthy = status in ("ok", "invalid", "limit", "refused", "error")
        return status, value

    async def check_message(self, type_name: str, raw: bytes, max_values: int, timeout_s: float, tenant: str = ""
                            ) -> tuple[str, str | None]:
        """``message_problem`` in a worker within ``timeout_s``, taken by the tenant's fair share like a check;
        besides its answers, ("timeout", None) (the worker is replaced) and ("dead", None)."""
        async with self._held(tenant) as held:
            status, why = await asyncio.to_thread(self._ask, held.worker, ("message", (type_name, max_values)),
                                                  timeout_s, raw)
            held.healthy = status in ("ok", "invalid", "limit")
        return status, why

    @staticmethod
    def _ask(worker: _Worker, message, timeout_s: float, *data: bytes | bytearray) -> tuple[str, Any]:
        """One request (and each of ``data`` after it, as bytes) and its answer: the worker's, or ("timeout" |
        "dead", None)."""
        try:
            worker.conn.send(message)
            for piece in data:
                worker.conn.send_bytes(piece)
            if not worker.conn.poll(timeout_s):
                return "timeout", None
            return worker.conn.recv()
        except (EOFError, OSError):
            return "dead", None

    @contextlib.asynccontextmanager
    async def _held(self, tenant: str) -> AsyncIterator[_Held]:
        """A worker, taken by ``tenant``'s fair share (``FairShare``), for one exchange; afterwards back to the
        idle queue if the block marked it ``healthy``, else killed and replaced (an overrun, a crash)."""
        assert self._idle is not None and self._share is not None, "PurePool.start() was not awaited"
        await self._share.acquire(tenant)
        try:
            held = _Held(await self._idle.get())
            try:
                yield held
            finally:
                await self._release(held.worker, held.healthy)
        finally:
            self._share.release(tenant)

    async def _release(self, worker: _Worker, healthy: bool) -> None:
        """Back to the idle queue, or, after an overrun or a crash, killed and replaced."""
        assert self._idle is not None
        if healthy:
            self._idle.put_nowait(worker)
            return
        self.replaced += 1
        await asyncio.to_thread(worker.kill)
        self._all.remove(worker)
        self._idle.put_nowait(await asyncio.to_thread(self._spawn))

    async def run_many(self, tasks: list[tuple[str, str, Spec, float]], encoded: bool = False, tenant: str = ""
                       ) -> list[Outcome | bytes]:
        """Many checks, in chunks (one IPC message per chunk; the worker answers each check as it finishes, so
        each has its own time limit). A worker is taken by the tenant's fair share (``FairShare``): a tenant
        whose checks run to their limits holds at most its share of the workers, and another tenant's checks
        go to the others. A check that overruns its limit is TIMEOUT, its verdict: it is never run again (that
        would double what a hostile answer costs); the rest of its chunk goes on on a fresh worker. ``encoded``:
        a check that finishes comes back as the bytes of its ``VerifyResult`` (``verifier_service.results``,
        without id and timings); the others (a timeout, a crash) stay Outcomes."""
        if not tasks:
            return []
        size = min(CHUNK_MAX, max(1, -(-len(tasks) // self.size)))
        chunks = [tasks[i:i + size] for i in range(0, len(tasks), size)]
        results = await asyncio.gather(*(self._run_chunk(chunk, encoded, tenant) for chunk in chunks))
        return [outcome for chunk in results for outcome in chunk]

    async def _run_chunk(self, chunk: list[tuple[str, str, Spec, float]], encoded: bool, tenant: str
                         ) -> list[Outcome | bytes]:
        outcomes: list[Outcome | bytes] = []
        deaths = 0  # of workers under the chunk's current check
        while len(outcomes) < len(chunk):
            todo = chunk[len(outcomes):]
            async with self._held(tenant) as held:
                done, status, ran_s = await asyncio.to_thread(self._stream, held.worker, todo, encoded)
                held.healthy = status == "ok"
            for (kind_name, _, _, _), (item_status, item) in zip(todo, done, strict=False):
                if item_status == "ok":
                    outcomes.append(item)
                else:
                    log.error("%s checker failed: %s", kind_name, item)
                    outcomes.append(Outcome.infra_error(f"{kind_name} checker failed: {item}"))
            if done:
                deaths = 0
            if status == "ok":
                continue
            kind_name, text, _, timeout_s = todo[len(done)]
            if status == "timeout":
                outcomes.append(Outcome(Verdict.TIMEOUT, detail=f"{kind_name} check exceeded {timeout_s:g}s "
                                        f"(ran {ran_s:.1f}s)", extracted=text))
                continue
            # The worker died under this check: once more on a fresh worker; a check that kills that one too
            # was killed by its answer, which counts as wrong (FAILED, with a reward), never INFRA_ERROR, which
            # would let a completion crash its way out of a penalty (as a job that takes two sandboxes down is
            # RUNTIME_ERROR).
            deaths += 1
            if deaths >= 2:
                detail = ("the check of this answer killed the checker's process twice (on two fresh workers): "
                          "it counts as wrong")
                outcomes.append(Outcome(Verdict.FAILED, tests=[TestOutcome("check", Verdict.FAILED, detail)],
                                        detail=detail, extracted=text))
                deaths = 0
        return outcomes

    @staticmethod
    def _stream(worker: _Worker, tasks: list[tuple[str, str, Spec, float]], encoded: bool
                ) -> tuple[list, str, float]:
        """Sends a chunk and reads its answers, each within its check's limit (from the previous answer).
        Returns the answers read, "ok" (all of them), "timeout" or "dead" (for the next check), and how
        long that check ran."""
        done: list = []
        started = time.monotonic()
        try:
            worker.conn.send(("stream_encoded" if encoded else "stream", [(k, t, s) for k, t, s, _ in tasks]))
            for task in tasks:
                started = time.monotonic()
                if not worker.conn.poll(task[3]):
                    return done, "timeout", time.monotonic() - started
                done.append(worker.conn.recv())
        except (EOFError, OSError):
            return done, "dead", time.monotonic() - started
        return done, "ok", 0.0

    async def close(self) -> None:
        for w in self._all:
            await asyncio.to_thread(w.kill)
        self._all.clear()


if __name__ == "__main__":
    _worker_main(_Channel(int(sys.argv[1]), int(sys.argv[2])))
