# class: escape/privilege
# task: double
# expect: PASSED
"""personality(2) with personas Docker's default refuses (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE,
ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO, ...), also with the high 32 bits set; checked by asking the persona back."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.personality.restype = ctypes.c_int
libc.personality.argtypes = [ctypes.c_ulong]
CHANGED = []
for persona in (0x0400000, 0x0040000, 0x0200000, 0x0100000, 0x8000000, 0x0800000, 0x1_0040_0000, 0x0020000 | 0x0400000,
                0x0008 | 0x0040000, 0x0003, 0x0010):
    libc.personality(persona)
    now = libc.personality(0xFFFFFFFF)
    if now not in (0, -1):
        CHANGED.append(hex(now))
        libc.personality(0)
def f(x):
    return 2 * x if not CHANGED else f"persona changed: {CHANGED}"
