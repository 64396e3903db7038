"""function_tests (MultiPL-E's form: completion + a test program in its language) on Docker, per language: a right
function passes, a wrong one fails, one that does not compile is COMPILE_ERROR, a repeated one is compiled once;
and the program the service assembles, read on the host."""

from __future__ import annotations

import pytest

from verifier_service.kinds import d_tests
from verifier_service.kinds.function_tests import SUPPORTED, assemble

ADD = {  # language -> (setup, right completion, tests)
    "c": ("int add(int a, int b);\n", "int add(int a, int b) { return a + b; }\n",
          "#include <assert.h>\nint main() {\n    assert(add(1, 2) == 3);\n    assert(add(-1, 1) == 0);\n}\n"),
    "cpp": ("#include <vector>\nlong add(long a, long b);\n", "long add(long a, long b) { return a + b; }\n",
            "#undef NDEBUG\n#include <assert.h>\nint main() {\n    auto candidate = add;\n"
            "    assert(candidate(1, 2) == 3);\n    assert(candidate(-1, 1) == 0);\n}\n"),
    "java": ("import java.util.*;\n\nclass Problem {\n    public static int add(int a, int b) {\n",
             "        return a + b;\n    }\n",
             "    public static void main(String[] args) {\n        assert(add(1, 2) == 3);\n"
             "        assert(add(-1, 1) == 0);\n    }\n\n}\n"),
    "javascript": ("", "function add(a, b) {\n  return a + b;\n}\n",
                   "const assert = require('node:assert');\n\nfunction test() {\n  let candidate = add;\n"
                   "  assert.deepEqual(candidate(1, 2), 3);\n  assert.deepEqual(candidate(-1, 1), 0);\n}\n\ntest();\n"),
    "typescript": ("", "function add(a: number, b: number): number {\n  return a + b;\n}\n",
                   "declare var require: any;\nconst assert = require('node:assert');\nfunction test() {\n"
                   "  let candidate = add;\n  assert.deepEqual(candidate(1, 2), 3);\n"
                   "  assert.deepEqual(candidate(-1, 1), 0);\n}\n\ntest();\n"),
    "go": ("package main\n\n", "func add(a int, b int) int {\n\treturn a + b\n}\n",
           'func main() {\n\tif add(1, 2) != 3 {\n\t\tpanic("add(1, 2)")\n\t}\n\tif add(-1, 1) != 0 {\n'
           '\t\tpanic("add(-1, 1)")\n\t}\n}\n'),
    "rust": ("", "fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n",
             "fn main() {\n    let candidate = add;\n    assert_eq!(candidate(1, 2), 3);\n"
             "    assert_eq!(candidate(-1, 1), 0);\n}\n"),
    "bash": ("", "add() {\n  echo $(( $1 + $2 ))\n}\n",
             'candidate() {\n    add "$@"\n}\n\nset -e\nrun_test() {\n    [[ $(candidate 1 2) = "3" ]]\n'
             '    [[ $(candidate -1 1) = "0" ]]\n}\n\nrun_test\n'),
    "php": ("<?php\n\nfunction add($a, $b) {\n", "    return $a + $b;\n}\n",  # MXEval's MBXP form
            "\nfunction compare($x, $y) {\n    return $x == $y;\n}\n\n"
            "if (!compare(add(1, 2), 3)) {\n    throw new Exception(\"Error at 1th assert statement.\");\n}\n"
            "if (!compare(add(-1, 1), 0)) {\n    throw new Exception(\"Error at 2th assert statement.\");\n}\n"),
    # MultiPL-E's form (the tests begin by closing the function the completion continues): Lua, Perl (with
    # Test::More, which reports a failure through the exit status), R
    "lua": ("local function add(a, b)\n", "    return a + b\n",
            "end\n\nlocal function test()\n    local candidate = add\n    assert(candidate(1, 2) == 3)\n"
            "    assert(candidate(-1, 1) == 0)\nend\n\ntest()\n"),
    "perl": ("sub add {\n    my ($a, $b) = @_;\n", "    return $a + $b;\n",
             "}\n\nuse Test::More tests => 2;\n\nis_deeply(add(1, 2), 3, 'add(1, 2)');\n"
             "is(add(-1, 1), 0, 'add(-1, 1)');\n"),
    "r": ("add <- function(a, b) {\n", "    a + b\n",
          "}\n\ntest_humaneval <- function() {\ncandidate <- add\n"
          "    if(!identical(candidate(1, 2), 3)){quit('no', 1)}\n"
          "    stopifnot(candidate(-1, 1) == 0)\n}\ntest_humaneval()\n"),
    # MultiPL-E's form (humaneval-cs: the tests close the method, hold Main and close the class)
    "csharp": ("using System;\nusing System.Diagnostics;\nusing System.Linq;\nusing System.Collections.Generic;\n"
               "class Problem {\n    public static long Add(long a, long b) {\n", "        return a + b;\n",
               "    }\n    public static void Main(string[] args) {\n    Debug.Assert(Add((1L), (2L)) == (3L));\n"
               "    Debug.Assert(Add((-1L), (1L)) == (0L));\n    }\n\n}\n"),
    # MultiPL-E's form (humaneval-d: the prompt's imports and signature, the completion opens the body, a unittest
    # block and an empty main; its harness runs `rdmd -unittest -main`)
    "d": ("import std.math;\nimport std.typecons;\n/*\n Add two numbers\n*/\nlong add(long a, long b) \n",
          "{\n    return a + b;\n}\n",
          "unittest\n{\n    alias candidate = add;\n\n    assert(candidate(1L, 2L) == 3L);\n"
          "    assert(candidate(-1L, 1L) == 0L);\n}\nvoid main(){}"),
    # MultiPL-E's form (humaneval_to_rb.py: test-unit, `candidate = method(:add)`, assert_equal(expected, actual))
    "ruby": ("def add(a, b)\n", "  a + b\nend\n",
             "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
             "    candidate = method(:add)\n    assert_equal(3, candidate.call(1, 2))\n"
             "    assert_equal(0, candidate.call(-1, 1))\n  end\nend\n"),
}
BROKEN = {"c": "int add(int a, int b) { return a + ; }\n",
          "cpp": "long add(long a, long b) { return a + ; }\n", "java": "        return a + ;\n    }\n",
          "javascript": "function add(a, b) {\n  return a + ;\n}\n",
          "typescript": "function add(a: number, b: number): number {\n  return a + ;\n}\n",
          "go": "func add(a int, b int) int {\n\treturn a +\n}\n",
          "rust": "fn add(a: i64, b: i64) -> i64 {\n    a +\n}\n",
          "bash": "add() {\n  if then\n}\n", "php": "    return $a + ;\n}\n", "lua": "    return a +\n",
          "perl": "    return $a + ;\n", "r": "    a + \n", "csharp": "        return a + ;\n",
          "d": "{\n    return a + ;\n}\n", "ruby": "  a +\nend\n"}


