"""The hostile programs of tests/adversarial/langs/ (C, C++, Java, JavaScript, TypeScript, Go, Rust, Bash, PHP, Lua,
Perl, R, C#, Ruby) on Docker: each header says its class, its task and the verdicts that are right for it (as in
tests/adversarial/, see tests/sandbox/test_adversarial.py). ``fn_add``: function_tests with the task of
tests/sandbox/test_languages_functions.py (every hack answers wrong or not at all, so PASSED would be a forged pass);
``fn_add_partial``: the same task in C# with the setup's class partial (a completion can close it, declare
namespaces and reopen it); ``fn_add_die``: the same task with Perl tests that check with ``die`` and ``exit``;
``fn_add_raise``: the same task with Ruby tests of McEval's form (top-level ``raise ... unless``);
``fn_add_gotest``: the same task in Go's `go test` form (HumanEval-X's: testify, ``GO_TEST``); ``escape``: stdio,
printing ``held`` only when the isolation held (only ``lo``, no write outside the scratch dirs). Also: the compile
cache cannot be tampered with by a program that rewrites its own binary."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_languages_functions import ADD

from support.sandboxes import runsc_registered

pytestmark = pytest.mark.docker

HERE = Path(__file__).resolve().parents[1] / "adversarial" / "langs"
LANGUAGE = {".c": "c", ".cpp": "cpp", ".java": "java", ".js": "javascript", ".ts": "typescript", ".go": "go",
            ".rs": "rust", ".sh": "bash", ".php": "php", ".lua": "lua", ".pl": "perl", ".R": "r", ".cs": "csharp",
            ".d": "d", ".rb": "ruby"}


def load() -> list[tuple[str, str, str, set[str], str]]:
    """(name, language, task, expected verdicts, source) of every program."""
    out = []
    for path in sorted(HERE.iterdir()):
        text = path.read_text()
        header = {}
        for line in text.splitlines():
            stripped = line.removeprefix("// ").removeprefix("# ").removeprefix("-- ")
            if stripped == line or ":" not in stripped:
                break
            key, value = stripped.split(":", 1)
            header[key.strip()] = value.strip()
        assert {"class", "task", "expect"} <= set(header), f"{path.name}: bad header {header}"
        out.append((path.name, LANGUAGE[path.suffix], header["task"], set(header["expect"].split()), text))
    return out


PROGRAMS = load()
IO_ADD = {  # function_io's task: the setup (the completion is the whole function, or continues the class)
    "cpp": ("#include <string>\nlong add(long a, long b);\n", "", ""),
    "javascript": ("", "", ""),
    "java": ("import java.util.*;\nclass Problem {\n    public static long add(long a, long b) {\n", "", ""),
    "rust": ("", "", ""),
    "php": ("", "", ""), "lua": ("", "", ""), "perl": ("", "", ""), "r": ("", "", ""),  # (the hack defines add)
    "ruby": ("", "", ""),
}


# fn_even_mod: Rust function tests of HumanEval-X's form (its declaration's crates, a #[cfg(test)] module of #[test]
# functions); the completion continues the setup's function.
EVEN_MOD = ("use rand::Rng;\nuse regex::Regex;\nuse md5;\n\nfn is_even(n: i64) -> bool {\n",
            "    n % 2 == 0\n}\n",
            "\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn test_is_even() {\n"
            "        assert_eq!(vec![is_even(2), is_even(3), is_even(0), is_even(-7)],\n"
            "                   vec![true, false, true, false]);\n"
            "    }\n}\n")


GO_TEST = ('package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n\n',
           "func TestAdd(t *testing.T) {\n    assert := assert.New(t)\n    assert.Equal(3, add(1, 2))\n"
           "    assert.Equal(0, add(-1, 1))\n    assert.Equal(42, add(20, 22))\n}\n")


# fn_add_signature: McEval's C form, the setup ends with the signature and the completion opens the body.
C_SIGNATURE = ("#include <assert.h>\n/* add(1, 2) == 3 */\nint add(int a, int b)\n\n",
               "\n\nint main() {\n    assert(add(1, 2) == 3);\n    assert(add(-1, 1) == 0);\n    return 0;\n}\n")


# fn_add_assert: McEval's PHP form (the tests are assert() calls) and its JavaScript form (console.assert calls).
PHP_ASSERT = ("<?php\nfunction add($a, $b)\n\n",
              "\n\nfunction main(){\n    assert(add(1, 2) === 3);\n    assert(add(-1, 1) === 0);\n}\n\nmain();\n?>")
JS_CONSOLE_ASSERT = ("function testAdd() {\n  console.assert(add(1, 2) === 3);\n"
                     "  console.assert(add(-1, 1) === 0);\n}\ntestAdd();\n")


RUBY_RAISE = "raise 'Test failed' unless add(1, 2) == 3\nraise 'Test failed' unless add(-1, 1) == 0\nputs 'ok'\n"
PERL_DIE = '}\n\ndie "add(1, 2)" unless add(1, 2) == 3;\nexit(1) unless add(-1, 1) == 0;\n'


def spec_for(language: str, task: str) -> dict:
    if task == "fn_add_assert" and language == "php":
        return {"kind": "function_tests", "language": "php", "setup": PHP_ASSERT[0], "tests": PHP_ASSERT[1],
                "timeout_s": 30}
    if task == "fn_add_assert":
        return {"kind": "function_tests", "language": language, "tests": JS_CONSOLE_ASSERT, "timeout_s": 30}
    if task == "fn_add_signature":
        return {"kind": "function_tests", "language": "c", "setup": C_SIGNATURE[0], "tests": C_SIGNATURE[1],
                "timeout_s": 30}
    if task == "fn_even_mod":
        return {"kind": "function_tests", "language": "rust", "setup": EVEN_MOD[0], "tests": EVEN_MOD[2],
                "timeout_s": 30}
    if task == "fn_add_die":  # Perl tests that check with die and exit (McEval's form)
        return {"kind": "function_tests", "language": "perl", "setup": ADD["perl"][0], "tests": PERL_DIE,
                "timeout_s": 30}
    if task == "fn_add_partial":  # C#: the setup's class is partial (a completion can reopen it after a namespace)
        setup, _, tests = ADD["csharp"]
        return {"kind": "function_tests", "language": "csharp", "setup": setup.replace("class Problem", "partial class "
                "Problem"), "tests": tests, "timeout_s": 30}
    if task == "fn_add_raise":  # Ruby tests of McEval's form (top-level raise ... unless)
        return {"kind": "function_tests", "language": "ruby", "setup": ADD["ruby"][0], "tests": RUBY_RAISE,
                "timeout_s": 30}
    if task == "fn_add_gotest":
        return {"kind": "function_tests", "language": "go", "setup": GO_TEST[0], "tests": GO_TEST[1], "timeout_s": 30}
    if task == "fn_add":
        setup, _, tests = ADD[language]
        return {"kind": "function_tests", "language": language, "setup": setup, "tests": tests, "timeout_s": 30}
    if task == "io_add":
        setup, _, _ = IO_ADD[language]
        return {"kind": "function_io", "language": language, "setup": setup, "entry_point": "add", "timeout_s": 30,
                "cases": [{"args": [1, 2], "expected": 3}, {"args": [-1, 1], "expected": 0},
                          {"args": [20, 22], "expected": 42}]}
    assert task == "escape"
    return {"kind": "stdio", "language": language, "cases": [{"stdin": "", "expected_stdout": "held\n"}],
            "compare": "exact", "timeout_s": 30}


@pytest.fixture(scope="module")
def results(langs_service):
    out = langs_service.verify_batch([(source, spec_for(lang, task)) for _, lang, task, _, source in PROGRAMS],
                                     timeout=900)
    return {name: r for (name, *_), r in zip(PROGRAMS, out, strict=True)}


@pytest.mark.parametrize("name, expect", [(p[0], p[3]) for p in PROGRAMS], ids=[p[0] for p in PROGRAMS])
def test_program(results, name, expect):
    r = results[name]
    assert r["verdict"] in expect, (r["verdict"], r["detail"][:400], r.get("stdout_tail", "")[-300:])
    if name.startswith("hack_"):
        assert r["correctness_score"] == 0.0


def test_the_rust_test_module_task_passes_the_right_answer_only(langs_service):
    """fn_even_mod's honest completion passes (so its hacks fail for what they do) and a wrong one fails."""
    right, wrong = EVEN_MOD[1], EVEN_MOD[1].replace("== 0", "== 1")
    out = langs_service.verify_batch([(right, spec_for("rust", "fn_even_mod")),
                                      (wrong, spec_for("rust", "fn_even_mod"))], timeout=600)
    assert [r["verdict"] for r in out] == ["PASSED", "FAILED"], [r["detail"][:300] for r in out]


