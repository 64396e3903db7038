"""D function tests (gdc, kinds/d_tests.py) on Docker: MultiPL-E's form (humaneval-d's prompts: the imports and the
signature, the completion opens the body, a ``unittest`` block with ``alias candidate`` and an empty ``main``) on a
few HumanEval problems, each answered by a hand translation of HumanEval's canonical Python solution (no D dataset
with reference solutions is stored here) and by a wrong variant that must fail; a test program that is a ``main``
of ``assert`` calls; ``unittest`` blocks that call several functions the completion writes whole (no setup); and the
program the service assembles, read on the host."""

from __future__ import annotations

import pytest

from verifier_service.kinds import d_tests

PRELUDE = "import std.math;\nimport std.typecons;\n"


def multipl_e(doc: str, signature: str, entry: str, asserts: list[str]) -> tuple[str, str]:
    """(setup, tests) in humaneval_to_d.py's form."""
    setup = f"{PRELUDE}/*\n{doc}\n*/\n{signature} \n"
    body = "\n".join(f"    {a}" for a in asserts)
    return setup, f"unittest\n{{\n    alias candidate = {entry};\n\n{body}\n}}\nvoid main(){{}}"


# name -> (setup, tests, right completion, wrong completion)
PROBLEMS = {
    "HumanEval_0_has_close_elements": (*multipl_e(
        " Check if in given array of numbers, are any two numbers closer to each other than\n given threshold.",
        "bool has_close_elements(float[] numbers, float threshold)", "has_close_elements",
        ["assert(candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == true);",
         "assert(candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == false);",
         "assert(candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == true);",
         "assert(candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.8) == false);",
         "assert(candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == true);"]),
        "{\n    foreach (i, a; numbers)\n        foreach (j, b; numbers)\n"
        "            if (i != j && abs(a - b) < threshold)\n                return true;\n    return false;\n}\n",
        "{\n    foreach (i; 1 .. numbers.length)\n        if (abs(numbers[i] - numbers[i - 1]) < threshold)\n"
        "            return true;\n    return false;\n}\n"),
    "HumanEval_3_below_zero": (*multipl_e(
        " You're given an array of deposit and withdrawal operations on a bank account that starts with\n zero "
        "balance.", "bool below_zero(long[] operations)", "below_zero",
        ["assert(candidate([]) == false);", "assert(candidate([1L, 2L, -3L, 1L, 2L, -3L]) == false);",
         "assert(candidate([1L, 2L, -4L, 5L, 6L]) == true);",
         "assert(candidate([1L, -1L, 2L, -2L, 5L, -5L, 4L, -4L]) == false);",
         "assert(candidate([1L, -2L, 2L, -2L, 5L, -5L, 4L, -4L]) == true);"]),
        "{\n    long balance = 0;\n    foreach (op; operations) {\n        balance += op;\n"
        "        if (balance < 0)\n            return true;\n    }\n    return false;\n}\n",
        "{\n    long balance = 0;\n    foreach (op; operations)\n        balance += op;\n    return balance < 0;\n}\n"),
    "HumanEval_12_longest": (*multipl_e(
        " Out of array of strings, return the longest one. Return the first one in case of multiple\n strings of "
        "the same length. Return null in case the input array is empty.",
        "Nullable!(string) longest(string[] strings)", "longest",
        ["{\n        auto result = candidate([]);\n        assert(result.isNull);\n}\n",
         "{\n        auto result = candidate([\"x\", \"y\", \"z\"]);\n"
         "        assert(!result.isNull && result.get == \"x\");\n}\n",
         "{\n        auto result = candidate([\"x\", \"yyy\", \"zzzz\", \"www\", \"kkkk\", \"abc\"]);\n"
         "        assert(!result.isNull && result.get == \"zzzz\");\n}\n"]),
        "{\n    Nullable!string best;\n    foreach (s; strings)\n"
        "        if (best.isNull || s.length > best.get.length)\n            best = s;\n    return best;\n}\n",
        "{\n    Nullable!string best;\n    foreach (s; strings)\n"
        "        if (best.isNull || s.length >= best.get.length)\n            best = s;\n    return best;\n}\n"),
    "HumanEval_13_greatest_common_divisor": (*multipl_e(
        " Return a greatest common divisor of two integers a and b",
        "long greatest_common_divisor(long a, long b)", "greatest_common_divisor",
        ["assert(candidate(3L, 7L) == 1L);", "assert(candidate(10L, 15L) == 5L);",
         "assert(candidate(49L, 14L) == 7L);", "assert(candidate(144L, 60L) == 12L);"]),
        "{\n    while (b) {\n        auto t = a % b;\n        a = b;\n        b = t;\n    }\n    return a;\n}\n",
        "{\n    return a < b ? a : b;\n}\n"),
    "HumanEval_34_unique": (*multipl_e(
        " Return sorted unique elements in an array", "long[] unique(long[] l)", "unique",
        ["assert(candidate([5L, 3L, 5L, 2L, 3L, 3L, 9L, 0L, 123L]) == [0L, 2L, 3L, 5L, 9L, 123L]);"]),
        "{\n    import std.algorithm : sort, uniq;\n    import std.array : array;\n"
        "    return l.dup.sort().uniq().array;\n}\n",
        "{\n    import std.algorithm : sort;\n    return l.dup.sort().release;\n}\n"),
    "HumanEval_107_even_odd_palindrome": (*multipl_e(
        " Given a positive integer n, return a tuple that has the number of even and odd\n integer palindromes "
        "that fall within the range(1, n), inclusive.", "Tuple!(long, long) even_odd_palindrome(long n)",
        "even_odd_palindrome",
        ["assert(candidate(123L) == tuple(8L, 13L));", "assert(candidate(12L) == tuple(4L, 6L));",
         "assert(candidate(3L) == tuple(1L, 2L));", "assert(candidate(63L) == tuple(6L, 8L));",
         "assert(candidate(25L) == tuple(5L, 6L));", "assert(candidate(19L) == tuple(4L, 6L));",
         "assert(candidate(9L) == tuple(4L, 5L));", "assert(candidate(1L) == tuple(0L, 1L));"]),
        "{\n    import std.conv : to;\n    import std.range : retro;\n    import std.array : array;\n"
        "    long even = 0, odd = 0;\n    foreach (i; 1 .. n + 1) {\n        auto s = to!string(i);\n"
        "        if (s == to!string(s.retro.array)) {\n            if (i % 2 == 0) even++; else odd++;\n"
        "        }\n    }\n    return tuple(even, odd);\n}\n",
        "{\n    import std.conv : to;\n    import std.range : retro;\n    import std.array : array;\n"
        "    long even = 0, odd = 0;\n    foreach (i; 1 .. n) {\n        auto s = to!string(i);\n"
        "        if (s == to!string(s.retro.array)) {\n            if (i % 2 == 0) even++; else odd++;\n"
        "        }\n    }\n    return tuple(even, odd);\n}\n"),
    "HumanEval_136_largest_smallest_integers": (*multipl_e(
        " Create a function that returns a tuple (a, b), where 'a' is the largest of negative integers, and\n"
        " 'b' is the smallest of positive integers in an array. If there is no negative or positive integers,\n"
        " return them as None.",
        "Tuple!(Nullable!(long), Nullable!(long)) largest_smallest_integers(long[] lst)", "largest_smallest_integers",
        ["{\n        auto result = candidate([2L, 4L, 1L, 3L, 5L, 7L]);\n        assert(result[0].isNull);\n"
         "        assert(!result[1].isNull && result[1].get == 1L);\n}\n",
         "{\n        auto result = candidate([]);\n        assert(result[0].isNull);\n"
         "        assert(result[1].isNull);\n}\n",
         "{\n        auto result = candidate([-6L, -4L, -4L, -3L, 1L]);\n"
         "        assert(!result[0].isNull && result[0].get == -3L);\n"
         "        assert(!result[1].isNull && result[1].get == 1L);\n}\n"]),
        "{\n    Nullable!long neg, pos;\n    foreach (x; lst) {\n"
        "        if (x < 0 && (neg.isNull || x > neg.get)) neg = x;\n"
        "        if (x > 0 && (pos.isNull || x < pos.get)) pos = x;\n    }\n    return tuple(neg, pos);\n}\n",
        "{\n    Nullable!long neg, pos;\n    foreach (x; lst) {\n"
        "        if (x < 0 && (neg.isNull || x < neg.get)) neg = x;\n"
        "        if (x > 0 && (pos.isNull || x < pos.get)) pos = x;\n    }\n    return tuple(neg, pos);\n}\n"),
    "HumanEval_23_strlen": (*multipl_e(
        " Return length of given string", "long strlen(string string0)", "strlen",
        ["assert(candidate(\"\") == 0L);", "assert(candidate(\"x\") == 1L);",
         "assert(candidate(\"asdasnakj\") == 9L);"]),
        "{\n    return cast(long) string0.length;\n}\n",
        "{\n    return cast(long) string0.length - 1;\n}\n"),
}