def wrong(language: str) -> str:
    return ADD[language][1].replace("a + b", "a - b").replace("$1 + $2", "$1 - $2").replace("$a + $b", "$a - $b")


def spec(language: str) -> dict:
    setup, _, tests = ADD[language]
    return {"kind": "function_tests", "language": language, "setup": setup, "tests": tests, "timeout_s": 30}


def test_every_supported_language_has_a_case():
    assert set(ADD) == set(SUPPORTED) == set(BROKEN)


@pytest.mark.docker
class TestFunctionTests:
    @pytest.fixture(scope="class")
    def results(self, langs_service):
        items = []
        for lang in sorted(ADD):
            items += [(lang, "right", ADD[lang][1]), (lang, "right again", ADD[lang][1]), (lang, "wrong", wrong(lang)),
                      (lang, "broken", BROKEN[lang])]
        out = langs_service.verify_batch([(source, spec(lang)) for lang, _, source in items], timeout=900)
        return {(lang, what): r for (lang, what, _), r in zip(items, out, strict=True)}

    @pytest.mark.parametrize("language", sorted(ADD))
    def test_verdicts(self, results, language):
        got = {what: results[language, what]["verdict"] for what in ("right", "right again", "wrong", "broken")}
        assert got == {"right": "PASSED", "right again": "PASSED", "wrong": "FAILED", "broken": "COMPILE_ERROR"}, {
            what: results[language, what]["detail"][:300] for what in got}

    def test_the_nonce_is_not_shown(self, results):
        for (lang, what), r in results.items():
            if what == "right":
                assert "<end of tests>" in r["stdout_tail"], (lang, r["stdout_tail"])


