# class: escape/privilege
# task: double
# expect: PASSED
"""mount / umount are refused."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
BLOCKED = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) != 0 and libc.umount2(b"/tmp", 2) != 0
def f(x):
    return 2 * x if BLOCKED else 0
