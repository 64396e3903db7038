"""Correct programs in the forms real datasets use, on Docker (issue 30, class 2), and the languages Debian adds
to the languages image (class 6): each must pass (and a wrong or broken one must not)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker

SUM = [{"stdin": "1 2\n", "expected_stdout": "3\n"}, {"stdin": "10 -4\n", "expected_stdout": "6\n"}]

# language -> (a right a+b program, a broken one); "wrong" is the right one with + turned into -.
MORE = {
    "php": ('<?php\n[$a, $b] = array_map("intval", explode(" ", trim(fgets(STDIN))));\necho $a + $b, "\\n";\n',
            "<?php\necho (1 + ;\n"),
    "lua": ('local a, b = io.read("n", "n")\nprint(math.tointeger(a + b) or a + b)\n', "local x = = 1\n"),
    "perl": ("my ($a, $b) = split ' ', <STDIN>;\nprint $a + $b, \"\\n\";\n", "my $x = ;\n"),
    "r": ('x <- scan(file("stdin"), quiet = TRUE)\ncat(x[1] + x[2], "\\n", sep = "")\n', "x <- (1 + \n"),
    "csharp": ("using System;\nclass P { static void Main() { var t = Console.ReadLine().Split(' ');\n"
               "  Console.WriteLine(long.Parse(t[0]) + long.Parse(t[1])); } }\n", "class P { void M( }\n"),
    "d": ("import std.stdio;\nvoid main() { long a, b; readf(\" %d %d\", &a, &b); writeln(a + b); }\n",
          "void main() { int x = ; }\n"),
}

PHP_STRICT = {"kind": "function_tests", "language": "php",
              "setup": "<?php\ndeclare(strict_types=1);\n\nfunction add(int $a, int $b): int {\n",
              "tests": "\nif (add(1, 2) !== 3) { throw new Exception('wrong sum'); }\n"}

JAVA_FORMS = {  # correct programs whose class the old rule (first `class` in the text) got wrong
    "comment": "// this class reads two numbers\n/** The class that solves it. */\nimport java.util.*;\n"
               "public class Sol { public static void main(String[] a) { Scanner s = new Scanner(System.in);\n"
               "  System.out.println(s.nextLong() + s.nextLong()); } }\n",
    "helper first": "import java.util.*;\nclass Helper { static long add(long a, long b) { return a + b; } }\n"
                    "public class Main { public static void main(String[] a) { Scanner s = new Scanner(System.in);\n"
                    "  System.out.println(Helper.add(s.nextLong(), s.nextLong())); } }\n",
    "non-ascii": "import java.util.*;\npublic class L\u00f6sung { public static void main(String[] a) {\n"
                 "  Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
    "enum": "import java.util.*;\npublic enum Solver { ; public static void main(String[] a) {\n"
            "  Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
}
JAVA_ASSERT = ("import java.util.*;\npublic class Main { public static void main(String[] a) {\n"
               "  Scanner s = new Scanner(System.in); long x = s.nextLong(), y = s.nextLong();\n"
               "  assert x < 0 : \"assertions are on\";\n  System.out.println(x + y); } }\n")
NODE_DEEP = ("function depth(n) { return n === 0 ? 0 : 1 + depth(n - 1); }\nlet ok = false;\n"
             "try { depth(1e9); } catch (e) { ok = e instanceof RangeError; }\n"
             "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
             "console.log(ok ? a + b : -1);\n")
C_DEEP = ("#include <stdio.h>\nlong down(long n) { volatile char pad[32]; pad[0] = (char)n;"
          " return n == 0 ? pad[0] : 1 + down(n - 1); }\n"
          "int main(void) { long a, b; if (scanf(\"%ld %ld\", &a, &b) != 2) return 1;\n"
          "  printf(\"%ld\\n\", down(1000000) - 1000000 + a + b); return 0; }\n")

# HumanEval-X's Rust form: the declaration's crates (rand, regex, md5: the languages image's), #[test] functions in
# a #[cfg(test)] module, here also nested, #[should_panic], a Result and an #[ignore]d one.
RUST_SETUP = ("use std::collections::HashMap;\nuse rand::Rng;\nuse regex::Regex;\nuse md5;\n\n"
              "fn words_md5(text: &str) -> Vec<String> {\n")
RUST_SOLUTION = ("    if text.is_empty() { panic!(\"empty text\"); }\n"
                 "    let _: HashMap<u8, u8> = HashMap::new();\n"
                 "    let _ = rand::thread_rng().gen_range(0..4);\n"
                 "    Regex::new(r\"\\s+\").unwrap().split(text)\n"
                 "        .map(|w| format!(\"{:x}\", md5::compute(w))).collect()\n}\n")
RUST_TESTS = ("\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn test_words() {\n"
              "        assert_eq!(words_md5(\"ok  ok\"), vec![\"444bcb3a3fcf8389296c49467f27e1d6\"; 2]);\n    }\n\n"
              "    #[test]\n    #[should_panic(expected = \"empty\")]\n"
              "    fn test_empty() {\n        words_md5(\"\");\n    }\n\n"
              "    mod more {\n        use super::super::*;\n        #[test]\n"
              "        fn test_one() -> Result<(), String> {\n"
              "            if words_md5(\"a\").len() == 1 { Ok(()) } else { Err(\"not one word\".to_string()) }\n"
              "        }\n    }\n\n    #[test]\n    #[ignore]\n"
              "    fn test_ignored() {\n        panic!(\"not run\");\n    }\n}\n")
RUST_CRATES_STDIO = ("use rand::Rng;\nuse regex::Regex;\nuse std::io::Read;\nfn main() {\n"
                     "    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n"
                     "    let n: Vec<i64> = Regex::new(r\"-?\\d+\").unwrap().find_iter(&s)"
                     ".map(|m| m.as_str().parse().unwrap()).collect();\n"
                     "    let r: i64 = rand::thread_rng().gen_range(0..1);\n"
                     "    let _ = md5::compute(s.as_bytes());\n    println!(\"{}\", n[0] + n[1] + r);\n}\n")


# Go's `go test` form: HumanEval-X's (package main, testify's assert.New(t)) and MultiPL-E's (package x_test,
# subtests through t.Run); "wrong" turns + into -, "broken" does not compile.
GO_HEX_SETUP = 'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n\n'
GO_HEX_TESTS = ("func TestAdd(t *testing.T) {\n    assert := assert.New(t)\n    assert.Equal(3, Add(1, 2))\n"
                "    assert.Equal(0, Add(-1, 1))\n}\n\nfunc TestAddMore(t *testing.T) {\n"
                "    require.Equal(t, 42, Add(40, 2))\n}\n")
GO_MULTIPLE_SETUP = 'package add_test\n\nimport (\n    "testing"\n    "fmt"\n)\n\n'
GO_MULTIPLE_TESTS = ("func TestAdd(t *testing.T) {\n  candidate := Add\n"
                     "  type test struct {\n    actual   interface{}\n    expected interface{}\n  }\n"
                     "  tests := []test{\n    { actual: candidate(1, 2), expected: 3 },\n"
                     "    { actual: candidate(-1, 1), expected: 0 },\n  }\n"
                     "  for i, tc := range tests {\n    t.Run(fmt.Sprintf(\"test num % d\", i), func(t *testing.T) {\n"
                     "      if fmt.Sprintf(\"%v\", tc.actual) != fmt.Sprintf(\"%v\", tc.expected) {\n"
                     "        t.Errorf(\"expected '%s', got '%s'\", tc.expected, tc.actual)\n      }\n    })\n  }\n}\n")
GO_ADD = "func Add(a int, b int) int {\n    return a + b\n}\n"
GO_FORMS = {
    "go test testify": (GO_HEX_SETUP.replace('assert"\n', 'assert"\n    "github.com/stretchr/testify/require"\n'),
                        GO_HEX_TESTS),
    "go test multipl-e": (GO_MULTIPLE_SETUP, GO_MULTIPLE_TESTS),
}
# C++ with the libraries HumanEval-X's C++ tests include (CPP/22: boost/any.hpp; CPP/162: openssl/md5.h and
# libcrypto): function_tests (two units) and stdio.
CPP_LIBS_SETUP = "#include<stdio.h>\n#include<string>\n#include<boost/any.hpp>\n#include<openssl/md5.h>\n" \
                 "using namespace std;\nstring md5hex(string text){\n"
CPP_LIBS = ("    unsigned char d[MD5_DIGEST_LENGTH];\n    MD5((const unsigned char*)text.c_str(), text.size(), d);\n"
            "    char out[33];\n    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, \"%02x\", d[i]);\n"
            "    return string(out);\n}\n")
CPP_LIBS_TESTS = ("#undef NDEBUG\n#include<assert.h>\nint main(){\n    boost::any x = 3;\n"
                  "    assert(boost::any_cast<int>(x) == 3);\n"
                  "    assert(md5hex(\"Hello world\") == \"3e25960a79dbc69b674cd4ec67a72c62\");\n}\n")
CPP_LIBS_STDIO = ("#include <openssl/md5.h>\n#include <boost/any.hpp>\n#include <cstdio>\nint main() {\n"
                  "    unsigned char d[MD5_DIGEST_LENGTH];\n    MD5((const unsigned char*)\"abc\", 3, d);\n"
                  "    boost::any x = (int)d[0];\n    long a, b;\n    if (scanf(\"%ld %ld\", &a, &b) != 2) return 1;\n"
                  "    printf(\"%ld\\n\", a + b + boost::any_cast<int>(x) - 0x90);\n}\n")
# McEval's C form: the prompt ends with the function's signature, the completion opens its body with `{`.
C_SIGNATURE = {"kind": "function_tests", "language": "c",
               "setup": "#include <assert.h>\n/*\nThe sum.\n>>> add(1, 2)\n3\n*/\nint add(int a, int b)\n\n",
               "tests": "\n\nint main() {\n    assert(add(1, 2) == 3);\n    assert(add(-1, 1) == 0);\n"
                        "    return 0;\n}\n"}
C_SIGNATURE_BODY = "{\n    return a + b;\n}\n"
# McEval's PHP form (assert() calls, which the languages image's php.ini compiles out: zend.assertions = -1) and
# its JavaScript / TypeScript form (console.assert, which only prints when its condition is false).
PHP_ASSERT = {"kind": "function_tests", "language": "php", "setup": "<?php\nfunction add($a, $b)\n\n",
              "tests": "\n\nfunction main(){\n    assert(add(1, 2) === 3);\n    assert(add(-1, 1) === 0);\n}\n\n"
                       "main();\n?>"}
JS_CONSOLE_ASSERT = {"kind": "function_tests", "language": "javascript",
                     "tests": "\nfunction testAdd() {\n  console.assert(add(1, 2) === 3, 'add(1, 2)');\n"
                              "  console.assert(add(-1, 1) === 0);\n}\n\ntestAdd();\n"}
# McEval's Rust form: the one #[test] function of `mod tests` is called `main` (it is not the crate's main).
RUST_TEST_MAIN = {"kind": "function_tests", "language": "rust", "setup": "fn add(a: i32, b: i32) -> i32\n\n",
                  "tests": "\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn main() {\n"
                           "        assert_eq!(add(1, 2), 3);\n        assert_eq!(add(-1, 1), 0);\n    }\n}\n"}


def stdio(language: str) -> dict:
    return {"kind": "stdio", "language": language, "cases": SUM, "timeout_s": 30}


@pytest.fixture(scope="module")
def results(langs_service):
    items = []
    for lang, (right, broken) in MORE.items():
        items += [(f"{lang} right", right, stdio(lang)), (f"{lang} wrong", right.replace("a + b", "a - b")
                  .replace("$a + $b", "$a - $b").replace("x[1] + x[2]", "x[1] - x[2]")
                  .replace("+ long.Parse", "- long.Parse"), stdio(lang)), (f"{lang} broken", broken, stdio(lang))]
    items += [(f"java {name}", src, stdio("java")) for name, src in JAVA_FORMS.items()]
    items += [("java assert", JAVA_ASSERT, stdio("java")), ("node deep", NODE_DEEP, stdio("javascript")),
              ("c deep", C_DEEP, stdio("c"))]
    items += [
        ("ts default import", "function add(a: number, b: number): number {\n  return a + b;\n}\n",
         {"kind": "function_tests", "language": "typescript", "tests": 'import assert from "assert";\n'
          "assert.deepEqual(add(1, 2), 3);\nassert.deepEqual(add(-1, 1), 0);\n"}),
        ("js implicit globals", "  for (m in [a]) { s = a + b; }\n  return s;\n}\n",  # (HumanEval-X's JavaScript/111)
         {"kind": "function_tests", "language": "javascript", "setup": "function add(a, b) {\n",
          "tests": "const assert = require('assert');\nassert.deepEqual(add(1, 2), 3);\n"}),
        ("rust multipl-e", "    a + b\n",
         {"kind": "function_tests", "language": "rust", "setup": "fn add(a: isize, b: isize) -> isize {\n",
          "tests": "}\n\nfn main() {\n    let candidate = add;\n    assert_eq!(candidate(1, 2), 3);\n}\n"}),
        ("rust test module", RUST_SOLUTION,
         {"kind": "function_tests", "language": "rust", "setup": RUST_SETUP, "tests": RUST_TESTS}),
        ("rust test module wrong", RUST_SOLUTION.replace("panic!", "return vec![]; #[allow(unreachable_code)] "
                                                                  "panic!"),
         {"kind": "function_tests", "language": "rust", "setup": RUST_SETUP, "tests": RUST_TESTS}),
        ("rust crates stdio", RUST_CRATES_STDIO, stdio("rust")),
        ("rust result alias", "type Result<T> = std::result::Result<T, String>;\n"  # (an idiom the end allows)
         "fn half(x: i64) -> Result<i64> { if x % 2 == 0 { Ok(x / 2) } else { Err(\"odd\".to_string()) } }\n",
         {"kind": "function_tests", "language": "rust",
          "tests": "fn main() {\n    assert_eq!(half(4), Ok(2));\n    assert!(half(3).is_err());\n}\n"}),
        ("php strict types", "    return $a + $b;\n}\n", PHP_STRICT),  # (the launcher keeps the declare first)
        ("php strict types wrong type", "    return $a + $b;\n}\n",
         {**PHP_STRICT, "tests": PHP_STRICT["tests"].replace("add(1, 2)", "add('1', 2)")}),
        ("cpp multipl-e argv", "    return a + b;\n",
         {"kind": "function_tests", "language": "cpp",
          "setup": "#include<assert.h>\n#include<bits/stdc++.h>\nlong add(long a, long b) {\n",
          "tests": "}\nint main(int argc, char* argv[]) {\n    auto candidate = add;\n"
                   "    assert(candidate(1, 2) == 3);\n}\n"}),
        ("rust test named main", "{\n    a + b\n}\n", RUST_TEST_MAIN),
        ("rust test named main wrong", "{\n    a - b\n}\n", RUST_TEST_MAIN),
        ("c signature setup", C_SIGNATURE_BODY, C_SIGNATURE),
        ("php assert", "{\n    return $a + $b;\n}\n", PHP_ASSERT),
        ("php assert wrong", "{\n    return $a - $b;\n}\n", PHP_ASSERT),
        ("js console.assert", "function add(a, b) {\n  return a + b;\n}\n", JS_CONSOLE_ASSERT),
        ("js console.assert wrong", "function add(a, b) {\n  return a - b;\n}\n", JS_CONSOLE_ASSERT),
        ("ts console.assert wrong", "function add(a: number, b: number): number {\n  return a - b;\n}\n",
         {**JS_CONSOLE_ASSERT, "language": "typescript"}),
        ("c signature setup wrong", C_SIGNATURE_BODY.replace("a + b", "a - b"), C_SIGNATURE),
    ]
    for form, (setup, tests) in GO_FORMS.items():
        spec = {"kind": "function_tests", "language": "go", "setup": setup, "tests": tests}
        items += [(f"{form} right", GO_ADD, spec), (f"{form} wrong", GO_ADD.replace("a + b", "a - b"), spec),
                  (f"{form} broken", GO_ADD.replace("a + b", "a +"), spec)]
    cpp_libs = {"kind": "function_tests", "language": "cpp", "setup": CPP_LIBS_SETUP, "tests": CPP_LIBS_TESTS}
    items += [("cpp libraries right", CPP_LIBS, cpp_libs),
              ("cpp libraries wrong", CPP_LIBS.replace("text.size()", "text.size() - 1"), cpp_libs),
              ("cpp libraries stdio", CPP_LIBS_STDIO, stdio("cpp"))]
    out = langs_service.verify_batch([(src, spec) for _, src, spec in items], timeout=900)
    return {name: r for (name, _, _), r in zip(items, out, strict=True)}


def test_php_strict_types_hold(results):
    """A PHP program that declares strict types runs in strict mode (a string for an int parameter is an error)."""
    assert results["php strict types wrong type"]["verdict"] == "FAILED", results["php strict types wrong type"]


@pytest.mark.parametrize("language", sorted(MORE))
def test_debian_languages_judge_stdio(results, language):
    got = {what: results[f"{language} {what}"]["verdict"] for what in ("right", "wrong", "broken")}
    assert got == {"right": "PASSED", "wrong": "FAILED", "broken": "COMPILE_ERROR"}, {
        what: results[f"{language} {what}"]["detail"][:300] for what in got}


@pytest.mark.parametrize("name", [*(f"java {n}" for n in JAVA_FORMS), "node deep", "c deep", "ts default import",
                                  "js implicit globals", "rust multipl-e", "rust test module", "rust crates stdio",
                                  "rust result alias", "php strict types", "cpp multipl-e argv",
                                  "c signature setup", "rust test named main", "php assert", "js console.assert"])
def test_correct_programs_pass(results, name):
    assert results[name]["verdict"] == "PASSED", (results[name]["detail"][:400], results[name].get("stderr_tail"))


@pytest.mark.parametrize("form", sorted(GO_FORMS))
def test_go_test_form(results, form):
    """`go test` functions run by the service's test main, testify from the image (issue 30, class 2)."""
    got = {what: results[f"{form} {what}"]["verdict"] for what in ("right", "wrong", "broken")}
    assert got == {"right": "PASSED", "wrong": "FAILED", "broken": "COMPILE_ERROR"}, {
        what: (results[f"{form} {what}"]["detail"][:300], results[f"{form} {what}"].get("stdout_tail", "")[-300:])
        for what in got}