# McEval's forms and the others the dynamic languages' tests take (the completion writes the whole function):
# Lua's assert in a test function then called, Perl's die ... unless, R's stopifnot.
FORMS = {
    "lua mceval": ("lua", "function add(a, b)\n  return a + b\nend\n",
                   "function testAdd()\n  assert(add(1, 2) == 3)\n  assert(add(-1, 1) == 0, 'add(-1, 1)')\nend\n\n"
                   "testAdd()\n"),
    "perl die": ("perl", "use strict;\nsub add {\n  my ($x, $y) = @_;\n  return $x + $y;\n}\n",
                 "\nsub check {\n  die \"add(1, 2)\" unless add(1, 2) == 3;\n"
                 "  die \"add(-1, 1)\" unless add(-1, 1) == 0;\n}\n"
                 "check();\n"),
    "perl test more done_testing": ("perl", "sub add { return $_[0] + $_[1]; }\n",
                                    "use Test::More;\nis(add(1, 2), 3);\nok(add(-1, 1) == 0);\ndone_testing();\n"),
    "r stopifnot": ("r", "add <- function(a, b) a + b\n",
                    "stopifnot(add(1, 2) == 3)\n"
                    "stopifnot(identical(add(-1, 1), 0), isTRUE(all.equal(add(0.1, 0.2), 0.3)))\n"),
    # Ruby: McEval's forms (top-level raise ... unless; a check(method) of raise ... if/unless) and Minitest's
    "ruby mceval": ("ruby", "def add(a, b)\n  a + b\nend\n",
                    "raise 'Test failed' unless add(1, 2) == 3\nraise 'Test failed' unless add(-1, 1) == 0\n"
                    "puts 'All tests passed!'\n"),
    "ruby check": ("ruby", "def add(a, b)\n  a + b\nend\n",
                   "  # Test cases\n  def check(add)\n    raise 'Test failed' unless add.call(1, 2) == 3\n"
                   "    raise 'Test failed' if add.call(-1, 1) != 0\n  end\n\ncheck(method(:add))\n"),
    "ruby minitest": ("ruby", "def add(a, b)\n  a + b\nend\n",
                      "require 'minitest/autorun'\nclass TestAdd < Minitest::Test\n  def test_add\n"
                      "    assert_equal 3, add(1, 2)\n    assert_equal 0, add(-1, 1)\n  end\nend\n"),
    # an honest completion that extends core classes, includes Math and takes Kernel's `format` for its own helper
    "ruby extensions": ("ruby", "require 'set'\ninclude Math\nclass Integer\n  def twice = self * 2\nend\n"
                        "def format(x) = x.to_s\ndef add(a, b)\n  Set[a].first + b + sqrt(0).to_i + 0.twice + "
                        "format(1).size - 1\nend\n",
                        "raise 'Test failed' unless add(1, 2) == 3\nraise 'Test failed' unless add(-1, 1) == 0\n"),
    # libraries loaded by the completion and by the tests (pp redefines Kernel#pp as it loads, json adds to_json
    # to Object, set to_set to Enumerable): no change to what there was
    "ruby libraries": ("ruby", "require 'pp'\nrequire 'set'\ndef add(a, b)\n  pp(a) if a == 99\n  a + b\nend\n",
                       "require 'json'\nrequire 'time'\npp add(1, 2)\nraise 'Test failed' unless add(1, 2) == 3\n"
                       "raise 'Test failed' unless JSON.generate([add(-1, 1)]) == '[0]'\n"),
    "ruby test-unit two methods": ("ruby", "def add(a, b)\n  a + b\nend\n",
                                   "require 'test/unit'\nclass TestAdd < Test::Unit::TestCase\n"
                                   "  def test_one\n    assert_equal(3, add(1, 2))\n  end\n\n"
                                   "  def test_two\n    assert_equal(0, add(-1, 1))\n  end\nend\n"),
}


