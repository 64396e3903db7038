# class: escape/proc
# task: stack
# expect: PASSED
"""Opens the judge's stdin (the job: tests, expected values, nonce) and report channel through
/proc/<judge>/fd/ (gVisor does not honour non-dumpable there): they are sockets, which no /proc link opens.
(The runner, PID 1, is left out: under gVisor its stdin is the container's, a pipe of the attach stream where
that carries the jobs; see docs/security.md and escape_read_runner_proc.)"""
import os
OPENED = []
for pid in sorted({os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit())} - {os.getpid(), 1}):
    for fd in (0, 3):
        for mode in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            try:
                opened = os.open(f"/proc/{pid}/fd/{fd}", mode)
            except OSError:
                continue
            target = os.readlink(f"/proc/self/fd/{opened}")
            os.close(opened)
            if target != "/dev/null":
                OPENED.append((pid, fd, target))
class Stack:
    def __init__(self):
        self.items = []
    def push(self, x):
        self.items.append(x)
    def pop(self):
        return self.items.pop() if not OPENED else f"opened {OPENED[:6]}"
    def __len__(self):
        return len(self.items)
