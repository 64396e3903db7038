"""python_io: function-call tests given as data; the comparison happens outside the sandbox.

The sandbox only learns the arguments. It reports what the function returned
(encoded with the exact built-in types), and the host compares that with
``expected``: the candidate never sees the expected values, and no object it
returns can fake equality.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds._sandboxed import (
    HARNESS_DIR,
    PYTHON,
    error_verdict,
    event_duration,
    new_nonce,
    python_without_code,
    read_reports,
    run_job,
    streams,
    unfinished_tests,
)
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.runner import wire
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import MISSING, Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

UNENCODABLE = "__rlvr_unencodable__"
BIG_INT = "__rlvr_int__"  # the harness's tag of an int too long for decimal JSON text (io_harness.py)


def values_match(actual: Any, expected: Any, tol: float) -> bool:
    """Whether a reported return value equals ``expected``, both JSON values (as the harness encodes them).

    The rule, for every input (it never raises): ``true``/``false`` equal only themselves (never 1 or 0);
    ``null`` only itself; strings only the same string; arrays element by element, same length; objects
    the same keys, value by value. Numbers: an integer ``expected`` is matched only by that exact value
    (an int, or a float exactly equal to it: JSON has one number type), never within a tolerance; a float
    ``expected`` by any number ``a`` with ``|a - expected| <= tol * max(1, |expected|)``, computed
    exactly (the rule of the common contest checkers); NaN only by NaN, an infinity only by the same
    infinity. A value the harness could not encode (``UNENCODABLE``) matches nothing.
    """
    try:
        return _match(actual, expected, tol)
    except (RecursionError, MemoryError):  # (the depth of expected bounds the walk; this is a backstop)
        return False


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _match(actual: Any, expected: Any, tol: float) -> bool:
    if type(expected) is bool or type(actual) is bool or expected is None or actual is None:
        return actual is expected
    if _is_number(expected):
        if not _is_number(actual):
            return False
        if type(expected) is int:
            return actual == expected  # exact between int and float (no conversion, no overflow)
        if math.isnan(expected) or (type(actual) is float and math.isnan(actual)):
            return type(actual) is float and math.isnan(actual) and math.isnan(expected)
        if math.isinf(expected) or (type(actual) is float and math.isinf(actual)):
            return actual == expected
        if actual == expected:
            return True
        if not tol:
            return False
        e = Fraction(expected)
        return abs(Fraction(actual) - e) <= Fraction(tol) * max(Fraction(1), abs(e))
    if isinstance(expected, str):
        return type(actual) is str and actual == expected
    if isinstance(expected, list):
        return (type(actual) is list and len(actual) == len(expected)
                and all(_match(a, e, tol) for a, e in zip(actual, expected, strict=True)))
    if isinstance(expected, dict):
        return (type(actual) is dict and UNENCODABLE not in actual and actual.keys() == expected.keys()
                and all(_match(actual[k], expected[k], tol) for k in expected))
    return False


def _show(value: Any) -> str:
    if isinstance(value, dict) and UNENCODABLE in value:
        return f"<{truncate(str(value[UNENCODABLE]), 200)}>"
    if type(value) is int and value.bit_length() > 1000:
        return f"<an int of {value.bit_length()} bits>"
    try:
        return truncate(json.dumps(value), 200)
    except (ValueError, TypeError, RecursionError):  # an int past the digit limit inside, ...
        return "<a value too large to show>"


def decode_value(value: Any) -> Any:
    """A reported value with the harness's big-int tags (``{BIG_INT: hex}``) turned back into ints (the hex
    text is converted in linear time); anything else as it is. Never raises (a malformed tag stays a dict,
    which matches no expected value)."""
    if isinstance(value, dict):
        if len(value) == 1 and type(value.get(BIG_INT)) is str:
            text = value[BIG_INT]
            digits = text[1:] if text[:1] == "-" else text
            if digits and all(c in "0123456789abcdef" for c in digits):
                return int(text, 16)
            return value
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


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
        if not (math.isfinite(spec.float_tolerance) and spec.float_tolerance >= 0):
            raise InvalidSpec("spec.float_tolerance must be a finite number, not negative")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        if (empty := python_without_code(text)) is not None:
            return empty
        nonce = new_nonce()
        payload = {"setup": spec.setup, "solution": text, "entry_point": spec.entry_point,
                   "cases": [{"args": c.args, "kwargs": c.kwargs} for c in spec.cases], "nonce": nonce}
        job = Job(steps=[Step("cases", [*PYTHON, f"{HARNESS_DIR}/io_harness.py"], ctx.timeout_s,
                              stdin=json.dumps(payload), memory_bytes=ctx.config.memory_mb << 20,
                              output_limit=ctx.config.output_limit_bytes, harness=wire.IO_HARNESS)])
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
                duration = event_duration(event)
                if "error" in event:
                    verdict = error_verdict(str(event["error"]), str(event.get("detail", "")))
                    tests.append(TestOutcome(name, verdict, str(event.get("detail", "")), duration))
                    continue
                value = decode_value(event.get("value"))
                if values_match(value, case.expected, spec.float_tolerance):
                    tests.append(TestOutcome(name, Verdict.PASSED, "", duration))
                else:
                    tests.append(TestOutcome(name, Verdict.FAILED, f"expected {_show(case.expected)}, "
                                             f"got {_show(value)}", duration))
            elif kind == "end":
                finished = True
                break
        if not finished:
            tests += unfinished_tests(names[len(tests):], step, run, ctx.timeout_s)
        else:  # an end before every case reported (only a forged one can): the rest never passed
            tests += [TestOutcome(n, Verdict.FAILED, "not reported by the harness") for n in names[len(tests):]]
        if spec.fast_fail:
            first_bad = next((i for i, t in enumerate(tests) if not t.passed), None)
            if first_bad is not None:
                tests = tests[:first_bad + 1] + [TestOutcome(n, Verdict.FAILED, "not counted (fast_fail)")
                                                 for n in names[first_bad + 1:]]
        outcome = Outcome.from_tests(tests, **extra)
        return outcome
