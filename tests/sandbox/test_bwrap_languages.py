"""Languages on the bubblewrap backend (issue 30, class 5): a language whose toolchain the host lacks is never
the completion's fault (INFRA_ERROR naming the backend, no reward); one the host has works (the JVM's
configuration under /etc and the helper scripts are bound), honest and hostile function tests alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_languages_functions import ADD, spec, wrong

pytestmark = pytest.mark.backends("bwrap")

HOSTILE = Path(__file__).resolve().parents[1] / "adversarial" / "langs"


def test_a_missing_toolchain_is_infra_error_naming_the_backend(make_service):
    if shutil.which("gdc"):
        pytest.skip("this host has gdc (D): no toolchain of the table is missing here")
    svc = make_service()
    source = 'import std.stdio;\nvoid main() { writeln(3); }\n'
    r = svc.verify(source, {"kind": "stdio", "language": "d", "cases": [{"stdin": "", "expected_stdout": "3\n"}]})
    assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], r["detail"]
    again = svc.verify(source.replace("3", "4"), {"kind": "stdio", "language": "d",
                                                  "cases": [{"stdin": "", "expected_stdout": "4\n"}]})
    assert again["verdict"] == "INFRA_ERROR"  # (the probe's answer is kept)


@pytest.mark.parametrize("language, tool", [("java", "javac"), ("javascript", "node"), ("c", "gcc"), ("cpp", "g++"),
                                            ("perl", "perl"), ("lua", "lua5.4"), ("r", "Rscript"),
                                            ("ruby", "ruby")])
def test_host_toolchains_work_and_hostile_programs_fail(make_service, language, tool):
    if not shutil.which(tool):
        pytest.skip(f"this host has no {tool}")
    svc = make_service(compile_timeout_s=120.0)
    ext = {"java": ".java", "javascript": ".js", "c": ".c", "cpp": ".cpp", "perl": ".pl", "lua": ".lua",
           "r": ".R", "ruby": ".rb"}[language]
    hostile = [p.read_text() for p in sorted(HOSTILE.glob(f"hack_fn_*{ext}"))]
    items = [(ADD[language][1], spec(language)), (wrong(language), spec(language)),
             *((src, spec(language)) for src in hostile)]
    results = svc.verify_batch(items, timeout=900)
    assert results[0]["verdict"] == "PASSED", results[0]["detail"][:400]
    assert results[1]["verdict"] == "FAILED", results[1]["detail"][:400]
    for r in results[2:]:
        assert r["verdict"] in ("FAILED", "COMPILE_ERROR") and r["correctness_score"] == 0.0, r["detail"][:400]


def test_a_library_the_host_lacks_is_infra_error(make_service):
    """javatuples is on the languages image's classpath; a bubblewrap host without it must not score a program
    that imports it as a compile error."""
    import os

    if not shutil.which("javac") or os.path.exists("/usr/share/java/javatuples.jar"):
        pytest.skip("needs a host with javac and without javatuples")
    svc = make_service(compile_timeout_s=120.0)
    source = ("import org.javatuples.Pair;\npublic class Main { public static void main(String[] a) {\n"
              "  System.out.println(Pair.with(1, 2).getValue0()); } }\n")
    r = svc.verify(source, {"kind": "stdio", "language": "java", "cases": [{"stdin": "", "expected_stdout": "1\n"}]})
    assert r["verdict"] == "INFRA_ERROR" and "javatuples" in r["detail"], r["detail"][:300]


def test_rust_crates_pass_or_are_infra_error_where_the_spec_needs_them(make_service):
    """HumanEval-X's Rust programs use rand, regex and md5 (the languages image's, sandboxes/langs/rust-crates.sh).
    On bubblewrap they work where the host has rustc and the crates were built for it (into the checkout's
    sandboxes/langs/rust-crates). Where they do not, a task whose own setup or tests use a crate is INFRA_ERROR
    naming the backend, never a verdict with a reward; a completion that uses a crate the task does not is
    judged on what it wrote (COMPILE_ERROR where the backend lacks it: naming a crate must not turn a wrong
    answer into an INFRA_ERROR, which carries no penalty). A host without rustc: INFRA_ERROR for all."""
    from test_languages_adversarial import EVEN_MOD, spec_for

    svc = make_service(compile_timeout_s=120.0)
    crates = ('use rand::Rng;\nuse regex::Regex;\nfn main() { let _ = rand::thread_rng().gen::<u8>();\n'
              '  println!("{} {:x}", Regex::new("o+").unwrap().find("ok").unwrap().as_str(), md5::compute(b"ok")); }\n')
    spec = {"kind": "stdio", "language": "rust",
            "cases": [{"stdin": "", "expected_stdout": "o 444bcb3a3fcf8389296c49467f27e1d6\n"}]}
    plain = 'fn main() { println!("o 444bcb3a3fcf8389296c49467f27e1d6"); }\n'
    task, chosen, without = svc.verify_batch([(EVEN_MOD[1], spec_for("rust", "fn_even_mod")), (crates, spec),
                                              (plain, spec)], timeout=600)
    if without["verdict"] == "INFRA_ERROR":  # the host's rustc does not work here: nothing Rust is judged
        assert "bwrap sandbox backend" in without["detail"], without["detail"][:300]
        assert task["verdict"] == chosen["verdict"] == "INFRA_ERROR", (task["detail"][:300], chosen["detail"][:300])
        return
    assert without["verdict"] == "PASSED", without["detail"][:300]
    if task["verdict"] == "PASSED":  # the crates work on this host
        assert chosen["verdict"] == "PASSED", chosen["detail"][:300]
    else:
        assert task["verdict"] == "INFRA_ERROR" and "rust crates" in task["detail"], task["detail"][:300]
        assert chosen["verdict"] == "COMPILE_ERROR", (chosen["verdict"], chosen["detail"][:300])


def test_the_new_forms_pass_or_are_infra_error_never_a_verdict_with_a_reward(make_service):
    """Boost and OpenSSL (C++) and Go's `go test` form with testify (issue 30): where the host has the toolchain
    and the library the spec's setup or tests include, the honest program passes; where it lacks either, the
    answer is INFRA_ERROR naming it, never a COMPILE_ERROR scored as the completion's."""
    from test_languages_adversarial import GO_TEST, spec_for
    from test_languages_forms import CPP_LIBS, CPP_LIBS_SETUP, CPP_LIBS_TESTS

    if not shutil.which("g++"):
        pytest.skip("this host has no g++")
    svc = make_service(compile_timeout_s=120.0)
    cpp = {"kind": "function_tests", "language": "cpp", "setup": CPP_LIBS_SETUP, "tests": CPP_LIBS_TESTS}
    assert GO_TEST[0].startswith("package main")
    results = svc.verify_batch([(CPP_LIBS, cpp), (ADD["go"][1], spec_for("go", "fn_add_gotest"))], timeout=900)
    boost = Path("/usr/include/boost/any.hpp").exists() and Path("/usr/include/openssl/md5.h").exists()
    assert results[0]["verdict"] == ("PASSED" if boost else "INFRA_ERROR"), results[0]["detail"][:300]
    assert results[1]["verdict"] in ("PASSED", "INFRA_ERROR"), results[1]["detail"][:300]
    for r in results:
        if r["verdict"] == "INFRA_ERROR":
            assert "bwrap" in r["detail"] and r["correctness_score"] == 0.0, r["detail"][:300]


