"""function_io (python_io for other languages): the driver's literals and output on the host, and on Docker a
right function passing, a wrong one failing, per language and with nested types (lists, maps, tuples,
optionals). The hostile programs (reading the binary, the source, the class files for the driver's marker) are
in tests/adversarial/langs/hack_io_* (tests/sandbox/test_languages_adversarial.py)."""

from __future__ import annotations

import pytest

from verifier_service.kinds.drivers import DriverError, literal, open_braces, parse_type, signature
from verifier_service.kinds.function_io import parse_lines, program

STRS = [{"args": [[1, 2, 3], "ab"], "expected": ["ab1", "ab2", "ab3"]}, {"args": [[], "x"], "expected": []}]
PAIRS = [{"args": [{"a": 1, "b": 2}], "expected": [["a", 1], ["b", 2]]}]
TASKS = {  # name -> (language, entry, setup, right completion, wrong completion, cases)
    "cpp": ("cpp", "f", "#include<bits/stdc++.h>\nstd::vector<std::string> f(std::vector<long> xs, std::string s) {\n",
            "    std::vector<std::string> out; for (long x : xs) out.push_back(s + std::to_string(x)); return out;\n",
            "    return {s};\n", STRS),
    "java": ("java", "f", "import java.util.*;\nclass Problem {\n    public static ArrayList<String> "
             "f(ArrayList<Long> xs, String s) {\n",
             "        ArrayList<String> out = new ArrayList<>(); for (long x : xs) out.add(s + x); return out;\n",
             "        return new ArrayList<>(List.of(s));\n", STRS),
    "rust": ("rust", "f", "fn f(xs: Vec<isize>, s: String) -> Vec<String> {\n",
             "    xs.iter().map(|x| format!(\"{}{}\", s, x)).collect()\n", "    vec![s]\n", STRS),
    "javascript": ("javascript", "f", "function f(xs, s) {\n", "  return xs.map((x) => s + x);\n", "  return [s];\n",
                   STRS),
    "typescript": ("typescript", "f", "function f(xs: number[], s: string): string[] {\n",
                   "  return xs.map((x) => s + x);\n", "  return [s];\n", STRS),
    "cpp map": ("cpp", "g", "#include<bits/stdc++.h>\nstd::vector<std::tuple<std::string, long>> "
                "g(std::map<std::string,long> m) {\n",
                "    std::vector<std::tuple<std::string, long>> o;\n"
                "    for (auto& [k, v] : m) o.push_back({k, v});\n    return o;\n",
                "    return {};\n", PAIRS),
    "java tuples": ("java", "g", "import java.util.*;\nimport org.javatuples.*;\nclass Problem {\n    public static "
                    "List<Pair<String, Long>> g(HashMap<String,Long> m) {\n", "        List<Pair<String, Long>> o = "
                    "new ArrayList<>(); for (String k : new TreeSet<>(m.keySet())) o.add(Pair.with(k, m.get(k)));"
                    " return o;\n", "        return new ArrayList<>();\n", PAIRS),
    "rust map": ("rust", "g", "use std::collections::HashMap;\n"
                 "fn g(m: HashMap<String, isize>) -> Vec<(String, isize)> {\n",
                 "    let mut v: Vec<(String, isize)> = m.into_iter().collect(); v.sort(); v\n", "    vec![]\n", PAIRS),
    "java optional": ("java", "h", "import java.util.*;\nclass Problem {\n    public static Optional<Double> "
                      "h(ArrayList<Long> xs) {\n", "        return xs.isEmpty() ? Optional.empty() : "
                      "Optional.of(xs.get(0) * 0.5);\n", "        return Optional.of(0.5);\n",
                      [{"args": [[3]], "expected": 1.5}, {"args": [[]], "expected": None}]),
}

# The dynamic languages (kinds/dynamic_drivers.py): every JSON type as an argument and in the result. g(s, xs, flag)
# returns {s: s .. "!", third: sum(xs) / 3, rev: xs reversed, not: !flag, nested: [[s], []]}; h(x) null when x < 0,
# else 2x. The strings hold quotes, backslashes, a newline, non-ASCII and a non-BMP character.
ODD = 'it\'s "q" \\ \u00e9\u2603\U0001F600\n'
TYPES = [{"args": [ODD, [1, 2, 4], True],
          "expected": {"s": ODD + "!", "third": 7 / 3, "rev": [4, 2, 1], "not": False, "nested": [[ODD], []]}},
         {"args": ["", [1.5], False], "expected": {"s": "!", "third": 0.5, "rev": [1.5], "not": True,
                                                    "nested": [[""], []]}}]
