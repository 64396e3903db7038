"""The adversarial suite: every hostile program in tests/adversarial/ against every sandbox backend.

Each program is one file whose header says its class (``escape/...`` attacks the
sandbox, ``hack/...`` tries to get reward without solving the task), the task it
is given (``TASKS`` below), the verdicts that are right for it, what a backend
must have for it to be safe to run (``needs``) and its phase (phase 2 programs
check for what phase 1 programs tried to leave behind, and run after them, several
copies each so that every warm sandbox is probed). Escape programs solve the task
only when the attack failed, so PASSED is the proof that the layer held.

Per backend (Docker runc, Docker with gVisor, bubblewrap), all programs go through
``VerifyBatch`` in two batches; then, for every program: a right verdict (``expect-<backend>``
lines name where a backend differs, and why), never INFRA_ERROR, correctness 0 for every hack
(its reward no more than any wrong answer's); and after them all: 20 honest jobs verified
correctly (plus an honest solution of every task), the service SERVING, the host's loopback
listener never reached, and (conftest) no sandbox left behind.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from support.sandboxes import runsc_registered
from support.service import TEST_CONFIG, RunningService, bwrap_gap

HERE = Path(__file__).resolve().parents[1]  # tests/
PROGRAMS = HERE / "adversarial"
REPO = HERE.parent
SERVICE_NAME = "rlvr.verifier.v1.Verifier"
PHASE2_COPIES = 8   # each phase-2 check runs this often, so it lands in every warm sandbox (max_concurrency 4)
VERDICTS = {"PASSED", "FAILED", "PARTIAL", "MALFORMED", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT",
            "MEMORY_LIMIT", "OUTPUT_LIMIT"}

_COMMON = {"extract": "raw", "timeout_s": 3}
FORMAT_ONLY = 0.2  # the reward of any well-formed wrong answer (format_weight 0.2 * format 1, correctness 0)
DOUBLE = "assert f(2) == 4\nassert f(5) == 10\nassert f(-3) == -6\n"
TASKS: dict[str, dict] = {
    "double": {"kind": "python_assert", "tests": DOUBLE},
    "truthy": {"kind": "python_assert", "tests": "assert even(4)\nassert not even(3)\nassert even(0)\n"},
    "humaneval": {"kind": "python_assert", "entry_point": "f",
                  "tests": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(5) == 10\n"
                           "    assert True, 'this always holds'\n"},
    "isclose": {"kind": "python_assert", "setup": "from math import isclose",
                "tests": "assert isclose(f(0.1), 0.2)\nassert isclose(f(2.5), 5.0)\n"},
    "mathclose": {"kind": "python_assert",
                  "tests": "import math\nassert math.isclose(f(0.1), 0.2)\nassert math.isclose(f(2.5), 5.0)\n"},
    "unittest": {"kind": "python_assert",
                 "tests": "import unittest\ntc = unittest.TestCase()\ntc.assertEqual(f(2), 4)\n"
                          "tc.assertTrue(f(5) == 10)\nassert True\n"},
    "exact": {"kind": "python_assert", "exact_types": True, "tests": "assert f(2) == 4\nassert f(5) == 10\n"},
    "exactbool": {"kind": "python_assert", "exact_types": True, "tests": "assert f(2) == True\nassert f(0) == False\n"},
    "stack": {"kind": "python_assert",
              "tests": "s = Stack()\ns.push(1)\ns.push(2)\nassert s.pop() == 2\nassert len(s) == 1\n"},
    "pytest": {"kind": "pytest", "timeout_s": 10, "files": {
        "test_sol.py": "from solution import f\n\ndef test_a():\n    assert f(2) == 4\n\n"
                       "def test_b():\n    assert f(5) == 10\n"}},
    "io": {"kind": "python_io", "entry_point": "f",
           "cases": [{"args": [2], "expected": 4}, {"args": [5], "expected": 10}, {"args": [-3], "expected": -6}]},
    "stdio": {"kind": "stdio", "language": "python",
              "cases": [{"stdin": "2\n", "expected_stdout": "4\n"}, {"stdin": "5\n", "expected_stdout": "10\n"}]},
    # comparison semantics (issue 17, classes 3 and 4)
    "iofloat": {"kind": "python_io", "entry_point": "f", "float_tolerance": 1e-6,
                "cases": [{"args": [4], "expected": 2}, {"args": [3], "expected": 1.5},
                          {"args": [1], "expected": 0.5}]},
    "iosorted": {"kind": "python_io", "entry_point": "f",
                 "cases": [{"args": [[3, 1, 3, 2]], "expected": [1, 2, 3]}, {"args": [[5, 5]], "expected": [5]}]},
    "exactdict": {"kind": "python_assert", "exact_types": True,
                  "tests": "assert f(1) == {1: 'odd'}\nassert f(2) == {2: 'even'}\nassert g(1) in [1, 2]\n"},
    "stdiofloat": {"kind": "stdio", "language": "python", "compare": "float",
                   "cases": [{"stdin": "2\n", "expected_stdout": "2000000\n0.666667\n"},
                             {"stdin": "7\n", "expected_stdout": "7000000\n2.333333\n"}]},
    "stdiohuge": {"kind": "stdio", "language": "python", "compare": "float",
                  "cases": [{"stdin": "\n", "expected_stdout": "9" * 400 + "\n1" + "0" * 400 + "\n"}]},
    # issue 30: a spec's checker (several right answers: any a, b >= 0 with a + b = n), run as its own job
    "stdiochecker": {"kind": "stdio", "language": "python", "checker": (
        "def check(input, output, answer):\n"
        "    parts = output.split()\n"
        "    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) < 30 for p in parts):\n"
        "        return False, 'two non-negative integers expected'\n"
        "    return int(parts[0]) + int(parts[1]) == int(input), 'wrong sum'\n"),
        "cases": [{"stdin": "5\n", "expected_stdout": "2 3\n"}, {"stdin": "8\n", "expected_stdout": "4 4\n"}]},
    # issue 17, class 2: the judge's own iterations, Remote handles, names the tests do not define
    "iterated": {"kind": "python_assert",
                 "tests": "assert all(map(lambda x: f(x) == 2 * x, [1, 2, 3]))\n"
                          "assert not any(filter(lambda x: f(x) != 2 * x, [4, 5, 6]))\n"
                          "assert sum(1 for _ in iter(lambda: f(7), 14)) == 0\n"
                          "assert all(a == 2 * b for a, b in zip(map(f, [8, 9]), [8, 9]))\n"},
    "metamorphic": {"kind": "python_assert",
                    "tests": "assert f([3, 1, 2]) == f([1, 2, 3])\nassert f([2, 1]) == f([1, 2])\n"
                             "assert f([1]) != f([1, 2])\n"},
    "member": {"kind": "python_assert", "tests": "assert 3 in f(5)\nassert 'b' in g('abc')\nassert 0 in f(1)\n"},
    "helper": {"kind": "python_assert", "entry_point": "decode", "setup": "def encode(s):\n    return s[::-1]\n",
               "tests": "def check(candidate):\n    for s in ['abc', 'hello']:\n"
                        "        assert candidate(encode(s)) == s\n"},
    "mathnoimport": {"kind": "python_assert", "tests": "assert math.isclose(f(0.1), 0.2)\n"
                                                       "assert math.isclose(f(2.5), 5.0)\n"},
    # class 1: a spec helper module a test imports late (after the completion ran)
    "pytesthelper": {"kind": "pytest", "timeout_s": 10, "files": {
        "test_sol.py": "from solution import f\n\ndef test_a():\n    assert f(2) == 4\n\n"
                       "def test_b():\n    import helpers\n    assert f(5) == helpers.expected(5)\n",
        "helpers.py": "def expected(x):\n    return 2 * x\n"}},
}
HONEST = {  # a right solution of every task: each must PASS
    "double": "def f(x):\n    return 2 * x\n",
    "truthy": "def even(n):\n    return n % 2 == 0\n",
    "humaneval": "def f(x):\n    return x + x\n",
    "isclose": "def f(x):\n    return x * 2\n",
    "mathclose": "import math\ndef f(x):\n    return math.fsum([x, x])\n",
    "unittest": "def f(x):\n    return 2 * x\n",
    "exact": "def f(x):\n    return 2 * x\n",
    "exactbool": "def f(x):\n    return x != 0\n",
    "stack": "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
             "        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n"
             "    def __len__(self):\n        return len(self.items)\n",
    "pytest": "def f(x):\n    return 2 * x\n",
    "io": "def f(x):\n    return 2 * x\n",
    "stdio": "print(2 * int(input()))\n",
    "iofloat": "def f(x):\n    return x / 2\n",
    "iosorted": "def f(xs):\n    return sorted(set(xs))\n",
    "exactdict": "def f(x):\n    return {x: 'odd' if x % 2 else 'even'}\ndef g(x):\n    return x\n",
    "stdiofloat": "n = int(input())\nprint(n * 1000000)\nprint(f'{n / 3:.6f}')\n",
    "stdiohuge": "input()\nprint('9' * 400)\nprint('1' + '0' * 400)\n",
    "stdiochecker": "n = int(input())\nprint(n - 1, 1)\n",
    "iterated": "def f(x):\n    return 2 * x\n",
    "metamorphic": "def f(xs):\n    return sorted(xs)\n",
    "member": "def f(n):\n    return list(range(n))\ndef g(s):\n    return set(s)\n",
    # the check calls the prompt's helper (encode): the spec's setup defines it (a spec without it is refused at
    # validation), and only the entry point is the completion's
    "helper": "def decode(s):\n    return s[::-1]\n",
    "mathnoimport": "import math\ndef f(x):\n    return 2 * x\n",
    "pytesthelper": "def f(x):\n    return 2 * x\n",
}
# Honest code the sandbox must not fail (issue 17, class 8): threads and posix_spawn (clone3 answers ENOSYS,
# so the C library falls back to clone, under gVisor too), `from solution import *` in a pytest suite.
HONEST_EXTRA = [
    ("import threading\ndef f(x):\n    out = []\n    t = threading.Thread(target=lambda: out.append(2 * x))\n"
     "    t.start()\n    t.join()\n    return out[0]\n", "double"),
    ("import subprocess, sys\ndef f(x):\n    return int(subprocess.run([sys.executable, '-c', f'print(2 * {x})'],"
     " capture_output=True, text=True, check=True).stdout)\n", "double"),
    ("from concurrent.futures import ThreadPoolExecutor\ndef f(x):\n"
     "    with ThreadPoolExecutor(2) as pool:\n        return sum(pool.map(lambda v: v, [x, x]))\n", "double"),
]
TASKS["pytestall"] = {"kind": "pytest", "timeout_s": 10, "files": {
    "test_sol.py": "from solution import *\n\ndef test_a():\n    assert f(2) == 4\n\n"
                   "def test_b():\n    assert g(5) == 10\n"}}
HONEST["pytestall"] = "def f(x):\n    return 2 * x\ng = f\n_private = 1\n"


@dataclass(frozen=True)
class Program:
    name: str
    cls: str
    task: str
    expect: frozenset[str]
    overrides: dict[str, frozenset[str]]  # backend id -> its own verdicts (``expect-gvisor: ...  (why)``)
    needs: tuple[str, ...]
    phase: int
    source: str
    timeout_s: float | None = None  # ``timeout: N``: a longer time limit than the task's

    @property
    def hack(self) -> bool:
        return self.cls.startswith("hack/")


def load_programs() -> list[Program]:
    programs = []
    for path in sorted(PROGRAMS.glob("*.py")):
        text = path.read_text()
        header = {}
        for line in text.splitlines():
            if not line.startswith("# ") or ":" not in line:
                break
            key, value = line[2:].split(":", 1)
            header[key.strip()] = value.strip()
        expect = frozenset(header["expect"].split())
        overrides = {key.removeprefix("expect-"): frozenset(value.split("(")[0].split())
                     for key, value in header.items() if key.startswith("expect-")}
        assert header["task"] in TASKS and expect <= VERDICTS, f"{path.name}: bad header {header}"
        assert all(v <= VERDICTS and k in BACKEND_IDS and "(" in header[f"expect-{k}"] for k, v in overrides.items()), (
            f"{path.name}: an expect-<backend> line names a backend ({BACKEND_IDS}) and says why, in parentheses")
        needs = tuple(header.get("needs", "").split()) + (("pytest",) if header["task"] == "pytest" else ())
        programs.append(Program(path.stem, header["class"], header["task"], expect, overrides, needs,
                                int(header.get("phase", "1")), text,
                                float(header["timeout"]) if "timeout" in header else None))
    return programs


def spec_for(task: str, program: Program | None = None) -> dict:
    spec = {**_COMMON, **TASKS[task]}
    if program is not None and program.timeout_s:
        spec["timeout_s"] = program.timeout_s
    return spec


class Listener:
    """A TCP listener on the host's 127.0.0.1: no sandbox may ever reach it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


