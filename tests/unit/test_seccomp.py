"""The sandboxes' seccomp profile (``verifier_service/sandbox/seccomp.py``) as data: no sandbox needed.

The BPF program bubblewrap loads is run here by a small classic-BPF interpreter,
and Docker's JSON form by an evaluator of libseccomp's rule semantics; for every
system call number of each machine (and beyond the table), other ABIs, and many
generated argument values, both forms must give the answer the policy says,
written here independently: Docker's default allow-list minus our deny-list,
the conditional calls compared on the 32 bits the kernel reads, ENOSYS for the rest.
"""

from __future__ import annotations

import errno
import json
import random
import struct

import pytest

from verifier_service.sandbox import seccomp
from verifier_service.sandbox.syscalls import DOCKER_DEFAULT_ALLOW

ALLOW, EPERM, ENOSYS, EAFNOSUPPORT = "allow", errno.EPERM, errno.ENOSYS, errno.EAFNOSUPPORT
MACHINES = sorted(seccomp.TABLES)
U64 = (1 << 64) - 1


def run_bpf(program: bytes, nr: int, arch: int, args=(0,) * 6):
    """Classic BPF as the kernel runs a seccomp filter over struct seccomp_data (little-endian)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[a & U64 for a in (*args, *(0,) * (6 - len(args)))])
    code = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    a, pc, steps = 0, 0, 0
    while True:
        steps += 1
        assert steps < 10_000
        op, jt, jf, k = code[pc]
        if op == 0x20:
            a = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:
            a &= k
        elif op == 0x05:
            pc += k
        elif op in (0x15, 0x35, 0x45):
            hit = a == k if op == 0x15 else a >= k if op == 0x35 else bool(a & k)
            pc += jt if hit else jf
        elif op == 0x06:
            action = k & 0xFFFF0000
            if action == 0x7FFF0000:
                return ALLOW
            assert action == 0x00050000, hex(k)
            return k & 0xFFFF
        else:
            raise AssertionError(f"unknown BPF op {op:#x}")
        pc += 1


def run_docker(profile: dict, name: str | None, args=(0,) * 6):
    """libseccomp's semantics of a Docker profile: a rule matches when all its argument comparisons hold (64
    bits); several matching rules of one call: the ALLOW ones are alternatives; a call no rule matches gets the
    default. ``name`` None: a number libseccomp does not know (runc answers those ENOSYS)."""
    if name is None:
        return ENOSYS
    answers = []
    for rule in profile["syscalls"]:
        if name not in rule["names"]:
            continue
        ok = True
        for arg in rule.get("args", []):
            value = args[arg["index"]] & U64
            if arg["op"] == "SCMP_CMP_MASKED_EQ":
                ok &= (value & arg["value"]) == arg.get("valueTwo", 0)
            elif arg["op"] == "SCMP_CMP_EQ":
                ok &= value == arg["value"]
            elif arg["op"] == "SCMP_CMP_NE":
                ok &= value != arg["value"]
            else:
                raise AssertionError(arg["op"])
        if ok:
            answers.append(ALLOW if rule["action"] == "SCMP_ACT_ALLOW" else rule.get("errnoRet", EPERM))
    errnos = [a for a in answers if a != ALLOW]
    if errnos:
        return errnos[0]
    if answers:
        return ALLOW
    return ALLOW if profile["defaultAction"] == "SCMP_ACT_ALLOW" else profile["defaultErrnoRet"]


def reference(machine: str, name: str | None, args=(0,) * 6, gvisor=False):
    """The policy, written without seccomp.py's code."""
    low = [a & 0xFFFFFFFF for a in args]
    denied = set(seccomp.DENIED) | (set(seccomp.GVISOR_DENIED) if gvisor else set())
    if name is None:
        return ENOSYS
    if name in denied:
        return EPERM
    if name == "clone":
        return ALLOW if low[0] & 0x7E020000 == 0 else EPERM
    if name == "socket":
        return ALLOW if low[0] in (1, 2, 10, 16) else EPERM
    if name == "personality":
        return ALLOW if low[0] in (0, 8, 0x20000, 0x20008, 0xFFFFFFFF) else EPERM
    if name == "prlimit64":
        return ALLOW if low[0] == 0 or args[2] & U64 == 0 else EPERM
    if name == "clone3":
        return ALLOW if gvisor else ENOSYS
    if name in DOCKER_DEFAULT_ALLOW or (machine == "x86_64" and name == "arch_prctl"):
        return ALLOW
    return ENOSYS


def arg_values(rng: random.Random):
    interesting = [0, 1, 2, 8, 10, 16, 38, 40, 0x20000, 0x20008, 0x400000, 0xFFFFFFFF, 0x1_0000_0000,
                   0x1_0000_0028, 0x1_0000_0000 | 0x10000000, 0x10000000, 0x40000000, 0x20000, 0x80, 17, U64]
    return [rng.choice(interesting) if rng.random() < 0.7 else rng.getrandbits(64) for _ in range(6)]


