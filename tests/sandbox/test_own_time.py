"""A step's time limit is its program's own time (runner/stepclock.py), on each backend (Docker, bubblewrap).

Wall-clock time less the time the program's main thread waited for a CPU: a program that runs or sleeps past its
limit is TIMEOUT as before, and one that only waited for a CPU other processes held is not (issue 36, item 8: a
verdict that changes under load is a wrong reward). The CPU-hog tests run the runner by itself in a container
pinned to one core, with CPU hogs in the same container (the same cgroup: they compete with the program, not
with the container), once as it is and once told to use wall-clock time (``RLVR_STEP_CLOCK=wall``): the same
program passes the one and is out of time in the other; for each kind of step deadline of the runner: a program
(``run_step``), a completion's function the runner calls itself (``stepio.judge_calls``) and a stdio Python case
(``run_case``).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest

from verifier_service.kinds.python_assert import _analysed
from verifier_service.runner.wire import ASSERT_HARNESS, JUDGE_CALLS, PYTHON_CASE, PYTHON_PROGRAM, RUNNER_DIR
from verifier_service.sandbox.docker import EXPIRES_LABEL, LABEL

from support.service import TEST_CONFIG, TEST_RUN_LABEL

LIMIT_S = 2.0


@pytest.mark.backends("docker", "bwrap")
class TestVerdicts:
    def test_a_busy_loop_is_out_of_time(self, service):
        r = service.verify("def f():\n    while True:\n        pass\n",
                           {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": LIMIT_S})
        assert r["verdict"] == "TIMEOUT", r

    def test_sleeping_counts(self, service):
        r = service.verify(f"import time\ndef f():\n    time.sleep({LIMIT_S + 1})\n    return 1\n",
                           {"kind": "python_assert", "tests": "assert f() == 1", "timeout_s": LIMIT_S})
        assert r["verdict"] == "TIMEOUT", r

    def test_a_program_that_sleeps_past_its_limit(self, service):
        r = service.verify(f"import time\ntime.sleep({LIMIT_S + 1})\nprint(input())\n",
                           {"kind": "stdio", "language": "python", "timeout_s": LIMIT_S,
                            "cases": [{"stdin": "1\n", "expected_stdout": "1\n"}]})
        assert r["verdict"] == "TIMEOUT", r


# ---- the runner alone, pinned to one core ----------------------------------------------------------------------

HOGS = ("# rlvr-hog\nimport os\nfor _ in range({n}):\n    if os.fork() == 0:\n        while True:\n            pass\n"
        "os.wait()\n")
COUNT_HOGS = ("import os\nmark = b'rlvr' + b'-hog'\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit() and "
              "mark in open(f'/proc/{p}/cmdline', 'rb').read()))")


def calls_step(solution: str, tests: str, limit_s: float) -> dict:
    """A python_assert step whose tests are calls on literals, as the service sends it: the runner judges them
    itself against a standby of its zygote become the candidate's process (``stepio.judge_calls``)."""
    items, used, calls = _analysed(tests, "", False)
    assert calls is not None
    payload = {"setup": "", "solution": solution, "items": [{"kind": k, "name": n, "code": c} for k, n, c in items],
               "fast_fail": False, "names": list(used), "entry_point": "", "nonce": "n0", "calls": calls,
               "exact_types": False}
    return {"name": "tests", "argv": ["python3", "-I", f"{RUNNER_DIR}/assert_harness.py"], "timeout_s": limit_s,
            "stdin_json": payload, "harness": ASSERT_HARNESS, "judge": JUDGE_CALLS}


def case_steps(limit_s: float) -> list[dict]:
    """A stdio Python job's steps, as the service sends them: the syntax check becomes the program host
    (``solution.py`` compiled once) and the case is a fork of it (``runner.run_case``)."""
    check = "import sys; compile(open('solution.py', encoding='utf-8').read(), 'solution.py', 'exec')"
    return [{"name": "compile", "argv": ["python3", "-s", "-c", check], "timeout_s": 10, "harness": PYTHON_PROGRAM},
            {"name": "case 0", "argv": ["python3", "-s", "solution.py"], "timeout_s": limit_s, "stdin": "",
             "harness": PYTHON_CASE, "stdin_pipe": True}]