# Forms other than MultiPL-E's: a main of assert calls (the completion writes the function whole, the setup declares
# nothing); unittest blocks that call several functions of the completion's (no setup).
FORMS = {
    "assert main": ("", "long square(long x) {\n    return x * x;\n}\n",
                    "long square(long x) {\n    return x + x;\n}\n",
                    "void main() {\n    assert(square(3) == 9);\n    assert(square(-2) == 4, \"square(-2)\");\n}\n"),
    "unittest, several functions": (
        "", "import std.algorithm : sum;\n\nlong total(long[] xs) {\n    return xs.sum;\n}\n\n"
        "bool is_even(long n) {\n    return n % 2 == 0;\n}\n",
        "import std.algorithm : sum;\n\nlong total(long[] xs) {\n    return xs.sum;\n}\n\n"
        "bool is_even(long n) {\n    return n % 2 == 1;\n}\n",
        "unittest {\n    assert(total([1L, 2L, 3L]) == 6);\n    assert(is_even(total([1L, 3L])));\n}\n"
        "unittest {\n    static assert(is(typeof(total([])) == long));\n    assert(!is_even(7));\n}\n"),
    # a completion that starts threads (the end's fork filter lets threads through)
    "threads": (
        PRELUDE + "long parallel_sum(long[] xs) \n",
        "{\n    import std.parallelism : taskPool;\n    import core.thread : Thread;\n    long extra = 0;\n"
        "    auto t = new Thread({ extra = 0; });\n    t.start();\n    t.join();\n"
        "    return taskPool.reduce!\"a + b\"(0L, xs) + extra;\n}\n",
        "{\n    import std.parallelism : taskPool;\n    return taskPool.reduce!\"a + b\"(1L, xs);\n}\n",
        "unittest\n{\n    alias candidate = parallel_sum;\n\n    assert(candidate([1L, 2L, 3L]) == 6L);\n"
        "    assert(candidate(new long[](1000)) == 0L);\n}\nvoid main(){}"),
    # a completion whose table a module constructor fills (it runs, after the end read its secret)
    "module constructor": (
        PRELUDE + "long roman_value(string s) \n",
        "{\n    long total = 0;\n    foreach (i, c; s) {\n        long v = values[c];\n"
        "        if (i + 1 < s.length && values[s[i + 1]] > v) total -= v; else total += v;\n    }\n"
        "    return total;\n}\n\nlong[char] values;\n\nshared static this() {\n"
        "    values = ['I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000];\n}\n",
        "{\n    long total = 0;\n    foreach (c; s) total += values.get(c, 0);\n    return total;\n}\n\n"
        "long[char] values;\n\nshared static this() {\n"
        "    values = ['I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000];\n}\n",
        "unittest\n{\n    alias candidate = roman_value;\n\n    assert(candidate(\"XIV\") == 14L);\n"
        "    assert(candidate(\"MCMXCIV\") == 1994L);\n}\nvoid main(){}"),
}