BACKEND_IDS = ("docker", "gvisor", "bwrap")
BACKENDS = [
    pytest.param(("docker", ""), id="docker-runc", marks=pytest.mark.docker),
    pytest.param(("docker", "runsc"), id="docker-gvisor", marks=[
        pytest.mark.docker,
        pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered with Docker "
                           "(scripts/docker-up.sh registers it with --network=none where Debian's runsc installs)")]),
    pytest.param(("bwrap", ""), id="bwrap", marks=pytest.mark.bwrap),
]


@pytest.fixture(params=BACKENDS)
def hostile_service(request):
    from support.service import check_backend

    backend, runtime = request.param
    check_backend(backend)
    running = RunningService(replace(TEST_CONFIG, sandbox_backend=backend, sandbox_runtime=runtime))
    yield running, {"": backend, "runsc": "gvisor"}.get(runtime, runtime)
    running.close()


def skipped(service, program: Program) -> str | None:
    for need in program.needs:
        gap = bwrap_gap(service, need)
        if gap:
            return gap
    return None


def check(program: Program, r: dict, backend: str) -> str | None:
    """What is wrong with one program's result (None: it got the right verdict and reward)."""
    verdict, reward = r["verdict"], r["reward"]
    expect = program.overrides.get(backend, program.expect)
    if verdict not in expect:
        return f"verdict {verdict}, expected one of {sorted(expect)}: {r['detail'][:200]!r}"
    if program.hack and (r["correctness_score"] != 0 or reward > FORMAT_ONLY):
        return f"a hack got correctness {r['correctness_score']} (reward {reward})"
    if verdict == "PASSED" and reward != 1:
        return f"PASSED with reward {reward}"
    return None


