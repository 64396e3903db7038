"""The languages' host-side parts without a sandbox: the table, the warm pool's split by demand, the compile cache."""

from __future__ import annotations

import asyncio

import pytest

from verifier_service.kinds import go_tests
from verifier_service.kinds.java_source import main_class as java_main_class
from verifier_service.kinds.languages import LANGUAGES, first_error_line, link_libs, run_argv
from verifier_service.sandbox.artifacts import ArtifactCache, Built, artifact_key
from verifier_service.sandbox.base import StepResult
from verifier_service.sandbox.warm import Demand


def test_the_table_has_the_languages_the_front_doors_name():
    assert set(LANGUAGES) == {"python", "cpp", "c", "bash", "java", "javascript", "typescript", "go", "rust",
                              "php", "lua", "perl", "r", "csharp", "d", "ruby"}
    for lang in LANGUAGES.values():
        assert lang.image in ("", "langs") and lang.version and lang.run and lang.compile


def test_java_file_and_class_follow_the_public_class():
    assert java_main_class("import x;\npublic final class Solver { }") == "Solver"
    assert java_main_class("class A {}\nclass B {}") == "A"
    assert java_main_class("int x;") == "Main"
    file, compile_argv, run = LANGUAGES["java"].files("public class Foo { public static void main(String[] a) {} }")
    assert file == "Foo.java" and compile_argv[-1] == "Foo.java" and run[-1] == "Foo"


def test_first_error_lines():
    assert first_error_line(LANGUAGES["go"], "# command-line\n./solution.go:3:2: undefined: x\n") == \
        "./solution.go:3:2: undefined: x"
    assert first_error_line(LANGUAGES["rust"], "warning: unused\nerror[E0308]: mismatched types\n").startswith("error[")
    assert first_error_line(LANGUAGES["c"], "solution.c: In function 'main':\nsolution.c:1:2: error: x\n") == \
        "solution.c:1:2: error: x"


def test_ruby_runs_with_its_stack_limits():
    """Ruby's VM stack 128 MiB, its stack limit 32 MiB (gVisor crashes a Ruby started with 48 MiB or more), for
    the syntax check and the run alike; the compile output's first error line is the parser's."""
    ruby = LANGUAGES["ruby"]
    for argv in (ruby.compile, ruby.run):
        assert argv[:2] == ("sh", "-c") and "ulimit -s 32768" in argv[2] and "RUBY_THREAD_VM_STACK_SIZE=134217728" \
            in argv[2] and argv[4] == "ruby"
    assert ruby.compile[-2:] == ("-c", "solution.rb") and ruby.run[-1] == "solution.rb"
    assert first_error_line(ruby, "solution.rb:3: syntax error, unexpected end-of-input\n").startswith("solution.rb:3")


def test_go_runs_with_the_sandbox_cpus():
    assert run_argv(LANGUAGES["go"], ("./solution",), 1.5, 512) == ["env", "GOMAXPROCS=2", "./solution"]
    assert run_argv(LANGUAGES["c"], ("./solution",), 1.5, 512) == ["./solution"]


@pytest.mark.parametrize("jobs, total, want", [
    ([], 4, {"": 4}),
    ([""] * 30, 4, {"": 4}),
    (["langs"] * 30, 4, {"": 0, "langs": 4}),
    ([""] * 20 + ["langs"] * 20, 4, {"": 2, "langs": 2}),
    ([""] * 60 + ["langs"] * 3, 4, {"": 3, "langs": 1}),  # a family in demand keeps at least one sandbox
    ([""] * 40 + ["langs"] * 10, 1, {"": 1}),  # one sandbox in all: the busier family's
])
def test_demand_splits_the_pool(jobs, total, want):
    demand = Demand()
    for family in jobs:
        demand.record(family)
    targets = demand.targets(total)
    assert sum(targets.values()) == total
    assert {f: n for f, n in targets.items() if n or f == ""} == {f: n for f, n in want.items() if n or f == ""}


def _failed_compile() -> StepResult:
    return StepResult("compile", 1, None, False, False, 0.1, "", "solution.c:1: error: x")