@pytest.mark.parametrize("language, tool", [("php", "php"), ("lua", "lua5.4"), ("perl", "perl"), ("r", "Rscript"),
                                            ("csharp", "mcs"), ("d", "gdc"), ("ruby", "ruby")])
def test_function_tests_without_the_interpreter_are_infra_error(make_service, language, tool):
    """function_tests in a language whose toolchain the host lacks: INFRA_ERROR naming the backend for an honest, a
    wrong and every hostile program alike (never a verdict, never a reward: C#'s refusal of a completion that
    shadows the tests' names comes after the toolchain's probe too)."""
    if shutil.which(tool):
        pytest.skip(f"this host has {tool}")
    svc = make_service()
    ext = {"php": ".php", "lua": ".lua", "perl": ".pl", "r": ".R", "csharp": ".cs", "d": ".d",
           "ruby": ".rb"}[language]
    hostile = [p.read_text() for p in sorted(HOSTILE.glob(f"hack_fn_*{ext}"))]
    results = svc.verify_batch([(src, spec(language)) for src in (ADD[language][1], wrong(language), *hostile)],
                               timeout=300)
    for r in results:
        assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], r["detail"][:300]
        assert not r.get("reward") and not r.get("correctness_score")


@pytest.mark.parametrize("language, tool, ext", [("php", "php", ".php"), ("lua", "lua5.4", ".lua"),
                                                 ("perl", "perl", ".pl"), ("r", "Rscript", ".R"),
                                                 ("ruby", "ruby", ".rb")])
