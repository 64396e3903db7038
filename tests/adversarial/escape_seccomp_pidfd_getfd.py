# class: escape/proc
# task: double
# expect: PASSED
"""Takes another process's descriptors with pidfd_getfd (the judge's report pipe, the runner's job stream),
or advises its memory with process_madvise, or compares its files with kcmp: refused for every process."""
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {"x86_64": {"pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440, "kcmp": 312},
      "aarch64": {"pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440, "kcmp": 272}}.get(platform.machine(), {})
TAKEN = []
pids = sorted({os.getppid(), 1, *(int(p) for p in os.listdir("/proc") if p.isdigit())} - {os.getpid()})
for pid in pids:
    if not NR:
        break
    pidfd = libc.syscall(ctypes.c_long(NR["pidfd_open"]), ctypes.c_long(pid), ctypes.c_long(0))
    if pidfd < 0:
        continue
    for fd in range(0, 12):
        got = libc.syscall(ctypes.c_long(NR["pidfd_getfd"]), ctypes.c_long(pidfd), ctypes.c_long(fd), ctypes.c_long(0))
        if got >= 0:
            TAKEN.append((pid, fd))
            os.close(got)
    iov = (ctypes.c_ulong * 2)(0x10000, 4096)
    if libc.syscall(ctypes.c_long(NR["process_madvise"]), ctypes.c_long(pidfd), ctypes.addressof(iov),
                    ctypes.c_long(1), ctypes.c_long(21), ctypes.c_long(0)) >= 0:
        TAKEN.append((pid, "madvise"))
    if libc.syscall(ctypes.c_long(NR["kcmp"]), ctypes.c_long(os.getpid()), ctypes.c_long(pid), ctypes.c_long(0),
                    ctypes.c_long(0), ctypes.c_long(0)) >= 0:
        TAKEN.append((pid, "kcmp"))
    os.close(pidfd)
def f(x):
    return 2 * x if not TAKEN else f"took: {TAKEN[:10]}"