def test_the_cache_compiles_each_source_once_even_when_asked_at_once():
    async def scenario():
        cache = ArtifactCache()
        key = artifact_key("", ["gcc"], "solution.c", "int main(){}")
        first = await cache.claim(key, 5)
        assert first is None  # this caller compiles
        waiters = [asyncio.create_task(cache.claim(key, 5)) for _ in range(7)]
        await asyncio.sleep(0.01)
        assert not any(w.done() for w in waiters)  # they wait for that compile
        cache.put(key, Built(packed="UEFDSw=="))
        got = await asyncio.gather(*waiters)
        assert all(b is not None and b.packed == "UEFDSw==" for b in got)
        assert (cache.compiles, cache.hits) == (1, 7)
        # A compile that ended without a result lets the next caller compile.
        other = artifact_key("", ["gcc"], "solution.c", "int main(){return 1;}")
        assert await cache.claim(other, 5) is None
        waiter = asyncio.create_task(cache.claim(other, 5))
        await asyncio.sleep(0.01)
        cache.release(other)
        assert await waiter is None
        # A failed compile is kept: the same source fails without a sandbox.
        cache.put(other, Built(failure=_failed_compile()))
        again = await cache.claim(other, 5)
        assert again is not None and again.failure is not None

    asyncio.run(scenario())


def test_the_cache_is_bounded_and_keys_differ_by_everything_the_compile_depends_on():
    cache = ArtifactCache(max_bytes=100)
    keys = [artifact_key("", ["gcc"], "solution.c", f"int x{i};") for i in range(5)]
    for key in keys:
        asyncio.run(cache.claim(key, 1))
        cache.put(key, Built(packed="x" * 40))
    assert sum(1 for k in keys if k in cache._entries) == 2  # the least recently used went first
    assert len({artifact_key("", ["gcc"], "a.c", "s"), artifact_key("langs", ["gcc"], "a.c", "s"),
                artifact_key("", ["gcc", "-O2"], "a.c", "s"), artifact_key("", ["gcc"], "b.c", "s"),
                artifact_key("", ["gcc"], "a.c", "t")}) == 5


def test_secrets_are_stable_per_ident():
    cache = ArtifactCache()
    assert cache.secret("a", 38) == cache.secret("a", 38) != cache.secret("b", 38)
    assert len(cache.secret("a", 38)) == 38


def test_c_and_cpp_link_libcrypto_only_where_the_compiler_finds_it():
    import subprocess

    _, argv, _ = LANGUAGES["cpp"].files("int main() {}")
    assert argv[:2] == ("sh", "-c") and "solution.cpp" in argv[2] and "-lcrypto" in argv[2]
    assert LANGUAGES["python"].files("print(1)")[1] == LANGUAGES["python"].compile
    # The probe's words, run by a shell: -lcrypto where libcrypto.so is found, nothing where it is not.
    words = link_libs("gcc", ("crypto", "surely_not_a_library_here"))
    out = subprocess.run(["sh", "-c", f"echo {words}"], capture_output=True, text=True, timeout=60).stdout.split()
    assert "-lsurely_not_a_library_here" not in out and out[0] == "-Wl,--as-needed"


def test_go_test_form_names_the_tests_from_the_tests_text_only():
    tests = ("func TestAdd(t *testing.T) {}\nfunc Testlower(t *testing.T) {}\nfunc Test(t *testing.T) {}\n"
             "func TestB(tt *testing.T) {}\nfunc helper(t *testing.T) {}\nfunc TestAdd(t *testing.T) {}\n")
    assert go_tests.test_names(tests) == ["TestAdd", "Test", "TestB"]
    assert go_tests.test_names("func main() {}\nfunc TestAdd(t *testing.T) {}\n") == []  # the main form
    files = go_tests.units("package add_test\n\nimport \"testing\"\n", "func TestOwn(t *testing.T) {}\n",
                           "func TestAdd(t *testing.T) {}\n", b"\x01" * 16, b"\x02" * 16, "tabc")
    assert list(files) == [go_tests.MAIN_FILE, go_tests.SOURCE_FILE]  # the test main is compiled first
    main = files[go_tests.MAIN_FILE]
    assert '{Name: "TestAdd", F: func(t *tabc_testing.T) { TestAdd(t); tabc_done[0] = !t.Failed() }}' in main
    assert "TestOwn" not in main and "var tabc_done [1]bool" in main
    assert files[go_tests.SOURCE_FILE].startswith("package main\n")
    assert "03" * 16 not in "".join(files.values())  # the end's nonce is not in the program


def test_go_test_form_specs():
    from verifier_service.errors import InvalidSpec
    from verifier_service.kinds.function_tests import FunctionTests
    from verifier_service.spec import Spec

    kind = FunctionTests()
    ok = Spec(kind="function_tests", language="go", setup="package main\nimport \"testing\"\n",
              tests="func TestA(t *testing.T) {}\n")
    assert kind.validate(ok) is ok
    for setup, tests in (("import \"testing\"\n", "func TestA(t *testing.T) {}\n"),
                         ("package main\n", "func TestA(t *testing.T) {}\nfunc TestMain(m *testing.M) {}\n"),
                         ("package main\n", "func helper() {}\n")):
        with pytest.raises(InvalidSpec):
            kind.validate(Spec(kind="function_tests", language="go", setup=setup, tests=tests))
