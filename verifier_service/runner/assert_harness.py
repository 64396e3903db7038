"""Runs a completion and assert-style tests (HumanEval / MBPP style), each in its own process.

This process is the judge (see ``judge.py``): before it reads the job it forks
the candidate process, which runs the completion and answers calls; the tests
run here, on plain built-in values, where the candidate's code cannot reach.

Input (stdin, JSON): {"setup": str, "solution": str, "items": [{"kind":
"stmt"|"test", "name": str, "code": str}], "names": [str], "entry_point": str,
"fast_fail": bool, "nonce": str}. ``names`` are the names the tests use that the
completion may define. Each top-level test statement is one test. Results go to
the report pipe (RLVR_REPORT_FD), one JSON line per event, never to stdout, each
stamped with the job's nonce, and the run ends with an "end" event: a run
without it did not finish, and the host fails the missing tests.
"""

import ast
import builtins
import functools
import json
import operator
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # python3 -I leaves the script's dir out
import candidate_process
import exact_types
import judge
import procs
import remote_objects
import sealed_workdir

_dumps = json.dumps
_monotonic = time.monotonic


def _report_channel(nonce):
    fd = int(os.environ.pop("RLVR_REPORT_FD"))
    out = os.fdopen(fd, "w", buffering=1)

    def report(**event):
        event["nonce"] = nonce
        out.write(_dumps(event) + "\n")
        out.flush()

    return report


def _error_detail(exc, limit=600):
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<")]
    if frames:
        f = frames[-1]
        text += f" (at {f.filename} line {f.lineno})"
    return text[:limit]


def _explain(left, op, right):
    def show(value):
        try:
            text = repr(value)
        except BaseException:  # noqa: BLE001 - a broken __repr__ is the candidate's problem
            text = f"<{type(value).__name__} with a failing repr>"
        return text if len(text) <= 200 else text[:190] + "..."

    return f"{show(left)} {op} {show(right)} is false"


def _load(candidate, report, setup, solution, names):
    """The completion's names from the candidate process; None when it did not compile or raised (reported)."""
    try:
        names, compile_error = candidate.load(setup, solution, names)
    except judge.Interrupted:
        raise
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is data
        report(event="solution_error", error=type(exc).__name__, detail=_error_detail(exc))
        report(event="end")
        return None
    if compile_error is not None:
        report(event="compile_error", detail=compile_error)
        return None
    return names


def _used_as_modules(codes):
    """The names the tests read an attribute of (``math.isclose``): how a module is used, not a function."""
    found = set()
    for code in codes:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        found.update(n.value.id for n in ast.walk(tree)
                     if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name))
    return found


def _candidate_name(name, value, entry_point, namespace, as_module=True):
    """What a name the tests use but do not define is bound to (``_MISSING``: nothing, a NameError if used).

    The spec's own setup names stay the spec's. With an entry point (HumanEval), the spec says which name is the
    completion's: only that one; a helper of the prompt the tests call (``encode_cyclic``) must come from the
    spec's setup, never from the completion, which could redefine it to suit its answer. Without one (MBPP),
    the tests call the completion's names directly; but a standard library module's name the tests use as a
    module (an attribute of it: ``math.isclose``, a module they forgot to import) is the judge's own import of
    that module, never an object of the completion's that says it is one (a function of the completion's named
    like a module, called by the tests, stays the completion's)."""
    if name == entry_point:
        return value
    if name in namespace or entry_point:
        return _MISSING
    if as_module and name in getattr(sys, "stdlib_module_names", ()) and not name.startswith("_"):
        import importlib

        try:
            return importlib.import_module(name)
        except ImportError:
            return _MISSING
    return value


def _failure(exc):
    """(error type, detail) of a test that raised: a failed assert's message, or the exception."""
    if isinstance(exc, AssertionError):
        return "AssertionError", str(exc)[:600] if str(exc) else "assertion failed"
    return type(exc).__name__, _error_detail(exc)


