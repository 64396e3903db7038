"""trainer data convert --format multipl-e: MultiPL-E's per-language tests (the forms its translators write) read
back into function_io cases (args and expected as JSON, so the expected values stay out of the sandbox), and a row
whose tests are not all ``assert f(args) == expected`` kept as function_tests."""

from __future__ import annotations

import json

import pytest

from trainer.convert import FORMATS
from trainer.convert_multipl import Unreadable, io_cases, read_literal

CPP = ('}\nint main() {\n    auto candidate = f;\n    assert(candidate((std::vector<long>({(long)1, (long)2})), ("ab"))'
       ' == (std::vector<std::string>({(std::string)"ab1", (std::string)"ab2"})));\n'
       '    assert(candidate((std::vector<long>()), ("x")) == (std::vector<std::string>()));\n}\n')
JAVA = ('    }\n    public static void main(String[] args) {\n'
        '    assert(add((new ArrayList<Long>(Arrays.asList((long)1l, (long)2l))), ("a")).equals('
        '(new ArrayList<String>(Arrays.asList((String)"a1")))));\n'
        '    assert(add((new ArrayList<Long>(Arrays.asList())), ("b")).equals(Optional.of(Pair.with(1l, 2.0f))));\n'
        '    assert(add((new HashMap<String,Long>(Map.of("a", 1l))), ("b")) == (3l));\n    }\n\n}\n')
JS = ("}\n\nconst assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = f;\n"
      '  assert.deepEqual(candidate([1, 2], "a"),["a1", "a2"]);\n'
      '  assert.deepEqual(candidate({"a": 1}, -2.5),undefined);\n'
      "}\n\ntest();")
RUST = ('}\n\nfn main() {\n    let candidate = f;\n'
        '    assert_eq!(candidate(vec![1, 2], String::from("ab")), vec![String::from("ab1")]);\n'
        '    assert_eq!(candidate(vec![], "x".to_string()), Some((1, -2.0)));\n}\n')


def test_multipl_e_literals_become_json():
    assert io_cases("cpp", CPP, "f") == [{"args": [[1, 2], "ab"], "expected": ["ab1", "ab2"]},
                                         {"args": [[], "x"], "expected": []}]
    assert io_cases("java", JAVA, "add") == [{"args": [[1, 2], "a"], "expected": ["a1"]},
                                             {"args": [[], "b"], "expected": [1, 2.0]},
                                             {"args": [{"a": 1}, "b"], "expected": 3}]
    assert io_cases("javascript", JS, "f") == [{"args": [[1, 2], "a"], "expected": ["a1", "a2"]},
                                               {"args": [{"a": 1}, -2.5], "expected": None}]
    assert io_cases("rust", RUST, "f") == [{"args": [[1, 2], "ab"], "expected": ["ab1"]},
                                           {"args": [[], "x"], "expected": [1, -2.0]}]
    assert read_literal('std::make_tuple(1, "a\\n", true)') == [1, "a\n", True]
    with pytest.raises(Unreadable):
        read_literal("foo(1)")


def test_rows_convert_to_function_io_or_stay_function_tests():
    rows = [{"name": "HumanEval_0_f", "language": "cpp", "prompt": "#include<bits/stdc++.h>\n"
             "std::vector<std::string> f(std::vector<long> xs, std::string s) {\n", "tests": CPP},
            {"name": "HumanEval_1_g", "language": "js", "prompt": "function g(x){\n",
             "tests": "}\n\nconst assert = require('node:assert');\nfunction test() {\n  let candidate = g;\n"
                      "  assert.deepEqual(candidate(1) > 0, true);\n}\ntest();"}]
    out = FORMATS["multipl-e"](rows)
    first, second = (json.loads(r["verification"]) for r in out.rows)
    assert first["kind"] == "function_io" and first["entry_point"] == "f" and "expected" not in first["setup"]
    assert first["cases"][0] == {"args": [[1, 2], "ab"], "expected": ["ab1", "ab2"]}
    assert second["kind"] == "function_tests" and second["language"] == "javascript"
    assert sum(out.skipped.values()) == 1


