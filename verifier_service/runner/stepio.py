"""A step's pipes, read within its limits; and the runner's own judging of tests that are calls on literals.

Standard library only.
"""

import json
import os
import select
import selectors
import time

import assert_harness
import judge
import procs
from stepclock import StepClock

STDERR_TAIL = 8192
REPORT_LIMIT = 4 * 1024 * 1024


class StepIO:
    """The pipes of one step's process: stdin written and stdout, stderr and the report pipe read as they
    come, within the step's output limits."""

    def __init__(self, proc, report_r, stdin_data, output_limit, keep_stdin=False):
        self.proc = proc
        self.output_limit = output_limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.report = bytearray()
        self.stderr_total = 0
        self.limited = False
        self.report_open = report_r is not None
        self.pending = memoryview(stdin_data)
        self.sel = selectors.DefaultSelector()
        for f in (proc.stdout, proc.stderr):
            os.set_blocking(f.fileno(), False)
            self.sel.register(f, selectors.EVENT_READ)
        if report_r is not None:  # (a stdio case has no report channel)
            os.set_blocking(report_r, False)
            self.sel.register(report_r, selectors.EVENT_READ, "report")
        self.exit_fd = getattr(proc, "exit_fd", None)  # a standby's exit is a message on the zygote's socket
        if self.exit_fd is not None:
            self.sel.register(self.exit_fd, selectors.EVENT_READ, "exit")
        self.stdin_open = True
        self.stdin_nonblocking = False
        if stdin_data:
            self._want_write()
        elif not keep_stdin:
            self.close_stdin()

    def _want_write(self):
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.sel.register(self.proc.stdin, selectors.EVENT_WRITE)

    def send(self, data):
        """Writes ``data`` to the step's stdin as far as it takes it now (no wait); the rest is queued and
        written as the pipe takes it, by ``pump``."""
        if not self.stdin_open:
            raise BrokenPipeError("the step's stdin is closed")
        if self.pending:
            self.pending = memoryview(bytes(self.pending) + data)
            return
        # Straight to the pipe (non-blocking: a step that stops reading never holds the runner): a request of the
        # runner's own judging fits at once, without registering for writing and a select per request.
        fd = self.proc.stdin.fileno()
        if not self.stdin_nonblocking:
            os.set_blocking(fd, False)
            self.stdin_nonblocking = True
        try:
            done = os.write(fd, data)
        except BlockingIOError:
            done = 0
        except OSError:
            return  # the step's end (its closed stdin) shows on its pipes, as when ``pump`` writes
        if done < len(data):
            self.pending = memoryview(bytes(data[done:]))
            self._want_write()

    def close_stdin(self):
        if self.stdin_open:
            self.stdin_open = False
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def pump(self, timeout, keep_stdin=False):
        """One round: waits up to ``timeout`` for the pipes, writes and reads what they allow."""
        for key, _ in self.sel.select(timeout=timeout):
            if key.data == "exit":
                self.proc.poll()  # the zygote's message: the standby's exit, or the zygote gone
                if self.proc.zygote.gone:  # every process of the step was killed with it
                    self.sel.unregister(self.exit_fd)
                    self.exit_fd = None
                continue
            if key.fileobj is self.proc.stdin:
                try:
                    done = os.write(self.proc.stdin.fileno(), self.pending[:65536])
                except OSError:
                    done = len(self.pending)
                self.pending = self.pending[done:]
                if not self.pending:
                    self.sel.unregister(self.proc.stdin)
                    if not keep_stdin:
                        self.close_stdin()
                continue
            self._take(key)
            if self.limited:
                return

    def _take(self, key):
        try:
            chunk = os.read(key.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.sel.unregister(key.fileobj)
            if key.data == "report":
                self.report_open = False
            return
        if key.fileobj is self.proc.stdout:
            self.stdout += chunk
            if len(self.stdout) > self.output_limit:
                del self.stdout[self.output_limit:]
                self.limited = True
        elif key.fileobj is self.proc.stderr:
            self.stderr_total += len(chunk)
            self.stderr += chunk
            del self.stderr[:-STDERR_TAIL]
            if self.stderr_total > 4 * self.output_limit:
                self.limited = True
        else:
            self.report += chunk
            if len(self.report) > REPORT_LIMIT:
                self.limited = True

    def finish(self):
        """After every writer of the pipes was killed: what they wrote is read to the end (the ends come at
        once), then the pipes are closed."""
        if self.exit_fd is not None:
            self.sel.unregister(self.exit_fd)
        if self.stdin_open:
            if self.pending:
                self.sel.unregister(self.proc.stdin)
            self.close_stdin()
        drain_until = time.monotonic() + 0.25
        while self.sel.get_map() and not self.limited and time.monotonic() < drain_until:
            for key, _ in self.sel.select(timeout=max(0.0, drain_until - time.monotonic())):
                self._take(key)
        self.sel.close()
        procs.close_all(self.proc.stdout, self.proc.stderr)


def stdin_bytes(step):
    """What the step's process reads on stdin: ``stdin_json`` (a harness's tests, sent as data in the job's one
    encoding) as JSON, or ``stdin``."""
    if step.get("stdin_json") is not None:
        return json.dumps(step["stdin_json"]).encode()
    return step.get("stdin", "").encode()


class _StepTimeout(judge.Interrupted):
    """The step's time is up (raised out of the runner's own judging)."""


class _Limited(judge.Interrupted):
    """The step's output went past its limits (raised out of the runner's own judging)."""


ANSWER_INT_DIGITS = 50_000


ANSWER_INT_WORK = 4 * ANSWER_INT_DIGITS ** 2  # the sum of the squared lengths of an answer's integers


def _answer_loads(line):
    """An answer line as data, its integers bounded: past ANSWER_INT_DIGITS digits in one, or past
    ANSWER_INT_WORK (four such integers' worth of work) in all of them, the answer is refused (turning decimal
    text into an int takes time quadratic in its length, a 4 MB line holds eighty 50,000-digit integers, and the
    runner, unlike a judge process, cannot be killed at the step's deadline)."""
    _INT_WORK[0] = 0
    if isinstance(line, (bytes, bytearray)):
        line = line.decode(json.detect_encoding(line), "surrogatepass")  # as json.loads reads bytes
    return _ANSWER_DECODER.decode(line)


_INT_WORK = [0]  # the answer being read's integer work so far (the runner reads one answer at a time)


def _bounded_int(text):
    if len(text) > ANSWER_INT_DIGITS:
        raise ValueError("an integer of more than 50,000 digits")
    _INT_WORK[0] += len(text) ** 2
    if _INT_WORK[0] > ANSWER_INT_WORK:
        raise ValueError("integers too long in total for one answer")
    return int(text)


_ANSWER_DECODER = json.JSONDecoder(parse_int=_bounded_int)  # one decoder, not one per answer


class RunnerCandidate(judge.Candidate):
    """The candidate process of a step the runner judges itself: a standby become the candidate, asked over its
    stdin, answering on its report pipe, within the step's deadline and output limits."""

    loads = staticmethod(_answer_loads)

    def __init__(self, standby, io, clock):  # not the base's: the pipes are the step's
        self.pid = standby.pid
        self.standby = standby
        self.io = io
        self.clock = clock  # the step's time limit (stepclock.StepClock)
        self.gone = None
        self.remotes = {}

    def _exchange(self, data):
        self.io.send(data)
        while True:
            end = self.io.report.find(b"\n")
            if end >= 0:
                line = bytes(self.io.report[:end + 1])
                del self.io.report[:end + 1]
                return line
            if self.io.limited:
                raise _Limited
            if not self.io.report_open:
                return b""
            remaining = self.clock.left()
            if remaining <= 0:
                raise _StepTimeout
            self.io.pump(min(remaining, 0.5), keep_stdin=True)

    def _end_detail(self):
        # It is the zygote's child: its exit code comes from there.
        give_up = time.monotonic() + 1.0
        while self.standby.poll() is None and time.monotonic() < give_up:  # (a lost zygote sets the code)
            wait = min(give_up - time.monotonic(), self.clock.left())
            if wait <= 0:
                break
            select.select([self.standby.zygote.sock], [], [], wait)
        code = self.standby.returncode
        return judge.end_detail(code) if code is not None else judge.CandidateGone("the completion's process ended")


def judge_calls(step, job, workdir, standby, started):
    """A python_assert step whose every test calls one of the completion's functions on literal arguments and
    compares the answer with a literal (``payload["calls"]``, prepared by the service): the runner judges it
    itself, against the candidate process, with the judge's own rules (``assert_harness.judge_calls``). No
    test code runs anywhere, so nothing of one job's tests can reach the next job, and the step needs one
    process instead of two."""
    payload = step["stdin_json"] if step.get("stdin_json") is not None else json.loads(step["stdin"])
    standby.start({**step, "harness": "candidate"}, job, workdir)
    io = StepIO(standby, standby.report_r, b"", int(step.get("output_limit", 1 << 20)), keep_stdin=True)
    clock = StepClock(standby.pid, step["timeout_s"], started)
    candidate = RunnerCandidate(standby, io, clock)
    events = []

    def report(**event):
        event["nonce"] = payload["nonce"]
        events.append(json.dumps(event))

    timed_out = False
    try:
        assert_harness.judge_calls(candidate, payload, report)
    except _StepTimeout:
        timed_out = True
    except _Limited:
        pass
    io.close_stdin()
    standby.kill_tree()
    io.finish()
    return io, timed_out, "".join(e + "\n" for e in events), clock