NULLS = [{"args": [-1], "expected": None}, {"args": [21], "expected": 42}, {"args": [0], "expected": 0}]
TASKS.update({
    "php": ("php", "f", "<?php\nfunction f($xs, $s) {\n", "    return array_map(fn($x) => $s . $x, $xs);\n}\n",
            "    return [$s];\n}\n", STRS),
    "php types": ("php", "g", "<?php\nfunction g($s, $xs, $flag) {\n",
                  "    return ['s' => $s . '!', 'third' => array_sum($xs) / 3, 'rev' => array_reverse($xs),\n"
                  "            'not' => !$flag, 'nested' => [[$s], []]];\n}\n",
                  "    return ['s' => $s, 'third' => array_sum($xs) / 3, 'rev' => $xs, 'not' => $flag,\n"
                  "            'nested' => [[$s], []]];\n}\n", TYPES),
    "php null": ("php", "h", "<?php\nfunction h($x) {\n", "    return $x < 0 ? null : $x * 2;\n}\n",
                 "    return $x <= 0 ? null : $x * 2 + 1;\n}\n", NULLS),
    "lua": ("lua", "f", "local function f(xs, s)\n",
            "    local out = {}\n    for i, x in ipairs(xs) do out[i] = s .. x end\n    return out\nend\n",
            "    return {s}\nend\n", STRS),
    "lua types": ("lua", "g", "local function g(s, xs, flag)\n",  # (the completion leaves the function open)
                  "    local sum, rev = 0, {}\n    for i = #xs, 1, -1 do rev[#rev + 1] = xs[i]; sum = sum + xs[i] end\n"
                  "    return {s = s .. \"!\", third = sum / 3, rev = rev, [\"not\"] = not flag, nested = {{s}, {}}}\n",
                  "    return {s = s, third = 2.33, rev = xs, [\"not\"] = flag, nested = {{s}, {}}}\n", TYPES),
    "lua null": ("lua", "h", "local function h(x)\n", "    if x < 0 then return nil end\n    return x * 2\nend\n",
                 "    if x <= 0 then return nil end\n    return x * 2 + 1\nend\n", NULLS),
    "perl": ("perl", "f", "use strict;\nuse warnings;\nsub f {\n    my ($xs, $s) = @_;\n",
             "    return [map { $s . $_ } @$xs];\n}\n", "    return [$s];\n}\n", STRS),
    "perl types": ("perl", "g", "sub g {\n    my ($s, $xs, $flag) = @_;\n",
                   "    my $sum = 0;\n    $sum += $_ for @$xs;\n    return {s => $s . \"!\", third => $sum / 3, "
                   "rev => [reverse @$xs],\n            not => !$flag, nested => [[$s], []]};\n",
                   "    return {s => $s, third => 2, rev => $xs, not => $flag, nested => [[$s], []]};\n", TYPES),
    "perl null": ("perl", "h", "sub h {\n    my ($x) = @_;\n", "    return $x < 0 ? undef : $x * 2;\n}\n",
                  "    return $x <= 0 ? undef : $x * 2 + 1;\n}\n", NULLS),
    "perl package": ("perl", "h", "sub h {\n    my ($x) = @_;\n",  # (the driver runs in main whatever came before)
                     "    return $x < 0 ? undef : $x * 2;\n}\npackage Helper;\nsub twice { 2 * shift }\n",
                     "    return $x * 2;\n}\npackage Helper;\n", NULLS),
    "php closing tag": ("php", "h", "<?php\nfunction h($x) {\n", "    return $x < 0 ? null : $x * 2;\n}\n?>\n",
                        "    return $x * 2;\n}\n?>\n", NULLS),
    "r": ("r", "f", "f <- function(xs, s) {\n", "    vapply(xs, function(x) paste0(s, x), \"\")\n}\n",
          "    c(s)\n}\n", STRS),
    "r types": ("r", "g", "g <- function(s, xs, flag) {\n",
                "    list(s = paste0(s, \"!\"), third = sum(xs) / 3, rev = rev(xs), not = !flag,\n"
                "         nested = list(list(s), list()))\n}\n",
                "    list(s = s, third = sum(xs) / 3, rev = xs, not = flag, nested = list(list(s), list()))\n}\n",
                TYPES),
    "r null": ("r", "h", "h <- function(x) {\n", "    if (x < 0) NULL else x * 2\n}\n",
               "    if (x <= 0) NULL else x * 2 + 1\n}\n", NULLS),
    "ruby": ("ruby", "f", "def f(xs, s)\n", "  xs.map { |x| \"#{s}#{x}\" }\nend\n", "  [s]\nend\n", STRS),
    "ruby types": ("ruby", "g", "def g(s, xs, flag)\n",
                   "  {s: s + \"!\", \"third\" => xs.sum / 3.0, rev: xs.reverse, not: !flag, nested: [[s], []]}\n"
                   "end\n",
                   "  {s: s, third: xs.sum / 3, rev: xs, not: flag, nested: [[s], []]}\nend\n", TYPES),
    "ruby null": ("ruby", "h", "def h(x)\n", "  x < 0 ? nil : x * 2\nend\n", "  x <= 0 ? nil : x * 2 + 1\nend\n",
                  NULLS),
})


