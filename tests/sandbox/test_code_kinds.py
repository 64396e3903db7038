"""The sandboxed kinds against a real sandbox, on each backend: passing, failing, malformed, timeout and errors."""

from __future__ import annotations

import pytest

from support.service import requires

pytestmark = pytest.mark.backends("docker", "bwrap")


ADD = "```python\ndef add(a, b):\n    return a + b\n```"
SUB = "```python\ndef add(a, b):\n    return a - b\n```"
ADD_TESTS = "assert add(1, 2) == 3\nassert add(0, 0) == 0\nassert add(-2, 2) == 0"


def assert_spec(**extra):
    return {"kind": "python_assert", "extract": "fenced_code", "tests": ADD_TESTS, **extra}


class TestPythonAssert:
    def test_pass(self, service):
        r = service.verify(ADD, assert_spec())
        assert (r["verdict"], r["reward"], r["tests_passed"], r["tests_total"]) == ("PASSED", 1.0, 3, 3)
        assert [t["verdict"] for t in r["tests"]] == ["PASSED"] * 3

    def test_wrong_answer_fraction_and_all_or_nothing(self, service):
        frac = service.verify(SUB, assert_spec(scoring="fraction"))
        assert frac["verdict"] == "PARTIAL" and frac["tests_passed"] == 1  # a - b is right for (0, 0) only
        assert frac["correctness_score"] == pytest.approx(1 / 3)
        whole = service.verify(SUB, assert_spec())
        assert whole["correctness_score"] == 0.0 and whole["reward"] == pytest.approx(0.2)
        assert "add(1, 2) == 3" in whole["detail"]

    def test_malformed_scores_below_well_formed_wrong(self, service):
        malformed = service.verify("def add(a, b): return a + b", assert_spec())
        wrong = service.verify("```python\ndef add(a, b):\n    return 7\n```", assert_spec())
        assert malformed["verdict"] == "MALFORMED" and malformed["reward"] == 0.0
        assert wrong["verdict"] == "FAILED" and wrong["format_score"] == 1.0
        assert wrong["reward"] > malformed["reward"]

    def test_timeout(self, service):
        r = service.verify("```python\ndef add(a, b):\n    while True:\n        pass\n```", assert_spec(timeout_s=2))
        assert r["verdict"] == "TIMEOUT"
        assert all(t["verdict"] == "TIMEOUT" for t in r["tests"])

    def test_syntax_error_is_compile_error(self, service):
        r = service.verify("```python\ndef add(a, b)\n    return a + b\n```", assert_spec())
        assert r["verdict"] == "COMPILE_ERROR" and "SyntaxError" in r["detail"]

    def test_tests_that_import_a_module_the_sandbox_lacks_are_infra_error(self, service):
        tests = "import rlvr_no_such_module_here\n" + ADD_TESTS
        r = service.verify(ADD, assert_spec(tests=tests))
        assert r["verdict"] == "INFRA_ERROR" and "rlvr_no_such_module_here" in r["detail"], r
        guarded = "try:\n    import rlvr_no_such_module_here\nexcept ImportError:\n    pass\n" + ADD_TESTS
        assert service.verify(ADD, assert_spec(tests=guarded))["verdict"] == "PASSED"  # a missing module expected
        r = service.verify("```python\nimport rlvr_no_such_module_here\ndef add(a, b):\n    return a + b\n```",
                           assert_spec())
        assert r["verdict"] == "RUNTIME_ERROR", r  # the completion's own import: its verdict

    def test_completion_raising_is_runtime_error(self, service):
        r = service.verify("```python\nraise ValueError('boom')\n```", assert_spec())
        assert r["verdict"] == "RUNTIME_ERROR" and "boom" in r["detail"]
        assert r["tests_passed"] == 0 and r["tests_total"] == 3

    def test_entry_point_check_and_setup(self, service):
        spec = {"kind": "python_assert", "entry_point": "double", "setup": "import math",
                "tests": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0\n"}
        assert service.verify("def double(x):\n    return int(math.pow(x, 1)) * 2\n", spec)["verdict"] == "PASSED"
        r = service.verify("def double(x):\n    return x + 2\n", spec)
        assert r["verdict"] == "FAILED" and r["tests"][0]["name"] == "check(double)"

    def test_fast_fail_stops_at_first_failure(self, service):
        r = service.verify(SUB, assert_spec(fast_fail=True, scoring="fraction"))
        assert r["tests_passed"] == 0
        assert r["tests"][1]["detail"].startswith("not run")

    def test_helpers_in_tests_run_between_asserts(self, service):
        tests = "import itertools\npairs = list(itertools.product(range(3), repeat=2))\n" \
                "for a, b in pairs:\n    assert add(a, b) == a + b\n"
        r = service.verify(ADD, {"kind": "python_assert", "extract": "fenced_code", "tests": tests})
        assert r["verdict"] == "PASSED" and r["tests_total"] == 1


    def test_exact_types_looks_at_every_position_and_dict_keys(self, service):
        tests = "assert f() == {1: [1, (2, 'a')], 'k': {3}}\n"
        items = []
        for setup in ("", "import math\n"):  # judged by the runner (calls on literals) / by the judge process
            spec = {"kind": "python_assert", "exact_types": True, "tests": tests, "setup": setup}
            items += [
                ("def f():\n    return {1: [1, (2, 'a')], 'k': {3}}\n", spec, "PASSED"),
                ("def f():\n    return {True: [1, (2, 'a')], 'k': {3}}\n", spec, "FAILED"),  # a key: True for 1
                ("def f():\n    return {1.0: [1, (2, 'a')], 'k': {3}}\n", spec, "FAILED"),
                ("def f():\n    return {1: [1, (2.0, 'a')], 'k': {3}}\n", spec, "FAILED"),
                ("def f():\n    return {1: [1, [2, 'a']], 'k': {3}}\n", spec, "FAILED"),
                ("def f():\n    return {1: [1, (2, 'a')], 'k': {3.0}}\n", spec, "FAILED"),
                ("def f():\n    return {1: [1, (2, 'a')], 'k': frozenset({3})}\n", spec, "FAILED"),
            ]
            member = {"kind": "python_assert", "exact_types": True, "setup": setup,
                      "tests": "assert g(1) in [1, 2]\nassert g(0) not in (1, 2.0)\n"}
            items += [("def g(x):\n    return x\n", member, "PASSED"),
                      ("def g(x):\n    return bool(x)\n", member, "PARTIAL"),  # True is not in [1, 2]
                      ("def g(x):\n    return 2.0 if x else 2\n", member, "PARTIAL")]
        results = service.verify_batch([(code, s) for code, s, _ in items])
        assert [r["verdict"] for r in results] == [want for _, _, want in items], [r["detail"] for r in results]


class TestPythonIO:
    SPEC = {"kind": "python_io", "entry_point": "f", "cases": [
        {"args": [2], "expected": 4}, {"args": [3], "expected": 9}, {"kwargs": {"x": -1}, "expected": 1}]}

    def test_pass_and_fail(self, service):
        assert service.verify("def f(x):\n    return x * x\n", self.SPEC)["verdict"] == "PASSED"
        r = service.verify("def f(x):\n    return x + x\n", {**self.SPEC, "scoring": "fraction"})
        assert r["verdict"] == "PARTIAL" and r["tests_passed"] == 1
        assert "expected 9, got 6" in r["tests"][1]["detail"]

    def test_malformed(self, service):
        r = service.verify("no code here", {**self.SPEC, "extract": "fenced_code"})
        assert r["verdict"] == "MALFORMED"

    def test_timeout(self, service):
        r = service.verify("def f(x):\n    while True:\n        pass\n", {**self.SPEC, "timeout_s": 2})
        assert r["verdict"] == "TIMEOUT"

    def test_missing_function(self, service):
        r = service.verify("def g(x):\n    return x\n", self.SPEC)
        assert r["verdict"] == "RUNTIME_ERROR" and "does not define 'f'" in r["detail"]

    def test_exact_types_and_tolerance(self, service):
        spec = {"kind": "python_io", "entry_point": "f", "cases": [{"args": [], "expected": 1}]}
        assert service.verify("def f():\n    return True\n", spec)["verdict"] == "FAILED"  # bool is not int
        tol = {"kind": "python_io", "entry_point": "f", "float_tolerance": 1e-6,
               "cases": [{"args": [], "expected": 0.3}]}
        assert service.verify("def f():\n    return 0.1 + 0.2\n", tol)["verdict"] == "PASSED"
        exact = {**tol, "float_tolerance": 0}
        assert service.verify("def f():\n    return 0.1 + 0.2\n", exact)["verdict"] == "FAILED"
        tuples = {"kind": "python_io", "entry_point": "f", "cases": [{"args": [], "expected": [1, [2, "a"]]}]}
        assert service.verify("def f():\n    return (1, (2, 'a'))\n", tuples)["verdict"] == "PASSED"

    def test_always_equal_object_cannot_pass(self, service):
        code = "class Eq:\n    def __eq__(self, o):\n        return True\n\ndef f(x):\n    return Eq()\n"
        r = service.verify(code, self.SPEC)
        assert r["verdict"] == "FAILED" and r["tests_passed"] == 0

    def test_comparison_never_lets_a_wrong_type_or_value_pass(self, service):
        def spec(expected, tol=0.0):
            return {"kind": "python_io", "entry_point": "f", "float_tolerance": tol,
                    "cases": [{"args": [], "expected": expected}]}

        big = 2 ** 13_000  # past what the harness writes as decimal text: it crosses as hex
        items = [
            ("def f():\n    return 5.0001\n", spec(5, 1e-3), "FAILED"),  # an int expected value: exact
            ("def f():\n    return 5.0\n", spec(5, 1e-3), "PASSED"),
            ("def f():\n    return 0.30000001\n", spec(0.3, 1e-6), "PASSED"),  # honest float noise
            ("def f():\n    return {3, 1, 2}\n", spec([1, 2, 3]), "FAILED"),  # a set is not a sorted list
            ("def f():\n    return sorted({3, 1, 2})\n", spec([1, 2, 3]), "PASSED"),
            ("def f():\n    return {1: 'x', '1': 'y'}\n", spec({"1": "y"}), "FAILED"),  # colliding keys
            ("def f():\n    return {'__rlvr_int__': '5'}\n", spec(5), "FAILED"),  # the harness's own tag
            ("def f():\n    return 10 ** 400\n", spec(1.5, 1e-6), "FAILED"),  # a huge int meets a float
            ("def f():\n    return float('inf')\n", spec(1.5, 0.5), "FAILED"),
            ("def f():\n    return 2 ** 13_000\n", spec(big), "PASSED"),
            ("def f():\n    return 2 ** 13_000 + 1\n", spec(big), "FAILED"),
            ("def f():\n    return [[[[]]]] * 3\n", spec([[1]]), "FAILED"),
        ]
        results = service.verify_batch([(code, s) for code, s, _ in items])
        assert [r["verdict"] for r in results] == [want for _, _, want in items], [r["detail"] for r in results]

    def test_a_forged_end_or_an_unreadable_event_is_a_failure_not_infra_error(self, service):
        # The harness runs in the candidate's process: it can find the report channel and write to it.
        forged_end = ("import os, sys\ndef f(x):\n    report = sys._getframe(1).f_locals['report']\n"
                      "    report(event='case', index=0, value=x * x, duration_s='soon')\n"
                      "    report(event='end')\n    os._exit(0)\n")
        deep = ("import os, sys\ndef f(x):\n    main = sys._getframe(1).f_locals\n"
                "    report = main['report']\n"
                "    cells = {type(c.cell_contents).__name__: c.cell_contents for c in report.__closure__}\n"
                "    nonce, out = cells['str'], cells['TextIOWrapper']\n"
                "    out.write('{\"event\": \"case\", \"index\": 0, \"value\": ' + '[' * 100000 + ']' * 100000"
                " + ', \"nonce\": \"' + nonce + '\"}\\n')\n"
                "    out.write('{\"event\": \"case\", \"value\": 4, \"value\": 9, \"nonce\": \"' + nonce + '\"}\\n')\n"
                "    out.write('{\"event\": \"end\", \"nonce\": \"' + nonce + '\"}\\n')\n"
                "    out.flush()\n    os._exit(0)\n")
        first, second = service.verify_batch([(forged_end, self.SPEC), (deep, self.SPEC)])
        assert first["verdict"] == "PARTIAL" and first["tests_passed"] == 1 and first["correctness_score"] == 0.0
        assert [t["detail"] for t in first["tests"][1:]] == ["not reported by the harness"] * 2
        assert second["verdict"] == "FAILED" and second["tests_passed"] == 0, second["detail"]


class TestStdio:
    PY_SPEC = {"kind": "stdio", "language": "python", "cases": [
        {"stdin": "1 2\n", "expected_stdout": "3\n"}, {"stdin": "5 5\n", "expected_stdout": "10"}]}

    def test_python_pass_and_fail(self, service):
        assert service.verify("a, b = map(int, input().split())\nprint(a + b)\n", self.PY_SPEC)["verdict"] == "PASSED"
        r = service.verify("a, b = map(int, input().split())\nprint(a * b)\n", self.PY_SPEC)
        assert r["verdict"] == "FAILED" and "expected '3" in r["tests"][0]["detail"]

    def test_python_reads_dev_stdin_as_a_fork_and_as_a_fresh_interpreter(self, service):
        # The first case kills its program host (its result is void): the second runs as a fresh python3, whose
        # stdin must be a pipe as ``< input`` gives (open("/dev/stdin") fails with ENXIO on a socket).
        code = ("import os, signal\na, b = map(int, open('/dev/stdin').read().split())\nprint(a + b)\n"
                "if a == 1:\n    os.kill(os.getppid(), signal.SIGKILL)\n")
        r = service.verify(code, {**self.PY_SPEC, "scoring": "fraction"})
        assert [t["verdict"] for t in r["tests"]] == ["RUNTIME_ERROR", "PASSED"], r["tests"]

    def test_python_syntax_error_is_compile_error(self, service):
        assert service.verify("print(", self.PY_SPEC)["verdict"] == "COMPILE_ERROR"

    def test_cpp_pass_and_compile_error(self, service):
        requires(service, "g++")
        spec = {**self.PY_SPEC, "language": "cpp"}
        code = "#include <iostream>\nint main(){int a,b;std::cin>>a>>b;std::cout<<a+b<<std::endl;}\n"
        assert service.verify(code, spec)["verdict"] == "PASSED"
        r = service.verify("int main() { return undefined_name; }", spec)
        assert r["verdict"] == "COMPILE_ERROR" and "undefined_name" in r["detail"]
        assert r["reward"] == 0.0 and r["format_score"] == 0.0  # code that does not compile is not well-formed

    def test_runtime_error_and_case_timeout(self, service):
        r = service.verify("raise SystemExit(3)", self.PY_SPEC)
        assert r["verdict"] == "RUNTIME_ERROR" and "exit code 3" in r["tests"][0]["detail"]
        slow = {**self.PY_SPEC, "case_timeout_s": 1}
        r = service.verify("import time\ntime.sleep(5)\n", slow)
        assert r["verdict"] == "TIMEOUT"

    def test_fast_fail_stops_the_sandbox(self, service):
        spec = {**self.PY_SPEC, "fast_fail": True,
                "cases": [{"stdin": "1 2\n", "expected_stdout": "0"}] + self.PY_SPEC["cases"]}
        r = service.verify("a, b = map(int, input().split())\nprint(a + b)\n", spec)
        assert r["verdict"] == "PARTIAL" or r["verdict"] == "FAILED"
        assert r["tests_passed"] == 0
        assert [t["detail"] for t in r["tests"][1:]] == ["not run (fast_fail)"] * 2

    def test_compare_modes(self, service):
        code = "print('1.0000001  2')\n"
        case = [{"stdin": "", "expected_stdout": "1.0 2\n"}]
        assert service.verify(code, {"kind": "stdio", "compare": "float", "cases": case})["verdict"] == "PASSED"
        integer = [{"stdin": "", "expected_stdout": "1 2\n"}]  # an integer expected token: exact
        assert service.verify(code, {"kind": "stdio", "compare": "float", "cases": integer})["verdict"] == "FAILED"
        assert service.verify(code, {"kind": "stdio", "compare": "tokens", "cases": case})["verdict"] == "FAILED"
        exact = [{"stdin": "", "expected_stdout": "1.0000001  2"}]
        assert service.verify(code, {"kind": "stdio", "compare": "exact", "cases": exact})["verdict"] == "PASSED"


    def test_compare_modes_like_contest_judges(self, service):
        def spec(expected, compare="float"):
            return {"kind": "stdio", "compare": compare, "cases": [{"stdin": "", "expected_stdout": expected}]}

        nines = "9" * 400
        items = [
            (f"print('{nines[:-1]}8')", spec(nines + "\n"), "FAILED"),  # a 400-digit integer is not 'inf'
            (f"print('{nines}')", spec(nines), "PASSED"),
            ("print('inf')", spec("1e400"), "FAILED"),
            ("print('1000000001')", spec("1000000000"), "FAILED"),  # integers exactly, whatever the tolerance
            ("print('\\u0661\\u0662')", spec("12"), "FAILED"),  # non-ASCII digits are not digits
            ("print('1\\u00a02')", spec("1 2", "tokens"), "FAILED"),  # a no-break space is not a separator
            ("print('1\\x1c2')", spec("1 2", "tokens"), "FAILED"),  # nor is a control character
            ("print('0.3333334  YES ', end='\\r\\n\\n')", spec("0.333333 YES"), "PASSED"),  # honest variants
            ("print('3 ')\nprint()", spec("3\n", "tokens"), "PASSED"),
            ("print('3.000000')", spec("3"), "PASSED"),
        ]
        results = service.verify_batch([(code, s) for code, s, _ in items])
        assert [r["verdict"] for r in results] == [want for _, _, want in items], [r["detail"] for r in results]


class TestPytest:
    @pytest.fixture(autouse=True)
    def _pytest_in_sandbox(self, service):
        requires(service, "pytest")

    SPEC = {"kind": "pytest", "files": {"test_sol.py": (
        "from solution import rev\n\n"
        "def test_basic():\n    assert rev('abc') == 'cba'\n\n"
        "def test_empty():\n    assert rev('') == ''\n\n"
        "def test_pal():\n    assert rev('aba') == 'aba'\n")}}

    def test_pass(self, service):
        r = service.verify("def rev(s):\n    return s[::-1]\n", self.SPEC)
        assert r["verdict"] == "PASSED" and r["tests_total"] == 3
        assert {t["name"] for t in r["tests"]} == {"test_sol::test_basic", "test_sol::test_empty", "test_sol::test_pal"}

    def test_partial(self, service):
        r = service.verify("def rev(s):\n    return s\n", {**self.SPEC, "scoring": "fraction"})
        assert r["verdict"] == "PARTIAL" and r["tests_passed"] == 2
        assert r["correctness_score"] == pytest.approx(2 / 3)

    def test_import_error(self, service):
        r = service.verify("def other():\n    pass\n", self.SPEC)
        assert r["verdict"] in ("RUNTIME_ERROR", "FAILED") and r["tests_passed"] == 0

    def test_malformed_and_timeout(self, service):
        assert service.verify("nothing", {**self.SPEC, "extract": "fenced_code"})["verdict"] == "MALFORMED"
        r = service.verify("import time\ntime.sleep(30)\ndef rev(s):\n    return s\n", {**self.SPEC, "timeout_s": 2})
        assert r["verdict"] == "TIMEOUT"

    def test_tests_that_import_a_module_the_sandbox_lacks_are_infra_error(self, service):
        # ClassEval's tests import python-docx, openpyxl, ...: without them every completion failed, an
        # infrastructure fault scored as the model's. Only the spec's own imports decide; the spec's files and
        # the completion's module are the job's own
        files = {"helper.py": "def double(x):\n    return 2 * x\n",
                 "test_it.py": "import rlvr_no_such_module_here\nimport helper\nfrom solution import f\n\n"
                               "def test_f():\n    assert f(1) == helper.double(1)\n"}
        r = service.verify("def f(x):\n    return 2 * x\n", {"kind": "pytest", "files": files})
        assert r["verdict"] == "INFRA_ERROR" and "rlvr_no_such_module_here" in r["detail"], r
        present = {**files, "test_it.py": files["test_it.py"].replace("import rlvr_no_such_module_here\n", "")}
        assert service.verify("def f(x):\n    return 2 * x\n", {"kind": "pytest", "files": present})["verdict"] == \
            "PASSED"
        # a completion that imports a missing module is judged on what it wrote
        r = service.verify("import rlvr_no_such_module_here\ndef f(x):\n    return 2 * x\n",
                           {"kind": "pytest", "files": present})
        assert r["verdict"] in ("RUNTIME_ERROR", "FAILED"), r

    def test_data_files_the_tests_read_are_the_specs(self, service):
        # issue 31, class 7: a completion rewrites the data file (at import, in a call, from a thread) before the
        # tests read it; the tests read the spec's copy
        spec = {"kind": "pytest", "timeout_s": 60, "files": {
            "cases.json": "[[1, 2], [2, 4]]",
            "test_data.py": "import json\nfrom pathlib import Path\nfrom solution import f\n\n"
                            "def test_cases():\n    f(0)\n    for x, want in json.load(open('cases.json')):\n"
                            "        assert f(x) == want\n\n"
                            "def test_path():\n    f(0)\n    assert json.loads(Path('cases.json').read_text())[1] == "
                            "[2, 4]\n"}}
        honest = "def f(x):\n    return 2 * x\n"
        assert service.verify(honest, spec)["verdict"] == "PASSED"
        cheat = ("import os, threading\nBAD = '[[1, 0], [2, 0]]'\n"
                 "def write():\n    os.chmod('cases.json', 0o644) if os.path.exists('cases.json') else None\n"
                 "    with open('cases.json', 'w') as fh:\n        fh.write(BAD)\n"
                 "write()\n"
                 "def loop():\n    while True:\n        try:\n            write()\n        except OSError:\n"
                 "            pass\n"
                 "threading.Thread(target=loop, daemon=True).start()\n"
                 "def f(x):\n    write()\n    return 0\n")
        r = service.verify(cheat, spec)
        verdicts = {t["name"].split("::")[-1]: t["verdict"] for t in r["tests"]}
        assert verdicts == {"test_cases": "FAILED", "test_path": "PASSED"}, r  # the spec's data, not the rewrite

    def test_isinstance_of_the_completions_classes_holds_for_honest_objects(self, service):
        # issue 31, class 6 in the pytest kind: the completion's objects live in the candidate process
        spec = {"kind": "pytest", "files": {"test_stack.py": (
            "from solution import Stack, make\n\n"
            "def test_types():\n    s = make()\n    assert isinstance(s, Stack)\n"
            "    assert isinstance(s, (int, Stack)) and not isinstance(s, int) and isinstance(3, int)\n\n"
            "class TestMore:\n    def test_push(self):\n        s = Stack()\n        s.push(2)\n"
            "        assert isinstance(s, Stack) and s.size() == 1\n")}}
        honest = ("class Stack:\n    def __init__(self):\n        self.items = []\n"
                  "    def push(self, x):\n        self.items.append(x)\n"
                  "    def size(self):\n        return len(self.items)\n\n"
                  "def make():\n    return Stack()\n")
        r = service.verify(honest, spec)
        assert r["verdict"] == "PASSED" and r["tests_passed"] == 2, r
        other = honest.replace("    return Stack()", "    return [1]")  # not a Stack: isinstance must say so
        verdicts = {t["name"].split("::")[-1]: t["verdict"] for t in service.verify(other, spec)["tests"]}
        assert verdicts == {"test_types": "FAILED", "test_push": "PASSED"}

    def test_solution_path(self, service):
        spec = {"kind": "pytest", "solution_path": "pkg/impl.py",
                "files": {"pkg/__init__.py": "", "test_impl.py": "from pkg.impl import one\n\n"
                          "def test_one():\n    assert one() == 1\n"}}
        assert service.verify("def one():\n    return 1\n", spec)["verdict"] == "PASSED"
