"""The languages' host-side parts without a sandbox: the table, the warm pool's split by demand, the compile cache."""

from __future__ import annotations

import asyncio

import pytest

from verifier_service.kinds.languages import LANGUAGES, first_error_line, java_main_class, run_argv
from verifier_service.sandbox.artifacts import ArtifactCache, Built, artifact_key
from verifier_service.sandbox.base import StepResult
from verifier_service.sandbox.warm import Demand


def test_the_table_has_the_languages_the_front_doors_name():
    assert set(LANGUAGES) == {"python", "cpp", "c", "bash", "java", "javascript", "typescript", "go", "rust",
                              "php", "lua", "perl", "r", "csharp", "d"}
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