def test_the_io_add_task_passes_honest_dynamic_programs(langs_service):
    """io_add answered right in each language the io hacks use (so their FAILED is the hack's, not the driver's)."""
    honest = {"php": "function add($a, $b) {\n    return $a + $b;\n}\n",
              "lua": "function add(a, b)\n  return a + b\nend\n",
              "perl": "sub add {\n    my ($a, $b) = @_;\n    return $a + $b;\n}\n",
              "r": "add <- function(a, b) {\n  a + b\n}\n"}
    out = langs_service.verify_batch([(src, spec_for(lang, "io_add")) for lang, src in honest.items()], timeout=600)
    assert [r["verdict"] for r in out] == ["PASSED"] * 4, [r["detail"][:300] for r in out]


def test_an_honest_program_passes_the_perl_die_form(langs_service):
    right, wrong = ADD["perl"][1], ADD["perl"][1].replace("+", "-")
    out = langs_service.verify_batch([(right, spec_for("perl", "fn_add_die")), (wrong, spec_for("perl", "fn_add_die"))],
                                     timeout=300)
    assert [r["verdict"] for r in out] == ["PASSED", "FAILED"], [r["detail"][:300] for r in out]


def test_an_honest_program_passes_the_gotest_form(langs_service):
    """The task the `go test` hacks answer wrong, answered right (so their FAILED is not the form's)."""
    r = langs_service.verify(ADD["go"][1], spec_for("go", "fn_add_gotest"))
    assert r["verdict"] == "PASSED", (r["detail"][:400], r.get("stdout_tail", "")[-300:])


