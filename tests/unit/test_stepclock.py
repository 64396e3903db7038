"""The clock of a step's time limit (runner/stepclock.py): the program's own time, wall-clock time less the
run-queue delay of its main thread, never past the wall-clock backstop; wall-clock time where the delay cannot
be read. On an injected schedstat reader and clock: no sandbox, no sleeping."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "verifier_service" / "runner"
sys.path.insert(0, str(RUNNER))
import stepclock  # noqa: E402

S = 1_000_000_000  # nanoseconds


class Fake:
    """A settable monotonic clock and a settable run-queue delay (None: the file cannot be read)."""

    def __init__(self, delay_s: float | None = 0.0) -> None:
        self.now = 100.0
        self.delay_s = delay_s
        self.reads = 0

    def read(self, pid: int) -> tuple[int, int] | None:
        assert pid == 42
        self.reads += 1
        return None if self.delay_s is None else (7 * S, int(self.delay_s * S))

    def clock(self, limit: float, own_time: bool | None = True) -> stepclock.StepClock:
        return stepclock.StepClock(42, limit, self.now, read=self.read, now=lambda: self.now, own_time=own_time)


def test_the_run_queue_delay_since_the_step_started_moves_the_deadline():
    fake = Fake(delay_s=5.0)  # what the process waited before its step started is not the step's
    clock = fake.clock(10)
    assert clock.own_time and clock.left() == 10
    fake.now += 10
    fake.delay_s = 8.0
    assert clock.left() == pytest.approx(3.0) and not clock.expired()
    assert clock.waited_s == pytest.approx(3.0)
    fake.now += 3
    assert clock.expired()  # no more waiting accrued: its own time is 10 s
    fake.delay_s = 9.5
    assert clock.left() == pytest.approx(1.5)


def test_sleeping_or_running_counts():
    fake = Fake()
    clock = fake.clock(2)
    fake.now += 2
    assert clock.expired() and clock.waited_s == 0


def test_never_past_the_backstop():
    fake = Fake()
    clock = fake.clock(10)
    assert clock.backstop == fake.now + 2 * 10 + 1
    fake.delay_s = 1000.0  # its own threads kept its main thread waiting all along
    fake.now += 20.5
    assert clock.left() == pytest.approx(0.5)
    fake.now += 0.5
    assert clock.expired()
    assert clock.waited_s == pytest.approx(21.0)  # (reported: no more than the backstop's worth)


def test_the_delay_is_read_only_once_the_limit_seems_reached():
    fake = Fake()
    clock = fake.clock(10)
    reads = fake.reads
    for _ in range(100):
        fake.now += 0.05
        clock.left()
    assert fake.reads == reads
    fake.now += 6
    clock.left()
    assert fake.reads == reads + 1


def test_a_process_whose_file_is_gone_keeps_the_delay_counted_so_far():
    fake = Fake()
    clock = fake.clock(4)
    fake.now += 4
    fake.delay_s = 1.0
    assert clock.left() == pytest.approx(1.0)
    fake.delay_s = None  # exited and reaped
    fake.now += 0.5
    assert clock.left() == pytest.approx(0.5)


@pytest.mark.parametrize("why", ["unreadable", "told", "gone later"])
def test_wall_clock_where_the_delay_cannot_be_had(why):
    fake = Fake(delay_s=None if why == "unreadable" else 0.0)
    clock = fake.clock(3, own_time=False if why == "told" else True)
    assert clock.own_time is (why == "gone later")
    fake.delay_s = 50.0 if why != "gone later" else None
    fake.now += 3
    assert clock.expired()


def test_the_kernel_probe(monkeypatch):
    """This host's kernel shows the run-queue delay (the runner's own file, CPU time moved); told ``wall``, or
    where the file is missing, the runner uses wall-clock time."""
    if not os.path.exists("/proc/self/schedstat"):
        pytest.skip("this kernel has no /proc/<pid>/schedstat (CONFIG_SCHED_INFO): the limit is wall-clock here")
    monkeypatch.setattr(stepclock, "_AVAILABLE", [])
    monkeypatch.delenv(stepclock.CLOCK_ENV, raising=False)
    own = stepclock.read_schedstat(os.getpid())
    assert own is not None and own[0] > 0, own
    assert stepclock.available()
    monkeypatch.setattr(stepclock, "_AVAILABLE", [])
    monkeypatch.setenv(stepclock.CLOCK_ENV, "wall")
    assert not stepclock.available()
    assert stepclock.read_schedstat(2 ** 22 + 12345) is None  # no such process