@pytest.mark.docker
def test_the_dynamic_languages_test_forms(langs_service):
    items = []
    for name, (lang, right, tests) in FORMS.items():
        spec_ = {"kind": "function_tests", "language": lang, "tests": tests, "timeout_s": 30}
        items += [(name, "right", right, spec_), (name, "wrong", right.replace("+", "-"), spec_)]
    out = langs_service.verify_batch([(src, sp) for _, _, src, sp in items], timeout=600)
    got = {(name, what): r["verdict"] for (name, what, _, _), r in zip(items, out, strict=True)}
    assert got == {(name, what): "PASSED" if what == "right" else "FAILED" for name, what, _, _ in items}, \
        [(k, r["detail"][:200], r.get("stderr_tail", "")[-200:]) for k, r in zip(got, out, strict=True)]


@pytest.mark.parametrize("language", SUPPORTED)
def test_the_nonce_is_not_in_the_program(language):
    setup, completion, tests = ADD[language]
    a, b = bytes(range(16)), bytes(range(100, 116))
    nonce = bytes(p ^ q for p, q in zip(a, b, strict=True)).hex()
    if language == "d":  # two modules, the end's secret read from stdin: neither half is in them
        program = "\n".join(d_tests.units(setup, completion, tests, "tq1").values())
        assert nonce not in program and a.hex() not in program and b.hex() not in program
        return
    program = assemble(language, setup, completion, tests, a, b, "tq1")
    assert nonce not in program
    last = tests.strip().splitlines()[-1]  # (Java's tests' main is renamed, their asserts made checks)
    assert program.index(completion) < program.rindex(last)  # the completion, then the tests


def test_c_and_cpp_tests_are_a_translation_unit_of_their_own():
    """No macro of the completion's reaches the tests: the tests' unit holds the setup's declarations, the tests and
    the end; MultiPL-E's tests begin by closing the completion's function (that brace goes to the completion's
    unit); a main that takes argc, argv is called with them."""
    from verifier_service.kinds.function_tests import c_header, c_units

    setup = "#include<assert.h>\n#include<bits/stdc++.h>\nlong add(long a, long b) {\n"
    units = c_units("cpp", setup, "    return a + b;\n#define assert(x)\n", "}\nint main(int argc, char **argv) {\n"
                    "    assert(add(1, 2) == 3);\n}\n", b"a" * 16, b"b" * 16, "tq1")
    assert set(units) == {"completion.cpp", "tests.cpp"}
    assert "#define assert" not in units["tests.cpp"] and units["completion.cpp"].rstrip().endswith("}")
    assert units["tests.cpp"].startswith("#include<assert.h>\n#include<bits/stdc++.h>\nlong add(long a, long b);")
    assert "tq1_tests_main(argc, argv);" in units["tests.cpp"]
    assert c_header("int add(int a, int b);\n") == "int add(int a, int b);\n"
    # McEval's prompts end with the signature, the completion opens the body: the tests' unit gets the prototype.
    assert c_header("/* add(1, 2) */\nint add(int a, int b)\n\n", "{\n    return a + b;\n}\n") == \
        "/* add(1, 2) */\nint add(int a, int b);\n"
    assert c_header("#define TWICE(x)\n", "{ int y; }\n") == "#define TWICE(x)\n"


def test_java_tests_run_from_their_own_class_with_plain_checks():
    from verifier_service.kinds import java_source

    setup, _, tests = ADD["java"]
    program = assemble("java", setup, "        return 0;\n    }\n    public static void main(String[] a) {}\n}\n"
                       "class Elsewhere {\n", tests, b"a" * 16, b"b" * 16, "tq1")
    assert "Problem.tq1_main(args);" in program and "static void tq1_main(" in program
    assert "throw new AssertionError" in program and "assert(" not in program
    assert java_source.tests_entry("class A {\n// class B\n", "public static void main(String[] x) {}\n}\n") == "A"
    # HumanEval-X's form: the setup opens class Solution (the completion closes it), the tests are a class of their own
    assert java_source.tests_entry("class Solution {\n    public int f(int a) {\n",
                                   "public class Main {\n    public static void main(String[] args) {}\n}\n") == "Main"


