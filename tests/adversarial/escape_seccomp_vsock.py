# class: escape/network
# task: double
# expect: PASSED
"""AF_VSOCK (not covered by --network none: on a VM host it reaches the host) and other families, also with the
high 32 bits of the family set (the kernel reads an int; a 64-bit comparison would let it through)."""
import ctypes, platform, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SOCKET = {"x86_64": 41, "aarch64": 198}.get(platform.machine())
OPENED = []
for family in (40, 0x1_0000_0028, 38, 0x1_0000_0026, 0xFFFF_FFFF_0000_0028, 44, 45, 3, 4, 5, 9, 17, 29, 36):
    if SOCKET is None:
        break
    fd = libc.syscall(ctypes.c_long(SOCKET), ctypes.c_long(family), ctypes.c_long(1), ctypes.c_long(0))
    if fd >= 0:
        OPENED.append(hex(family))
try:
    s = socket.socket(getattr(socket, "AF_VSOCK", 40), socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect((2, 22))  # the host's CID
    OPENED.append("connected to the host over vsock")
except OSError:
    pass
def f(x):
    return 2 * x if not OPENED else f"opened: {OPENED}"