def io_spec(name: str) -> dict:
    language, entry, setup, _, _, cases = TASKS[name]
    spec = {"kind": "function_io", "language": language, "entry_point": entry, "setup": setup, "cases": cases,
            "timeout_s": 30}
    if cases is TYPES:
        spec["float_tolerance"] = 1e-9
    return spec


def test_literals_follow_the_signature():
    assert literal("cpp", [1, 2], parse_type("cpp", "std::vector<long>")) == \
        "std::vector<long>{static_cast<long>(1LL), static_cast<long>(2LL)}"
    assert literal("java", [1], parse_type("java", "ArrayList<Long>")) == \
        "new java.util.ArrayList<>(java.util.Arrays.asList(1L))"
    assert literal("rust", ["a"], parse_type("rust", "&[String]")) == '&vec![String::from("a")]'
    assert literal("rust", [1, None], parse_type("rust", "(i64, Option<f64>)")) == "(1, None)"
    with pytest.raises(DriverError):
        literal("java", "x", parse_type("java", "long"))
    sig = signature("java", "f", "class A {\n  // f(int x) {\n  long f(long a, String b) {\n", "")
    assert (sig.owner, sig.static, [t.kind for t in sig.params]) == ("A", False, ["int", "str"])


def test_open_braces_are_closed_and_lines_are_read():
    assert open_braces("java", "class A {\n  long f() {\n    return 1; // }\n") == 2
    assert open_braces("rust", "fn f<'a>(x: &'a str) -> &'a str {\n    x\n") == 1
    got = parse_lines("m 0 [1]\nnoise\nm 1 !java.lang.ArithmeticException\nm 0 [2]\nm 9 1\n", "m", 2)
    assert got == {0: (True, [1]), 1: (False, "java.lang.ArithmeticException")}
    text = program("javascript", "f", "function f(x) {\n", "  return x;", [[1]], "m" * 32, "r1")
    assert "expected" not in text and "[[1]]" in text