def _report_test(report, index, name, error, started, asserts):
    report(event="test", index=index, name=name, passed=error is None, error=error[0] if error else None,
           detail=error[1] if error else "", duration_s=round(_monotonic() - started, 6), asserts=asserts)


class _CountAsserts(ast.NodeTransformer):
    """``assert t, m`` becomes ``assert __rlvr_asserted(t), m``: the same check, counted (a test that passes
    without running an assert checked nothing, and the host does not count it as passed)."""

    def visit_Assert(self, node):
        self.generic_visit(node)
        node.test = ast.copy_location(ast.Call(ast.Name("__rlvr_asserted", ast.Load()), [node.test], []), node.test)
        return node


def _count_unittest_asserts(count):
    """unittest's ``assert*`` methods (``tc.assertEqual(...)``) count as asserts too (this process only)."""
    import unittest

    for name in dir(unittest.TestCase):
        method = getattr(unittest.TestCase, name)
        if name.startswith("assert") and callable(method):
            def counted(*args, _method=method, **kwargs):
                count(True)
                return _method(*args, **kwargs)

            setattr(unittest.TestCase, name, functools.wraps(method)(counted))


def _compile_counted(code, filename):
    return compile(ast.fix_missing_locations(_CountAsserts().visit(ast.parse(code, filename))), filename, "exec")


def main():
    procs.make_undumpable()
    sealed_workdir.seal_imports()  # what the judge imports later (a module the tests use) never comes from the work dir
    candidate = candidate_process.start_candidate()  # before the job is read: the candidate never holds it
    try:
        run(candidate)
    finally:
        candidate.close()


def _run_test_cases(namespace):
    """``unittest.main()`` of the tests (python_assert): runs the TestCase classes they define, here in the
    judge; an AssertionError naming the first failure when one fails or none ran."""
    import io
    import unittest

    loader = unittest.TestLoader()
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(value) for value in list(namespace.values())
                               if isinstance(value, type) and issubclass(value, unittest.TestCase)
                               and value is not unittest.TestCase)
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    if result.testsRun == 0:
        raise AssertionError("unittest.main() found no test methods in the tests' TestCase classes")
    problems = result.failures + result.errors + [(case, "unexpected success") for case in result.unexpectedSuccesses]
    if problems:
        case, text = problems[0]
        last = [line for line in str(text).strip().splitlines() if line.strip()][-1:]
        raise AssertionError(f"{len(problems)} of {result.testsRun} unittest tests failed; {case.id()}: "
                             f"{last[0] if last else text}")


def run(candidate):
    job = json.loads(sys.stdin.read())
    sys.stdin.close()
    report = _report_channel(job.pop("nonce"))
    asserted = [0]

    def count(value):
        asserted[0] += 1
        return value

    tests_builtins = dict(builtins.__dict__, isinstance=remote_objects.remote_isinstance)  # the completion's classes
    namespace = {"__name__": "tests", "__builtins__": tests_builtins, "__rlvr_explain": _explain,
                 "__rlvr_same": exact_types.same, "__rlvr_same_in": exact_types.same_in,
                 "__rlvr_asserted": count}
    namespace["__rlvr_unittest"] = lambda: _run_test_cases(namespace)
    try:
        setup = compile(job.get("setup", ""), "<setup>", "exec")
        compiled = [(item, _compile_counted(item["code"], f"<tests:{item['name']}>")) for item in job["items"]]
    except (SyntaxError, ValueError) as exc:
        report(event="compile_error", detail=_error_detail(exc))
        return
    if any(".assert" in item["code"] for item in job["items"]):
        _count_unittest_asserts(count)
    names = _load(candidate, report, job.get("setup", ""), job["solution"], job.get("names", ()))
    if names is None:
        return
    try:
        exec(setup, namespace)
    except BaseException as exc:  # noqa: BLE001
        report(event="setup_error", error=type(exc).__name__, detail=f"setup: {_error_detail(exc)}")
        report(event="end")
        return
    entry_point = job.get("entry_point", "")
    as_modules = _used_as_modules(item["code"] for item, _ in compiled)
    for name, value in names.items():
        bound = _candidate_name(name, value, entry_point, namespace, name in as_modules)
        if bound is not _MISSING:
            namespace[name] = bound
    index = 0
    for item, code in compiled:
        started = _monotonic()
        asserted[0] = 0
        try:
            exec(code, namespace)
            error = None
        except BaseException as exc:  # noqa: BLE001
            error = _failure(exc)
        if item["kind"] == "stmt":
            if error is not None:
                report(event="setup_error", error=error[0], detail=f"{item['name']}: {error[1]}")
                break
            continue
        _report_test(report, index, item["name"], error, started, asserted[0])
        index += 1
        if error is not None and job.get("fast_fail"):
            break
    report(event="end")


