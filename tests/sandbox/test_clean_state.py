"""Every job starts from a verified clean state (issue 17, class 6), in one warm sandbox, job after job.

With a pool of one sandbox each hostile job below is followed by a job in the same (or, if the runner found it
dirty, a fresh) sandbox that looks for what the hostile one left: POSIX message queues, SysV IPC objects, and
the limits, priority, affinity and scheduling the zygote and runner pass on to every step. Then an honest job
must pass. On Docker (runc, and gVisor where runsc is registered) and bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.sandboxes import runsc_registered

ADVERSARIAL = Path(__file__).resolve().parents[1] / "adversarial"
SPEC = {"kind": "python_assert", "tests": "assert f(2) == 4\nassert f(5) == 10\n", "extract": "raw", "timeout_s": 5}
PAIRS = [("escape_persist_mqueue_plant", "escape_persist_mqueue_check"),
         ("escape_persist_sysv_plant", "escape_persist_sysv_check"),
         ("escape_persist_parent_limits_plant", "escape_persist_parent_limits_check")]


@pytest.mark.backends("docker", "bwrap")
@pytest.mark.parametrize("runtime", ["", "runsc"])
@pytest.mark.parametrize("plant,check", PAIRS, ids=[p for p, _ in PAIRS])
def test_what_a_job_leaves_never_reaches_the_next(make_service, sandbox_backend, runtime, plant, check):
    if runtime and (sandbox_backend != "docker" or not runsc_registered()):
        pytest.skip("gVisor runs under Docker only, where runsc is registered")
    svc = make_service(max_concurrency=1, sandbox_runtime=runtime)
    honest = "def f(x):\n    return 2 * x\n"
    assert svc.verify(honest, SPEC)["verdict"] == "PASSED"  # the sandbox is warm
    for round_ in range(3):
        planted = svc.verify((ADVERSARIAL / f"{plant}.py").read_text(), SPEC)
        assert planted["verdict"] == "PASSED", planted
        checked = svc.verify((ADVERSARIAL / f"{check}.py").read_text() + f"# {round_}\n", SPEC)
        assert checked["verdict"] == "PASSED", (round_, checked["detail"])
        again = svc.verify(honest + f"# {round_}\n", SPEC)
        assert (again["verdict"], again["reward"]) == ("PASSED", 1.0), again
