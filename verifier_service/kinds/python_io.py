"""python_io: function-call tests given as data; the comparison happens outside the sandbox.

The sandbox only learns the arguments. It reports what the function returned
(encoded with the exact built-in types), and the host compares that with
``expected``: the candidate never sees the expected values, and no object it
returns can fake equality.
"""

from __future__ import annotations

import json
import math
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds._sandboxed import (
    HARNESS_DIR,
    PYTHON,
    error_verdict,
    new_nonce,
    read_reports,
    run_job,
    streams,
    unfinished_tests,
)
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import MISSING, Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

UNENCODABLE = "__rlvr_unencodable__"


def values_match(actual: Any, expected: Any, tol: float) -> bool:
    """JSON-value equality; bools are not numbers; floats within ``tol`` (relative and absolute)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if isinstance(expected, int) and isinstance(actual, int):
            return actual == expected
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        return math.isclose(actual, expected, rel_tol=tol, abs_tol=tol) if tol else actual == expected
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(values_match(a, e, tol) for a, e in zip(actual, expected, strict=False)))
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and UNENCODABLE not in actual and actual.keys() == expected.keys()
                and all(values_match(actual[k], expected[k], tol) for k in expected))
    return type(actual) is type(expected) and actual == expected


def _show(value: Any) -> str:
    if isinstance(value, dict) and UNENCODABLE in value:
        return f"<{value[UNENCODABLE]}>"
    return truncate(json.dumps(value), 200)


@register
class PythonIO(VerifierKind):
    name = "python_io"
    description = "calls the completion's function on each case; return values are compared outside the sandbox"
    sandboxed = True
    params = (
        Param("entry_point", "string", "name of the function to call", required=True),
        Param("cases", "cases", "list of {args: [...], kwargs: {...}, expected: value}", required=True),
        Param("float_tolerance", "number", "relative and absolute tolerance when a float is involved",
              default=0.0),
        Param("setup", "string", "code run before the completion (imports, helpers)"),
        Param("fast_fail", "bool", "score the cases after the first failure as failed", default=False),
    )

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "entry_point", "cases")
        if not spec.entry_point.isidentifier():
            raise InvalidSpec(f"spec.entry_point {spec.entry_point!r} is not a Python identifier")
        for i, case in enumerate(spec.cases):
            if case.expected is MISSING:
                raise InvalidSpec(f"spec.cases[{i}] has no expected value")
            if case.stdin or case.expected_stdout is not None:
                raise InvalidSpec(f"spec.cases[{i}]: stdin / expected_stdout belong to kind 'stdio'")
        if spec.float_tolerance < 0:
            raise InvalidSpec("spec.float_tolerance must not be negative")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        nonce = new_nonce()
        payload = {"setup": spec.setup, "solution": text, "entry_point": spec.entry_point,
                   "cases": [{"args": c.args, "kwargs": c.kwargs} for c in spec.cases], "nonce": nonce}
        job = Job(steps=[Step("cases", [*PYTHON, f"{HARNESS_DIR}/io_harness.py"], ctx.timeout_s,
                              stdin=json.dumps(payload), memory_bytes=ctx.config.memory_mb << 20,
                              output_limit=ctx.config.output_limit_bytes, harness="io_harness")])
        run = await run_job(ctx, job)
        if isinstance(run, Outcome):
            return run
        names = [c.name or f"case {i}" for i, c in enumerate(spec.cases)]
        if not run.steps:
            return Outcome(Verdict.MEMORY_LIMIT if run.oom_killed else Verdict.TIMEOUT,
                           detail=run.runner_error or "the sandbox stopped before the cases ran", extracted=text)
        step = run.steps[0]
        extra = dict(extracted=truncate(text, 4000), **streams(step))
        tests: list[TestOutcome] = []
        finished = False
        for event in read_reports(step, nonce):
            kind = event.get("event")
            if kind == "compile_error":
                return Outcome(Verdict.COMPILE_ERROR, detail=str(event.get("detail", "")), **extra)
            if kind == "solution_error":
                verdict = error_verdict(str(event.get("error", "")), str(event.get("detail", "")))
                detail = f"the completion failed: {event.get('detail', '')}"
                tests = [TestOutcome(n, verdict, detail if i == 0 else "not run") for i, n in enumerate(names)]
            elif kind == "case" and len(tests) < len(names):
                case = spec.cases[len(tests)]
                name = names[len(tests)]
                duration = float(event.get("duration_s") or 0.0)
                if "error" in event:
                    verdict = error_verdict(str(event["error"]), str(event.get("detail", "")))
                    tests.append(TestOutcome(name, verdict, str(event.get("detail", "")), duration))
                elif values_match(event.get("value"), case.expected, spec.float_tolerance):
                    tests.append(TestOutcome(name, Verdict.PASSED, "", duration))
                else:
                    tests.append(TestOutcome(name, Verdict.FAILED, f"expected {_show(case.expected)}, "
                                             f"got {_show(event.get('value'))}", duration))
            elif kind == "end":
                finished = True
                break
        if not finished:
            tests += unfinished_tests(names[len(tests):], step, run, ctx.timeout_s)
        if spec.fast_fail:
            first_bad = next((i for i, t in enumerate(tests) if not t.passed), None)
            if first_bad is not None:
                tests = tests[:first_bad + 1] + [TestOutcome(n, Verdict.FAILED, "not counted (fast_fail)")
                                                 for n in names[first_bad + 1:]]
        outcome = Outcome.from_tests(tests, **extra)
        return outcome
