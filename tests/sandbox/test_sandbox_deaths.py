"""A sandbox that dies under a job: whose fault is it?

A job that takes two sandboxes down is RUNTIME_ERROR (not INFRA_ERROR, which a trainer drops without a
penalty). A sandbox killed from outside (an operator, ``docker kill``, the fault tests) is not the job's doing:
such kills never count against it, and an honest job still gets its right verdict on the next sandbox.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from dataclasses import replace

import pytest

from verifier_service.sandbox.bwrap import LABELS_ENV, sandbox_processes

from support.sandboxes import running_sandboxes
from support.service import TEST_CONFIG, TEST_RUN_LABEL, RunningService

pytestmark = pytest.mark.backends("docker")

SLOW_BUT_RIGHT = "import time\ntime.sleep(4)\n\ndef add(a, b):\n    return a + b\n"
SPEC = {"kind": "python_assert", "extract": "raw", "tests": "assert add(1, 2) == 3", "timeout_s": 20}


def test_kills_from_outside_do_not_count_against_the_job(make_service, sandbox_backend):
    mine = f"rlvr.deaths={uuid.uuid4().hex[:8]}"
    service = make_service(max_concurrency=1, sandbox_labels=f"{TEST_RUN_LABEL},{mine}")
    kills = []

    def killer() -> None:
        # Twice, while the job sleeps in its sandbox: kill every sandbox of this service (the job's included).
        for delay in (1.5, 3.5):
            time.sleep(delay)
            victims = running_sandboxes(mine)
            if victims:
                subprocess.run(["docker", "kill", *victims], capture_output=True, timeout=30, check=False)
                kills.append(len(victims))

    thread = threading.Thread(target=killer)
    thread.start()
    result = service.verify(SLOW_BUT_RIGHT, SPEC, timeout=120)
    thread.join(30)
    assert kills, "the killer found no sandbox to kill"
    # The right answer (on the sandbox after the kills), or at worst INFRA_ERROR: never a penalty for the job.
    assert result["verdict"] in ("PASSED", "INFRA_ERROR"), result
    assert "took the sandbox down" not in result.get("detail", "")
    assert service.verify(SLOW_BUT_RIGHT.replace("sleep(4)", "sleep(0)"), SPEC)["verdict"] == "PASSED"


def sandboxes_labelled(backend: str, label: str) -> list[str]:
    """This test run's sandboxes (running or not) that also carry ``label``."""
    if backend == "docker":
        out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label={TEST_RUN_LABEL}",
                              "--filter", f"label={label}"], capture_output=True, text=True, timeout=60, check=True)
        return out.stdout.split()
    return [f"bwrap-{pid}" for pid, marks in sandbox_processes().items()
            if label in marks.get(LABELS_ENV, "").split(",")]


@pytest.mark.backends("docker", "bwrap")
def test_a_service_stopped_while_its_pool_starts_leaves_no_sandbox(sandbox_backend, backend_ready):
    """close() while the warm pool is still starting its sandboxes: each start under way (in a worker thread,
    which cancelling its task does not stop) is waited for and what it started removed."""
    for _ in range(2):
        mine = f"rlvr.stop_early={uuid.uuid4().hex[:8]}"
        service = RunningService(replace(TEST_CONFIG, sandbox_backend=sandbox_backend, max_concurrency=6,
                                         sandbox_labels=f"{TEST_RUN_LABEL},{mine}"))
        service.close()  # at once: the pool's six starts are under way
        # Every thread the service's loop handed work to has finished (a start close() did not wait for would
        # finish here, its sandbox left behind); nothing is waited for by time.
        service.loop.run_until_complete(service.loop.shutdown_default_executor())
        service.loop.close()
        left = sandboxes_labelled(sandbox_backend, mine)
        assert not left, f"{sandbox_backend} sandboxes left by a service stopped while its pool started: {left}"
