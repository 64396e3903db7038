"""A sandbox session, on the runner's side: one kernel that keeps its state between cells, for one session.

The host opens a session by sending a warm runner, in place of a job, a line ``{"session": {limits},
"token": ...}``. From then on this sandbox belongs to that session: the runner makes the session's work dir,
has the zygote fork a standby that becomes the kernel (``kernel.py``, with the session's memory and CPU
limits as its rlimits) and answers each of the host's lines (``op``: ``cell``, ``reset``, ``close``) with one
event stamped with the token. It never goes back to running jobs: the host removes the sandbox when the
session ends (so nothing of a session reaches another).

The runner stays the trusted side: it never runs a cell itself. For each cell it sends the kernel the code,
reads the cell's stdout and stderr up to the output cap, and waits for the outcome up to the cell's wall-clock
limit; at the limit or the cap it interrupts the kernel (SIGINT), and if no outcome comes within a grace
period kills it and starts a fresh one (the state is lost, the files stay: ``restarted``). After every cell it
kills every process the cell left (all but itself, the zygote and the kernel). A kernel that dies during a cell
(``os._exit``, a signal, the memory limit) is reported, and a fresh one takes its place. ``reset`` kills the
kernel and everything else, empties the scratch dirs and starts a fresh kernel in a fresh work dir.

Standard library only.
"""

import json
import os
import select
import time

import kernel
import procs
import wire
from harnesses import HARNESSES
from procs import signal

HARNESSES[wire.KERNEL] = kernel.main  # before the zygote is forked: its standbys can become the kernel

INTERRUPT_GRACE_S = 1.0  # after SIGINT, how long a kernel has to give the cell's outcome before it is killed
READY_TIMEOUT_S = 10.0
OOM_EVENTS = "/sys/fs/cgroup/memory.events"
LIMIT_KEYS = ("memory_bytes", "cpu_s", "file_size_limit", "open_files")


class Kernel:
    """The session's kernel process: a standby of the zygote that became ``kernel.main``."""

    def __init__(self, zygote, limits, workdir, job):
        self.zygote = zygote
        self.standby = zygote.standby()
        if self.standby is None:
            raise OSError("the sandbox's zygote is gone")
        step = {"harness": "kernel", "timeout_s": limits.get("cpu_s", 600), "memory_bytes": limits.get("memory_bytes")}
        self.standby.start(step, job, workdir)
        self.pid = self.standby.pid
        self.reports = b""
        for fd in (self.standby.stdout.fileno(), self.standby.stderr.fileno(), self.standby.report_r):
            os.set_blocking(fd, False)
        ready = self.outcome(time.monotonic() + READY_TIMEOUT_S)
        if not ready or not ready.get("ready"):
            self.kill()
            raise OSError("the session's kernel did not start")

    @property
    def alive(self):
        return self.standby.poll() is None

    def send(self, cell):
        view = memoryview((json.dumps(cell) + "\n").encode())
        while view:
            view = view[self.standby.stdin.write(view) or 0:]

    def outcome(self, deadline, output=None, stop_at_cap=True):
        """The kernel's next outcome line (a dict), reading its stdout and stderr into ``output`` meanwhile; None
        at the deadline, when the kernel died, or (``stop_at_cap``) once the output went past its cap."""
        fds = [self.standby.report_r, self.zygote.fileno()]
        if output is not None:
            fds += [self.standby.stdout.fileno(), self.standby.stderr.fileno()]
        while True:
            if b"\n" in self.reports:
                line, self.reports = self.reports.split(b"\n", 1)
                try:
                    return json.loads(line)
                except ValueError:
                    continue
            if not self.alive or (stop_at_cap and output is not None and output.limited):
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready = select.select(fds, [], [], min(left, 0.5))[0]
            for fd in ready:
                if fd == self.zygote.fileno():
                    self.zygote.read_events()
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except (BlockingIOError, InterruptedError):
                    continue
                if fd == self.standby.report_r:
                    self.reports += chunk
                elif chunk:
                    output.take(fd == self.standby.stderr.fileno(), chunk)

    def drain(self, output):
        """What the cell wrote that is still in the pipes (the kernel flushed before its outcome)."""
        for fd, is_err in ((self.standby.stdout.fileno(), False), (self.standby.stderr.fileno(), True)):
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except (BlockingIOError, InterruptedError, OSError):
                    break
                if not chunk:
                    break
                output.take(is_err, chunk)

    def pause(self, stop=True):
        """Stops (or lets go on) the kernel between cells: nothing of the session runs there. A thread a cell left
        in it would otherwise start processes after the cell's were killed, and use CPU no cell's limit covers."""
        procs.kill(self.pid, signal.SIGSTOP if stop else signal.SIGCONT)

    def interrupt(self):
        procs.kill(self.pid, signal.SIGINT)

    def kill(self):
        """The kernel and every other process but the runner and the zygote, killed and reaped."""
        self.standby.kill_tree()
        self.standby.close()


