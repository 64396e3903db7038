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

import pytest
from conftest import TEST_RUN_LABEL, running_sandboxes

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