def test_cpp_has_boost_and_openssl(results):
    """Boost's and OpenSSL's headers, and libcrypto linked, where C++ runs (the default image)."""
    got = {what: results[f"cpp libraries {what}"]["verdict"] for what in ("right", "wrong", "stdio")}
    assert got == {"right": "PASSED", "wrong": "FAILED", "stdio": "PASSED"}, {
        what: results[f"cpp libraries {what}"]["detail"][:300] for what in got}


def test_java_runs_with_assertions_on_in_stdio(results):
    assert results["java assert"]["verdict"] == "RUNTIME_ERROR", results["java assert"]["detail"][:300]


def test_a_rust_test_module_fails_a_wrong_answer(results):
    """The #[should_panic] test of "rust test module" fails when the function returns instead of panicking."""
    r = results["rust test module wrong"]
    assert r["verdict"] == "FAILED" and "test tests::test_empty failed" in r.get("stderr_tail", ""), (
        r["verdict"], r["detail"][:300], r.get("stderr_tail"))


@pytest.mark.parametrize("name", ["c signature setup wrong", "rust test named main wrong", "php assert wrong",
                                  "js console.assert wrong", "ts console.assert wrong"])
def test_mceval_forms_fail_a_wrong_answer(results, name):
    assert results[name]["verdict"] == "FAILED", (results[name]["verdict"], results[name]["detail"][:300])
