# class: escape/persist
# task: double
# expect: PASSED
# phase: 2
"""Passes only if no process of an earlier job is alive."""
import os, time
time.sleep(0.2)
def _parent(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
me = os.getpid()
ANCESTORS, pid = set(), me  # this process and its ancestors (the judge, the zygote): none is an earlier job's
while pid > 1:
    ANCESTORS.add(pid)
    pid = _parent(pid)
OTHERS = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) not in ANCESTORS | {1}:
        try:
            if _parent(pid) not in (me,):
                OTHERS.append(open(f"/proc/{pid}/cmdline", "rb").read())
        except OSError:
            pass
ALIVE = os.path.exists("/tmp/.rlvr_alive")
def f(x):
    return 2 * x if not OTHERS and not ALIVE else f"left behind: {OTHERS!r:.300} alive={ALIVE}"
