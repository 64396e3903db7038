# class: escape/privilege
# task: double
# expect: PASSED
"""New user, mount or network namespaces are refused."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
OPENED = [name for name, flag in (("user", CLONE_NEWUSER), ("mount", CLONE_NEWNS), ("net", CLONE_NEWNET)) if libc.unshare(flag) == 0]
BLOCKED = not OPENED
def f(x):
    return 2 * x if BLOCKED else f"opened: {OPENED}"