def run_alone(program: str, limit_s: float, hogs: int = 0, wall_clock: bool = False, steps: list[dict] | None = None
              ) -> dict:
    """The step result of ``python3 program`` run by the runner (one job, one step) in a container pinned to CPU 0,
    beside ``hogs`` processes burning that CPU in the same container; the container is removed. With ``steps``,
    the last one's result of those (``program`` is ``solution.py``), run by a warm runner (``--serve``: its steps'
    processes come from its zygote)."""
    name = f"rlvr-owntime-{uuid.uuid4().hex[:12]}"
    env = ["-e", "RLVR_STEP_CLOCK=wall"] if wall_clock else []
    # (the expiry: services of this engine sweep sandbox containers without one, or past it, as orphans)
    labels = ["--label", LABEL, "--label", TEST_RUN_LABEL, "--label", f"{EXPIRES_LABEL}={time.time() + 600}"]
    runner = subprocess.Popen(["docker", "run", "-i", "--rm", "--name", name, *labels, "--network", "none",
                               "--cpuset-cpus", "0", *env, TEST_CONFIG.sandbox_image, *(["--serve"] if steps else [])],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(300):  # the runner waits for its job on stdin: the container is up once exec works
            if subprocess.run(["docker", "exec", name, "true"], capture_output=True, timeout=60).returncode == 0:
                break
            time.sleep(0.1)
        if hogs:
            subprocess.run(["docker", "exec", "-d", name, "python3", "-c", HOGS.format(n=hogs)], check=True,
                           capture_output=True, timeout=60)
            for _ in range(300):  # all of them burning before the job starts
                count = subprocess.run(["docker", "exec", name, "python3", "-c", COUNT_HOGS],
                                       capture_output=True, text=True, timeout=60).stdout.strip()
                if count.isdigit() and int(count) >= hogs + 1:  # the hogs and their parent
                    break
                time.sleep(0.1)
        job = {"files": {"p.py": program, "solution.py": program}, "file_size_limit": 1 << 20, "open_files": 64,
               "steps": steps or [{"name": "p", "argv": ["python3", "-I", "p.py"], "timeout_s": limit_s}]}
        out, err = runner.communicate(json.dumps(job).encode() + b"\n", timeout=120)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        if runner.poll() is None:
            runner.kill()
            runner.wait(30)
    events = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    results = [e for e in events if "timed_out" in e]
    assert len(results) == len(steps or [0]), (runner.returncode, events, err.decode()[-2000:])
    return results[-1]


@pytest.mark.docker
def test_a_busy_loop_times_out_on_its_own_time(docker_ready):
    r = run_alone("while True:\n    pass\n", LIMIT_S)
    assert r["timed_out"], r  # (the backstop's bound: tests/unit/test_stepclock.py, on a fake clock)
    assert "run_queue_s" in r, r  # Docker's /proc shows the delay: the limit is the program's own time here


@pytest.mark.docker
def test_sleep_counts_alone(docker_ready):
    r = run_alone(f"import time\ntime.sleep({LIMIT_S + 1})\n", LIMIT_S)
    assert r["timed_out"], r


@pytest.mark.docker
def test_a_program_beside_cpu_hogs_is_judged_by_its_own_time(docker_ready):
    """It needs a quarter of its limit of CPU time and gets at most a fifth of the core (four hogs beside it): by
    wall-clock time it cannot finish within its limit; by its own time (its waiting for the CPU not counted) it
    does, before the backstop (twice the limit and a second: a short limit leaves the most room for other load
    on the machine), as it does alone."""
    limit = 0.5
    program = f"import time\nwhile time.process_time() < {limit / 4}:\n    pass\nprint('done')\n"
    alone = run_alone(program, limit)
    assert (alone["timed_out"], alone["exit_code"], alone["stdout"]) == (False, 0, "done\n"), alone
    wall = run_alone(program, limit, hogs=4, wall_clock=True)
    assert wall["timed_out"] and "run_queue_s" not in wall, wall
    own = run_alone(program, limit, hogs=4)
    assert (own["timed_out"], own["exit_code"], own["stdout"]) == (False, 0, "done\n"), own
    assert own["run_queue_s"] > 0, own


@pytest.mark.docker
def test_a_function_beside_cpu_hogs_is_judged_by_its_own_time(docker_ready):
    """The same, for a completion's function the runner calls itself (MBPP's and HumanEval's tests on literals:
    MBPP task 123's reference timed out at load 10 by wall-clock time), in a warm runner."""
    limit = 0.5
    step = calls_step(f"import time\ndef f():\n    while time.process_time() < {limit / 4}:\n        pass\n"
                      "    return 1\n", "assert f() == 1", limit)

    def passed(r: dict) -> bool:
        events = [json.loads(line) for line in r["report"].splitlines()]
        return not r["timed_out"] and [e.get("passed") for e in events if e.get("event") == "test"] == [True]

    assert passed(run_alone("", limit, steps=[step]))
    wall = run_alone("", limit, hogs=4, wall_clock=True, steps=[step])
    assert wall["timed_out"] and not passed(wall), wall
    own = run_alone("", limit, hogs=4, steps=[step])
    assert passed(own) and own["run_queue_s"] > 0, own


@pytest.mark.docker
def test_a_stdio_case_beside_cpu_hogs_is_judged_by_its_own_time(docker_ready):
    """The same, for a case of a stdio Python job (a fork of the job's program host), in a warm runner."""
    limit = 0.5
    program = f"import time\nwhile time.process_time() < {limit / 4}:\n    pass\nprint('done')\n"
    alone = run_alone(program, limit, steps=case_steps(limit))
    assert (alone["timed_out"], alone["exit_code"], alone["stdout"]) == (False, 0, "done\n"), alone
    wall = run_alone(program, limit, hogs=4, wall_clock=True, steps=case_steps(limit))
    assert wall["timed_out"], wall
    own = run_alone(program, limit, hogs=4, steps=case_steps(limit))
    assert (own["timed_out"], own["exit_code"], own["stdout"]) == (False, 0, "done\n"), own
    assert own["run_queue_s"] > 0, own


@pytest.mark.docker
def test_a_program_that_keeps_its_own_main_thread_waiting_ends_at_the_backstop(docker_ready):
    """The attacker's way to stretch its limit: processes of its own burning its CPU, so its main thread waits (and
    that waiting is not counted). It gets no further than the backstop: TIMEOUT (the backstop's bound, 2 x the limit
    + 1 s, is test_stepclock's, on a clock of its own: a wall-clock bound here would be a timing assertion)."""
    limit = 0.5
    program = "import os\nfor _ in range(8):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n"
    r = run_alone(program, limit)
    assert r["timed_out"], r
    assert r["run_queue_s"] > limit, r  # it did make its main thread wait: the limit moved, up to the backstop
