"""runner/procs.no_new_processes: the filter function_tests' test programs run under (function_tests.NO_FORK), so
that a completion cannot fork copies of the tests' process (a fork oracle). Threads stay; what it execs keeps it."""

from __future__ import annotations

import subprocess
import sys

from verifier_service.runner import procs

PROGRAM = r"""
import ctypes, os, threading
try:
    os.fork()
    print("forked")
except OSError as exc:
    print("fork", exc.errno)
libc = ctypes.CDLL(None, use_errno=True)
print("vfork", libc.syscall(58), ctypes.get_errno())
print("clone", libc.syscall(56, 17, 0, 0, 0, 0), ctypes.get_errno())  # SIGCHLD: a process, not a thread
print("clone3", libc.syscall(435, 0, 0), ctypes.get_errno())
ran = []
thread = threading.Thread(target=lambda: ran.append(1))
thread.start()
thread.join()
print("thread", len(ran))
"""


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kwargs)


def test_no_new_process_but_threads():
    out = run([sys.executable, "-c", PROGRAM], preexec_fn=procs.no_new_processes).stdout.split("\n")
    assert out[:5] == ["fork 1", "vfork -1 1", "clone -1 1", "clone3 -1 38", "thread 1"], out  # EPERM, ENOSYS


def test_the_filter_outlives_exec_and_a_shell_cannot_fork():
    done = run(["sh", "-c", "echo $(echo inner); echo after"], preexec_fn=procs.no_new_processes)
    assert "inner" not in done.stdout and done.returncode != 0, done
    assert run(["sh", "-c", "echo $(echo inner)"]).stdout == "inner\n"  # (without it, the same shell forks)


def test_the_runner_knows_it_can_install_it():
    assert procs.no_fork_works()


def test_the_filter_program_jumps_inside_itself():
    for machine in ("x86_64", "aarch64"):
        code = procs._no_fork_filter(machine)
        for i, (op, jt, jf, _) in enumerate(code):
            if op & 0x07 == 0x05:  # a jump: both targets within the program, at a return
                for target in (i + 1 + jt, i + 1 + jf):
                    assert target < len(code), (machine, i)
        assert code[-3:] == [(0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x00050001), (0x06, 0, 0, 0x00050026)]