# The dynamic languages' MultiPL-E test forms (PHP, Lua, Perl, R).
LUA = ("end\n\nlu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = f\n"
       "    lu.assertEquals(candidate('ab', {1, 2}), {'ab1', false})\n"
       "    lu.assertEquals(candidate({['a'] = 1, b = {}}, -2.5), nil)\nend\n\nos.exit(lu.LuaUnit.run())")
PERL = ("}\n\nuse Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&f;\n"
        '        if(eq_deeply($candidate->("a b", [1.0, -2]),{"a" => 2, "b\\$" => [1]})) {\n'
        '        print "ok!" }else{\n        exit 1;\n        }\n'
        "        if(eq_deeply($candidate->('it\\'s\\n', {}),\"\")) {\n"
        '        print "ok!" }else{\n        exit 1;\n        }\n}\n\ntesthumaneval();\n')
R = ("}\n\ntest_humaneval <- function() {\ncandidate <- f\n"
     "    if(!identical(candidate(list('a)b'), c(1, 2)), list('n\\'s', TRUE))){quit('no', 1)}\n"
     "    if(!identical(candidate(c(-9999999999999999), c()), list('a' = 1, 'b' = NULL))){quit('no', 1)}\n}\n"
     "test_humaneval()")
PHP = ("}\n\nfunction candidate(...$args) {\n    return f(...$args);\n}\n\nfunction test(): void {\n"
       '    if (candidate(array(1.0, 2), 0.3) !== true) { throw new Exception("Test failed!"); }\n'
       '    if (candidate(array("a" => 1, "b\\$" => array()), "x") !== NULL) { throw new Exception("Test failed!"); }\n'
       "}\n\ntest();")


def test_multipl_e_dynamic_languages_become_json():
    from trainer.convert_multipl import entry_of

    assert io_cases("lua", LUA, "f") == [{"args": ["ab", [1, 2]], "expected": ["ab1", False]},
                                         {"args": [{"a": 1, "b": []}, -2.5], "expected": None}]
    assert io_cases("perl", PERL, "f") == [{"args": ["a b", [1.0, -2]], "expected": {"a": 2, "b$": [1]}},
                                           {"args": ["it's\\n", {}], "expected": ""}]
    assert io_cases("r", R, "f") == [{"args": [["a)b"], [1, 2]], "expected": ["n's", True]},
                                     {"args": [[-1e16], []], "expected": {"a": 1, "b": None}}]
    assert io_cases("php", PHP, "f") == [{"args": [[1.0, 2], 0.3], "expected": True},
                                         {"args": [{"a": 1, "b$": []}, "x"], "expected": None}]
    assert [entry_of(lang, "", t) for lang, t in (("lua", LUA), ("perl", PERL), ("r", R), ("php", PHP))] == ["f"] * 4
    with pytest.raises(Unreadable):
        read_literal("c(1, 'a' = 2)", "r")


def test_dynamic_rows_become_function_io_or_stay_function_tests():
    rows = [{"name": "HumanEval_0_f", "language": "lua", "prompt": "local function f(s, xs)\n", "tests": LUA},
            {"name": "HumanEval_1_f", "language": "r", "prompt": "f <- function(s, xs) {\n",
             "tests": "}\n\ntest_humaneval <- function() {\ncandidate <- f\n"
                      "    if(length(candidate('a', c())) != 1){quit('no', 1)}\n}\ntest_humaneval()"},
            {"name": "HumanEval_2_f", "language": "php", "prompt": "<?php\nfunction f($x) {\n",
             "tests": PHP.replace("!== NULL", "> 1", 1)}]
    out = FORMATS["multipl-e"](rows)
    specs = [json.loads(r["verification"]) for r in out.rows]
    assert [(s["kind"], s["language"]) for s in specs] == [("function_io", "lua"), ("function_tests", "r"),
                                                           ("function_tests", "php")]
    assert specs[0]["cases"][1] == {"args": [{"a": 1, "b": []}, -2.5], "expected": None}
    assert sum(out.skipped.values()) == 2  # (R, PHP: kept as function_tests)


