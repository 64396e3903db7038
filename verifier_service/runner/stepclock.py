"""The clock of a step's time limit: the program's own time, with a wall-clock backstop.

A step's ``timeout_s`` limits the time the program itself takes: the wall-clock time since the step started
less the time its process's main thread spent runnable but waiting for a CPU (the run-queue delay, the second
field of ``/proc/<pid>/task/<pid>/schedstat``, in nanoseconds; the first is its CPU time). Time asleep or
waiting for I/O still counts, so a program that sleeps past its limit is out of time as before; time spent
waiting for a CPU that other processes of the machine held does not, so an honest program near its limit gets
the same verdict on a loaded machine as on an idle one (a wall-clock limit failed MBPP task 123's reference,
10.6 s against 10 s at load 10, that passes alone). Whatever the measure says, the step ends at the backstop:
twice the limit and one second of wall-clock time.

Where the run-queue delay cannot be read (a kernel without it, gVisor's ``/proc``: the runner's own schedstat
must be there and show CPU time), or ``RLVR_STEP_CLOCK=wall`` is in the runner's environment, or the process's
file cannot be read when the step starts, the limit is wall-clock, as it was: never more lenient than that.

The waits ask ``left()`` (seconds until the limit as last measured), wait that long at most, and ask again: the
run-queue delay is read only when the limit seems reached, and the deadline moves on by what accrued, never
past the backstop; ``expired()`` says when it is reached.

An attacker's view: a program cannot lower its measured time except by having its main thread runnable and not
running. Asleep or blocked, the time counts; running, it counts. What it can do is compete with itself: its
own threads or processes burning the CPUs (or the sandbox's CPU quota: a throttled thread waits on the run
queue) keep its main thread waiting, and that waiting is not counted. So a program can stretch its limit, but
only to the backstop (2 x ``timeout_s`` + 1 s of wall-clock time), and with the CPU time of its own threads
bounded by the step's CPU limit (``RLIMIT_CPU``, ``timeout_s`` + 2 s, for all its threads together). Only the
main thread of the step's process is measured: a program whose work is in another process (a judge waiting on
its candidate process) accrues no delay while it waits, and has the wall-clock limit.

Standard library only: it runs inside the sandbox, as the runner does.
"""

import os
import time

from wire import BACKSTOP_EXTRA_S, BACKSTOP_FACTOR  # the wall-clock backstop: FACTOR x the limit + EXTRA_S

CLOCK_ENV = "RLVR_STEP_CLOCK"  # "wall" in the runner's environment: the limit is wall-clock time


def read_schedstat(pid):
    """(CPU time, run-queue delay) of ``pid``'s main thread in nanoseconds, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat", "rb") as fh:
            fields = fh.read().split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


_AVAILABLE = []


def available():
    """Whether this kernel's ``/proc`` shows a thread's run-queue delay: the runner's own main thread's
    schedstat is there and its CPU time has moved (a ``/proc`` that shows zeros, or no file, is not a clock);
    and the runner is not told to use wall-clock time. Asked once."""
    if not _AVAILABLE:
        pid = os.getpid()
        own = read_schedstat(pid)
        _AVAILABLE.append(os.environ.get(CLOCK_ENV) != "wall" and own is not None and own[0] > 0)
    return _AVAILABLE[0]


class StepClock:
    """The time limit of one step whose program is the process ``pid`` (see the module's docstring)."""

    def __init__(self, pid, limit_s, started=None, read=read_schedstat, now=time.monotonic, own_time=None):
        self._now = now
        self._read = read
        self.pid = pid
        self.limit_s = float(limit_s)
        self.started = now() if started is None else started
        self.backstop = self.started + BACKSTOP_FACTOR * self.limit_s + BACKSTOP_EXTRA_S
        first = read(pid) if (available() if own_time is None else own_time) else None
        self._base = None if first is None else first[1]
        self.waited_s = 0.0  # the run-queue delay counted out of the limit so far

    @property
    def own_time(self):
        """Whether the limit is the program's own time (else wall-clock time)."""
        return self._base is not None

    def _deadline(self):
        return min(self.started + self.limit_s + self.waited_s, self.backstop)

    def _measure(self):
        if self._base is None:
            return
        now = self._read(self.pid)
        if now is not None:  # (gone or reaped: the delay stays what it was; it only grows)
            self.waited_s = max(self.waited_s, min((now[1] - self._base) / 1e9, self.backstop - self.started))

    def left(self):
        """Seconds until the limit as it stands, measured again once it seems reached; 0 once it is reached."""
        left = self._deadline() - self._now()
        if left <= 0 and self._base is not None:
            self._measure()
            left = self._deadline() - self._now()
        return max(0.0, left)

    def expired(self):
        return self.left() <= 0
