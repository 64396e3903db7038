# class: escape/persist
# task: double
# expect: PASSED
# phase: 2
"""Passes only if this step's process got none of what an earlier job did to its parents (limits, priority,
affinity, scheduling: inherited from the zygote)."""
import os, resource
WRONG = []
for limit, sentinel in ((resource.RLIMIT_MSGQUEUE, 12345), (resource.RLIMIT_SIGPENDING, 777),
                        (resource.RLIMIT_NPROC, 3), (resource.RLIMIT_STACK, 3 << 20)):
    if sentinel in resource.getrlimit(limit):
        WRONG.append(limit)
if os.getpriority(os.PRIO_PROCESS, 0) == 17:
    WRONG.append("nice")
if os.cpu_count() and os.cpu_count() > 1 and len(os.sched_getaffinity(0)) == 1:
    WRONG.append("affinity")
if os.sched_getscheduler(0) == getattr(os, "SCHED_IDLE", 5):
    WRONG.append("SCHED_IDLE")
def f(x):
    return 2 * x if not WRONG else f"inherited: {WRONG}"
