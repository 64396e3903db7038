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
