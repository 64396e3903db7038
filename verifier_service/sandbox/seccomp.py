"""The sandboxes' seccomp deny-list: one list, two forms (bubblewrap's BPF program, Docker's JSON profile).

bubblewrap loads whatever classic-BPF program it is given (``program()``);
Docker takes a JSON profile in place of its default one (``docker_profile()``).
Both answer EPERM to the calls no
verification needs and that widen the kernel's attack surface: the kernel
keyring, bpf, perf events, userfaultfd, io_uring, the mount API, new
namespaces, modules, kexec, clocks, swap, reboot, ptrace and cross-process
memory access. System calls of another ABI than the native one (x32, i386 on
x86_64, arm32 on arm64) are refused outright, so they cannot go around the list.
The Docker form also refuses ``clone`` with a namespace flag and answers
``clone3`` (whose flags seccomp cannot read) with ENOSYS, so the C library falls
back to ``clone``; bubblewrap disables nested user namespaces itself.
"""

from __future__ import annotations

import errno
import json
import platform
import struct

DENIED = (
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
    "swapon", "swapoff", "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "quotactl_fd",
    "vhangup", "fanotify_init", "lookup_dcookie", "nfsservctl", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "iopl", "ioperm", "uselib", "ustat", "sysfs", "_sysctl", "create_module", "get_kernel_syms",
    "query_module",
)

# (AUDIT_ARCH_*, {name: number}) per machine; names missing on a machine do not exist there.
TABLES = {
    "x86_64": (0xC000003E, {
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "mount": 165, "umount2": 166,
        "pivot_root": 155, "move_mount": 429, "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "unshare": 272, "setns": 308, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "swapon": 167, "swapoff": 168, "reboot": 169, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176, "acct": 163,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "syslog": 103,
        "quotactl": 179, "quotactl_fd": 443, "vhangup": 153, "fanotify_init": 300, "lookup_dcookie": 212,
        "nfsservctl": 180, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "iopl": 172, "ioperm": 173, "uselib": 134, "ustat": 136, "sysfs": 139, "_sysctl": 156,
        "create_module": 174, "get_kernel_syms": 177, "query_module": 178,
    }),
    "aarch64": (0xC00000B7, {
        "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "mount": 40, "umount2": 39,
        "pivot_root": 41, "move_mount": 429, "open_tree": 428, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "unshare": 97, "setns": 268, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "swapon": 224, "swapoff": 225, "reboot": 142, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106, "acct": 89,
        "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "syslog": 116,
        "quotactl": 60, "quotactl_fd": 443, "vhangup": 58, "fanotify_init": 262, "lookup_dcookie": 18,
        "nfsservctl": 42, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
    }),
}
X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20   # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15      # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35      # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06      # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data


def program(machine: str | None = None) -> bytes | None:
    """The filter as bwrap reads it (an array of struct sock_filter); None on a machine without a table."""
    machine = machine or platform.machine()
    if machine not in TABLES:
        return None
    arch, numbers = TABLES[machine]
    denied = sorted({numbers[name] for name in DENIED if name in numbers})
    deny = _ERRNO | errno.EPERM
    body: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _NR)]
    if machine == "x86_64":
        body.append((_JGE_K, 0, 0, X32_SYSCALL_BIT))  # jt patched below: to deny
    body += [(_JEQ_K, 0, 0, nr) for nr in denied]  # jt patched below: to deny
    body.append((_RET_K, 0, 0, _ALLOW))
    # Each conditional jumps forward to the deny return, which follows the allow return.
    patched = []
    for index, (code, jt, jf, k) in enumerate(body):
        if code in (_JEQ_K, _JGE_K):
            jt = len(body) - index - 1  # skip the rest of the body (the allow last): land on deny
        patched.append((code, jt, jf, k))
    # The architecture check first: another ABI goes straight to deny.
    head = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 0, len(patched), arch)]
    instructions = [*head, *patched, (_RET_K, 0, 0, deny)]
    if max(i[1] for i in instructions) > 255 or max(i[2] for i in instructions) > 255:
        raise ValueError("seccomp program too long for 8-bit jumps")
    return b"".join(struct.pack("=HBBI", *i) for i in instructions)


def describe(machine: str | None = None) -> str:
    machine = machine or platform.machine()
    if machine not in TABLES:
        return f"none (no system call table for {machine})"
    count = sum(name in TABLES[machine][1] for name in DENIED)
    return (f"deny-list of {count} system calls (keyring, bpf, perf events, userfaultfd, io_uring, mount API, "
            f"namespaces, modules, kexec, clocks, ptrace, ...) -> EPERM; other ABIs refused")


# Docker (libseccomp) names of the native architectures, and the namespace flags of clone(2).
DOCKER_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}
CLONE_NAMESPACE_FLAGS = {"CLONE_NEWTIME": 0x80, "CLONE_NEWNS": 0x20000, "CLONE_NEWCGROUP": 0x2000000,
                         "CLONE_NEWUTS": 0x4000000, "CLONE_NEWIPC": 0x8000000, "CLONE_NEWUSER": 0x10000000,
                         "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000}


def docker_profile(machine: str | None = None) -> dict | None:
    """The same deny-list as a Docker seccomp profile (``--security-opt seccomp=<json>``); None on a machine
    without a table. Only the native architecture is listed: calls of another ABI are refused."""
    machine = machine or platform.machine()
    if machine not in TABLES or machine not in DOCKER_ARCH:
        return None
    names = sorted(name for name in DENIED if name in TABLES[machine][1])
    rules: list[dict] = [{"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}]
    for flag in CLONE_NAMESPACE_FLAGS.values():  # one rule per flag: they match if any flag is set
        rules.append({"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM,
                      "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]})
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": [DOCKER_ARCH[machine]], "syscalls": rules}


def docker_security_opt(machine: str | None = None) -> str | None:
    profile = docker_profile(machine)
    return None if profile is None else "seccomp=" + json.dumps(profile, separators=(",", ":"))