class Output:
    """A cell's stdout and stderr, together at most ``limit`` bytes; ``limited`` once more came."""

    def __init__(self, limit):
        self.limit = limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.limited = False

    def take(self, is_err, chunk):
        room = self.limit - len(self.stdout) - len(self.stderr)
        if len(chunk) > room:
            self.limited = True
            chunk = chunk[:max(room, 0)]
        (self.stderr if is_err else self.stdout).extend(chunk)


def _oom_kills():
    """The cgroup's count of OOM kills (Docker's cgroup namespace shows the container's own), or None."""
    try:
        with open(OOM_EVENTS) as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def kill_strays(keep):
    """Kills every process of the sandbox but ``keep`` (what a cell left running: a background process, a
    daemon); True when none is left. Only as the sandbox's init, where every process is the session's."""
    if os.getpid() != 1:
        return True
    give_up = time.monotonic() + 2.0
    while True:
        strays = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep and procs.alive(p)]
        if not strays:
            return True
        for pid in strays:
            procs.kill(pid)
        procs.reap_children(0.05)  # orphans that came to the runner
        if time.monotonic() > give_up:
            return False
        time.sleep(0.001)


class Session:
    def __init__(self, job, zygote, scrub):
        self.limits = job["session"]
        self.job = {"file_size_limit": self.limits.get("file_size_limit", 0),
                    "open_files": self.limits.get("open_files", 256)}
        self.zygote = zygote
        self.scrub = scrub
        self.workdir = ""
        self.kernel = None
        self.cells = 0

    def start(self):
        """A fresh work dir and kernel (the zygote's replaced first if a cell killed it)."""
        if self.zygote.gone:
            from zygote import Zygote

            self.zygote = Zygote()
        self.workdir = f"/tmp/session-{os.urandom(8).hex()}"
        os.mkdir(self.workdir, 0o700)
        self.kernel = Kernel(self.zygote, self.limits, self.workdir, self.job)

    def restart_kernel(self):
        """A fresh kernel in the same work dir (its files stay), after the old one died or would not stop."""
        if self.kernel is not None:
            self.kernel.kill()
        if self.zygote.gone:
            from zygote import Zygote

            self.zygote = Zygote()
        self.kernel = Kernel(self.zygote, self.limits, self.workdir, self.job)

    def cell(self, request):
        """Runs one cell; its event (status, output, value, error, traceback, restarted, duration)."""
        self.cells += 1
        timeout = float(request.get("timeout_s") or 10)
        output = Output(int(request.get("output_limit") or 65536))
        started = time.monotonic()
        oom_before = _oom_kills()
        k = self.kernel
        outcome, status, restarted = None, None, False
        k.pause(False)
        try:
            k.send({"id": self.cells, "code": request.get("code", ""), "stdin": request.get("stdin", ""),
                    "cpu_s": timeout})
        except OSError:
            pass  # the kernel is gone: reported below
        else:
            outcome = k.outcome(started + timeout, output)
            while outcome is not None and outcome.get("cell") != self.cells:
                outcome = k.outcome(started + timeout, output)  # a stale line (an interrupt between cells)
            if outcome is None and k.alive:
                status = "output_limit" if output.limited else "timeout"
                k.interrupt()
                outcome = k.outcome(time.monotonic() + INTERRUPT_GRACE_S, output, stop_at_cap=False)
                if outcome is not None and outcome.get("cell") != self.cells:
                    outcome = None
            elif output.limited:
                status = "output_limit"
        if outcome is not None:
            k.drain(output)
            # "interrupted" is the runner's interrupt (status set above), or a KeyboardInterrupt the cell raised
            status = status or {"interrupted": "error", "cpu_limit": "timeout"}.get(outcome["status"],
                                                                                   outcome["status"])
            k.pause()  # then what the cell left is killed, and nothing starts more until the next cell
            if not kill_strays({1, self.zygote.pid, k.pid}):
                outcome = None  # processes that would not die: start over with a fresh kernel
                status = status or "error"
        if outcome is None:
            k.drain(output)
            died = not k.alive
            code = k.standby.returncode
            oom_after = _oom_kills()
            oom = oom_before is not None and oom_after is not None and oom_after > oom_before
            if status is None:
                status = "memory_limit" if oom else "error"
            detail = ("the kernel died" + (f" (exit code {code})" if code is not None and code >= 0 else
                                           f" (signal {-code})" if code is not None else "")
                      if died else "the kernel did not stop in time")
            outcome = {"value": None, "error": detail + "; its state is lost, a fresh kernel took its place",
                       "traceback": ""}
            try:
                self.restart_kernel()
            except OSError as exc:
                return self._event(output, started, status, outcome, restarted=True, broken=str(exc))
            restarted = True
        return self._event(output, started, status, outcome, restarted)

    def _event(self, output, started, status, outcome, restarted, broken=""):
        event = {"event": "cell", "status": status, "stdout": output.stdout.decode("utf-8", "replace"),
                 "stderr": output.stderr.decode("utf-8", "replace"), "value": outcome.get("value"),
                 "error": outcome.get("error") or "", "traceback": outcome.get("traceback") or "",
                 "restarted": restarted, "duration_s": round(time.monotonic() - started, 6)}
        if broken:
            event["broken"] = broken
        return event

    def reset(self):
        """Everything of the session gone (processes, files, IPC checked by the scrub), a fresh kernel."""
        self.kernel.kill()
        dirty = self.scrub()
        self.start()
        return {"event": "reset", "dirty": bool(dirty)}


