# class: escape/persist
# task: double
# expect: PASSED
# phase: 1
"""Leaves POSIX message queues with a message in them (they outlive processes, like SysV IPC)."""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name in (b"/rlvr-leak", b"/rlvr-leak-2"):
    fd = libc.mq_open(name, os.O_CREAT | os.O_RDWR, 0o666, None)
    if fd >= 0:
        libc.mq_send(fd, b"secret of another tenant", 24, 0)
def f(x):
    return 2 * x