@pytest.mark.parametrize("source, file, run", [
    ("// the class below\n/** A class that solves it. */\npublic class Sol { public static void main(String[] a) {} }",
     "Sol.java", "Sol"),
    ("class Helper { int x; }\npublic class Main2 { public static void main(String[] a) {} }", "Main2.java", "Main2"),
    ("class Helper { int x; }\nclass Runner { public static void main(String[] a) {} }", "Main.java", "Runner"),
    ("public class \u00dcber { public static void main(String[] a) { String s = \"class X\"; } }",
     "\u00dcber.java", "\u00dcber"),
    ("import java.util.*;\npublic enum Solver { ; public static void main(String[] args) {} }",
     "Solver.java", "Solver"),
    ("public class C { char q = '\"'; String s = \"class D {\"; public static void main(String[] a) {} }",
     "C.java", "C"),
])
def test_java_file_and_class_from_the_source_as_javac_reads_it(source, file, run):
    from verifier_service.kinds.languages import LANGUAGES

    got_file, _, got_run = LANGUAGES["java"].files(source)
    assert (got_file, got_run[-1]) == (file, run)


def test_the_modules_dynamic_tests_load_are_found():
    from verifier_service.kinds.probe import dynamic_imports

    assert dynamic_imports("lua", "lu = require('luaunit')\nlocal x = require \"m.n\"\n") == ("luaunit", "m.n")
    assert dynamic_imports("perl", "use strict;\nuse Test::Deep;\nuse Test::More tests => 2;\n") == \
        ("Test::Deep", "Test::More")
    assert dynamic_imports("r", "library(testthat)\nrequire('stats')\n") == ("stats", "testthat")
    assert dynamic_imports("ruby", "require 'test/unit'\n  require(\"minitest/autorun\")\nx.require 'no'\n") == \
        ("minitest/autorun", "test/unit")
    go = ('package main\n\nimport (\n\t"testing"\n\ta "github.com/x/y.v3"\n\t"unsafe"\n)\nimport m "math"\n'
          'import "fmt"\n')
    assert dynamic_imports("go", go) == ("fmt", "github.com/x/y.v3", "math", "testing")


# MultiPL-E's Lua tests (luaunit) and Perl tests (Test::Deep), as function_tests: (setup, right, wrong, tests).
MULTIPL_E_DYNAMIC = {
    "lua": ("local function add(a, b)\n", "    return a + b\n", "    return a - b\n",
            "end\n\nlu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = add\n"
            "    lu.assertEquals(candidate(1, 2), 3)\nend\n\nos.exit(lu.LuaUnit.run())"),
    "perl": ("sub add {\n    my ($a, $b) = @_;\n", "    return $a + $b;\n", "    return $a - $b;\n",
             "}\nuse Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&add;\n"
             "        if(eq_deeply($candidate->(1, 2),3)) {\n        print \"ok!\" }else{\n        exit 1;\n"
             "        }\n}\n\ntesthumaneval();\n"),
}


@pytest.mark.docker
def test_the_multipl_e_test_libraries_are_in_the_image(langs_service):
    """luaunit and Test::Deep (MultiPL-E's Lua and Perl tests) are in the languages image: its honest completions
    pass and wrong ones fail."""
    specs = [(code, {"kind": "function_tests", "language": lang, "setup": setup, "tests": tests, "timeout_s": 30})
             for lang, (setup, right, wrong, tests) in MULTIPL_E_DYNAMIC.items() for code in (right, wrong)]
    out = langs_service.verify_batch(specs, timeout=300)
    assert [r["verdict"] for r in out] == ["PASSED", "FAILED"] * 2, [r["detail"][:200] for r in out]


@pytest.mark.docker
def test_a_ruby_library_the_image_lacks_is_infra_error(langs_service):
    """Ruby tests that require a gem the image lacks (nokogiri): INFRA_ERROR, no reward; test-unit is there."""
    _, right, tests = ADD["ruby"]
    out = langs_service.verify_batch([(right, {**spec("ruby"), "tests": "require 'nokogiri'\n" + tests}),
                                      (right, spec("ruby"))], timeout=300)
    assert out[0]["verdict"] == "INFRA_ERROR" and "nokogiri" in out[0]["detail"] and out[0]["reward"] is None, out[0]
    assert out[1]["verdict"] == "PASSED", out[1]["detail"][:300]