def test_csharp_rows_stay_function_tests():
    """MultiPL-E's humaneval-cs: the prompt opens class Problem and the method, the tests close it and hold Main."""
    from trainer.convert_multipl import multipl_e

    prompt = ("using System;\nusing System.Numerics;\nusing System.Diagnostics;\nusing System.Collections.Generic;\n"
              "using System.Linq;\nusing System.Text;\nusing System.Security.Cryptography;\nclass Problem {\n"
              "    public static long Add(long x, long y) {\n")
    tests = ("    }\n    public static void Main(string[] args) {\n    Debug.Assert(Add((0L), (1L)) == (1L));\n"
             "    }\n\n}\n")
    out = multipl_e([{"name": "HumanEval_53_add", "language": "cs", "prompt": prompt, "tests": tests}])
    spec = json.loads(out.rows[0]["verification"])
    assert (spec["kind"], spec["language"], spec["setup"], spec["tests"]) == ("function_tests", "csharp", prompt, tests)


def test_d_rows_stay_function_tests():
    """MultiPL-E's humaneval-d: the prompt's imports and signature, a unittest block with alias candidate and an
    empty main (its harness runs `rdmd -unittest -main`)."""
    from trainer.convert_multipl import multipl_e

    prompt = "import std.math;\nimport std.typecons;\n/*\n Add two numbers\n*/\nlong add(long x, long y) \n"
    tests = ("unittest\n{\n    alias candidate = add;\n\n    assert(candidate(0L, 1L) == 1L);\n}\n"
             "void main(){}")
    out = multipl_e([{"name": "HumanEval_53_add", "language": "d", "prompt": prompt, "tests": tests}])
    spec = json.loads(out.rows[0]["verification"])
    assert (spec["kind"], spec["language"], spec["setup"], spec["tests"]) == ("function_tests", "d", prompt, tests)
def test_ruby_rows_become_function_io_where_every_check_is_assert_equal():
    """MultiPL-E's humaneval-rb (humaneval_to_rb.py): the prompt opens the method, the tests are a test-unit class of
    ``assert_equal(expected, candidate.call(args))`` (expected first); any other check keeps function_tests."""
    from trainer.convert_multipl import multipl_e

    prompt = "# Add two numbers x and y\n# >>> add.call(2, 3)\n# 5\ndef add(x, y)\n"
    tests = ("require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
             "    candidate = method(:add)\n    assert_equal(1, candidate.call(0, 1))\n"
             "    assert_equal([\"a, b\", nil, {\"k\" => [2.5, -1]}], candidate.call([true, false], {}))\n"
             "  end\nend\n")
    rows = [{"name": "HumanEval_53_add", "language": "rb", "prompt": prompt, "tests": tests},
            {"name": "HumanEval_53_add", "language": "rb", "prompt": prompt,
             "tests": tests.replace("assert_equal(1, candidate.call(0, 1))", "assert(candidate.call(0, 1) == 1)")},
            {"name": "HumanEval_53_add", "language": "rb", "prompt": prompt,
             "tests": tests.replace("candidate.call(0, 1))", "candidate.call(0, 1).abs)")}]
    specs = [json.loads(r["verification"]) for r in multipl_e(rows).rows]
    assert (specs[0]["kind"], specs[0]["language"], specs[0]["entry_point"]) == ("function_io", "ruby", "add")
    assert specs[0]["cases"] == [{"args": [0, 1], "expected": 1},
                                 {"args": [[True, False], {}], "expected": ["a, b", None, {"k": [2.5, -1]}]}]
    for spec in specs[1:]:
        assert (spec["kind"], spec["language"], spec["tests"]) == ("function_tests", "ruby", spec["tests"])
