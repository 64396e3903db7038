"""The optional gVisor runtime: the same checks, under runsc's user-space kernel."""

from __future__ import annotations

import subprocess

import pytest

pytestmark = pytest.mark.docker


def runsc_registered() -> bool:
    out = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                         timeout=30)
    return "runsc" in out.stdout


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