def d_spec(setup: str, tests: str) -> dict:
    return {"kind": "function_tests", "language": "d", "setup": setup, "tests": tests, "timeout_s": 30}


@pytest.mark.docker
def test_multipl_e_problems_and_forms(langs_service):
    """Each right answer passes and each wrong one fails."""
    _right_pass_wrong_fail(langs_service)


@pytest.mark.backends("bwrap")
def test_multipl_e_problems_and_forms_on_bubblewrap(make_service):
    """The same on bubblewrap, with the host's gdc (Debian's `gdc`, /usr/bin); a host without it answers
    INFRA_ERROR naming the backend for every one, right or wrong (never a verdict)."""
    import shutil

    svc = make_service(compile_timeout_s=180.0, default_timeout_s=30.0)
    if shutil.which("gdc", path="/usr/local/bin:/usr/bin:/bin"):
        _right_pass_wrong_fail(svc)
        return
    setup, tests, right, wrong = PROBLEMS["HumanEval_13_greatest_common_divisor"]
    for r in svc.verify_batch([(right, d_spec(setup, tests)), (wrong, d_spec(setup, tests))], timeout=300):
        assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], r["detail"][:300]


def _right_pass_wrong_fail(service) -> None:
    items = []
    for name, (setup, tests, right, wrong) in PROBLEMS.items():
        items += [(name, "right", right, d_spec(setup, tests)), (name, "wrong", wrong, d_spec(setup, tests))]
    for name, (setup, right, wrong, tests) in FORMS.items():
        items += [(name, "right", right, d_spec(setup, tests)), (name, "wrong", wrong, d_spec(setup, tests))]
    out = service.verify_batch([(c, s) for *_, c, s in items], timeout=900)
    got = {(name, what): r["verdict"] for (name, what, *_), r in zip(items, out, strict=True)}
    want = {(name, what): "PASSED" if what == "right" else "FAILED" for name, what, *_ in items}
    assert got == want, {k: r["detail"][:300] for (k, r) in zip(got, out, strict=True) if got[k] != want[k]}


