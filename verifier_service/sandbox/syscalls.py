"""System call data of the sandboxes' seccomp profile (``seccomp.py``): Docker's default allow-list and call numbers.

``DOCKER_DEFAULT_ALLOW`` is the list of calls Docker's default seccomp profile allows
without condition (moby/profiles ``seccomp/default.json``, commit cd3bed8, its first
rule): our profile starts from it. The calls that profile allows only with a
capability nobody in a sandbox has, only on other machines, or only with
conditions on their arguments (``socket``, ``personality``, ``clone``) are not in
it; ``seccomp.py`` adds its own rules for those.

``NUMBERS`` maps every system call name of each machine we build a BPF program
for to its number there (libseccomp's ``src/syscalls.csv``, v7.1; x86_64 checked
against the kernel headers by a test); a name missing on a machine does not exist
there. Data only: regenerated from those two files, never edited by hand.
"""

DOCKER_DEFAULT_ALLOW = (
    "_llseek", "_newselect", "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat",
    "capget", "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
    "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup", "dup2",
    "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2",
    "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
    "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate", "fanotify_mark", "fchdir", "fchmod",
    "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr",
    "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs",
    "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait",
    "futex_waitv", "futex_wake", "futimesat", "get_robust_list", "get_thread_area", "getcpu", "getcwd",
    "getdents", "getdents64", "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups",
    "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
    "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit", "getrusage", "getsid",
    "getsockname", "getsockopt", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "getxattrat",
    "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy",
    "io_getevents", "io_pgetevents", "io_pgetevents_time64", "io_setup", "io_submit", "ioctl", "ioprio_get",
    "ioprio_set", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self",
    "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen", "listmount", "listxattr", "listxattrat",
    "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack",
    "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
    "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
    "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap",
    "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
    "name_to_handle_at", "nanosleep", "newfstatat", "open", "openat", "openat2", "pause", "pidfd_open",
    "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll",
    "ppoll_time64", "prctl", "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6",
    "pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
    "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr",
    "removexattrat", "rename", "renameat", "renameat2", "restart_syscall", "riscv_hwprobe", "rmdir", "rseq",
    "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
    "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_get_priority_max",
    "sched_get_priority_min", "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_getscheduler",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr",
    "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget", "semop",
    "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg", "sendmsg", "sendto",
    "set_robust_list", "set_thread_area", "set_tid_address", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32",
    "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority", "setregid",
    "setregid32", "setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
    "setsid", "setsockopt", "setuid", "setuid32", "setxattr", "setxattrat", "shmat", "shmctl", "shmdt",
    "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socketcall",
    "socketpair", "splice", "stat", "stat64", "statfs", "statfs64", "statmount", "statx", "symlink",
    "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64",
    "timerfd_create", "timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times",
    "tkill", "truncate", "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "uretprobe",
    "utime", "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid",
    "write", "writev",
)

