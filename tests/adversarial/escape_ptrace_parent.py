# class: escape/privilege
# task: double
# expect: PASSED
"""ptrace of the parent (judge) or the runner is refused."""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
BLOCKED = True
for target in (os.getppid(), 1):
    for req in (PTRACE_ATTACH, PTRACE_SEIZE):
        if libc.ptrace(req, target, None, None) == 0:
            BLOCKED = False
def f(x):
    return 2 * x if BLOCKED else 0
