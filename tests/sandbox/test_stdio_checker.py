"""stdio's checker (issue 30, class 4: problems with several right answers).

Unit tests (no sandbox): which specs are refused, and the program that runs a checker (``stdio_checker_main.py``)
run as a plain subprocess with a report pipe, as the runner would start it. Through the real service on Docker
(and bubblewrap): different right answers pass, wrong and malformed ones fail, and every way a checker can fail
(it does not load, raises, loops, returns a non-verdict, rejects the jury's own answer) is INFRA_ERROR with no
reward, never a verdict that scores the completion.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import get_kind
from verifier_service.spec import spec_from_json

MAIN = Path(__file__).resolve().parents[2] / "verifier_service" / "kinds" / "stdio_checker_main.py"

# The problem: given n, print two non-negative integers a and b with a + b = n (any such pair is right).
SUM_CHECKER = '''
def check(input, output, answer):
    n = int(input.split()[0])
    parts = output.split()
    # a robust checker rejects what it cannot parse (never raises on a candidate's output): ASCII digits only
    # (str.isdigit takes other scripts' digits, which int() may refuse) and short (int() refuses > 4300 digits)
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) < 30 for p in parts):
        return False, "two non-negative integers expected"
    a, b = int(parts[0]), int(parts[1])
    return a + b == n, f"{a} + {b} != {n}"
'''
CASES = [{"stdin": "5\n", "expected_stdout": "2 3\n"}, {"stdin": "10\n", "expected_stdout": "5 5\n"},
         {"stdin": "0\n", "expected_stdout": "0 0\n"}]


def spec(checker: str = SUM_CHECKER, **extra) -> dict:
    return {"kind": "stdio", "language": "python", "scoring": "fraction", "checker": checker, "cases": CASES, **extra}


# ---- specs refused ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, message", [
    ({"compare": "tokens"}, "exclude each other"),
    ({"float_tolerance": 1e-3}, "float_tolerance"),
    ({"checker_timeout_s": -1.0}, "not negative"),
])
def test_specs_with_a_checker_refused(fields, message):
    with pytest.raises(InvalidSpec, match=message):
        get_kind("stdio").validate(spec_from_json(spec(**fields)))


def test_checker_timeout_needs_a_checker():
    plain = {"kind": "stdio", "cases": CASES, "checker_timeout_s": 5}
    with pytest.raises(InvalidSpec, match="needs a spec"):
        get_kind("stdio").validate(spec_from_json(plain))


def test_a_spec_with_a_checker_validates():
    validated = get_kind("stdio").validate(spec_from_json(spec(checker_timeout_s=3)))
    assert validated.checker == SUM_CHECKER and validated.checker_timeout_s == 3


# ---- the checker's program, as a subprocess -----------------------------------------------------------------------

def run_main(tmp_path, checker: str, cases: list[dict], timeout: float = 30) -> tuple[list[dict], str]:
    """Runs the main in ``tmp_path`` (holding ``checker.py``) with its stdin and report pipe; (events, stdout)."""
    (tmp_path / "checker.py").write_text(checker)
    read_end, write_end = os.pipe()
    payload = json.dumps({"nonce": "n0", "cases": cases}).encode()
    proc = subprocess.Popen([sys.executable, "-s", str(MAIN)], cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_end,),
                            env={"RLVR_REPORT_FD": str(write_end), "PATH": os.environ.get("PATH", "")})
    os.close(write_end)
    stdout, _ = proc.communicate(payload, timeout=timeout)
    with os.fdopen(read_end, "rb") as fh:
        events = [json.loads(line) for line in fh.read().splitlines()]
    assert all(e.pop("nonce") == "n0" for e in events)
    return events, stdout.decode()


def case(output: str, answer: str = "2 3", stdin: str = "5") -> dict:
    return {"input": stdin, "output": output, "answer": answer}


def test_main_judges_each_case_after_its_jury_answer(tmp_path):
    events, _ = run_main(tmp_path, SUM_CHECKER, [case("1 4"), case("4 2"), case("\u0664 1"), case("9" * 5000 + " 1")])
    assert events == [
        {"case": 0, "role": "answer", "ok": True, "message": "2 + 3 != 5"},
        {"case": 0, "role": "output", "ok": True, "message": "1 + 4 != 5"},
        {"case": 1, "role": "answer", "ok": True, "message": "2 + 3 != 5"},
        {"case": 1, "role": "output", "ok": False, "message": "4 + 2 != 5"},
        {"case": 2, "role": "answer", "ok": True, "message": "2 + 3 != 5"},
        {"case": 2, "role": "output", "ok": False, "message": "two non-negative integers expected"},
        {"case": 3, "role": "answer", "ok": True, "message": "2 + 3 != 5"},
        {"case": 3, "role": "output", "ok": False, "message": "two non-negative integers expected"},
        {"done": True},
    ]


@pytest.mark.parametrize("checker, error", [
    ("def check(i, o, a):\n    return int(o) == 5\n", "check raised ValueError"),  # crashes on "1 4"
    ("def check(i, o, a):\n    return 1\n", "check returned a int"),
    ("def check(i, o, a):\n    return None\n", "check returned a NoneType"),
    ("def check(i, o, a):\n    return (True, 3)\n", "check returned a tuple"),
    ("def check(i, o, a):\n    raise SystemExit(0)\n", "check raised SystemExit"),
    ("def check(i, o, a)\n    return True\n", "did not load: SyntaxError"),
    ("import sys\nsys.exit(0)\n", "did not load: SystemExit"),
    ("CHECK = 1\n", "defines no function check"),
])
def test_main_reports_a_broken_checker_as_an_error(tmp_path, checker, error):
    events, _ = run_main(tmp_path, checker, [case("1 4")])
    assert error in events[-1]["error"] and not any(e.get("done") for e in events)


def test_main_stops_at_a_rejected_jury_answer(tmp_path):
    events, _ = run_main(tmp_path, "def check(i, o, a):\n    return o == 'x'\n", [case("x"), case("x")])
    assert events == [{"case": 0, "role": "answer", "ok": False, "message": ""}]


def test_main_keeps_what_the_checker_prints_off_its_stdout(tmp_path):
    echo = "import os\ndef check(i, o, a):\n    print(o * 10)\n    return True\n"
    events, stdout = run_main(tmp_path, echo, [case("1 4" * 100_000)])
    assert events[-1] == {"done": True} and stdout == ""


# ---- through the service ------------------------------------------------------------------------------------------

PAIR_ZERO = "n = int(input())\nprint(0, n)\n"
PAIR_HALF = "n = int(input())\nprint(n // 2, n - n // 2)\n"
PAIR_WRONG = "n = int(input())\nprint(n, 1)\n"  # a pair, never the right sum
PAIR_SOMETIMES = "n = int(input())\nprint(0, n if n != 10 else 11)\n"
PAIR_WORDS = "input()\nprint('yes', 'no')\n"
PAIR_SLOW_AT_TEN = "import time\nn = int(input())\nif n == 10:\n    time.sleep(60)\nprint(0, n)\n"


@pytest.mark.backends("docker", "bwrap")
def test_several_right_answers_pass_and_wrong_ones_fail(service):
    items = [(PAIR_ZERO, spec()), (PAIR_HALF, spec()), (PAIR_WRONG, spec()), (PAIR_SOMETIMES, spec()),
             (PAIR_WORDS, spec()), (PAIR_SLOW_AT_TEN, spec(timeout_s=2)),
             ("#include <cstdio>\nint main(){int n; scanf(\"%d\", &n); printf(\"%d 0\\n\", n);}\n",
              spec(language="cpp"))]
    if service.app.sandbox.backend == "bwrap" and not service.app.sandbox.gxx:
        items.pop()
    results = service.verify_batch(items)
    seen = [(r["verdict"], r["tests_passed"], round(r["reward"], 6)) for r in results]
    two_thirds = round(0.2 + 0.8 * 2 / 3, 6)
    assert seen[:6] == [("PASSED", 3, 1.0), ("PASSED", 3, 1.0), ("FAILED", 0, 0.2), ("PARTIAL", 2, two_thirds),
                        ("FAILED", 0, 0.2), ("TIMEOUT", 2, two_thirds)], results
    assert "the checker rejected the output: 5 + 1 != 5" in results[2]["tests"][0]["detail"]
    assert "two non-negative integers expected" in results[4]["tests"][0]["detail"]
    assert results[5]["tests"][1]["verdict"] == "TIMEOUT"
    if len(results) == 7:
        assert seen[6] == ("PASSED", 3, 1.0), results[6]


BROKEN = {
    "raises on the output": ("def check(i, o, a):\n    x, y = map(int, o.split())\n    return x + y == int(i)\n",
                             "check raised ValueError"),
    "rejects the jury's answer": ("def check(i, o, a):\n    return o.strip() == '0 0'\n", "rejects the jury's own"),
    "loops": ("def check(i, o, a):\n    while True:\n        pass\n", "did not finish (at case 0): time limit"),
    "returns a number": ("def check(i, o, a):\n    return 1\n", "check returned a int"),
    "does not compile": ("def check(i, o, a)\n", "did not load: SyntaxError"),
    "eats its memory": ("def check(i, o, a):\n    x = bytearray(1 << 40)\n    return True\n", "MemoryError"),
    "exits": ("import os\ndef check(i, o, a):\n    os._exit(0)\n", "did not finish (at case 0)"),
}


@pytest.mark.backends("docker", "bwrap")
def test_a_broken_checker_is_infra_error_never_a_verdict(service):
    items = [(PAIR_WORDS, spec(checker=code, checker_timeout_s=2)) for code, _ in BROKEN.values()]
    items.append((PAIR_ZERO, spec(checker=BROKEN["loops"][0], checker_timeout_s=2)))  # a right answer too
    results = service.verify_batch(items)
    for (name, (_, message)), r in zip([*BROKEN.items(), ("loops, right answer", BROKEN["loops"])], results,
                                       strict=True):
        assert r["verdict"] == "INFRA_ERROR" and r["reward"] is None, (name, r)
        assert message in r["detail"] and "checker" in r["detail"], (name, r["detail"])


@pytest.mark.backends("docker")
def test_case_insensitive_tokens_through_the_service(service):
    cases = [{"stdin": "4\n", "expected_stdout": "YES\n"}, {"stdin": "3\n", "expected_stdout": "NO\n"}]
    program = "print('Yes' if int(input()) % 2 == 0 else 'nO')\n"
    got = [service.verify(program, {"kind": "stdio", "compare": compare, "cases": cases})["verdict"]
           for compare in ("tokens_ci", "tokens")]
    assert got == ["PASSED", "FAILED"]


def test_cases_split_over_checker_jobs_by_their_text():
    from verifier_service.kinds.stdio_checker import CheckedCase, batches

    def cases(*sizes):
        return [CheckedCase("", "x" * n, "") for n in sizes]

    assert batches([]) == []
    assert batches(cases(5, 5, 5), limit=10) == [(0, 2), (2, 3)]
    assert batches(cases(30, 1, 1), limit=10) == [(0, 1), (1, 3)]  # a case over the limit alone
    assert batches(cases(1, 30, 1), limit=10) == [(0, 1), (1, 2), (2, 3)]
    assert batches([CheckedCase("ab", "c", "de")] * 3, limit=7) == [(0, 1), (1, 2), (2, 3)]  # 2 + 1 + 2 * 2


@pytest.mark.backends("docker")
def test_cases_over_several_checker_jobs_judged_the_same(service, monkeypatch):
    from verifier_service.kinds import stdio_checker

    monkeypatch.setattr(stdio_checker, "JOB_TEXT_LIMIT", 8)  # every case a checker job of its own
    jobs = []
    real = stdio_checker._run_batch

    async def counted(ctx, source, cases, names, timeout_s):
        jobs.append(len(cases))
        return await real(ctx, source, cases, names, timeout_s)

    monkeypatch.setattr(stdio_checker, "_run_batch", counted)
    results = service.verify_batch([(PAIR_HALF, spec()), (PAIR_SOMETIMES, spec()),
                                    (PAIR_WORDS, spec(checker=BROKEN["rejects the jury's answer"][0]))])
    assert [(r["verdict"], r["tests_passed"]) for r in results] == [("PASSED", 3), ("PARTIAL", 2), ("INFRA_ERROR", 0)]
    assert "rejects the jury's own answer on case 0 (the jury answer)" in results[2]["detail"], results[2]
    assert jobs and set(jobs) == {1}
