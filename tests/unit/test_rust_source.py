"""Rust function tests without a sandbox: reading a test program's #[test] functions (kinds/rust_source.py), the
program function_tests builds from them (kinds/function_tests.py), and a crate missing on a backend answered as
INFRA_ERROR there only (kinds/compiled.py)."""

from __future__ import annotations

import asyncio

import pytest

from verifier_service.config import ServiceConfig
from verifier_service.errors import InvalidSpec
from verifier_service.kinds import probe
from verifier_service.kinds.base import Context
from verifier_service.kinds.function_tests import FunctionTests, rust_program, rust_tests
from verifier_service.kinds.rust_source import blank, read_tests
from verifier_service.sandbox.base import SandboxRun, StepResult
from verifier_service.spec import Spec

TESTS = r'''
// #[test] fn in_a_comment() {}
/* /* nested */ #[test] fn in_a_block_comment() {} */
const S: &str = r#"#[test] fn in_a_raw_string() {} "#;
const C: char = '{';
fn helper<'a>(x: &'a str) -> &'a str { x }
#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn first() { assert_eq!(helper("}"), "}"); }
    #[test] #[should_panic(expected = "bad \"input\"")]
    fn second() { panic!("bad \"input\""); }
    pub(super) mod inner {
        #[test]
        #[ignore]
        fn skipped() {}
        #[test]
        pub fn third() -> Result<(), String> { Ok(()) }
        fn not_a_test() { #[test] fn inside_a_function() {} }
    }
}
'''


def test_blank_keeps_offsets_and_lifetimes():
    text = "let s = r#\"a \" b\"#; /* x /* y */ z */ 'a' 'b: loop {} // end\n"
    out = blank(text)
    assert len(out) == len(text) and "x" not in out and "end" not in out and "'b: loop" in out
    assert "a \" b" not in out


def test_the_test_functions_and_their_modules():
    found = read_tests(TESTS)
    assert [(t.modules, t.name) for t in found.tests] == [
        (("tests",), "first"), (("tests",), "second"), (("tests", "inner"), "skipped"),
        (("tests", "inner"), "third")]
    assert found.tests[1].should_panic and found.tests[1].expected == '"bad \\"input\\""'
    assert found.tests[2].ignored and not found.tests[0].should_panic
    raw = read_tests('#[test]\n#[should_panic(expected = r#"a "b" c"#)]\nfn t() {}\n').tests[0]
    assert raw.expected == 'r#"a "b" c"#'
    assert [m.path for m in found.modules] == [("tests",), ("tests", "inner")]


def test_the_end_calls_each_test_through_a_wrapper_of_a_secret_name():
    tests, calls, helpers = rust_tests(TESTS, "tq9")
    # Only those of the tests lose their attribute (in comments, literals and function bodies they stay).
    assert tests.count("#[test]") == 4 and "#[should_panic" not in tests and "#[ignore]" not in tests
    assert "pub(crate) mod tests" in tests and "pub(crate) mod inner" in tests
    assert calls[0] == "let mut tq9_ok = true;" and len(calls) == 4  # skipped is #[ignore]d
    assert "crate::tests::inner::tq9_case3()" in calls[3]
    assert 'tq9_panics(|| { let _ = second(); }, ::core::option::Option::Some("bad \\"input\\""))' in tests
    assert "trait Tq9Passed" in helpers


def test_the_main_form_and_no_tests():
    tests, calls, _ = rust_tests("}\nfn main() {\n    assert!(f());\n}\n", "tq9")
    assert "fn tq9_tests_main()" in tests and calls == ["tq9_tests_main();"]
    assert rust_tests("fn helper() {}\n", "tq9")[1] == []
    program = rust_program("", "fn f() -> bool { true }\n", "fn helper() {}\n", b"\x01", b"\x02", "tq9")
    assert "if !false { ::std::process::exit(101); }" in program  # nothing ran: the end never prints the nonce
    with pytest.raises(InvalidSpec, match="#\\[test\\]"):
        FunctionTests().validate(Spec(kind="function_tests", language="rust", tests="fn helper() {}\n"))


class FakeSandbox:
    """Runs the crates' probe: its compile fails (no crates here) or the program prints ok."""

    def __init__(self, crates: bool):
        self.crates, self.jobs = crates, 0

    async def run(self, job):
        self.jobs += 1
        compile_step = StepResult("compile", 0 if self.crates else 1, None, False, False, 0.1, "",
                                  "" if self.crates else "error[E0463]: can't find crate for `rand`")
        if not self.crates:
            return SandboxRun([compile_step], True)
        return SandboxRun([compile_step, StepResult("run", 0, None, False, False, 0.1, "ok\n", "")], True)


@pytest.mark.parametrize("crates", [False, True])
def test_a_missing_crate_is_infra_error_only_where_the_spec_needs_it_and_the_backend_has_none(crates):
    """What the spec's own text (setup, tests) uses decides, never the completion's: a completion that names a
    crate on a backend without them would otherwise turn its compile error (or its wrong answer) into an
    INFRA_ERROR, which carries no penalty."""
    from verifier_service.kinds.languages import LANGUAGES

    sandbox = FakeSandbox(crates)
    ctx = Context(config=ServiceConfig(), sandbox=sandbox, pure_pool=None, timeout_s=10.0)
    rust = LANGUAGES["rust"]
    needs = asyncio.run(probe.library_problems(ctx, rust, "use rand::Rng;\nuse regex::Regex;\nfn f() -> i64 {\n"))
    if crates:
        assert needs is None
    else:
        assert "rust crates" in needs and "sandbox backend" in needs
    for plain in ("fn f() -> i64 {\n", "// a comment about rand\nfn strand() -> i64 {\n", "let operand = 1;"):
        assert asyncio.run(probe.library_problems(ctx, rust, plain)) is None, plain
    assert asyncio.run(probe.library_problems(ctx, rust, "fn g() { let _ = md5::compute(b\"x\"); }")) == needs
    # probed once, and kept beside the languages' probes (not one of them: `known` lists languages only)
    assert sandbox.jobs == 1 and set(probe._RESULTS[sandbox]) == {"lib:rust crates"} and not probe.known(sandbox)
