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


def io_spec(name: str) -> dict:
    language, entry, setup, _, _, cases = TASKS[name]
    return {"kind": "function_io", "language": language, "entry_point": entry, "setup": setup, "cases": cases,
            "timeout_s": 30}


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