# ---- tests that are calls on literals, judged without running test code ------------------------------

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge, "is": operator.is_, "is not": operator.is_not, "in": lambda a, b: a in b,
        "not in": lambda a, b: a not in b}
_MISSING = object()
# The literals of a spec's calls, parsed once per text (a GRPO group's jobs share their spec); the short ones only,
# so the runner's memory stays bounded. Never mutated: the arguments cross to the candidate as wire data, the
# expected values are only compared and shown.
_cached_literal = functools.lru_cache(maxsize=2048)(ast.literal_eval)


def _literal(text):
    return _cached_literal(text) if len(text) <= 2048 else ast.literal_eval(text)


def judge_calls(candidate, job, report):
    """Judges tests made of calls of the completion's functions on literal arguments: ``assert f(2, 3) ==
    6``, ``assert 6 == f(2, 3)``, ``assert f(1) in [1, 2]``, ``assert f(x)``, ``assert not f(x)``, every
    argument and expected value a Python literal (``job["calls"]``, prepared by the service; each names its
    test: a top-level assert is a test of its own, HumanEval's ``check(candidate)`` one test of all its
    asserts). The verdicts are those ``run`` reaches on the same tests (the same values from the candidate, the
    same comparisons on them, the same messages); no test code is run, so the runner can judge these itself.
    ``judge.Interrupted`` (time or output up) is let through."""
    exact = bool(job.get("exact_types"))
    calls = job["calls"]
    names = _load(candidate, report, "", job["solution"], sorted({c["fn"] for c in calls}))
    if names is None:
        return
    by_test = {}
    for position, call in enumerate(calls):
        by_test.setdefault(call.get("test", position), []).append(call)
    tests = [item for item in job["items"] if item["kind"] == "test"]
    for index, item in enumerate(tests):
        started = _monotonic()
        try:
            for call in by_test.get(index, ()):
                _judge_call(names, call, exact)
            error = None
        except judge.Interrupted:
            raise
        except BaseException as exc:  # noqa: BLE001
            error = _failure(exc)
        _report_test(report, index, item["name"], error, started, len(by_test.get(index, ())))
        if error is not None and job.get("fast_fail"):
            break
    report(event="end")


def _judge_call(names, call, exact):
    """One assert of ``judge_calls``; AssertionError when it does not hold (with the judge's message: the values
    explained for a top-level comparison, the assert's own message in a ``check``)."""
    function = names.get(call["fn"], _MISSING)
    if function is _MISSING:
        raise NameError(f"name {call['fn']!r} is not defined")
    value = function(*_literal(call["args"]), **_literal(call["kwargs"]))
    op = call["op"]
    message = call.get("message")
    if op is None or op == "not":
        if (not value) if op is None else value:
            raise AssertionError(*([_literal(message)] if message is not None else []))
        return
    expected = _literal(call["expected"])
    left, right = (expected, value) if call["swap"] else (value, expected)
    if exact and op in ("==", "!="):
        holds = exact_types.same(left, right) == (op == "==")
    elif exact and op in ("in", "not in"):
        holds = exact_types.same_in(left, right) == (op == "in")
    else:
        holds = _OPS[op](left, right)
    if not holds:
        if message is not None:
            raise AssertionError(_literal(message))
        if call.get("explain", True):
            raise AssertionError(_explain(left, op, right))
        raise AssertionError


if __name__ == "__main__":
    main()