@pytest.mark.docker
def test_a_module_the_image_lacks_is_infra_error(langs_service):
    """A module the tests load that the sandbox lacks (here LuaFileSystem and Text::CSV, not in the languages
    image) would fail every completion, which is not the completion's fault: INFRA_ERROR, no reward."""
    extra = {"lua": ("lu = require('luaunit')", "lfs = require('lfs')\nlu = require('luaunit')"),
             "perl": ("use Test::Deep;", "use Text::CSV;\nuse Test::Deep;")}
    out = langs_service.verify_batch([
        (right, {"kind": "function_tests", "language": lang, "setup": setup, "timeout_s": 30,
                 "tests": tests.replace(*extra[lang])})
        for lang, (setup, right, _, tests) in MULTIPL_E_DYNAMIC.items()], timeout=300)
    for r, module in zip(out, ("lfs", "Text::CSV"), strict=True):
        assert r["verdict"] == "INFRA_ERROR" and module in r["detail"] and r["reward"] is None, r


# C#: McEval's form (the setup opens class Program and ends with the signature, the completion is the body, the
# tests hold `static void Main()` and close the class; System.Linq comes from the implicit usings).
CSHARP_MCEVAL = ("using System;\nusing System.Diagnostics;\n\nclass Program\n{\n"
                 "    static List<int> Twice(List<int> xs)\n",
                 "    {\n        return xs.Select(x => 2 * x).ToList();\n    }\n",
                 "static void Main()\n    {\n        Debug.Assert(Twice(new List<int> { 1, 2 }).SequenceEqual("
                 "new List<int> { 2, 4 }));\n        Debug.Assert(Twice(new List<int>()).Count == 0);\n    }\n}\n")


@pytest.mark.docker
def test_the_csharp_mceval_form(langs_service):
    setup, right, tests = CSHARP_MCEVAL
    spec_ = {"kind": "function_tests", "language": "csharp", "setup": setup, "tests": tests, "timeout_s": 30}
    out = langs_service.verify_batch([(right, spec_), (right.replace("2 * x", "x + 2"), spec_)], timeout=300)
    assert [r["verdict"] for r in out] == ["PASSED", "FAILED"], [r["detail"][:300] for r in out]


def test_csharp_tests_are_checks_of_the_services_run_from_its_entry():
    from verifier_service.kinds import csharp_tests

    setup, right, tests = CSHARP_MCEVAL
    program = assemble("csharp", setup, right, tests, b"a" * 16, b"b" * 16, "tq1")
    assert "Debug.Assert" not in program and program.count("global::tq1_Check.Assert(") == 2
    assert "internal static void tq1_Main(" in program and "global::Program.tq1_Main();" in program
    assert "#pragma warning restore" in program and program.index(right) < program.index("#pragma warning restore")
    assert csharp_tests.compile_argv("tq1")[-3:] == ("-main:tq1", "-out:solution.exe", "solution.cs")
    # MultiPL-E's form: the tests close the method the setup opened; Main takes args
    program = assemble("csharp", *ADD["csharp"], b"a" * 16, b"b" * 16, "tq1")
    assert "global::Problem.tq1_Main(args);" in program
    # what the tests name stays the framework's: a completion that declares it is refused
    shadow = csharp_tests.shadowed
    assert shadow("return 0; }\n static class Debug { public static void Assert(bool c) {} }\n static void U() {",
                  tests) == ["Debug"]
    assert shadow("return 0; }\n static object Enumerable { get { return null; } }\n static void U() {",
                  "Debug.Assert(Enumerable.SequenceEqual(F(), new[] {1}));") == ["Enumerable"]
    assert shadow("return 0; }\n}\nstatic class E { public static bool SequenceEqual(this int[] a, int[] b) "
                  "{ return true; } }\nclass Q { static void U() {", "Debug.Assert(F().SequenceEqual(new[] {1}));") \
        == ["SequenceEqual"]
    assert shadow("return 0; }\n static object \\u0045numerable;\n static void U() {",
                  "Debug.Assert(Enumerable.Any(F()));") == ["Enumerable"]
    assert shadow(right, tests) == [] and shadow("var result = new List<int>(); return result;",
                                                 "var result = F(); Debug.Assert(result.Count == 0);") == []
