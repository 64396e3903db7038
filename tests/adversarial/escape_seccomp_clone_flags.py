# class: escape/namespaces
# task: double
# expect: PASSED
"""clone(2) with every namespace flag (also with the high 32 bits set) and clone3(2) with them: no new
namespace (clone3's flags are out of seccomp's reach: it answers ENOSYS and the C library uses clone)."""
import ctypes, os, platform, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": (56, 435), "aarch64": (220, 435)}.get(platform.machine())
MADE = []
FLAGS = (0x10000000, 0x20000000, 0x40000000, 0x08000000, 0x04000000, 0x02000000, 0x00020000)
for flags in FLAGS if NR else ():
    for value in (flags | 17, (1 << 32) | flags | 17):
        pid = libc.syscall(ctypes.c_long(NR[0]), ctypes.c_long(value), ctypes.c_long(0), ctypes.c_long(0),
                           ctypes.c_long(0), ctypes.c_long(0))
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
            MADE.append(("clone", hex(value)))
    args = ctypes.create_string_buffer(struct.pack("11Q", flags, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))
    pid = libc.syscall(ctypes.c_long(NR[1]), args, ctypes.c_long(88))
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        MADE.append(("clone3", hex(flags)))
def f(x):
    return 2 * x if not MADE else f"made namespaces: {MADE}"