def test_the_program_is_two_modules_with_the_services_checks():
    setup, tests, right, _ = PROBLEMS["HumanEval_13_greatest_common_divisor"]
    files = d_tests.units(setup, right, tests, "tq1")
    assert set(files) == {"tq1_sol.d", "tq1_sol.di", "tq1_tests.d"}
    assert files["tq1_sol.di"].endswith("long greatest_common_divisor(long a, long b);\n")
    assert "candidate(" in files["tq1_tests.d"] and right not in files["tq1_tests.d"]
    assert "assert(" not in files["tq1_tests.d"].split("#line 1 \"end.d\"")[0]
    assert "tq1_check(candidate(3L, 7L) == 1L);" in files["tq1_tests.d"]
    assert "void tq1_tests_main(){}" in files["tq1_tests.d"] and "extern(C) int main(" in files["tq1_tests.d"]
    # static assert stays; a main of assert calls is called by the end
    made = d_tests.tests_module("", FORMS["unittest, several functions"][3], "tq1", ["total", "is_even"])
    assert "static assert(is(" in made and "tq1_check(total(" in made
    made = d_tests.tests_module("", FORMS["assert main"][3], "tq1", ["square"])
    assert "tq1_tests_main();" in made
    # the completion's whole functions are declared to the tests (its imports too), a template or an auto is not
    decls, names = d_tests.header("", FORMS["unittest, several functions"][1])
    assert names == ["total", "is_even"] and "import std.algorithm : sum;" in decls
    assert "long total(long[] xs);" in decls and "return" not in decls
    assert d_tests.header("", "auto f(T)(T x) { return x; }\n") is None
    assert d_tests.nested_unittests("struct S {\n    unittest { assert(0); }\n}\nvoid main() {}\n")
    assert not d_tests.nested_unittests(FORMS["unittest, several functions"][3])
    # a completion that names its module: the service names it
    files = d_tests.units("", "// answer\nmodule solution;\nlong f() { return 1; }\n", "void main() {}\n", "tq1")
    assert "module solution" not in files["tq1_sol.d"] and files["tq1_sol.d"].startswith("module tq1_sol;")
    # comments and strings name nothing
    text = 'a /+ x /+ y +/ z +/ "q{" `r` b'
    out = d_tests.blank(text)
    assert len(out) == len(text) and out[0] == "a" and out[-1] == "b" and set(out[1:-1]) == {" "}
