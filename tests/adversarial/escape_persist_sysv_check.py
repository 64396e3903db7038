# class: escape/persist
# task: double
# expect: PASSED
# phase: 2
"""Passes only if no SysV IPC object of an earlier job exists."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
FOUND = any(get(key, *rest) >= 0 for get, key, rest in (
    (libc.shmget, 0x52564C52, (0, 0)), (libc.semget, 0x52564C53, (0, 0)), (libc.msgget, 0x52564C54, (0,))))
def f(x):
    return 2 * x if not FOUND else f"left behind: {FOUND!r:.300}"