@pytest.mark.parametrize("machine", MACHINES)
def test_every_call_number_gets_the_policy_answer_in_both_forms(machine):
    arch, numbers = seccomp.TABLES[machine]
    by_number = {nr: name for name, nr in numbers.items()}
    program = seccomp.program(machine)
    profile = seccomp.docker_profile(machine)
    rng = random.Random(17)
    for nr in range(0, max(by_number) + 64):
        name = by_number.get(nr)
        for args in [(0,) * 6, *(arg_values(rng) for _ in range(12 if name in seccomp.CONDITIONS else 2))]:
            want = reference(machine, name, args)
            assert run_bpf(program, nr, arch, args) == want, (machine, nr, name, args)
            assert run_docker(profile, name, args) == want, (machine, nr, name, args)
    for nr in (1000, 4095, 0x3FFFFFFF):
        assert run_bpf(program, nr, arch) == ENOSYS
    assert run_bpf(program, 0x7FFFFFFF, arch) == (EPERM if machine == "x86_64" else ENOSYS)
    if machine == "x86_64":  # the x32 ABI, and every number through it
        for nr in (39, 56, 435, 0x40000000 | 39):
            assert run_bpf(program, 0x40000000 | nr, arch) == EPERM
    for other in (0x40000003, 0xC00000B7 if machine == "x86_64" else 0xC000003E, 0):
        assert run_bpf(program, numbers["getpid"], other) == EPERM  # another ABI's arch: refused outright


def reference_gvisor(name: str, args) -> str | int:
    """Under gVisor: the deny-list of the same policy, every other call to gVisor's kernel."""
    low = [a & 0xFFFFFFFF for a in args]
    if name in set(seccomp.DENIED) | set(seccomp.GVISOR_DENIED):
        return EPERM
    if name == "clone" and low[0] & 0x7E020000:
        return EPERM
    if name == "socket" and low[0] < 64 and low[0] not in (1, 2, 10, 16):
        return EPERM
    if name == "prlimit64" and args[0] & U64 and args[2] & U64:
        return EPERM
    return ALLOW


@pytest.mark.parametrize("machine", MACHINES)
def test_the_gvisor_form_is_the_same_deny_list_and_refuses_unlisted_ipc(machine):
    _, numbers = seccomp.TABLES[machine]
    profile = seccomp.docker_profile(machine, gvisor=True)
    rng = random.Random(5)
    for name in numbers:
        for args in [(0,) * 6, *(arg_values(rng) for _ in range(8 if name in seccomp.CONDITIONS else 1))]:
            assert run_docker(profile, name, args) == reference_gvisor(name, args), (name, args)
    for name in ("clone3", "select", "pselect6", "mbind", "shmget", "mq_open", "pidfd_getfd"):
        if name in numbers:
            assert run_docker(profile, name) == (EPERM if name in seccomp.DENIED + seccomp.GVISOR_DENIED else ALLOW)


@pytest.mark.parametrize("machine", MACHINES)
def test_what_the_issue_named_is_refused(machine):
    """Issue 17, class 7: the calls Docker's default refuses and our deny-list did not."""
    arch, numbers = seccomp.TABLES[machine]
    program = seccomp.program(machine)
    for name in ("mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages", "pidfd_getfd",
                 "process_madvise", "kcmp", "ptrace", "keyctl", "bpf", "io_uring_setup", "unshare", "setns"):
        if name in numbers:
            assert run_bpf(program, numbers[name], arch) == EPERM, name
    for family in (40, 38, 0x1_0000_0028, 0x1_0000_0026, 3, 17, 44, 45, 46, 4096):
        assert run_bpf(program, numbers["socket"], arch, (family, 1, 0)) == EPERM, hex(family)
    for persona in (0x400000, 0x0040000, 0x0200000, 0x1_0040_0000, 0x0008 | 0x400000):
        assert run_bpf(program, numbers["personality"], arch, (persona,)) == EPERM, hex(persona)
    for flags in (0x10000000, 0x40000000, 0x20000000, 0x20000, 0x1_0000_0000 | 0x10000000):
        assert run_bpf(program, numbers["clone"], arch, (flags | 17,)) == EPERM, hex(flags)
    assert run_bpf(program, numbers["clone"], arch, (0x3D0F00,)) == ALLOW  # what pthread_create passes
    assert run_bpf(program, numbers["clone3"], arch, (0, 88)) == ENOSYS
    assert run_bpf(program, numbers["prlimit64"], arch, (1, 7, 0x7FFF0000, 0)) == EPERM  # another's limits
    assert run_bpf(program, numbers["prlimit64"], arch, (1, 7, 0, 0x7FFF0000)) == ALLOW  # reading them


def test_the_allow_list_is_docker_s_minus_ours():
    rules = seccomp.policy("x86_64")
    assert set(rules["allowed"]) <= set(DOCKER_DEFAULT_ALLOW) | {"arch_prctl"}
    assert not set(rules["allowed"]) & set(seccomp.DENIED)
    assert {"read", "write", "mmap", "futex", "rseq", "epoll_pwait2", "close_range", "execve", "wait4"} <= set(
        rules["allowed"])
    profile = seccomp.docker_profile("x86_64")
    assert profile["architectures"] == ["SCMP_ARCH_X86_64"] and profile["defaultAction"] == "SCMP_ACT_ERRNO"
    json.dumps(profile)
    assert seccomp.docker_profile("sparc") is None and seccomp.program("sparc") is None
