"""The benchmark's inputs: unique tasks of each workload, each with the verdict it must get.

A task is a dict: ``kind`` (the workload), ``completion``, ``spec`` (the
service's spec as JSON), ``expected`` (the verdict every harness must reach)
and what the host-side harnesses need (``program``/``tests`` or ``cases``).
Every third task is wrong in a way the check catches, so a harness that
passes everything is caught by the verdict check.
"""

from __future__ import annotations

import json

WORKLOADS = ("python_assert", "python_check", "stdio_python", "stdio_cpp", "json_schema", "format")
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


MAKERS = {"python_assert": python_assert, "python_check": python_check, "stdio_python": stdio_python,
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
    if task["kind"] in ("python_assert", "python_check", "stdio_python"):
        completion += f"# {salt}-{index}\n"
    elif task["kind"] == "stdio_cpp":
        completion += f"// {salt}-{index}\n"
    return {"id": str(index), "completion": completion, "spec": task["spec"]}