def test_function_io_in_the_dynamic_languages(make_service, language, tool, ext):
    """function_io in PHP, Lua, Perl, R and Ruby on bubblewrap: where the host has the interpreter, an honest function
    passes, a wrong one fails and the hostile io programs (tests/adversarial/langs/hack_io_*) score nothing; where it
    has not, every check is INFRA_ERROR naming the backend (no reward, no verdict on the completion)."""
    from test_function_io import TASKS, io_spec
    from test_languages_adversarial import spec_for

    svc = make_service(compile_timeout_s=120.0)
    name = f"{language} types"
    hostile = [p.read_text() for p in sorted(HOSTILE.glob(f"hack_io_*{ext}"))]
    assert hostile
    items = [(TASKS[name][3], io_spec(name)), (TASKS[name][4], io_spec(name)),
             *((src, spec_for(language, "io_add")) for src in hostile)]
    results = svc.verify_batch(items, timeout=600)
    if not shutil.which(tool):
        for r in results:
            assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], r["detail"][:300]
            assert not r.get("reward") and not r.get("correctness_score")  # (none: INFRA_ERROR carries no reward)
        return
    assert results[0]["verdict"] == "PASSED", (results[0]["detail"][:400], results[0].get("stderr_tail", "")[-300:])
    assert results[1]["verdict"] in ("FAILED", "PARTIAL") and results[1]["correctness_score"] < 1.0
    for r in results[2:]:
        assert r["correctness_score"] == 0.0 and r["verdict"] != "PASSED", r["detail"][:400]


SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"  # the bwrap sandbox's PATH: the host tools its programs can run


@pytest.mark.parametrize("language, tool", [("go", "go"), ("rust", "rustc"), ("csharp", "mcs"), ("d", "gdc")])
def test_the_compiled_languages_hostile_programs_on_the_hosts_toolchain(make_service, language, tool):
    """Go, Rust, C# and D run on the host's own toolchain (Debian's go, rustc, mcs, gdc under /usr; Go's standard
    library and testify and Rust's crates built for it once by the backend: sandbox/bwrap_langs.py). Where the
    host has the toolchain, honest programs of every task the hostile programs of tests/adversarial/langs answer
    pass, and each hostile program gets a verdict its header allows, with no reward (as on Docker,
    test_languages_adversarial.py). Where it has not (a rustup rustc under /root is not the sandbox's), every one of
    them, honest or hostile, is INFRA_ERROR naming the backend: never a verdict with or without a reward."""
    from test_function_io import TASKS, io_spec
    from test_languages_adversarial import EVEN_MOD, PROGRAMS, spec_for

    svc = make_service(compile_timeout_s=180.0, default_timeout_s=30.0)
    honest = [("fn_add", ADD[language][1])]
    honest += {"go": [("fn_add_gotest", ADD["go"][1])], "rust": [("fn_even_mod", EVEN_MOD[1]), ("io_add", "")],
               "csharp": [("fn_add_partial", ADD["csharp"][1])]}.get(language, [])
    items = [(TASKS["rust"][3], io_spec("rust")) if task == "io_add" else (source, spec_for(language, task))
             for task, source in honest]
    programs = [p for p in PROGRAMS if p[1] == language]
    assert len(programs) >= 8, [p[0] for p in programs]
    results = svc.verify_batch(items + [(source, spec_for(language, task)) for _, _, task, _, source in programs],
                               timeout=1500)
    if not shutil.which(tool, path=SANDBOX_PATH):
        for r in results:
            assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], r["detail"][:300]
            assert not r.get("reward") and not r.get("correctness_score")
        return
    # A host with the toolchain but not the library a task's own text uses (Go's testify, Rust's crates: Debian's
    # golang-github-stretchr-testify-dev, cargo and librust-*-dev): that task is INFRA_ERROR naming the library for
    # every program, the honest one first; every other task is judged.
    lacking = set()
    for (task, _), r in zip(honest, results, strict=False):
        library = {"fn_add_gotest": "testify", "fn_even_mod": "rust crates"}.get(task)
        if library and r["verdict"] == "INFRA_ERROR" and library in r["detail"]:
            lacking.add(task)
            continue
        assert r["verdict"] == "PASSED", (task, r["detail"][:400], r.get("stderr_tail", "")[-300:])
    for (name, _, task, expect, _), r in zip(programs, results[len(honest):], strict=True):
        if task in lacking:
            assert r["verdict"] == "INFRA_ERROR" and "bwrap sandbox backend" in r["detail"], (name, r["detail"][:300])
            continue
        assert r["verdict"] in expect, (name, r["verdict"], r["detail"][:400])
        if name.startswith("hack_"):
            assert r["correctness_score"] == 0.0, (name, r["detail"][:300])