def test_dynamic_literals_and_blocks():
    from verifier_service.kinds.dynamic_drivers import literal as dyn
    from verifier_service.kinds.dynamic_drivers import loosen, open_blocks

    value = {"a": [1, 2.5, None], "b\"$@": "\u00e9\n"}
    assert dyn("php", value) == '["a" => [1, 2.5, null], "b\\x22\\x24@" => "\\xc3\\xa9\\x0a"]'
    assert dyn("lua", value) == '{["a"] = {1, 2.5, nil}, ["b\\034$@"] = "\\195\\169\\010"}'
    assert dyn("perl", value) == '{"a" => [1, 2.5, undef], "b\\x{22}\\x{24}\\x{40}" => "\\x{e9}\\x{a}"}'
    assert dyn("r", value) == 'base::list("a" = base::list(1, 2.5, NULL), "b\\U{22}$@" = "\\U{e9}\\U{a}")'
    assert dyn("r", [1, 2.5]) == "base::c(1, 2.5)" and dyn("r", [True]) == "base::c(TRUE)"
    assert dyn("perl", [True, False, -0.5]) == "[!!1, !!0, (-0.5)]"
    with pytest.raises(ValueError):
        dyn("lua", 2 ** 64)
    assert open_blocks("lua", "local function f(x)\n  if x then return 1 end -- end\n  s = 'end'\n") == 1
    assert open_blocks("r", "f <- function(x) {\n  # }\n  '{'\n") == 1
    assert open_blocks("perl", "sub f {\n  my $n = $#xs; # }\n") == 1
    assert open_blocks("php", "<?php\nfunction f($x) {\n  // }\n  return \"}\";\n}\n") == 0
    # the shapes a language cannot tell apart, and nothing else
    assert loosen("r", 5, [5]) == [5] and loosen("r", None, []) == [] and loosen("lua", [], {}) == {}
    assert loosen("perl", "5", 5) == 5 and loosen("perl", "", False) is False and loosen("perl", 6, "6") == "6"
    assert loosen("perl", "5x", 5) == "5x" and loosen("perl", 2, True) == 2 and loosen("php", [1], {"0": 1}) == {"0": 1}
    assert loosen("javascript", [], {}) == [] and loosen("r", 5, [6]) == [5]


def test_php_programs_are_php_code_where_the_driver_begins():
    assert program("php", "f", "", "function f($x) { return $x; }\n", [[1]], "m" * 32, "r1").startswith("<?php\n")
    text = program("php", "f", "<?php\nfunction f($x) {\n", "    return $x;\n}\n?>\n", [[1]], "m" * 32, "r1")
    assert text.count("<?php") == 2 and text.index("?>") < text.rindex("<?php") < text.index("r1_show")


@pytest.mark.parametrize("name", [n for n in TASKS if TASKS[n][0] in ("php", "lua", "perl", "r", "ruby")])
def test_dynamic_programs_hold_no_expected_value(name):
    language, entry, setup, right, _, cases = TASKS[name]
    text = program(language, entry, setup, right, [c["args"] for c in cases], "m" * 32, "r1")
    from verifier_service.kinds.dynamic_drivers import literal as dyn

    driver_part = text.split(right)[-1]
    for case in cases:  # the args are there, the expected values are not
        assert dyn(language, case["args"][0]) in driver_part
        expected = case["expected"]
        for v in (expected, *(expected.values() if isinstance(expected, dict) else ())):
            if v not in case["args"] and (type(v) is dict or (type(v) is str and len(v) > 3) or
                                          (type(v) is int and v > 9)):
                assert dyn(language, v) not in driver_part, v
    if language == "lua":
        assert text.split(right)[-1].lstrip().startswith("end") == (name == "lua types")


@pytest.mark.docker
class TestFunctionIO:
    @pytest.fixture(scope="class")
    @classmethod
    def results(cls, langs_service):
        items = [(name, what, TASKS[name][3 if what == "right" else 4])
                 for name in TASKS for what in ("right", "wrong")]
        out = langs_service.verify_batch([(src, io_spec(name)) for name, _, src in items], timeout=900)
        return {(name, what): r for (name, what, _), r in zip(items, out, strict=True)}

    @pytest.mark.parametrize("name", sorted(TASKS))
    def test_right_passes_and_wrong_fails(self, results, name):
        right, wrong = results[name, "right"], results[name, "wrong"]
        assert right["verdict"] == "PASSED", (right["detail"][:400], right.get("stderr_tail", "")[-400:])
        assert wrong["verdict"] in ("FAILED", "PARTIAL") and wrong["correctness_score"] < 1.0, wrong["detail"][:300]


