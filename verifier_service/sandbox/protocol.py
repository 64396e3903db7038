"""Talking to the sandbox runner, whatever carries its stdin and stdout.

The runner (``verifier_service/runner/runner.py``) reads one job per line of JSON on
stdin and answers with one JSON line per finished step, then ``{"event":
"done"}``. A backend supplies a ``RunnerStream`` that moves the bytes (a
Docker attach socket, the pipes of a bubblewrap process); the line framing
and the job exchange live here, once. A warm sandbox's jobs are exchanged on
the event loop (``exchange_async``: no thread, nor its hops, per job); a
one-job sandbox's in the thread that starts and removes it (``exchange``).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import os
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterator

import orjson

from verifier_service.sandbox.base import SandboxRun, StepResult

STDERR_KEPT = 4096  # bytes of the runner's own stderr kept for error messages


class RunnerStream(abc.ABC):
    """The runner's stdin, stdout (its events) and stderr, with deadlines."""

    def __init__(self) -> None:
        self.line = bytearray()    # stdout bytes not yet split into events (grown in place: a 1 MiB line in
                                   # 64 KiB reads copied as bytes was 8 MiB of copies)
        self.stderr = bytearray()  # the runner's stderr, tail only

    @abc.abstractmethod
    def send(self, data: bytes, deadline: float) -> None:
        """Writes ``data`` to the runner's stdin; raises OSError if it is gone."""

    @abc.abstractmethod
    def close_input(self) -> None:
        """Ends the runner's stdin (a one-job runner starts on EOF)."""

    @abc.abstractmethod
    def _receive(self, timeout: float) -> bool:
        """Waits up to ``timeout`` for output, adding it to ``line`` / ``stderr``; False at EOF."""

    @abc.abstractmethod
    async def send_async(self, data: bytes, deadline: float) -> None:
        """``send`` on the event loop."""

    @abc.abstractmethod
    async def receive_async(self, deadline: float) -> bool:
        """``_receive`` on the event loop, waiting until ``deadline`` at most."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def _keep_stderr(self, data: bytes) -> None:
        self.stderr += data
        del self.stderr[:-STDERR_KEPT]

    def buffered_events(self) -> Iterator[dict]:
        """Yields the events (``parse_event``) of the complete lines received so far (split once: a line at a time
        copied the rest of the buffer each time, quadratic in a candidate's flood of short lines)."""
        if b"\n" not in self.line:
            return
        lines = self.line.split(b"\n")
        self.line = lines.pop()
        taken = 0
        try:
            while taken < len(lines):
                event = parse_event(lines[taken])
                taken += 1
                if event is not None:
                    yield event
        finally:  # the caller stopped reading (a job's "done"): the lines after it stay for the next read
            if taken < len(lines):
                self.line = bytearray(b"\n").join([*lines[taken:], self.line])

    def events(self, deadline: float, cancel: threading.Event) -> Iterator[dict]:
        """Yields runner events; returns on EOF; raises TimeoutError at the deadline, InterruptedError on cancel."""
        while True:
            yield from self.buffered_events()
            if cancel.is_set():
                raise InterruptedError
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if not self._receive(min(remaining, 0.5)):
                return


def parse_event(line: bytes | bytearray) -> dict | None:
    """A runner's event line; None for a line that is not JSON, or is nested past what the parser takes (a
    RecursionError): the candidate's own, where it can write here (under gVisor). Such a line is skipped:
    whatever a completion writes decides only its verdict.

    orjson first: a step's 1 MiB of output took the standard parser milliseconds, holding the interpreter (a
    thread would not have freed the event loop); what orjson refuses and the standard parser takes (an escaped
    lone surrogate, an integer past 64 bits, NaN) goes to the latter."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


class SocketStream(RunnerStream):
    """The multiplexed stdout/stderr of an attached Docker container (8-byte frame headers)."""

    def __init__(self, raw: socket.socket):
        super().__init__()
        self.raw = raw
        self.buffer = b""

    def send(self, data: bytes, deadline: float) -> None:
        self.raw.settimeout(max(0.1, deadline - time.monotonic()))
        self.raw.sendall(data)

    async def send_async(self, data: bytes, deadline: float) -> None:
        self.raw.setblocking(False)  # for the event loop; ``send`` and ``_receive`` set their own timeouts
        await _write(self.raw.fileno(), data, deadline)

    def close_input(self) -> None:
        self.raw.shutdown(socket.SHUT_WR)

    def _receive(self, timeout: float) -> bool:
        self.raw.settimeout(timeout)
        try:
            chunk = self.raw.recv(65536)
        except TimeoutError:
            return True
        return self._take(chunk)

    async def receive_async(self, deadline: float) -> bool:
        if not await _ready([self.raw.fileno()], deadline):
            return True
        try:
            chunk = self.raw.recv(65536)
        except BlockingIOError:
            return True
        return self._take(chunk)

    def _take(self, chunk: bytes) -> bool:
        """Splits received bytes into stdout (``line``) and stderr by their frame headers; False at EOF (an empty
        ``chunk``)."""
        if not chunk:
            return False
        self.buffer += chunk
        while len(self.buffer) >= 8:
            stream, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + size:
                break
            data, self.buffer = self.buffer[8:8 + size], self.buffer[8 + size:]
            if stream == 2:
                self._keep_stderr(data)
            else:
                self.line += data
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.raw.close()


class DirectStream(SocketStream):
    """A warm runner's own Unix socket (``runner.py --connect``): jobs in, events out, unframed, past the
    container engine's copies of the attach stream; that stream (``attach``) is kept for the runner's stderr
    only, read when the runner is gone (its last words for the error message)."""

    def __init__(self, conn: socket.socket, attach: SocketStream):
        super().__init__(conn)
        self.attach = attach

    def _take(self, chunk: bytes) -> bool:
        if chunk:
            self.line += chunk
            return True
        # The runner is gone: what it wrote to stderr comes through the attach stream (briefly, so a stream that
        # never ends cannot hold the caller).
        deadline = time.monotonic() + 0.2
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline and self.attach._receive(max(0.0, deadline - time.monotonic())):
                pass
        self._keep_stderr(bytes(self.attach.stderr))
        return False

    def close(self) -> None:
        super().close()
        self.attach.close()


class PipeStream(RunnerStream):
    """A runner's stdin, stdout and stderr as three pipes (a local sandbox process)."""

    def __init__(self, stdin: int, stdout: int, stderr: int):
        super().__init__()
        self.stdin, self.stdout, self.stderr_fd = stdin, stdout, stderr
        os.set_blocking(stdout, False)
        os.set_blocking(stderr, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(stdout, selectors.EVENT_READ)
        self._selector.register(stderr, selectors.EVENT_READ)

    def send(self, data: bytes, deadline: float) -> None:
        if self.stdin < 0:
            raise BrokenPipeError("the runner's stdin is closed")
        view = memoryview(data)
        with selectors.DefaultSelector() as sel:
            sel.register(self.stdin, selectors.EVENT_WRITE)
            os.set_blocking(self.stdin, False)
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the runner did not take the job in time")
                if not sel.select(min(remaining, 0.5)):
                    continue
                try:
                    view = view[os.write(self.stdin, view):]
                except BlockingIOError:
                    continue

    async def send_async(self, data: bytes, deadline: float) -> None:
        if self.stdin < 0:
            raise BrokenPipeError("the runner's stdin is closed")
        os.set_blocking(self.stdin, False)
        await _write(self.stdin, data, deadline)

    def close_input(self) -> None:
        if self.stdin >= 0:
            os.close(self.stdin)
            self.stdin = -1

    def _receive(self, timeout: float) -> bool:
        if not self._selector.get_map():
            return False
        if not self._read(self._selector.select(timeout)):
            self.drain_stderr(0.2)  # the runner's last words, for the error message
            return False
        return True

    async def receive_async(self, deadline: float) -> bool:
        if not self._selector.get_map():
            return False
        if not await _ready(list(self._selector.get_map()), deadline):
            return True
        if not self._read(self._selector.select(0)):
            await asyncio.to_thread(self.drain_stderr, 0.2)  # the runner's last words, off the event loop
            return False
        return True

    def _read(self, ready: list) -> bool:
        """Reads the descriptors ``select`` found ready; False once the runner closed its stdout."""
        for key, _ in ready:
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                self._selector.unregister(key.fd)
                if key.fd == self.stdout:
                    return False
                continue
            if key.fd == self.stdout:
                self.line += chunk
            else:
                self._keep_stderr(chunk)
        return True

    def read_to_end(self, deadline: float) -> bool:
        """Reads stdout (into ``line``) and stderr until the runner closes stdout; False at the deadline."""
        while time.monotonic() < deadline:
            if not self._receive(min(0.5, max(0.0, deadline - time.monotonic()))):
                return True
        return False

    def drain_stderr(self, timeout: float) -> None:
        """Reads what the runner (or bubblewrap) still has on stderr, for an error message."""
        if self.stderr_fd not in self._selector.get_map():
            return
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(self.stderr_fd, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not sel.select(max(0.0, deadline - time.monotonic())):
                    continue
                try:
                    chunk = os.read(self.stderr_fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    self._selector.unregister(self.stderr_fd)
                    return
                self._keep_stderr(chunk)

    def close(self) -> None:
        self.close_input()
        self._selector.close()
        for fd in (self.stdout, self.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


async def _ready(fds: list[int], deadline: float, write: bool = False) -> bool:
    """Waits on the event loop until one of ``fds`` can be read (or written); False if ``deadline`` came first.
    It always waits there, even for data already in: output that never stops coming (a candidate writing to the
    runner's stdout) must not keep the event loop to itself."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    add, remove = (loop.add_writer, loop.remove_writer) if write else (loop.add_reader, loop.remove_reader)

    def wake(value: bool) -> None:
        if not ready.done():
            ready.set_result(value)

    for fd in fds:
        add(fd, wake, True)
    timer = loop.call_later(remaining, wake, False)
    try:
        return await ready
    finally:
        timer.cancel()
        for fd in fds:
            remove(fd)


async def _write(fd: int, data: bytes, deadline: float) -> None:
    """Writes all of ``data`` to a non-blocking descriptor, waiting on the event loop while it is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            if not await _ready([fd], deadline, write=True):
                raise TimeoutError("the runner did not take the job in time") from None


def exchange(stream: RunnerStream, payload: bytes, token: str, on_step, deadline: float, cancel: threading.Event,
             close_stdin: bool = False) -> SandboxRun:
    """Sends one job and reads its events up to the runner's "done"; only events stamped with ``token`` count."""
    run = SandboxRun(steps=[], completed=False)
    try:
        stream.send(payload, deadline)
        if close_stdin:
            stream.close_input()
    except (OSError, TimeoutError) as exc:
        run.runner_error = f"could not send the job to the sandbox: {exc}"
        return run
    try:
        for event in stream.events(deadline, cancel):
            if _take(run, event, token, on_step):
                return run
    except TimeoutError:
        run.host_timeout = True
        return run
    except InterruptedError:
        run.stopped_early = True
        return run
    except (OSError, ValueError) as exc:
        run.runner_error = f"lost the sandbox stream: {exc}"
        return run
    run.runner_error = _unfinished(stream)
    return run


async def exchange_async(stream: RunnerStream, payload: bytes, token: str, on_step, deadline: float) -> SandboxRun:
    """``exchange`` on the event loop, for a warm sandbox's job; cancelling the caller stops it where it waits.
    When ``on_step`` stops a job the runner can stop (its events say ``stoppable``), the runner is told so and the
    job ends with its "done" (the sandbox stays warm); the steps it finished meanwhile are left out."""
    run = SandboxRun(steps=[], completed=False)
    try:
        await stream.send_async(payload, deadline)
    except (OSError, TimeoutError) as exc:
        run.runner_error = f"could not send the job to the sandbox: {exc}"
        return run
    try:
        while True:
            for event in stream.buffered_events():
                if on_step is not None and _large(event):  # judged off the event loop (a 1 MiB output compared
                    over = await asyncio.to_thread(_take, run, event, token, on_step)  # number by number: seconds)
                else:
                    over = _take(run, event, token, on_step)
                if over == STOP:
                    await stream.send_async(json.dumps({"stop": token}).encode() + b"\n", deadline)
                elif over:
                    return run
            if time.monotonic() >= deadline:
                raise TimeoutError
            if not await stream.receive_async(deadline):
                break
    except TimeoutError:
        run.host_timeout = True
        return run
    except (OSError, ValueError) as exc:
        run.runner_error = f"lost the sandbox stream: {exc}"
        return run
    run.runner_error = _unfinished(stream)
    return run


USAGE_PARTS = ("runner", "zygote", "steps")


def _usage(value) -> dict[str, tuple[float, int]]:
    """The runner's account of a job's CPU seconds and page faults by process (absent from older images)."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for part in USAGE_PARTS:
        pair = value.get(part)
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, (int, float)) for x in pair):
            out[part] = (float(pair[0]), int(pair[1]))
    return out


STOP = "stop"
OFFLOAD_BYTES = 32 * 1024  # a step result with more output than this is judged (``on_step``) in a thread


def _large(event) -> bool:
    return isinstance(event, dict) and sum(len(v) for v in (event.get("stdout"), event.get("stderr"),
                                                            event.get("report")) if isinstance(v, str)) > OFFLOAD_BYTES


def _take(run: SandboxRun, event, token: str, on_step) -> bool | str:
    """Adds one runner event to ``run``; True when the job is over (its "done", or ``on_step`` stopped it), STOP
    when ``on_step`` stopped a job the runner can stop (it is then over at its "done")."""
    if not isinstance(event, dict) or event.get("token") != token:
        return False
    if event.get("event") == "done":
        run.completed = True
        run.dirty = bool(event.get("dirty"))
        run.usage = _usage(event.get("usage"))
        return True
    if run.stopped_early:
        return False  # a step the runner finished before it read "stop"
    step = StepResult.from_runner(event)
    run.steps.append(step)
    if on_step is not None and on_step(step) is False:
        run.stopped_early = True
        return STOP if event.get("stoppable") is True else True
    return False


def _unfinished(stream: RunnerStream) -> str:
    detail = bytes(stream.stderr).decode("utf-8", "replace")[-1000:]
    return "the sandbox runner ended without finishing the job" + (f": {detail}" if detail else "")