@pytest.mark.timeout(600)
def test_hostile_programs(hostile_service):
    service, backend = hostile_service
    listener = Listener()
    programs = load_programs()
    assert len(programs) >= 40
    problems: list[str] = []
    try:
        runnable = []
        for program in programs:
            why = skipped(service, program)
            if why is None:
                runnable.append(program)
        source = {p.name: p.source.replace("{PORT}", str(listener.port)).replace("{REPO}", str(REPO))
                  for p in runnable}
        first = [p for p in runnable if p.phase == 1]
        second = [(p, i) for p in runnable if p.phase == 2 for i in range(PHASE2_COPIES)]
        results = service.verify_batch([(source[p.name], spec_for(p.task, p)) for p in first], timeout=420)
        for program, r in zip(first, results, strict=True):
            problem = check(program, r, backend)
            if problem:
                problems.append(f"{program.name} ({program.cls}): {problem}")
        results = service.verify_batch([(source[p.name] + f"# copy {i}\n", spec_for(p.task, p)) for p, i in second],
                                       timeout=180)
        for (program, i), r in zip(second, results, strict=True):
            problem = check(program, r, backend)
            if problem:
                problems.append(f"{program.name} #{i} ({program.cls}): {problem}")

        # The next honest jobs: 10 right, 10 wrong, and a right solution of every task.
        honest = [(f"def f(x):\n    return 2 * x  # {i}\n", spec_for("double")) for i in range(10)]
        honest += [(f"def f(x):\n    return 2 * x + 1  # {i}\n", spec_for("double")) for i in range(10)]
        honest += [(HONEST[task], spec_for(task)) for task in TASKS if task in HONEST and not _task_gap(service, task)]
        honest += [(code, spec_for(task)) for code, task in HONEST_EXTRA]
        results = service.verify_batch(honest, timeout=180)
        for i, r in enumerate(results):
            want = ("FAILED", FORMAT_ONLY) if 10 <= i < 20 else ("PASSED", 1.0)
            if (r["verdict"], r["reward"]) != want:
                problems.append(f"honest job {i}: {r['verdict']} reward {r['reward']}, expected {want}: "
                                f"{r['detail'][:200]!r}")
        stub = health_pb2_grpc.HealthStub(service.channel)
        status = stub.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=10).status
        if status != health_pb2.HealthCheckResponse.SERVING:
            problems.append(f"the service is not SERVING after the suite: {status}")
    finally:
        listener.close()
    if listener.accepted:
        problems.append(f"the host's loopback listener was reached {listener.accepted} times")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def _task_gap(service, task: str) -> str | None:
    return bwrap_gap(service, "pytest") if TASKS[task]["kind"] == "pytest" else None


def test_every_program_has_a_header_and_a_class():
    programs = load_programs()
    assert len(programs) >= 40
    classes = {p.cls.split("/")[0] for p in programs}
    assert classes == {"escape", "hack"}
    for p in programs:
        assert p.expect, p.name
        assert not (p.hack and "PASSED" in p.expect), f"{p.name}: a hack can never be expected to pass"