def serve(job, stdin, stdout, zygote, scrub):
    """Runs the session ``job`` opened: one event per line the host sends, until ``close`` or the stream's end."""
    token = job.get("token")

    def say(event):
        event["token"] = token
        stdout.write(json.dumps(event) + "\n")
        stdout.flush()

    session = Session(job, zygote, scrub)
    try:
        session.start()
    except OSError as exc:
        say({"event": "opened", "ok": False, "error": str(exc)})
        return
    say({"event": "opened", "ok": True})
    while True:
        line = stdin.readline()
        if not line:
            break
        try:
            request = json.loads(line)
        except ValueError:
            continue
        op = request.get("op")
        if op == "cell":
            event = session.cell(request)
        elif op in ("reset", "limits"):
            if op == "limits":  # other rlimits for the kernel, before any code ran (a spare taken by a session)
                session.limits = {**session.limits, **{k: v for k, v in request.items() if k in LIMIT_KEYS}}
                session.job = {"file_size_limit": session.limits.get("file_size_limit", 0),
                               "open_files": session.limits.get("open_files", 256)}
            try:
                event = session.reset()
            except OSError as exc:
                event = {"event": "reset", "broken": str(exc)}
        elif op == "close":
            say({"event": "closed"})
            break
        else:
            event = {"event": "error", "error": f"unknown op {op!r}"}
        event["seq"] = request.get("seq")
        say(event)
    session.kernel.kill()
    session.zygote.close()
