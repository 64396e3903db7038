"""open-instruct's code API: ``POST /test_program`` (assert tests) and ``POST /test_program_stdio``.

The contract is their ``open_instruct/code_utils/api.py``: ``{program, tests, max_execution_time}`` ->
``{results: [0|1, ...], runtimes: [seconds, ...]}``, one entry per test in order, a failed test's runtime
-1.0. ``tests`` is a list or its JSON text. Their third encoding (base64 of zlib-compressed pickle) is
refused with a 400: unpickling what a caller sends runs code in the service.

- ``/test_program``: each test is Python run after the program; it passes when it raises nothing. They
  become the ``tests`` of one ``python_assert`` check, one top-level test each, in order: a test that is one
  ``assert`` statement as it is, any other test as ``try: <test>; assert True`` / ``except BaseException:
  assert False``. A test that is not valid Python fails alone (as it does there). ``max_execution_time`` is
  per test there; here the check's whole time limit is ``max_execution_time`` times the number of tests, plus a second.
- ``/test_program_stdio``: ``tests`` are ``{input, output}`` pairs, one ``stdio`` case each, with
  ``max_execution_time`` as each case's limit, compared token by token with numbers equal to 1e-9
  (LiveCodeBench's grader, which open-instruct uses, compares lines' tokens as exact decimals).
"""

from __future__ import annotations

import ast
import json
import math
import textwrap
from typing import Any

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.doors.http.calls import HttpError
from verifier_service.errors import InvalidSpec
from verifier_service.spec import request_from_json

STDIO_TOLERANCE = 1e-9
START_MARGIN_S = 1.0  # the check's time limit beyond max_execution_time per test: the interpreter's start


def _body(body: Any) -> tuple[str, list, float]:
    if not isinstance(body, dict):
        raise HttpError(422, "the body must be a JSON object {program, tests, max_execution_time}")
    program, tests = body.get("program"), body.get("tests")
    if not isinstance(program, str):
        raise HttpError(422, "program is required: the Python source, a string")
    if isinstance(tests, str):
        try:
            tests = json.loads(tests) if tests.strip() else []
        except ValueError:
            raise HttpError(400, "tests is a string that is not JSON: send a list (or its JSON text); the "
                                 "base64 zlib-pickle form is refused, since unpickling it would run the "
                                 "sender's code in this service") from None
    if tests is None:
        tests = []
    if not isinstance(tests, list):
        raise HttpError(422, "tests must be a list (or the JSON text of one)")
    limit = body.get("max_execution_time", 1.0)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit) or limit <= 0:
        raise HttpError(422, "max_execution_time must be a positive number of seconds")
    return program, tests, float(limit)


def _as_test(code: str) -> str | None:
    """One test as exactly one top-level test statement; None when it is not valid Python."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assert):
        return code.strip()
    if not tree.body:
        return None
    return "try:\n" + textwrap.indent(code, "    ") + "\n    assert True\nexcept BaseException:\n    assert False\n"


def _answer(results: list[int], runtimes: list[float]) -> dict[str, Any]:
    return {"results": results, "runtimes": runtimes}


def _tests_of(result: pb.VerifyResult, count: int) -> tuple[list[int], list[float]]:
    """The per-test 0/1 and runtimes of a result whose tests are the request's, in order."""
    results, runtimes = [], []
    tests = list(result.tests)
    for i in range(count):
        test = tests[i] if i < len(tests) else None
        passed = test is not None and test.verdict == pb.PASSED
        results.append(1 if passed else 0)
        runtimes.append(round(test.duration_s, 6) if passed and test is not None else -1.0)
    return results, runtimes


def _request(program: str, spec: dict[str, Any]) -> pb.VerifyRequest:
    try:
        return request_from_json({"completion": program, "spec": spec})
    except InvalidSpec as exc:  # a lone surrogate in the tests too (the program may hold one: model output)
        raise HttpError(400, f"tests: {exc}") from exc


def assert_request(body: Any, max_timeout_s: float) -> tuple[pb.VerifyRequest | None, list[int | None], int]:
    """The python_assert request for a ``/test_program`` body, the index of each test among the check's
    tests (None: it is not valid Python, and fails), and the number of tests."""
    program, tests, limit = _body(body)
    if not all(isinstance(t, str) for t in tests):
        raise HttpError(422, "tests of /test_program are strings of Python (assert statements)")
    codes: list = []
    where: list = []
    for test in tests:
        code = _as_test(test)
        where.append(len(codes) if code is not None else None)
        if code is not None:
            codes.append(code)
    if not codes:
        return None, where, len(tests)
    timeout = min(max_timeout_s, limit * len(codes) + START_MARGIN_S)
    spec = {"kind": "python_assert", "tests": "\n".join(codes), "timeout_s": timeout, "scoring": "fraction"}
    return _request(program, spec), where, len(tests)


def assert_answer(result: pb.VerifyResult | None, where: list[int | None]) -> dict[str, Any]:
    if result is None:
        return _answer([0] * len(where), [-1.0] * len(where))
    per_test, runtimes = _tests_of(result, sum(i is not None for i in where))
    return _answer([per_test[i] if i is not None else 0 for i in where],
                   [runtimes[i] if i is not None else -1.0 for i in where])


def stdio_request(body: Any, max_timeout_s: float) -> tuple[pb.VerifyRequest | None, int]:
    program, tests, limit = _body(body)
    cases = []
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("input"), str) \
                or not isinstance(test.get("output"), str):
            raise HttpError(422, f"tests[{i}] of /test_program_stdio must be {{\"input\": str, \"output\": str}}")
        cases.append({"stdin": test["input"], "expected_stdout": test["output"]})
    if not cases:
        return None, 0
    case_limit = min(limit, max_timeout_s)
    spec = {"kind": "stdio", "language": "python", "cases": cases, "compare": "float",
            "float_tolerance": STDIO_TOLERANCE, "case_timeout_s": case_limit, "scoring": "fraction",
            "timeout_s": min(max_timeout_s, case_limit * len(cases) + START_MARGIN_S)}
    return _request(program, spec), len(cases)


def stdio_answer(result: pb.VerifyResult | None, count: int) -> dict[str, Any]:
    if result is None:
        return _answer([], [])
    return _answer(*_tests_of(result, count))
