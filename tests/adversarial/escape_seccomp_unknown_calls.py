# class: escape/privilege
# task: double
# expect: PASSED
"""Every system call number beyond the profile's table, and calls the table knows but no sandbox needs
(chroot, sethostname, lsm_*, mount_setattr, ...): all refused (an allow-list: a call newer than the list is
refused too)."""
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NAMED = {"x86_64": {"chroot": 161, "sethostname": 170, "setdomainname": 171, "lookup_dcookie": 212,
                    "mount_setattr": 442, "open_tree": 428, "fanotify_init": 300, "lsm_get_self_attr": 459,
                    "lsm_set_self_attr": 460, "lsm_list_modules": 461, "modify_ldt": 154, "iopl": 172,
                    "vhangup": 153, "acct": 163, "quotactl_fd": 443},
         "aarch64": {"chroot": 51, "sethostname": 161, "setdomainname": 162, "lookup_dcookie": 18,
                     "mount_setattr": 442, "open_tree": 428, "fanotify_init": 262, "lsm_get_self_attr": 459,
                     "lsm_set_self_attr": 460, "lsm_list_modules": 461, "vhangup": 58, "acct": 89,
                     "quotactl_fd": 443}}.get(platform.machine(), {})
buf = ctypes.create_string_buffer(4096)
OPENED = [name for name, nr in NAMED.items()
          if libc.syscall(ctypes.c_long(nr), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0)) >= 0]
for nr in range(470, 1100):
    if libc.syscall(ctypes.c_long(nr), ctypes.addressof(buf), ctypes.c_long(0), ctypes.c_long(0)) >= 0:
        OPENED.append(nr)
def f(x):
    return 2 * x if not OPENED else f"opened: {OPENED[:20]}"
