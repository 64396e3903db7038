# class: escape/proc
# task: double
# expect: PASSED
# expect-gvisor: FAILED  (gVisor ignores non-dumpable for /proc/<pid>/fd and environ; mem stays closed)
# needs: unprivileged
"""The parent (the tests' judge, or the runner) is non-dumpable: nothing of it can be opened."""
import os
OPENED = []
ppid = os.getppid()
for what in ("environ", "mem", "fd/0", "fd/3"):
    try:
        os.close(os.open(f"/proc/{ppid}/{what}", os.O_RDONLY | os.O_NONBLOCK))
        OPENED.append(what)
    except OSError:
        pass
def f(x):
    return 2 * x if not OPENED else f"opened: {OPENED}"