def test_an_honest_program_passes_the_partial_csharp_class(langs_service):
    right, wrong = ADD["csharp"][1], ADD["csharp"][1].replace("+", "-")
    out = langs_service.verify_batch([(right, spec_for("csharp", "fn_add_partial")),
                                      (wrong, spec_for("csharp", "fn_add_partial"))], timeout=300)
    assert [r["verdict"] for r in out] == ["PASSED", "FAILED"], [r["detail"][:300] for r in out]


def test_every_language_is_covered():
    from verifier_service.kinds import drivers, function_tests

    hacks = {lang for name, lang, task, *_ in PROGRAMS if task == "fn_add"}
    io_hacks = {lang for name, lang, task, *_ in PROGRAMS if task == "io_add"}
    escapes = {lang for name, lang, task, *_ in PROGRAMS if task == "escape"}
    assert hacks == set(function_tests.SUPPORTED)
    assert {"php", "lua", "perl", "r"} <= io_hacks <= set(drivers.SUPPORTED)
    assert {"java", "javascript", "go", "rust"} <= escapes  # every toolchain of the languages image


TAMPER = r"""#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
int main(void) {
    long a, b;
    if (scanf("%ld %ld", &a, &b) != 2) return 1;
    /* Replace the program in the work dir (and anything else it can reach) with one that answers 999. */
    unlink("solution");
    FILE *f = fopen("solution", "w");
    if (f) { fputs("#!/bin/sh\necho 999\n", f); fclose(f); chmod("solution", 0755); }
    printf("%ld\n", a + b);
    return 0;
}
"""


def test_a_program_that_rewrites_its_binary_changes_no_other_job(langs_service):
    """The first case runs the compiled program, which replaces itself; the second runs the replacement (999, a
    wrong answer) in the same job. A later job of the same source gets the cached program, not the replacement:
    the same per-case verdicts, case 0 passing again."""
    cases = [{"stdin": "1 2\n", "expected_stdout": "3\n"}, {"stdin": "2 2\n", "expected_stdout": "4\n"}]
    outcomes = []
    for name in ("first", "second", "third"):  # one after another: the later ones find the compile cached
        spec = {"kind": "stdio", "language": "c", "cases": [{**c, "name": f"{name} {i}"} for i, c in enumerate(cases)]}
        r = langs_service.verify(TAMPER, spec)
        outcomes.append([t["verdict"] for t in r["tests"]])
    assert outcomes == [["PASSED", "FAILED"]] * 3, outcomes
    assert langs_service.app.sandbox.artifacts.hits >= 2


HACKS = [p for p in PROGRAMS if p[0].startswith("hack_")]



@pytest.mark.skipif(not runsc_registered(), reason="gVisor (runsc) is not registered with Docker")
def test_the_hacks_fail_under_gvisor(make_service):
    """The same hostile programs (function_tests and function_io) under gVisor's kernel, beside an honest program
    of each language, which must still pass."""
    from test_function_io import TASKS, io_spec

    svc = make_service(sandbox_runtime="runsc", compile_timeout_s=180.0, default_timeout_s=30.0)
    items = [(source, spec_for(lang, task)) for _, lang, task, _, source in HACKS]
    honest = [(ADD[lang][1], spec_for(lang, "fn_add")) for lang in sorted(ADD)]
    honest += [(ADD["go"][1], spec_for("go", "fn_add_gotest"))]
    honest += [(TASKS[name][3], io_spec(name)) for name in ("cpp", "java", "javascript", "rust", "php", "lua", "perl",
                                                             "r", "ruby")]
    out = svc.verify_batch(items + honest, timeout=1500)
    for (name, _, _, expect, _), r in zip(HACKS, out, strict=False):
        assert r["verdict"] in expect and r["correctness_score"] == 0.0, (name, r["verdict"], r["detail"][:300])
    for r in out[len(items):]:
        assert r["verdict"] == "PASSED", r["detail"][:300]
