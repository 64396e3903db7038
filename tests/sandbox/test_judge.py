"""The tests' judge and the candidate's process (verifier_service/runner/judge.py), run without a sandbox.

The harness runs as a plain subprocess of this test with a report pipe, the way the
runner starts it; what it reports is read back and checked. The sandboxed behaviour
(the same hacks against every backend) is in test_adversarial.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier_service.kinds._sandboxed import run_job
from verifier_service.kinds.base import Context
from verifier_service.kinds.python_assert import split_tests, used_names
from verifier_service.sandbox import seccomp
from verifier_service.sandbox.base import Job, SandboxRun
from verifier_service.sandbox.protocol import RunnerStream, SocketStream, exchange, exchange_async
from verifier_service.verdict import Verdict

RUNNER = Path(__file__).resolve().parents[2] / "verifier_service" / "runner"
sys.path.insert(0, str(RUNNER))
import judge  # noqa: E402
from exact_types import same  # noqa: E402
from judge_values import encode  # noqa: E402
from remote_objects import Remote  # noqa: E402

DOUBLE = "assert f(2) == 4\nassert f(5) == 10\n"


def harness(solution: str, tests: str = DOUBLE, entry_point: str = "", exact_types: bool = False,
            setup: str = "") -> list[dict]:
    """The events the assert harness reports for one job (nonce checked, then dropped)."""
    payload = {"setup": setup, "solution": solution, "items": split_tests(tests, entry_point, exact_types),
               "names": used_names(tests, entry_point), "entry_point": entry_point, "fast_fail": False,
               "nonce": "n0nce"}
    read, write = os.pipe()
    env = {"RLVR_REPORT_FD": str(write), "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-I", str(RUNNER / "assert_harness.py")], input=json.dumps(payload).encode(),
                   env=env, pass_fds=(write,), capture_output=True, timeout=60, check=False)
    os.close(write)
    with os.fdopen(read) as fh:
        events = [json.loads(line) for line in fh.read().splitlines()]
    assert all(e.pop("nonce") == "n0nce" for e in events)
    return events


def passed(events: list[dict]) -> list[bool]:
    assert events[-1]["event"] == "end", events
    return [e["passed"] for e in events if e["event"] == "test"]


def test_honest_solutions_pass_and_wrong_ones_fail():
    assert passed(harness("def f(x):\n    return 2 * x\n")) == [True, True]
    assert passed(harness("def f(x):\n    return x + 2\n")) == [True, False]


@pytest.mark.parametrize("solution", [
    "class A:\n    def __eq__(self, o):\n        return True\ndef f(x):\n    return A()\n",
    "class I(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\ndef f(x):\n"
    "    return I(0)\n",
    "import builtins\nbuiltins.exec = lambda *a, **k: None\ndef f(x):\n    return 0\n",
    "import sys\ndef f(x):\n    return [c for c in sys._getframe(1).f_code.co_consts if type(c) is int][-1]\n",
])
def test_hacks_in_the_candidate_process_do_not_reach_the_judge(solution):
    assert passed(harness(solution)) == [False, False]


def test_early_exit_fails_every_test():
    events = harness("import os\nos._exit(0)\n")
    assert events[0]["event"] == "solution_error" and events[-1]["event"] == "end"


def test_classes_modules_and_humaneval_checks_work_through_the_judge():
    stack = ("class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
             "        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n"
             "    def __len__(self):\n        return len(self.items)\n")
    tests = "s = Stack()\ns.push(3)\ns.push(4)\nassert s.pop() == 4\nassert len(s) == 1\nassert 3 in list(s.items)\n"
    assert passed(harness(stack, tests)) == [True, True, True]
    assert passed(harness("import math\ndef f(x):\n    return math.sqrt(x)\n",
                          "assert math.isclose(f(4), 2.0)\n")) == [True]
    check = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0\n"
    assert passed(harness("def g(x):\n    return x * 2\n", check, entry_point="g")) == [True]
    raises = "try:\n    f(-1)\n    assert False\nexcept ValueError:\n    pass\n"
    assert passed(harness("def f(x):\n    raise ValueError(x)\n", raises)) == [True]


def test_exact_types():
    assert passed(harness("def f(x):\n    return 2.0 * x\n")) == [True, True]
    assert passed(harness("def f(x):\n    return 2.0 * x\n", exact_types=True)) == [False, False]
    subclass = "class I(int):\n    pass\ndef f(x):\n    return I(2 * x)\n"
    assert passed(harness(subclass)) == [True, True]
    assert passed(harness(subclass, exact_types=True)) == [False, False]
    assert passed(harness("def f(x):\n    return 2 * x\n", exact_types=True)) == [True, True]


def test_spec_setup_names_are_not_shadowed_by_the_completion():
    solution = "def isclose(a, b, **k):\n    return True\ndef f(x):\n    return 0.0\n"
    assert passed(harness(solution, "assert isclose(f(1), 2.0)\n", setup="from math import isclose")) == [False]


def test_wire_values_round_trip_with_their_types():
    cand = judge.Candidate.__new__(judge.Candidate)
    cand.remotes = {}
    value = {"a": [1, 2.5, (3, "x")], 4: {5, 6}, "b": frozenset({b"z"}), "c": None, "d": True, "e": 1 + 2j}
    back = cand.value(encode(value, lambda obj: pytest.fail(f"{obj!r} is not a built-in value")))
    assert same(back, value)

    class Int(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    wire = encode(Int(3), None)
    assert wire == {"t": "int", "v": 3, "sub": "Int"}
    assert cand.value(wire) == 3 and not same(cand.value(wire), 3) and cand.value(wire) != 4


def test_remote_objects_are_unequal_to_judge_values():
    remote = Remote(None, 1, "Anything")
    assert remote != 4 and not (remote == 4) and not (4 == remote) and remote != [remote]
    assert remote == remote and not (remote != remote)  # the same handle: the same object
    assert remote in [remote] and remote in {remote} and remote is remote  # identity stays the judge's


def test_used_names_leave_builtins_to_the_judge():
    assert used_names("assert len(f(1)) == sorted(g)[0]\n", "") == ["f", "g"]
    assert used_names("assert True\n", "sorted") == ["sorted"]


def test_docker_profile_is_the_bwrap_policy():
    profile = seccomp.docker_profile("x86_64")
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and profile["architectures"] == ["SCMP_ARCH_X86_64"]
    denied = [r for r in profile["syscalls"] if r["action"] == "SCMP_ACT_ERRNO" and r.get("errnoRet") == 1]
    assert set(denied[0]["names"]) == {n for n in seccomp.DENIED if n in seccomp.TABLES["x86_64"][1]}
    clone = [rule["args"][0] for rule in profile["syscalls"] if rule["names"] == ["clone"]]
    assert clone == [{"index": 0, "value": seccomp.CLONE_NAMESPACE_MASK, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]
    assert any("clone3" in r["names"] and r.get("errnoRet") == 38 for r in profile["syscalls"])
    assert seccomp.docker_profile("sparc") is None


class FakeStream(RunnerStream):
    def __init__(self, output: bytes):
        super().__init__()
        self.output = output

    def send(self, data, deadline):
        pass

    def close_input(self):
        pass

    def _receive(self, timeout):
        if not self.output:
            return False
        self.line += self.output
        self.output = b""
        return True

    async def send_async(self, data, deadline):
        pass

    async def receive_async(self, deadline):
        return self._receive(0)

    def close(self):
        pass


def test_only_lines_with_the_jobs_token_are_the_runners():
    import asyncio
    import threading
    import time

    forged = (b'not json\n{"event": "step", "name": "x", "exit_code": 0}\n{"event": "done", "dirty": false}\n'
              b'{"event": "step", "name": "real", "exit_code": 3, "token": "t"}\n{"event": "done", "token": "t"}\n')
    run = exchange(FakeStream(forged), b"job\n", "t", None, time.monotonic() + 5, threading.Event())
    assert run.completed and [s.name for s in run.steps] == ["real"] and run.steps[0].exit_code == 3
    run = asyncio.run(exchange_async(FakeStream(forged), b"job\n", "t", None, time.monotonic() + 5))
    assert run.completed and [s.name for s in run.steps] == ["real"] and run.steps[0].exit_code == 3


def test_large_runner_lines_and_lines_orjson_refuses_are_read_in_their_order():
    """A step with 1 MiB of output is one line of the runner's (parsed by orjson); a line orjson refuses but JSON
    allows (an escaped lone surrogate: a program's undecodable byte) is parsed by the standard parser; a large
    line that is not JSON (a candidate's) is skipped as a small one is; the next job's line stays."""
    import asyncio
    import json
    import time

    from verifier_service.sandbox import protocol

    big = json.dumps({"event": "step", "name": "big", "exit_code": 0, "stdout": "x" * (1 << 20), "token": "t"})
    lines = [b"y" * (1 << 20), big.encode(), b'{"event": "step", "name": "small", "exit_code": 1, "token": "t",'
             b' "stdout": "\\udcff", "duration_s": NaN}',
             b'{"event": "done", "token": "t"}', b'{"event": "step", "name": "next job", "token": "u"}', b""]
    stream = FakeStream(b"\n".join(lines))
    run = asyncio.run(protocol.exchange_async(stream, b"job\n", "t", None, time.monotonic() + 5))
    assert run.completed and [s.name for s in run.steps] == ["big", "small"]
    assert len(run.steps[0].stdout) == 1 << 20 and run.steps[1].stdout == "\udcff"
    assert bytes(stream.line) == lines[4] + b"\n"  # the next job's line stays for its read


def test_a_flooding_runner_stream_neither_holds_the_event_loop_nor_outlives_the_deadline():
    """A candidate that writes to the runner's stdout without end: the job times out on the host and the
    event loop keeps serving everything else meanwhile."""
    import asyncio
    import socket
    import subprocess
    import time

    ours, theirs = socket.socketpair()
    flood = ("import os, struct, sys\njunk = b\"not the runner's\\n\" * 256\n"
             "frame = struct.pack('>BxxxI', 1, len(junk)) + junk\nfd = int(sys.argv[1])\n"
             "try:\n    while True:\n        os.write(fd, frame)\nexcept OSError:\n    pass\n")
    writer = subprocess.Popen([sys.executable, "-c", flood, str(theirs.fileno())], pass_fds=[theirs.fileno()])
    theirs.close()

    async def main():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.get_running_loop().create_task(tick())
        await asyncio.sleep(0.2)  # the socket's buffer fills
        ticks = 0
        # The exchange must end by its own deadline (host_timeout); wait_for only guards the test against a hang.
        run = await asyncio.wait_for(exchange_async(SocketStream(ours), b"job\n", "t", None,
                                                    time.monotonic() + 0.5), 60)
        ticker.cancel()
        return run, ticks

    try:
        run, ticks = asyncio.run(main())
    finally:
        ours.close()
        writer.kill()
        writer.wait()
    assert run.host_timeout and not run.completed and ticks >= 3


def test_a_job_that_takes_two_sandboxes_down_is_the_completions_fault():
    import asyncio

    from verifier_service.config import ServiceConfig

    class Dying:
        async def run(self, job, on_step=None, tenant=""):
            return SandboxRun(steps=[], completed=False, runner_error="gone", killed_sandbox=True)

    ctx = Context(config=ServiceConfig(), sandbox=Dying(), pure_pool=None, timeout_s=5.0)
    outcome = asyncio.run(run_job(ctx, Job(steps=[])))
    assert outcome.verdict is Verdict.RUNTIME_ERROR and "took the sandbox down" in outcome.detail


def test_docker_layer_report_says_what_each_sandbox_gets():
    from verifier_service.config import ServiceConfig
    from verifier_service.sandbox.docker import DockerSandbox

    rows = dict(DockerSandbox(ServiceConfig(sandbox_runtime="runc")).isolation())
    assert "runtime runc" in rows["backend"] and "none" in rows["network"]
    assert "read-only" in rows["filesystem"] and "no Docker socket" in rows["filesystem"]
    assert "uid 10001:10001" in rows["user"] and "pids 64" in rows["cgroup limits"]
    if seccomp.docker_profile() is not None:
        assert "allow-list" in rows["seccomp"]
    off = dict(DockerSandbox(ServiceConfig(sandbox_seccomp=False)).isolation())
    assert off["seccomp"] == "Docker's default profile (sandbox_seccomp is false)"
    gvisor = DockerSandbox(ServiceConfig(sandbox_runtime="runsc"))
    assert "gVisor" in dict(gvisor.isolation())["backend"] and gvisor._pids_limit() >= 1024
    assert "no-new-privileges" in gvisor._security_opt()


def test_big_ints_and_odd_builtin_errors_cross():
    assert passed(harness("def f(x):\n    return 7 ** 9000\n", "assert f(1) == 7 ** 9000\n")) == [True]
    solution = "def f(x):\n    b'\\xff'.decode('utf-8')\n"
    assert passed(harness(solution, "try:\n    f(1)\nexcept Exception:\n    pass\nelse:\n    assert False\n")) == [True]


@pytest.mark.docker
def test_an_image_of_another_runner_protocol_is_refused_with_the_fix():
    from dataclasses import replace

    from verifier_service.errors import SandboxUnavailable
    from verifier_service.sandbox.docker import DockerSandbox

    from support.service import TEST_CONFIG

    bases = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "rlvr-base"],
                           capture_output=True, text=True, check=False).stdout.split()
    if not bases:
        pytest.skip("no unlabelled image (rlvr-base, made by sandboxes/build.sh) to try")
    with pytest.raises(SandboxUnavailable, match=r"runner protocol unknown.*rebuild"):
        DockerSandbox(replace(TEST_CONFIG, sandbox_image=bases[0])).check_blocking()


@pytest.mark.parametrize("raise_", ["raise StopIteration", "raise StopIteration(2 * x)", "raise StopAsyncIteration",
                                    "class StopIteration(StopIteration):\n        pass\n    raise StopIteration"])
@pytest.mark.parametrize("test", ["assert all(map(lambda x: f(x) == 2 * x, [1, 2, 3]))\n",
                                  "assert not any(filter(lambda x: f(x) != 2 * x, [1, 2]))\n",
                                  "assert sum(1 for _ in iter(lambda: f(7), 14)) == 0\n",
                                  "assert list(zip(map(f, [1]), [2])) in ([], [(2, 2)])\n",
                                  "assert all(f(x) == 2 * x for x in [1, 2])\n"])
def test_the_candidate_s_exceptions_never_end_the_judge_s_loops(raise_, test):
    """Issue 17, class 2: a StopIteration (or StopAsyncIteration) out of the completion fails the test."""
    assert passed(harness(f"def f(x):\n    {raise_}\n", test)) == [False]
    assert passed(harness("def f(x):\n    return 2 * x\n", test)) == [True]


def test_names_the_tests_do_not_define():
    helper = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n"
    hack = "def encode(s):\n    return s\ndef decode(s):\n    return s\n"
    assert passed(harness(hack, helper, entry_point="decode")) == [False]  # only the entry point is the candidate's
    assert passed(harness(hack, helper, entry_point="decode", setup="def encode(s):\n    return s[::-1]\n")) == [
        False]
    honest = "def decode(s):\n    return s[::-1]\n"
    assert passed(harness(honest, helper, entry_point="decode", setup="def encode(s):\n    return s[::-1]\n")) == [
        True]
    fake_math = "class M:\n    def isclose(self, a, b):\n        return True\nmath = M()\ndef f(x):\n    return 0\n"
    assert passed(harness(fake_math, "assert math.isclose(f(1), 2.0)\n")) == [False]
    assert passed(harness("import math\ndef f(x):\n    return 2.0 * x\n", "assert math.isclose(f(1), 2.0)\n")) == [True]
    assert passed(harness("def string(x):\n    return 2 * x\n", "assert string(2) == 4\n")) == [True]


def test_handles_have_no_more_power_than_values():
    everything = ("class E:\n    def __contains__(self, x):\n        return True\n    def __iter__(self):\n"
                  "        return iter(())\n    def __eq__(self, o):\n        return True\n"
                  "    __hash__ = object.__hash__\nONE = E()\ndef f(x):\n    return ONE\n")
    # f(1) == f(2) of one object holds (the same handle): as it would for a constant plain value, no more
    assert passed(harness(everything, "assert 3 in f(1)\nassert f(1) == f(2)\nassert f(1) != 5\n")) == [
        False, True, True]
    honest = ("class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n    def __iter__(self):\n"
              "        return iter(self.items)\ndef f(x):\n    return Bag(range(x))\n")
    assert passed(harness(honest, "assert 3 in f(5)\nassert 7 not in f(5)\n")) == [True, True]


IN_PLACE_TESTS = textwrap.dedent("""\
    def test_in_place():
        perm = [1, 2, 3]
        assert step(perm) is True
        assert perm == [1, 3, 2]
        grid = [[1, 2], [3, 4]]
        step(grid)
        assert grid == [[3, 1], [4, 2]]
        seen, counts = set(), {}
        step(seen, into=counts)
        assert seen == {"x"} and counts == {"x": 1}
        frozen = (3, 1)
        assert step(frozen) == "tuple"
    test_in_place()
    """)


@pytest.mark.parametrize(("solution", "ok"), [
    ("def step(a, into=None):\n"
     "    if isinstance(a, tuple):\n        return 'tuple'\n"
     "    if isinstance(a, set):\n        a.add('x'); into['x'] = 1; return None\n"
     "    if isinstance(a[0], list):\n        a[:] = [list(r) for r in zip(*a[::-1])]; return None\n"
     "    a[1], a[2] = a[2], a[1]\n    return True\n", True),
    # the same answers, but the arguments left as they were (it returns copies): the tests see that
    ("def step(a, into=None):\n"
     "    if isinstance(a, tuple):\n        return 'tuple'\n"
     "    if isinstance(a, set):\n        return None\n"
     "    if isinstance(a[0], list):\n        return [list(r) for r in zip(*a[::-1])]\n"
     "    return True\n", False),
    # the honest answer in a candidate process that also claims it changed the tests' tuple: the call fails
    ("import candidate_process\n_own = candidate_process._changed\n"
     "def _claim(args, wires, refer):\n    out = _own(args, wires, refer)\n"
     "    if wires.get('0', {}).get('t') == 'tuple':\n        out['0'] = {'t': 'list', 'v': []}\n    return out\n"
     "candidate_process._changed = _claim\n"
     "def step(a, into=None):\n"
     "    if isinstance(a, tuple):\n        return 'tuple'\n"
     "    if isinstance(a, set):\n        a.add('x'); into['x'] = 1; return None\n"
     "    if isinstance(a[0], list):\n        a[:] = [list(r) for r in zip(*a[::-1])]; return None\n"
     "    a[1], a[2] = a[2], a[1]\n    return True\n", False),
])
def test_arguments_changed_in_place_reach_the_tests(solution, ok):
    """A function that sorts, fills or rotates the list, dict or set it is given (LeetCode's "in place", McEval's
    next_permutation): the tests' own objects change as they would with the function in their process."""
    assert passed(harness(solution, IN_PLACE_TESTS)) == [ok]


MAIN_FORMS = {  # McEval's forms of a test file run as `python FILE`
    "test function": "def test_add():\n    assert add(1, 2) == 3\n    assert add(2, 2) == 4\n\ntest_add()\n",
    "main guard": "def test_add():\n    assert add(1, 2) == 3\n\nif __name__ == '__main__':\n    test_add()\n"
                  "    print('All tests passed!')\nelse:\n    raise SystemExit(1)\n",
    "check without entry point": "def check(f):\n    assert f(1, 2) == 3\n\ncheck(add)\n",
    "helper that asserts": "def expect(a, b):\n    assert add(a, b) == a + b\n\ndef test_all():\n"
                           "    expect(1, 2)\n    expect(5, 6)\n\ntest_all()\n",
    "unittest": "import unittest\n\nclass TestAdd(unittest.TestCase):\n    def test_small(self):\n"
                "        self.assertEqual(add(1, 2), 3)\n    def test_zero(self):\n"
                "        self.assertEqual(add(0, 0), 0)\n"
                "\nif __name__ == '__main__':\n    unittest.main()\n",
}


@pytest.mark.parametrize("form", list(MAIN_FORMS))
def test_test_files_run_as_the_main_program(form):
    tests = MAIN_FORMS[form]
    assert passed(harness("def add(a, b):\n    return a + b\n", tests)) == [True]
    wrong = [e for e in harness("def add(a, b):\n    return a * b if a else 0\n", tests) if e["event"] == "test"]
    assert [e["passed"] for e in wrong] == [False], wrong
    if form == "unittest":
        assert "unittest tests failed; " in wrong[0]["detail"] and "test_small" in wrong[0]["detail"]


def test_a_unittest_main_without_test_methods_fails():
    tests = "import unittest\n\nclass Empty(unittest.TestCase):\n    pass\n\nassert add(1, 1) == 2\nunittest.main()\n"
    events = [e for e in harness("def add(a, b):\n    return a + b\n", tests) if e["event"] == "test"]
    assert [e["passed"] for e in events] == [True, False] and "no test methods" in events[1]["detail"]


def test_sealed_imports_refuse_writable_places_and_serve_the_snapshot(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "helpers.py").write_text("VALUE = 'spec'\n")
    script = f"""
import os, sys
sys.path.insert(0, {str(RUNNER)!r})
import sealed_workdir
os.chdir({str(work)!r})
sys.path.insert(0, {str(work)!r})
snapshot = sealed_workdir.snapshot_workdir()
open('helpers.py', 'w').write("VALUE = 'planted'\\n")
open('colorsys.py', 'w').write("raise SystemExit('planted module ran')\\n")
sealed_workdir.seal_imports(snapshot)
import helpers
assert helpers.VALUE == 'spec', helpers.VALUE
import colorsys
assert colorsys.__file__.startswith(sys.base_prefix) or 'python3' in colorsys.__file__, colorsys.__file__
open('planted_new.py', 'w').write('X = 1\\n')
try:
    import planted_new
except ImportError:
    pass
else:
    raise AssertionError('imported from the work dir')
print('ok')
"""
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


# issue 31, class 6: honest value objects compare by value, decided by the judge; the candidate's __eq__ never runs
VALUES = """from dataclasses import dataclass
from collections import namedtuple
from enum import Enum
import re

@dataclass
class P:
    x: int
    y: int

def mk(x, y):
    return P(x, y)

Pair = namedtuple("Pair", "a b")

def pair(a, b):
    return Pair(a, b)

class Color(Enum):
    RED = 1
    GREEN = 2

def color(n):
    return Color(n)

class Stack:
    def __init__(self):
        self.items = []
    def push(self, x):
        self.items.append(x)
        return self

def match(s):
    return re.match(r"a+b", s)

def keep(items, kind):
    return [i for i in items if isinstance(i, kind)]
"""
VALUE_TESTS = ("assert mk(1, 2) == mk(1, 2)\nassert mk(1, 2) != mk(1, 3)\nassert pair(1, 2) == (1, 2)\n"
               "assert color(1) == Color.RED\nassert color(2) != Color.RED\nassert isinstance(Stack(), Stack)\n"
               "assert not isinstance(5, Stack)\nassert Stack().push(1) == Stack().push(1)\n"
               "assert Stack().push(1) != Stack().push(2)\nassert match('aab')\nassert not match('c')\n"
               "assert keep([1, 'a', 2.5, 3], int) == [1, 3]\n")


def test_honest_value_objects_compare_by_value():
    assert passed(harness(VALUES, VALUE_TESTS)) == [True] * 12


@pytest.mark.parametrize("solution", [
    # an __eq__ that says yes to everything: the judge reads the data, not the method
    "class P:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n    def __eq__(self, o):\n"
    "        return True\n    __hash__ = object.__hash__\ndef mk(x, y):\n    return P(x, 0)\n",
    # a metaclass that makes every class equal, two classes for two answers
    "class M(type):\n    def __eq__(c, o):\n        return True\n    __hash__ = type.__hash__\n"
    "class P(metaclass=M):\n    pass\nclass Q(metaclass=M):\n    pass\n"
    "def mk(x, y):\n    return P() if y == 2 else Q()\n",
    # __dict__ as a property that hides the data
    "class P:\n    @property\n    def __dict__(self):\n        return {}\n    def __init__(self, x, y):\n"
    "        object.__setattr__(self, 'v', y)\ndef mk(x, y):\n    return P(x, y)\n",
])
def test_value_equality_gives_the_candidate_no_control(solution):
    # each returns the same thing for (1, 2) and (1, 3) or hides the difference: at most what plain values
    # could do (the same value twice), and a wrong answer where the tests tell them apart
    results = passed(harness(solution, "assert mk(1, 2) == mk(1, 2)\nassert mk(1, 2) != mk(1, 3)\n"
                                       "assert mk(1, 2).__class__ is not None\n"))
    assert results[:2] != [True, True] or results == [True, True, True], results


def test_builtin_named_function_under_test_is_the_completions():
    # MBPP 126: the task's function is called sum; the tests get the completion's sum, but a builtin the tests
    # use on the expected side stays the builtin
    solution = "def sum(a, b):\n    return a + b\n"
    assert passed(harness(solution, "assert sum(10, 15) == 25\nassert sum(1, 2) == 3\n")) == [True, True]
    cheat = "def set(*a):\n    return 1\ndef f(x):\n    return [9]\n"
    assert passed(harness(cheat, "assert set(f(1)) == set((4, 5))\n")) == [False]


def test_a_builtin_error_keeps_the_completion_s_arguments():
    """Exercism's tests check ``err.exception.args[0] == "account not open"``: the error the judge raises has the
    completion's own (plain) arguments, not its formatted text; other arguments fall back to the message."""
    tests = ("try:\n    f(0)\nexcept ValueError as e:\n    err = e\n"
             "assert err.args[0] == 'account not open'\nassert str(err) == 'account not open'\n"
             "try:\n    f(1)\nexcept KeyError as e:\n    key = e\nassert key.args == ('k', 2)\n")
    honest = "def f(x):\n    if x == 0:\n        raise ValueError('account not open')\n    raise KeyError('k', 2)\n"
    assert passed(harness(honest, tests)) == [True, True, True]
    other = "def f(x):\n    raise ValueError(object())\n"  # not plain: the message as before
    assert passed(harness(other, "try:\n    f(0)\nexcept ValueError as e:\n    err = e\n"
                                 "assert err.args[0].startswith('ValueError: <object object')\n")) == [True]
    events = harness(honest, "assert f(0) == 1\n")
    assert "account not open" in events[-2]["detail"] and "line 3" in events[-2]["detail"], events