# MultiPL-E rows in the dynamic languages (their prompts and test forms), converted by `trainer data convert
# --format multipl-e` into function_io specs, then an honest and a wrong completion of each (MultiPL-E's
# completions stop before the function's closing `end`/`}`, which its tests supply).
MULTIPL_E_ROWS = {
    "lua": ("-- Sort the list.\nlocal function sort_list(xs)\n",
            "end\n\nlu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = sort_list\n"
            "    lu.assertEquals(candidate({3, 1, 2}), {1, 2, 3})\n    lu.assertEquals(candidate({}), {})\n"
            "    lu.assertEquals(candidate({2.5, -1}), {-1, 2.5})\nend\n\nos.exit(lu.LuaUnit.run())",
            "    local t = {}\n    for i, v in ipairs(xs) do t[i] = v end\n    table.sort(t)\n    return t\n",
            "    return xs\n"),
    "perl": ("# Count the words.\nsub histogram {\n    my($test) = @_;\n",
             "}\n\nuse Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&histogram;\n"
             '        if(eq_deeply($candidate->("a b b a"),{"a" => 2, "b" => 2})) {\n        print "ok!" }else{\n'
             '        exit 1;\n        }\n        if(eq_deeply($candidate->(""),{})) {\n        print "ok!" }else{\n'
             "        exit 1;\n        }\n}\n\ntesthumaneval();\n",
             "    my %h;\n    $h{$_}++ for split ' ', $test;\n    return \\%h;\n",
             "    return {map { $_ => 1 } split ' ', $test};\n"),
    "r": ("# Return only positive numbers in the list.\nget_positive <- function(l) {\n",
          "}\n\ntest_humaneval <- function() {\ncandidate <- get_positive\n"
          "    if(!identical(candidate(c(-1, -2, 4, 5, 6)), c(4, 5, 6))){quit('no', 1)}\n"
          "    if(!identical(candidate(c(-1, 5)), c(5))){quit('no', 1)}\n"
          "    if(!identical(candidate(c(-1, -2)), c())){quit('no', 1)}\n}\ntest_humaneval()",
          "    l[l > 0]\n", "    l[l >= -1]\n"),
    "php": ("<?php\n// Return only positive numbers in the array.\nfunction get_positive($l) {\n",
            "}\n\nfunction candidate(...$args) {\n    return get_positive(...$args);\n}\n\nfunction test(): void {\n"
            '    if (candidate(array(-1, -2, 4, 5, 6)) !== array(4, 5, 6)) { throw new Exception("Test failed!"); }\n'
            '    if (candidate(array("a" => 1, "b" => -1)) !== array("a" => 1)) '
            '{ throw new Exception("Test failed!"); }\n'
            '    if (candidate(array(-1, -2)) !== array()) { throw new Exception("Test failed!"); }\n}\n\ntest();',
            "    $o = array_filter($l, fn($x) => $x > 0);\n    return array_is_list($l) ? array_values($o) : $o;\n",
            "    return array_values($l);\n"),
    "ruby": ("# Count the words.\ndef histogram(test)\n",
             "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_histogram\n"
             "    candidate = method(:histogram)\n"
             "    assert_equal({\"a\" => 2, \"b\" => 2}, candidate.call(\"a b b a\"))\n"
             "    assert_equal({}, candidate.call(\"\"))\n  end\nend\n",
             "  test.split.tally\nend\n", "  test.split.to_h { |w| [w, 1] }\nend\n"),
}


@pytest.mark.docker
def test_converted_multipl_e_rows_judge_honest_and_wrong_completions(langs_service):
    import json

    from trainer.convert import FORMATS

    rows = [{"name": f"HumanEval_{lang}", "language": {"perl": "pl"}.get(lang, lang), "prompt": prompt, "tests": tests}
            for lang, (prompt, tests, _, _) in MULTIPL_E_ROWS.items()]
    specs = [json.loads(r["verification"]) for r in FORMATS["multipl-e"](rows).rows]
    assert [(s["kind"], s["language"]) for s in specs] == [("function_io", lang) for lang in MULTIPL_E_ROWS]
    items = []
    for spec, (lang, (_, _, right, wrong)) in zip(specs, MULTIPL_E_ROWS.items(), strict=True):
        items += [(f"```{lang}\n{right}```", spec), (f"```{lang}\n{wrong}```", spec)]
    out = langs_service.verify_batch(items, timeout=600)
    for lang, right, wrong in zip(MULTIPL_E_ROWS, out[0::2], out[1::2], strict=True):
        assert right["verdict"] == "PASSED", (lang, right["detail"][:300])
        assert wrong["verdict"] in ("FAILED", "PARTIAL") and wrong["correctness_score"] < 1.0, (lang, wrong["detail"])
