"""Tests that are calls on literals, judged by the runner itself (``literal_calls`` + ``judge_calls``).

The runner judges such tests without a judge process; these tests hold it to the
judge process's verdicts: the same events for the same completions (here, with a
candidate process forked by a small driver), and the same results through a real
sandbox on each backend (the judge process is forced with a setup line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_judge import harness

from verifier_service.kinds.python_assert import literal_calls, split_tests

RUNNER = Path(__file__).resolve().parents[2] / "verifier_service" / "runner"

DRIVER = textwrap.dedent("""\
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import assert_harness, candidate_process
    job = json.loads(sys.stdin.read())
    candidate = candidate_process.start_candidate()
    events = []
    try:
        assert_harness.judge_calls(candidate, job, lambda **event: events.append(event))
    finally:
        candidate.close()
    print(json.dumps(events))
""")


def judged_by_calls(solution: str, tests: str, exact_types: bool = False, fast_fail: bool = False,
                    entry_point: str = "") -> list[dict]:
    calls = literal_calls(tests, entry_point, "")
    assert calls is not None, f"not calls on literals: {tests!r}"
    job = {"solution": solution, "items": split_tests(tests, entry_point, exact_types), "calls": calls,
           "exact_types": exact_types, "fast_fail": fast_fail}
    out = subprocess.run([sys.executable, "-I", "-c", DRIVER, str(RUNNER)], input=json.dumps(job).encode(),
                         capture_output=True, timeout=60, check=True, env={"PYTHONHASHSEED": "0", "PATH": os.defpath})
    return json.loads(out.stdout.decode().splitlines()[-1])


def comparable(events: list[dict]) -> list[tuple]:
    """What must agree: each event's kind, pass, error type and (for failed asserts) message. Other errors'
    details may differ in where they point (the judge process adds the test's line)."""
    out = []
    for e in events:
        detail = e.get("detail", "") if e.get("error") == "AssertionError" else ""
        out.append((e["event"], e.get("passed"), e.get("error"), detail))
    return out


CASES = [
    ("honest", "def f(x):\n    return 2 * x\n", "assert f(2) == 4\nassert f(5) == 10"),
    ("wrong", "def f(x):\n    return x + 2\n", "assert f(2) == 4\nassert f(5) == 10"),
    ("raises", "def f(x):\n    raise ValueError('no')\n", "assert f(2) == 4"),
    ("missing name", "def g(x):\n    return x\n", "assert f(2) == 4"),
    ("always-equal object", "class A:\n    def __eq__(self, o):\n        return True\n"
     "def f(x):\n    return A()\n", "assert f(2) == 4\nassert f(3) != 4"),
    ("always-equal int", "class I(int):\n    def __eq__(self, o):\n        return True\n"
     "    __hash__ = int.__hash__\ndef f(x):\n    return I(0)\n", "assert f(2) == 4"),
    ("is None", "def f(x):\n    return None if x else 0\n", "assert f(1) is None\nassert f(0) is not None"),
    ("truth", "def f(x):\n    return x == 0\n", "assert f(0)\nassert not f(1)\nassert f(1)"),
    ("truth of an object", "class A:\n    def __bool__(self):\n        return True\ndef f():\n    return A()\n",
     "assert f()"),
    ("in, both sides", "def f(x):\n    return [x, x + 1]\n", "assert 2 in f(1)\nassert 5 not in f(1)\nassert f(1) in "
     "[[1, 2], [3]]"),
    ("ordering type error", "def f(x):\n    return 'a'\n", "assert f(1) < 2"),
    ("kwargs and nested literals", "def f(a, b=None, *, c=()):\n    return (a, sorted(b), c)\n",
     "assert f([1, (2, 3)], b={3, 1}, c=b'x') == ([1, (2, 3)], [1, 3], b'x')"),
    ("floats and negatives", "def f(x):\n    return x / 2\n", "assert f(-3) == -1.5\nassert f(1e308) > 1e307"),
    ("exit while called", "import os\ndef f(x):\n    os._exit(3)\n", "assert f(2) == 4\nassert f(3) == 6"),
    ("exit at import", "import os\nos._exit(0)\n", "assert f(2) == 4"),
    ("compile error", "def f(x)\n    return x\n", "assert f(2) == 4"),
    ("patched builtins", "import builtins\nbuiltins.isinstance = lambda *a: True\ndef f(x):\n    return 0\n",
     "assert f(2) == 4"),
]


@pytest.mark.parametrize(("solution", "tests"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_same_events_as_the_judge_process(solution, tests):
    assert comparable(judged_by_calls(solution, tests)) == comparable(harness(solution, tests))


CHECK = '''METADATA = {"author": "jt", "dataset": "test"}


def check(candidate):
    """Checks it."""
    assert candidate(2) == 4
    assert candidate(5) == 10, "five"
    assert True, "This prints if this assert fails (good for debugging!)"
    assert candidate(0) in (0, -0)
    assert not candidate(0)
'''

CHECK_CASES = [
    ("honest", "def f(x):\n    return 2 * x\n"),
    ("first assert fails", "def f(x):\n    return x + 2\n"),
    ("the messaged assert fails", "def f(x):\n    return 4 if x == 2 else 0\n"),
    ("raises", "def f(x):\n    raise ValueError(x)\n"),
    ("no entry point", "def g(x):\n    return 2 * x\n"),
    ("always-equal object", "class A:\n    def __eq__(self, o):\n        return True\ndef f(x):\n    return A()\n"),
    ("exits", "import os\ndef f(x):\n    os._exit(1)\n"),
]


@pytest.mark.parametrize("solution", [c[1] for c in CHECK_CASES], ids=[c[0] for c in CHECK_CASES])
def test_humaneval_check_same_events_as_the_judge_process(solution):
    for exact in (False, True):
        assert comparable(judged_by_calls(solution, CHECK, exact, entry_point="f")) == comparable(
            harness(solution, CHECK, entry_point="f", exact_types=exact))


@pytest.mark.parametrize("returned", ["4.0", "True", "4", "type('I', (int,), {})(4)"])
def test_exact_types_agree(returned):
    solution = f"def f(x):\n    return {returned}\n"
    tests = "assert f(2) == 4\nassert f(2) != 4"
    for exact in (False, True):
        assert comparable(judged_by_calls(solution, tests, exact)) == comparable(
            harness(solution, tests, exact_types=exact))


def test_fast_fail_stops_at_the_first_failure():
    events = judged_by_calls("def f(x):\n    return 0\n", "assert f(1) == 0\nassert f(2) == 4\nassert f(3) == 0",
                             fast_fail=True)
    assert [e.get("passed") for e in events] == [True, False, None] and events[-1]["event"] == "end"


@pytest.mark.parametrize("tests", [
    "assert f(2) == 4",
    "assert 4 == f(2)",
    "assert f(x=[1, {2: (3,)}]) != {1, 2}",
    "assert not f(-1)",
    "assert f(1) is None",
    "assert f(2) in (4, 5)",
])
def test_calls_on_literals_are_recognised(tests):
    assert literal_calls(tests, "", "") is not None


def test_humaneval_checks_are_recognised():
    calls = literal_calls(CHECK, "f", "")
    assert [(c["fn"], c["test"], c["explain"]) for c in calls] == [("f", 0, False)] * 4


@pytest.mark.parametrize(("tests", "entry_point", "setup"), [
    ("import math\nassert f(1) == 2", "", ""),          # a statement that is not a test
    ("assert f(1) == 2", "f", ""),                       # an entry point without a check()
    ("def check(candidate):\n    assert abs(candidate(1) - 2) < 1e-6", "f", ""),  # arithmetic in a check
    ("def helper(x):\n    return x\ndef check(candidate):\n    assert candidate(1) == 2", "f", ""),  # a helper
    ("def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i", "f", ""),  # a loop
    ("assert f(1) == 2", "", "import math"),             # setup code
    ("assert f(1) == 2, 'message'", "", ""),             # a message
    ("assert f(1) == g(2)", "", ""),                     # two calls
    ("assert f(g(1)) == 2", "", ""),                     # a call in the arguments
    ("assert sorted([2, 1]) == [1, 2]", "", ""),         # a builtin, not the completion's
    ("assert f(1) == float('inf')", "", ""),             # not a literal
    ("assert f(*[1]) == 1", "", ""),                     # unpacking
    ("assert 1 < f(1) < 3", "", ""),                     # a chained comparison
    ("assert f.x == 1", "", ""),                         # an attribute
    ("for i in range(3):\n    assert f(i) == i", "", ""),
])
def test_anything_else_goes_to_the_judge_process(tests, entry_point, setup):
    assert literal_calls(tests, entry_point, setup) is None


# ---- through a real sandbox --------------------------------------------------------------------------------


def sandboxed(service, completion: str, tests: str, **extra) -> tuple[dict, dict]:
    """(the runner judging, the judge process) for the same completion and tests."""
    spec = {"kind": "python_assert", "extract": "raw", "tests": tests, **extra}
    assert literal_calls(tests, "", "") is not None
    return service.verify(completion, spec), service.verify(completion, {**spec, "setup": "pass"})


def summary(result: dict) -> tuple:
    return (result["verdict"], result["tests_passed"], result["tests_total"],
            [t["verdict"] for t in result["tests"]])


@pytest.mark.backends("docker", "bwrap")
class TestInTheSandbox:
    @pytest.mark.parametrize(("completion", "tests"), [
        ("def f(x):\n    return 2 * x\n", "assert f(2) == 4\nassert f(5) == 10"),
        ("def f(x):\n    return x + 2\n", "assert f(2) == 4\nassert f(5) == 10"),
        ("def f(x):\n    raise KeyError(x)\n", "assert f(2) == 4"),
        ("import os\ndef f(x):\n    os._exit(0)\n", "assert f(2) == 4"),
        ("def f(x):\n    return bytearray(10 ** 10)\n", "assert f(2) == 4"),
        ("def f(x):\n    print('x' * 100000)\n    return 2 * x\n", "assert f(2) == 4"),
    ], ids=["pass", "fail", "raises", "exits", "memory", "prints"])
    def test_same_verdicts_as_the_judge_process(self, service, completion, tests):
        fast, slow = sandboxed(service, completion, tests)
        assert summary(fast) == summary(slow)

    def test_timeout(self, service):
        fast, slow = sandboxed(service, "def f(x):\n    while True:\n        pass\n", "assert f(2) == 4",
                               timeout_s=1)
        assert summary(fast) == summary(slow) == ("TIMEOUT", 0, 1, ["TIMEOUT"])

    def test_output_flood_is_stopped(self, service):
        fast, slow = sandboxed(service, "import sys\ndef f(x):\n    while True:\n        sys.stdout.write('y' * "
                                        "65536)\n", "assert f(2) == 4", timeout_s=5)
        assert fast["verdict"] == slow["verdict"] and fast["verdict"] != "PASSED"

    def test_huge_integer_answers_are_refused_not_waited_for(self, service):
        fast, _ = sandboxed(service, "def f(x):\n    return 10 ** 200000\n", "assert f(2) == 4", timeout_s=10)
        assert fast["verdict"] == "RUNTIME_ERROR"

    def test_the_next_job_is_served_after_each(self, service):
        # The candidate's parent is the zygote here (the judge process otherwise): stopping or killing it only
        # costs the sandbox (the runner kills every process, and the host replaces it), never the next job.
        for completion in ("import os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGSTOP)\n    return 4\n",
                           "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\ndef f(x):\n    return 4\n"):
            service.verify(completion, {"kind": "python_assert", "extract": "raw", "tests": "assert f(2) == 4",
                                        "timeout_s": 2})
            ok = service.verify("def f(x):\n    return 2 * x\n",
                                {"kind": "python_assert", "extract": "raw", "tests": "assert f(2) == 4"})
            assert ok["verdict"] == "PASSED", ok

    def test_the_runner_accounts_for_each_job(self, service):
        # Each done event carries the job's CPU time and page faults by process; the service adds them up
        # (Prometheus: rlvr_sandbox_{runner,zygote,steps}_{cpu_seconds,page_faults}_total, rlvr_sandbox_jobs_total).
        sandbox = service.app.sandbox
        jobs, steps = sandbox.jobs, sandbox.usage["steps"][0]
        for i in range(3):
            r = service.verify(f"def f(x):\n    return 2 * x  # {i}\n",
                               {"kind": "python_assert", "extract": "raw", "tests": "assert f(2) == 4"})
            assert r["verdict"] == "PASSED"
        assert sandbox.jobs == jobs + 3
        assert sandbox.usage["steps"][0] > steps and sandbox.usage["zygote"][1] > 0 and sandbox.usage["runner"][0] > 0
        live = service.app._live_metrics()
        assert live["rlvr_sandbox_jobs_total"] == sandbox.jobs
        assert live["rlvr_sandbox_steps_cpu_seconds_total"] == sandbox.usage["steps"][0]
