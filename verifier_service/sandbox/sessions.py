"""Sandbox sessions on the host's side: a sandbox owned by one session for its life, and a pool of spares.

A session is a live Python kernel in a sandbox of its own (``runner/session.py``, ``runner/kernel.py``): the
same sandbox as a verification job's (a Docker container or a bubblewrap namespace, with every limit and the
seccomp policy of ``sandbox_backend``), taken from a pool of warm spares kept for sessions (so opening one does
not wait for a sandbox start, and sessions never take the verification pool's sandboxes). It never goes back to
a pool: when the session ends (closed, expired, dead) its sandbox is removed with everything in it, so nothing
of one session can reach another. Two sessions never share a sandbox: their files, processes and IPC are in
separate namespaces.

``SessionSandboxes`` is usable from Python without gRPC (the server's session manager, an HTTP front door):
``open`` gives a ``SandboxSession`` whose ``execute`` runs one cell.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import select
import time
from dataclasses import dataclass

from verifier_service.errors import SandboxUnavailable
from verifier_service.runner import wire
from verifier_service.sandbox.warm import HOST_SLACK_S, Instance, PooledSandbox

log = logging.getLogger(__name__)

CELL_STATUSES = ("ok", "error", "timeout", "memory_limit", "output_limit", "infra_error")
INTERRUPT_GRACE_S = 1.0  # the runner's (runner/session.py): an interrupted cell's kernel gets this long to answer
OPEN_TIMEOUT_S = 15.0
ANSWER_SLACK_S = 5.0  # on top of a cell's limit and the interrupt grace before the host gives up on a sandbox


@dataclass(frozen=True)
class SessionLimits:
    """What one session may use. Per cell: ``cell_timeout_s`` (wall clock, also the cell's CPU seconds),
    ``output_limit_bytes`` (stdout + stderr); for the session: ``memory_mb`` (the kernel's address space: what
    every cell's objects share), ``budget_s`` (the cells' wall-clock seconds together), ``idle_ttl_s`` (closed
    after this long without a call), ``max_lifetime_s``."""

    cell_timeout_s: float = 10.0
    output_limit_bytes: int = 64 * 1024
    memory_mb: int = 512
    budget_s: float = 600.0
    idle_ttl_s: float = 300.0
    max_lifetime_s: float = 3600.0


@dataclass
class CellOutcome:
    """What one cell produced. ``status``: one of ``CELL_STATUSES``; ``restarted``: the kernel died or would not
    stop, and a fresh one (without the variables, with the files) took its place; ``run_s``: the cell inside the
    sandbox, ``total_s``: the call on the host (waiting for the session's previous cell included)."""

    status: str
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str = ""
    traceback: str = ""
    restarted: bool = False
    run_s: float = 0.0
    total_s: float = 0.0
    session_ended: str = ""  # why the session is over now ('' while it lives)


class SessionEnded(Exception):
    """The session is over (its sandbox is gone); ``str`` says why. Not a VerifierError: the session manager
    turns it into its own refusal."""


class SandboxSession:
    """One live session: its sandbox, its limits and what it has used. ``execute`` runs cells one at a time."""

    def __init__(self, owner: SessionSandboxes, instance: Instance, limits: SessionLimits, token: str):
        self.owner = owner
        self.instance = instance
        self.limits = limits
        self.token = token
        self.opened = time.monotonic()
        self.last_used = self.opened
        self.cells = 0
        self.spent_s = 0.0
        self.statuses: dict[str, int] = {}
        self.ended = ""
        self._lock = asyncio.Lock()
        self._seq = 0

    @property
    def budget_left_s(self) -> float:
        return max(0.0, self.limits.budget_s - self.spent_s)

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def _ask(self, request: dict, wait_s: float) -> dict:
        """Sends one request line, returns the runner's event for it; SessionEnded when the sandbox is gone."""
        self._seq += 1
        return await self._exchange({**request, "seq": self._seq}, wait_s, self._seq,
                                    "the session's sandbox did not answer in time", "lost the session's sandbox")

    async def _exchange(self, line: dict, wait_s: float, seq: int | None, late: str, lost: str) -> dict:
        """Sends ``line``, returns the runner's event with the session's token (and ``seq``, unless None);
        SessionEnded, saying ``late`` or ``lost`` (or the sandbox's death), when none comes."""
        stream = self.instance.stream
        deadline = time.monotonic() + wait_s
        try:
            await stream.send_async(json.dumps(line).encode() + b"\n", deadline)
            while True:
                for event in stream.buffered_events():
                    if isinstance(event, dict) and event.get("token") == self.token and \
                            (seq is None or event.get("seq") == seq):
                        return event
                if time.monotonic() >= deadline:
                    raise SessionEnded(late)
                if not await stream.receive_async(deadline):
                    raise SessionEnded(self.owner.death(self.instance))
        except (OSError, ValueError) as exc:
            raise SessionEnded(f"{lost}: {exc}") from exc

    async def execute(self, code: str, stdin: str = "", timeout_s: float = 0.0,
                      output_limit_bytes: int = 0) -> CellOutcome:
        """Runs one cell (after the session's previous one). ``timeout_s`` / ``output_limit_bytes``: 0 takes the
        session's; neither goes past the session's limits or its budget left. SessionEnded if it was over."""
        called = time.monotonic()
        async with self._lock:
            if self.ended:
                raise SessionEnded(self.ended)
            limit = min(timeout_s or self.limits.cell_timeout_s, self.limits.cell_timeout_s, self.budget_left_s)
            if limit <= 0:
                await self.owner.end(self, f"its time budget of {self.limits.budget_s:g} s is spent")
                raise SessionEnded(self.ended)
            cap = min(output_limit_bytes or self.limits.output_limit_bytes, self.limits.output_limit_bytes)
            started = time.monotonic()
            try:
                event = await self._ask({"op": "cell", "code": code, "stdin": stdin, "timeout_s": limit,
                                         "output_limit": cap}, limit + INTERRUPT_GRACE_S + ANSWER_SLACK_S)
            except SessionEnded as exc:
                oom = not self.ended and await asyncio.to_thread(self.owner.sandbox._oom_killed,
                                                                 self.instance)
                reason = self.ended or ("the cell went past the sandbox's memory limit and the sandbox was killed"
                                        if oom else str(exc))
                await self.owner.end(self, reason)
                outcome = CellOutcome("memory_limit" if oom else "infra_error", error=reason, session_ended=reason)
            else:
                outcome = _outcome(event)
                if event.get("broken"):
                    await self.owner.end(self, f"no fresh kernel could be started: {event['broken']}")
                    outcome.session_ended = self.ended
            run = time.monotonic() - started
            self.spent_s += run
            self.cells += 1
            self.last_used = time.monotonic()
            self.statuses[outcome.status] = self.statuses.get(outcome.status, 0) + 1
            outcome.total_s = time.monotonic() - called
            outcome.run_s = outcome.run_s or run
            return outcome

    async def reset(self) -> None:
        """A fresh kernel and work dir: variables, files and processes of the session gone (same sandbox)."""
        async with self._lock:
            if self.ended:
                raise SessionEnded(self.ended)
            try:
                event = await self._ask({"op": "reset"}, OPEN_TIMEOUT_S)
            except SessionEnded as exc:
                await self.owner.end(self, str(exc))
                raise
            if event.get("broken") or event.get("dirty"):
                # Something of the session could not be removed (IPC objects): the sandbox goes instead.
                await self.owner.end(self, "reset could not clean the sandbox" +
                                     (f": {event['broken']}" if event.get("broken") else ""))
                raise SessionEnded(self.ended)
            self.last_used = time.monotonic()

    async def close(self, reason: str = "closed") -> None:
        await self.owner.end(self, reason)


def _outcome(event: dict) -> CellOutcome:
    status = event.get("status")
    return CellOutcome(
        status=status if status in CELL_STATUSES else "error",
        stdout=str(event.get("stdout") or ""), stderr=str(event.get("stderr") or ""),
        value=event.get("value") if isinstance(event.get("value"), str) else None,
        error=str(event.get("error") or ""), traceback=str(event.get("traceback") or ""),
        restarted=bool(event.get("restarted")), run_s=float(event.get("duration_s") or 0.0))


def _quiet(instance: Instance) -> bool:
    """Whether an idle spare's runner stream has nothing to read: a live runner says nothing between requests,
    so something there (its end, when the sandbox died while it waited) means the spare is not to be handed out."""
    stream = instance.stream
    fd = stream.raw.fileno() if hasattr(stream, "raw") else getattr(stream, "stdout", -1)
    if fd is None or fd < 0:
        return False
    try:
        return not select.select([fd], [], [], 0)[0]
    except (OSError, ValueError):
        return False


class SessionSandboxes:
    """Sandboxes for sessions, from ``sandbox``'s backend: ``spares`` kept warm, one per open session, each
    removed when its session ends.

    A spare is a session opened ahead with ``defaults`` (its kernel started, no code run): opening a session with
    the same memory and budget takes one without a word to the sandbox; other limits restart its kernel with
    theirs (one round trip). ``file_size_bytes`` and ``open_files`` are every session's rlimits."""

    def __init__(self, sandbox: PooledSandbox, spares: int, max_lifetime_s: float, defaults: SessionLimits,
                 file_size_bytes: int = 0, open_files: int = 256):
        self.sandbox = sandbox
        self.spares = spares
        self.max_lifetime_s = max_lifetime_s
        self.defaults = defaults
        self.file_size_bytes = file_size_bytes
        self.open_files = open_files
        self._idle: list[SandboxSession] = []
        self._starting = 0
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self._removing: set[asyncio.Future] = set()
        self.live: set[SandboxSession] = set()
        self.started = 0  # sandboxes started for sessions
        self.error: str | None = None

    # ---- spares --------------------------------------------------------------

    def _lifetime_s(self) -> float:
        return 2 * self.max_lifetime_s + HOST_SLACK_S  # a spare's wait plus a session's life: its expiry label

    async def start(self) -> None:
        """Nothing yet: the spares are filled from the first open on (a replica that serves no session starts no
        sandbox for them)."""

    def _refill(self) -> None:
        while not self._closed and len(self._idle) + self._starting < self.spares:
            self._starting += 1
            self._spawn(self._add_spare())

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _add_spare(self) -> None:
        try:
            session = await self._new_session(self.defaults)
        except SandboxUnavailable as exc:
            self.error = str(exc)
            self._starting -= 1
            await asyncio.sleep(1.0)
            self._refill()
            return
        self._starting -= 1
        if self._closed:
            await asyncio.to_thread(self._discard, session.instance)
            return
        self._idle.append(session)

    async def _start_instance(self) -> Instance:
        instance = await asyncio.to_thread(self.sandbox._start_instance, self._lifetime_s(), True)
        self.started += 1
        self.error = None
        return instance

    def _discard(self, instance: Instance) -> None:
        self.sandbox._discard(instance)

    @property
    def idle(self) -> int:
        return len(self._idle)

    def _runner_limits(self, limits: SessionLimits) -> dict:
        return {"memory_bytes": limits.memory_mb * 1024 * 1024, "cpu_s": max(1, int(limits.budget_s) + 1),
                "file_size_limit": self.file_size_bytes, "open_files": self.open_files}

    async def _new_session(self, limits: SessionLimits) -> SandboxSession:
        """A sandbox started now, its session opened with ``limits``; SandboxUnavailable when it cannot be."""
        instance = await self._start_instance()
        session = SandboxSession(self, instance, limits, secrets.token_hex(16))
        try:
            opening = {wire.JOB_SESSION: self._runner_limits(limits), wire.JOB_TOKEN: session.token}
            event = await session._exchange(opening, OPEN_TIMEOUT_S, None,
                                            "the sandbox did not open the session in time", "lost the sandbox")
        except SessionEnded as exc:
            self._retire(instance)
            raise SandboxUnavailable(f"could not open a session: {exc}") from None
        if not event.get("ok"):
            self._retire(instance)
            raise SandboxUnavailable(f"the session's kernel did not start: {event.get('error', '?')}")
        return session

    # ---- sessions --------------------------------------------------------------

    async def open(self, limits: SessionLimits) -> SandboxSession:
        """A new session in a sandbox of its own: a warm spare when there is one, else one started now.
        SandboxUnavailable when no sandbox can be had or its kernel does not start."""
        if self._closed:
            raise SandboxUnavailable("the service is shutting down")
        session = None
        while self._idle:
            candidate = self._idle.pop()
            if (time.monotonic() - candidate.instance.started < self.max_lifetime_s and not candidate.ended
                    and _quiet(candidate.instance)):
                session = candidate
                break
            self._retire(candidate.instance)
        self._refill()
        if session is None:
            session = await self._new_session(limits)
        elif (limits.memory_mb, limits.budget_s) != (session.limits.memory_mb, session.limits.budget_s):
            # Other rlimits for its kernel: a fresh one with them (the spare's ran no code).
            try:
                event = await session._ask({"op": "limits", **self._runner_limits(limits)}, OPEN_TIMEOUT_S)
            except SessionEnded as exc:
                self._retire(session.instance)
                raise SandboxUnavailable(f"could not open a session: {exc}") from None
            if event.get("broken") or event.get("dirty"):
                self._retire(session.instance)
                raise SandboxUnavailable(f"could not open a session: {event.get('broken') or 'unclean sandbox'}")
        session.limits = limits
        session.opened = session.last_used = time.monotonic()
        self.live.add(session)
        return session

    def death(self, instance: Instance) -> str:
        detail = bytes(instance.stream.stderr).decode("utf-8", "replace")[-300:].strip()
        return "the session's sandbox is gone" + (f": {detail}" if detail else "")

    def _retire(self, instance: Instance) -> None:
        removal = asyncio.ensure_future(asyncio.to_thread(self._discard, instance))
        self._removing.add(removal)
        removal.add_done_callback(self._removing.discard)

    async def end(self, session: SandboxSession, reason: str) -> None:
        """Ends a session: its sandbox removed (never reused) with everything in it."""
        if session.ended:
            return
        session.ended = reason
        self.live.discard(session)
        # In the background: the caller does not wait for the container's removal; ``close`` waits for them all.
        removal = asyncio.ensure_future(asyncio.to_thread(self._discard, session.instance))
        self._removing.add(removal)
        removal.add_done_callback(self._removing.discard)

    async def close(self) -> None:
        """Ends every session and removes the spares (the service stops)."""
        self._closed = True
        # Spares being started finish and are removed (a cancelled start would leave its sandbox behind).
        pending = list(self._tasks)
        if pending:
            await asyncio.wait(pending, timeout=OPEN_TIMEOUT_S + 60)
        for task in pending:
            task.cancel()
        await asyncio.gather(*(self.end(s, "the service stopped") for s in list(self.live)), return_exceptions=True)
        spares, self._idle = self._idle, []
        await asyncio.gather(*(asyncio.to_thread(self._discard, s.instance) for s in spares), *list(self._removing))