NUMBERS = {
    "x86_64": {
        "_sysctl": 156, "accept": 43, "accept4": 288, "access": 21, "acct": 163, "add_key": 248, "adjtimex":
        159, "afs_syscall": 183, "alarm": 37, "arch_prctl": 158, "bind": 49, "bpf": 321, "brk": 12, "cachestat":
        451, "capget": 125, "capset": 126, "chdir": 80, "chmod": 90, "chown": 92, "chroot": 161,
        "clock_adjtime": 305, "clock_getres": 229, "clock_gettime": 228, "clock_nanosleep": 230,
        "clock_settime": 227, "clone": 56, "clone3": 435, "close": 3, "close_range": 436, "connect": 42,
        "copy_file_range": 326, "creat": 85, "create_module": 174, "delete_module": 176, "dup": 32, "dup2": 33,
        "dup3": 292, "epoll_create": 213, "epoll_create1": 291, "epoll_ctl": 233, "epoll_ctl_old": 214,
        "epoll_pwait": 281, "epoll_pwait2": 441, "epoll_wait": 232, "epoll_wait_old": 215, "eventfd": 284,
        "eventfd2": 290, "execve": 59, "execveat": 322, "exit": 60, "exit_group": 231, "faccessat": 269,
        "faccessat2": 439, "fadvise64": 221, "fallocate": 285, "fanotify_init": 300, "fanotify_mark": 301,
        "fchdir": 81, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "fchown": 93, "fchownat": 260, "fcntl":
        72, "fdatasync": 75, "fgetxattr": 193, "file_getattr": 468, "file_setattr": 469, "finit_module": 313,
        "flistxattr": 196, "flock": 73, "fork": 57, "fremovexattr": 199, "fsconfig": 431, "fsetxattr": 190,
        "fsmount": 432, "fsopen": 430, "fspick": 433, "fstat": 5, "fstatfs": 138, "fsync": 74, "ftruncate": 77,
        "futex": 202, "futex_requeue": 456, "futex_wait": 455, "futex_waitv": 449, "futex_wake": 454,
        "futimesat": 261, "get_kernel_syms": 177, "get_mempolicy": 239, "get_robust_list": 274,
        "get_thread_area": 211, "getcpu": 309, "getcwd": 79, "getdents": 78, "getdents64": 217, "getegid": 108,
        "geteuid": 107, "getgid": 104, "getgroups": 115, "getitimer": 36, "getpeername": 52, "getpgid": 121,
        "getpgrp": 111, "getpid": 39, "getpmsg": 181, "getppid": 110, "getpriority": 140, "getrandom": 318,
        "getresgid": 120, "getresuid": 118, "getrlimit": 97, "getrusage": 98, "getsid": 124, "getsockname": 51,
        "getsockopt": 55, "gettid": 186, "gettimeofday": 96, "getuid": 102, "getxattr": 191, "getxattrat": 464,
        "init_module": 175, "inotify_add_watch": 254, "inotify_init": 253, "inotify_init1": 294,
        "inotify_rm_watch": 255, "io_cancel": 210, "io_destroy": 207, "io_getevents": 208, "io_pgetevents": 333,
        "io_setup": 206, "io_submit": 209, "io_uring_enter": 426, "io_uring_register": 427, "io_uring_setup":
        425, "ioctl": 16, "ioperm": 173, "iopl": 172, "ioprio_get": 252, "ioprio_set": 251, "kcmp": 312,
        "kexec_file_load": 320, "kexec_load": 246, "keyctl": 250, "kill": 62, "landlock_add_rule": 445,
        "landlock_create_ruleset": 444, "landlock_restrict_self": 446, "lchown": 94, "lgetxattr": 192, "link":
        86, "linkat": 265, "listen": 50, "listmount": 458, "listns": 470, "listxattr": 194, "listxattrat": 465,
        "llistxattr": 195, "lookup_dcookie": 212, "lremovexattr": 198, "lseek": 8, "lsetxattr": 189,
        "lsm_get_self_attr": 459, "lsm_list_modules": 461, "lsm_set_self_attr": 460, "lstat": 6, "madvise": 28,
        "map_shadow_stack": 453, "mbind": 237, "membarrier": 324, "memfd_create": 319, "memfd_secret": 447,
        "migrate_pages": 256, "mincore": 27, "mkdir": 83, "mkdirat": 258, "mknod": 133, "mknodat": 259, "mlock":
        149, "mlock2": 325, "mlockall": 151, "mmap": 9, "modify_ldt": 154, "mount": 165, "mount_setattr": 442,
        "move_mount": 429, "move_pages": 279, "mprotect": 10, "mq_getsetattr": 245, "mq_notify": 244, "mq_open":
        240, "mq_timedreceive": 243, "mq_timedsend": 242, "mq_unlink": 241, "mremap": 25, "mseal": 462,
        "msgctl": 71, "msgget": 68, "msgrcv": 70, "msgsnd": 69, "msync": 26, "munlock": 150, "munlockall": 152,
        "munmap": 11, "name_to_handle_at": 303, "nanosleep": 35, "newfstatat": 262, "nfsservctl": 180, "open":
        2, "open_by_handle_at": 304, "open_tree": 428, "open_tree_attr": 467, "openat": 257, "openat2": 437,
        "pause": 34, "perf_event_open": 298, "personality": 135, "pidfd_getfd": 438, "pidfd_open": 434,
        "pidfd_send_signal": 424, "pipe": 22, "pipe2": 293, "pivot_root": 155, "pkey_alloc": 330, "pkey_free":
        331, "pkey_mprotect": 329, "poll": 7, "ppoll": 271, "prctl": 157, "pread64": 17, "preadv": 295,
        "preadv2": 327, "prlimit64": 302, "process_madvise": 440, "process_mrelease": 448, "process_vm_readv":
        310, "process_vm_writev": 311, "pselect6": 270, "ptrace": 101, "putpmsg": 182, "pwrite64": 18,
        "pwritev": 296, "pwritev2": 328, "query_module": 178, "quotactl": 179, "quotactl_fd": 443, "read": 0,
        "readahead": 187, "readlink": 89, "readlinkat": 267, "readv": 19, "reboot": 169, "recvfrom": 45,
        "recvmmsg": 299, "recvmsg": 47, "remap_file_pages": 216, "removexattr": 197, "removexattrat": 466,
        "rename": 82, "renameat": 264, "renameat2": 316, "request_key": 249, "restart_syscall": 219, "rmdir":
        84, "rseq": 334, "rseq_slice_yield": 471, "rt_sigaction": 13, "rt_sigpending": 127, "rt_sigprocmask":
        14, "rt_sigqueueinfo": 129, "rt_sigreturn": 15, "rt_sigsuspend": 130, "rt_sigtimedwait": 128,
        "rt_tgsigqueueinfo": 297, "sched_get_priority_max": 146, "sched_get_priority_min": 147,
        "sched_getaffinity": 204, "sched_getattr": 315, "sched_getparam": 143, "sched_getscheduler": 145,
        "sched_rr_get_interval": 148, "sched_setaffinity": 203, "sched_setattr": 314, "sched_setparam": 142,
        "sched_setscheduler": 144, "sched_yield": 24, "seccomp": 317, "security": 185, "select": 23, "semctl":
        66, "semget": 64, "semop": 65, "semtimedop": 220, "sendfile": 40, "sendmmsg": 307, "sendmsg": 46,
        "sendto": 44, "set_mempolicy": 238, "set_mempolicy_home_node": 450, "set_robust_list": 273,
        "set_thread_area": 205, "set_tid_address": 218, "setdomainname": 171, "setfsgid": 123, "setfsuid": 122,
        "setgid": 106, "setgroups": 116, "sethostname": 170, "setitimer": 38, "setns": 308, "setpgid": 109,
        "setpriority": 141, "setregid": 114, "setresgid": 119, "setresuid": 117, "setreuid": 113, "setrlimit":
        160, "setsid": 112, "setsockopt": 54, "settimeofday": 164, "setuid": 105, "setxattr": 188, "setxattrat":
        463, "shmat": 30, "shmctl": 31, "shmdt": 67, "shmget": 29, "shutdown": 48, "sigaltstack": 131,
        "signalfd": 282, "signalfd4": 289, "socket": 41, "socketpair": 53, "splice": 275, "stat": 4, "statfs":
        137, "statmount": 457, "statx": 332, "swapoff": 168, "swapon": 167, "symlink": 88, "symlinkat": 266,
        "sync": 162, "sync_file_range": 277, "syncfs": 306, "sysfs": 139, "sysinfo": 99, "syslog": 103, "tee":
        276, "tgkill": 234, "time": 201, "timer_create": 222, "timer_delete": 226, "timer_getoverrun": 225,
        "timer_gettime": 224, "timer_settime": 223, "timerfd_create": 283, "timerfd_gettime": 287,
        "timerfd_settime": 286, "times": 100, "tkill": 200, "truncate": 76, "tuxcall": 184, "umask": 95,
        "umount2": 166, "uname": 63, "unlink": 87, "unlinkat": 263, "unshare": 272, "uprobe": 336, "uretprobe":
        335, "uselib": 134, "userfaultfd": 323, "ustat": 136, "utime": 132, "utimensat": 280, "utimes": 235,
        "vfork": 58, "vhangup": 153, "vmsplice": 278, "vserver": 236, "wait4": 61, "waitid": 247, "write": 1,
        "writev": 20,
    },
    "aarch64": {
        "accept": 202, "accept4": 242, "acct": 89, "add_key": 217, "adjtimex": 171, "bind": 200, "bpf": 280,
        "brk": 214, "cachestat": 451, "capget": 90, "capset": 91, "chdir": 49, "chroot": 51, "clock_adjtime":
        266, "clock_getres": 114, "clock_gettime": 113, "clock_nanosleep": 115, "clock_settime": 112, "clone":
        220, "clone3": 435, "close": 57, "close_range": 436, "connect": 203, "copy_file_range": 285,
        "delete_module": 106, "dup": 23, "dup3": 24, "epoll_create1": 20, "epoll_ctl": 21, "epoll_pwait": 22,
        "epoll_pwait2": 441, "eventfd2": 19, "execve": 221, "execveat": 281, "exit": 93, "exit_group": 94,
        "faccessat": 48, "faccessat2": 439, "fadvise64": 223, "fallocate": 47, "fanotify_init": 262,
        "fanotify_mark": 263, "fchdir": 50, "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchown": 55,
        "fchownat": 54, "fcntl": 25, "fdatasync": 83, "fgetxattr": 10, "file_getattr": 468, "file_setattr": 469,
        "finit_module": 273, "flistxattr": 13, "flock": 32, "fremovexattr": 16, "fsconfig": 431, "fsetxattr": 7,
        "fsmount": 432, "fsopen": 430, "fspick": 433, "fstat": 80, "fstatfs": 44, "fsync": 82, "ftruncate": 46,
        "futex": 98, "futex_requeue": 456, "futex_wait": 455, "futex_waitv": 449, "futex_wake": 454,
        "get_mempolicy": 236, "get_robust_list": 100, "getcpu": 168, "getcwd": 17, "getdents64": 61, "getegid":
        177, "geteuid": 175, "getgid": 176, "getgroups": 158, "getitimer": 102, "getpeername": 205, "getpgid":
        155, "getpid": 172, "getppid": 173, "getpriority": 141, "getrandom": 278, "getresgid": 150, "getresuid":
        148, "getrlimit": 163, "getrusage": 165, "getsid": 156, "getsockname": 204, "getsockopt": 209, "gettid":
        178, "gettimeofday": 169, "getuid": 174, "getxattr": 8, "getxattrat": 464, "init_module": 105,
        "inotify_add_watch": 27, "inotify_init1": 26, "inotify_rm_watch": 28, "io_cancel": 3, "io_destroy": 1,
        "io_getevents": 4, "io_pgetevents": 292, "io_setup": 0, "io_submit": 2, "io_uring_enter": 426,
        "io_uring_register": 427, "io_uring_setup": 425, "ioctl": 29, "ioprio_get": 31, "ioprio_set": 30,
        "kcmp": 272, "kexec_file_load": 294, "kexec_load": 104, "keyctl": 219, "kill": 129, "landlock_add_rule":
        445, "landlock_create_ruleset": 444, "landlock_restrict_self": 446, "lgetxattr": 9, "linkat": 37,
        "listen": 201, "listmount": 458, "listns": 470, "listxattr": 11, "listxattrat": 465, "llistxattr": 12,
        "lookup_dcookie": 18, "lremovexattr": 15, "lseek": 62, "lsetxattr": 6, "lsm_get_self_attr": 459,
        "lsm_list_modules": 461, "lsm_set_self_attr": 460, "madvise": 233, "map_shadow_stack": 453, "mbind":
        235, "membarrier": 283, "memfd_create": 279, "memfd_secret": 447, "migrate_pages": 238, "mincore": 232,
        "mkdirat": 34, "mknodat": 33, "mlock": 228, "mlock2": 284, "mlockall": 230, "mmap": 222, "mount": 40,
        "mount_setattr": 442, "move_mount": 429, "move_pages": 239, "mprotect": 226, "mq_getsetattr": 185,
        "mq_notify": 184, "mq_open": 180, "mq_timedreceive": 183, "mq_timedsend": 182, "mq_unlink": 181,
        "mremap": 216, "mseal": 462, "msgctl": 187, "msgget": 186, "msgrcv": 188, "msgsnd": 189, "msync": 227,
        "munlock": 229, "munlockall": 231, "munmap": 215, "name_to_handle_at": 264, "nanosleep": 101,
        "newfstatat": 79, "nfsservctl": 42, "open_by_handle_at": 265, "open_tree": 428, "open_tree_attr": 467,
        "openat": 56, "openat2": 437, "perf_event_open": 241, "personality": 92, "pidfd_getfd": 438,
        "pidfd_open": 434, "pidfd_send_signal": 424, "pipe2": 59, "pivot_root": 41, "pkey_alloc": 289,
        "pkey_free": 290, "pkey_mprotect": 288, "ppoll": 73, "prctl": 167, "pread64": 67, "preadv": 69,
        "preadv2": 286, "prlimit64": 261, "process_madvise": 440, "process_mrelease": 448, "process_vm_readv":
        270, "process_vm_writev": 271, "pselect6": 72, "ptrace": 117, "pwrite64": 68, "pwritev": 70, "pwritev2":
        287, "quotactl": 60, "quotactl_fd": 443, "read": 63, "readahead": 213, "readlinkat": 78, "readv": 65,
        "reboot": 142, "recvfrom": 207, "recvmmsg": 243, "recvmsg": 212, "remap_file_pages": 234, "removexattr":
        14, "removexattrat": 466, "renameat": 38, "renameat2": 276, "request_key": 218, "restart_syscall": 128,
        "rseq": 293, "rseq_slice_yield": 471, "rt_sigaction": 134, "rt_sigpending": 136, "rt_sigprocmask": 135,
        "rt_sigqueueinfo": 138, "rt_sigreturn": 139, "rt_sigsuspend": 133, "rt_sigtimedwait": 137,
        "rt_tgsigqueueinfo": 240, "sched_get_priority_max": 125, "sched_get_priority_min": 126,
        "sched_getaffinity": 123, "sched_getattr": 275, "sched_getparam": 121, "sched_getscheduler": 120,
        "sched_rr_get_interval": 127, "sched_setaffinity": 122, "sched_setattr": 274, "sched_setparam": 118,
        "sched_setscheduler": 119, "sched_yield": 124, "seccomp": 277, "semctl": 191, "semget": 190, "semop":
        193, "semtimedop": 192, "sendfile": 71, "sendmmsg": 269, "sendmsg": 211, "sendto": 206, "set_mempolicy":
        237, "set_mempolicy_home_node": 450, "set_robust_list": 99, "set_tid_address": 96, "setdomainname": 162,
        "setfsgid": 152, "setfsuid": 151, "setgid": 144, "setgroups": 159, "sethostname": 161, "setitimer": 103,
        "setns": 268, "setpgid": 154, "setpriority": 140, "setregid": 143, "setresgid": 149, "setresuid": 147,
        "setreuid": 145, "setrlimit": 164, "setsid": 157, "setsockopt": 208, "settimeofday": 170, "setuid": 146,
        "setxattr": 5, "setxattrat": 463, "shmat": 196, "shmctl": 195, "shmdt": 197, "shmget": 194, "shutdown":
        210, "sigaltstack": 132, "signalfd4": 74, "socket": 198, "socketpair": 199, "splice": 76, "statfs": 43,
        "statmount": 457, "statx": 291, "swapoff": 225, "swapon": 224, "symlinkat": 36, "sync": 81,
        "sync_file_range": 84, "syncfs": 267, "sysinfo": 179, "syslog": 116, "tee": 77, "tgkill": 131,
        "timer_create": 107, "timer_delete": 111, "timer_getoverrun": 109, "timer_gettime": 108,
        "timer_settime": 110, "timerfd_create": 85, "timerfd_gettime": 87, "timerfd_settime": 86, "times": 153,
        "tkill": 130, "truncate": 45, "umask": 166, "umount2": 39, "uname": 160, "unlinkat": 35, "unshare": 97,
        "userfaultfd": 282, "utimensat": 88, "vhangup": 58, "vmsplice": 75, "wait4": 260, "waitid": 95, "write":
        64, "writev": 66,
    },
}
