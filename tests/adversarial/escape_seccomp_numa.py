# class: escape/privilege
# task: double
# expect: PASSED
"""The NUMA memory policy calls (mbind, set_mempolicy, get_mempolicy, move_pages, migrate_pages,
set_mempolicy_home_node): Docker's default refuses them without CAP_SYS_NICE."""
import ctypes, mmap, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CALLS = {"x86_64": {"mbind": 237, "set_mempolicy": 238, "get_mempolicy": 239, "migrate_pages": 256,
                    "move_pages": 279, "set_mempolicy_home_node": 450},
         "aarch64": {"mbind": 235, "set_mempolicy": 237, "get_mempolicy": 236, "migrate_pages": 238,
                     "move_pages": 239, "set_mempolicy_home_node": 450}}
buf = mmap.mmap(-1, 4096)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
mask = ctypes.c_ulong(1)
mode = ctypes.c_int(0)
OPENED = []
for name, nr in CALLS.get(platform.machine(), {}).items():
    args = {"mbind": (addr, 4096, 1, ctypes.addressof(mask), 64, 0),
            "set_mempolicy": (1, ctypes.addressof(mask), 64),
            "get_mempolicy": (ctypes.addressof(mode), 0, 0, 0, 0),
            "migrate_pages": (0, 64, ctypes.addressof(mask), ctypes.addressof(mask)),
            "move_pages": (0, 0, 0, 0, 0, 0),
            "set_mempolicy_home_node": (addr, 4096, 0, 0)}[name]
    if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args]) >= 0:
        OPENED.append(name)
def f(x):
    return 2 * x if not OPENED else f"opened: {OPENED}"
