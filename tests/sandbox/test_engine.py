"""What the engine carries as data: the time a sandboxed check waited for a sandbox slot.

The kinds add each ``SandboxRun.queue_s`` to their verification's ``Context``; the engine stamps it into the
result's timings (no context variable reaching back up from the sandbox). Docker, like the service tests.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.backends("docker")

SLOW = "import time\ntime.sleep(1.0)\ndef f():\n    return 1\n"
SPEC = {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": 10}


def test_a_check_that_waited_for_the_one_sandbox_slot_reports_its_queue_time(make_service):
    svc = make_service(max_concurrency=1, result_cache_size=0)
    # Two checks, one slot: the second starts only when the first (which sleeps for a second) is done.
    results = svc.verify_batch([(SLOW, SPEC), (SLOW + "# two\n", SPEC)], timeout=120)
    assert [r["verdict"] for r in results] == ["PASSED", "PASSED"]
    queued = sorted(r["timings"]["queue_s"] for r in results)
    assert queued[1] >= 0.9, results  # it waited out the other's sleep
    for r in results:
        assert r["timings"]["run_s"] + r["timings"]["queue_s"] == pytest.approx(r["timings"]["total_s"], abs=1e-3)

