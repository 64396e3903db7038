"""The optional gVisor runtime: the same checks, under runsc's user-space kernel."""

from __future__ import annotations

import subprocess

import pytest

from support.sandboxes import runsc_registered

pytestmark = pytest.mark.docker


@pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered with Docker; "
                    "scripts/docker-up.sh registers it where Debian's runsc package installs")
def test_checks_run_under_gvisor(make_service):
    svc = make_service(sandbox_runtime="runsc")
    # gVisor reports its own fixed kernel version; the host's is different.
    host_release = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
    tests = (f"import platform, os\nassert platform.release() != {host_release!r}\n"
             "assert sorted(os.listdir('/sys/class/net')) == ['lo']\nassert f(2) == 4\n")
    r = svc.verify("def f(x):\n    return 2 * x\n", {"kind": "python_assert", "tests": tests})
    assert r["verdict"] == "PASSED", r
    loop = svc.verify("while True:\n    pass\n", {"kind": "python_assert", "tests": "assert True", "timeout_s": 2})
    assert loop["verdict"] == "TIMEOUT"


@pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered with Docker")
def test_gvisor_threads_spawn_and_the_policy(make_service):
    """Issue 17, classes 2, 7, 8 under gVisor: threads and posix_spawn work (clone3 answers ENOSYS, glibc falls
    back to clone), clone3 with namespace flags makes nothing, AF_VSOCK and IPC objects gVisor cannot list are
    refused (the test code runs in the judge, under the same profile; the judge's channels through /proc:
    tests/adversarial/escape_open_judge_channels.py)."""
    svc = make_service(sandbox_runtime="runsc")
    tests = """\
import ctypes, errno, os, socket, struct, subprocess, sys, threading
out = []
t = threading.Thread(target=lambda: out.append(1)); t.start(); t.join()
assert out == [1]
assert subprocess.run([sys.executable, '-c', 'print(6)'], capture_output=True, text=True).stdout == '6\\n'
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for flags in (0x10000000, 0x20000000, 0x40000000):
    args = ctypes.create_string_buffer(struct.pack('11Q', flags, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))
    pid = libc.syscall(ctypes.c_long(435), args, ctypes.c_long(88))
    if pid == 0:
        os._exit(0)
    assert pid < 0 and ctypes.get_errno() in (errno.ENOSYS, errno.EPERM), (flags, pid)
try:
    socket.socket(40, socket.SOCK_STREAM)
    raise AssertionError('AF_VSOCK opened')
except OSError:
    pass
assert libc.shmget(0, 4096, 0o1600) < 0 and libc.msgget(0, 0o1600) < 0
assert libc.mq_open(b'/rlvr-probe', os.O_CREAT | os.O_RDWR, 0o600, None) < 0
assert f(2) == 4
"""
    r = svc.verify("def f(x):\n    return 2 * x\n", {"kind": "python_assert", "tests": tests, "timeout_s": 30})
    assert r["verdict"] == "PASSED", r
