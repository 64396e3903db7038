"""Killable worker processes for the pure verifiers.

json_schema, tool_call, math and format run no untrusted code, but their
inputs come from the model: a regex can backtrack for ever, sympy can chew on
``9^{9^{9^9}}``. Each check runs in a worker process with a time limit; a
worker that overruns is killed and replaced, and the check gets TIMEOUT.
(math-verify's own timeouts use ``signal.alarm``, which only works on a main
thread, so they are switched off and this pool is the only guard.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from multiprocessing.connection import Connection

from verifier_service.errors import VerifierError
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict

log = logging.getLogger(__name__)
CHUNK_MAX = 512                # checks per worker round trip
CHUNK_ITEM_BUDGET_S = 0.05     # a chunk may take its slowest item's limit plus this per item


class _Channel:
    """Pickled messages over two pipes (multiprocessing's Connection framing)."""

    def __init__(self, read_fd: int, write_fd: int):
        self._in = Connection(read_fd, writable=False)
        self._out = Connection(write_fd, readable=False)

    def send(self, message) -> None:
        self._out.send(message)

    def recv(self):
        return self._in.recv()

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def close(self) -> None:
        self._in.close()
        self._out.close()


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

    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "many":  # a chunk of a batch: one round trip for many checks
            conn.send(("many", [check(*task) for task in message[1]]))
        elif message[0] == "many_encoded":
            conn.send(("many", [check_encoded(*task) for task in message[1]]))
        else:
            conn.send(check(*message))


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


class PurePool:
    def __init__(self, size: int):
        self.size = size
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: list[_Worker] = []
        self.replaced = 0

    async def start(self) -> None:
        self._idle = asyncio.Queue()
        workers = await asyncio.gather(*(asyncio.to_thread(self._spawn) for _ in range(self.size)))
        for w in workers:
            self._idle.put_nowait(w)

    def _spawn(self) -> _Worker:
        w = _Worker()
        w.wait_ready()
        self._all.append(w)
        return w

    async def run(self, kind_name: str, text: str, spec: Spec, timeout_s: float, retry: bool = True) -> Outcome:
        """One check. A worker that dies during it is replaced and the check runs once more on a fresh one; a
        check that kills that one too was killed by its answer, and the answer counts as wrong (FAILED, with a
        reward), never INFRA_ERROR, which would let a completion crash its way out of a penalty (as a job that
        takes two sandboxes down is RUNTIME_ERROR)."""
        assert self._idle is not None, "PurePool.start() was not awaited"
        worker = await self._idle.get()
        healthy = False
        try:
            started = time.monotonic()
            status, value = await asyncio.to_thread(self._call, worker, (kind_name, text, spec), timeout_s)
            healthy = status in ("ok", "error")  # a worker that overran or died is replaced
            if status == "timeout":
                return Outcome(Verdict.TIMEOUT, detail=f"{kind_name} check exceeded {timeout_s:g}s "
                               f"(ran {time.monotonic() - started:.1f}s)", extracted=text)
            if status == "ok":
                return value
            log.error("%s checker failed: %s", kind_name, value)
            if status != "dead":
                return Outcome.infra_error(f"{kind_name} checker failed: {value}")
        finally:
            await self._release(worker, healthy)
        if retry:
            return await self.run(kind_name, text, spec, timeout_s, retry=False)
        detail = ("the check of this answer killed the checker's process twice (on two fresh workers): "
                  "it counts as wrong")
        return Outcome(Verdict.FAILED, tests=[TestOutcome("check", Verdict.FAILED, detail)], detail=detail,
                       extracted=text)

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

    async def run_many(self, tasks: list[tuple[str, str, Spec, float]], encoded: bool = False
                       ) -> list[Outcome | bytes]:
        """Many checks, one IPC round trip per chunk; a chunk that overruns is retried item by item,
        so only the item that hangs gets TIMEOUT. ``encoded``: a check that finishes comes back as the
        bytes of its ``VerifyResult`` (``verifier_service.results``, without id and timings); the
        others (a timeout, a crash) stay Outcomes."""
        if not tasks:
            return []
        size = min(CHUNK_MAX, max(1, -(-len(tasks) // self.size)))
        chunks = [tasks[i:i + size] for i in range(0, len(tasks), size)]
        results = await asyncio.gather(*(self._run_chunk(chunk, encoded) for chunk in chunks))
        return [outcome for chunk in results for outcome in chunk]

    async def _run_chunk(self, chunk: list[tuple[str, str, Spec, float]], encoded: bool = False
                         ) -> list[Outcome | bytes]:
        assert self._idle is not None, "PurePool.start() was not awaited"
        budget = max(t[3] for t in chunk) + CHUNK_ITEM_BUDGET_S * len(chunk)
        worker = await self._idle.get()
        healthy = False
        try:
            status, value = await asyncio.to_thread(
                self._call, worker, ("many_encoded" if encoded else "many",
                                     [(k, text, spec) for k, text, spec, _ in chunk]), budget)
            healthy = status not in ("timeout", "dead")
        finally:
            await self._release(worker, healthy)
        if not healthy:
            return list(await asyncio.gather(*(self.run(*task) for task in chunk)))
        outcomes = []
        for (kind_name, _, _, _), (item_status, item) in zip(chunk, value, strict=True):
            if item_status == "ok":
                outcomes.append(item)
            else:
                log.error("%s checker failed: %s", kind_name, item)
                outcomes.append(Outcome.infra_error(f"{kind_name} checker failed: {item}"))
        return outcomes

    @staticmethod
    def _call(worker: _Worker, message, timeout_s: float):
        try:
            worker.conn.send(message)
            if not worker.conn.poll(timeout_s):
                return "timeout", None
            return worker.conn.recv()
        except (EOFError, OSError) as exc:
            return "dead", f"worker died: {exc}"

    async def close(self) -> None:
        for w in self._all:
            await asyncio.to_thread(w.kill)
        self._all.clear()


if __name__ == "__main__":
    _worker_main(_Channel(int(sys.argv[1]), int(sys.argv[2])))
