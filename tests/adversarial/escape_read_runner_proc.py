# class: escape/proc
# task: double
# expect: PASSED
# expect-gvisor: FAILED  (gVisor ignores non-dumpable for /proc/<pid>/fd and environ; mem stays closed)
# needs: unprivileged
"""The runner (PID 1) is non-dumpable: its environ, memory and fds are closed to the candidate."""
import os
OPENED = []
for path in ("/proc/1/environ", "/proc/1/mem", "/proc/1/fd/0", "/proc/1/cmdline_nope"):
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        if not path.endswith("_nope"):
            OPENED.append(path)
    except OSError:
        pass
def f(x):
    return 2 * x if not OPENED else f"opened: {OPENED}"
