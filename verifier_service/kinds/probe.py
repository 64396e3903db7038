"""Whether a language works on this service's sandbox backend: a program of the service's own (it prints ``ok``)
compiled and run once per language and backend, the first time a check needs that language. A language whose
toolchain is missing or broken there (a bubblewrap host without it, a JVM that cannot read its configuration)
is never the completion's fault: its checks answer INFRA_ERROR naming the backend (no reward), never a
COMPILE_ERROR or RUNTIME_ERROR with one. ``verifier-service doctor`` runs the same probe for every language.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import re
import sys
import weakref
from dataclasses import replace

from verifier_service.kinds import dynamic_tests
from verifier_service.kinds.base import Context
from verifier_service.kinds.languages import LANGS_DIR, LANGUAGES, LIBRARIES, Language, ruby_argv, run_argv
from verifier_service.sandbox.base import Job, Step
from verifier_service.verdict import truncate

HELLO = {
    "python": 'print("ok")\n',
    "c": '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n',
    "cpp": '#include <iostream>\nint main() { std::cout << "ok" << std::endl; }\n',
    "bash": "echo ok\n",
    "java": 'public class Main { public static void main(String[] a) { System.out.println("ok"); } }\n',
    "javascript": 'console.log("ok");\n',
    "typescript": 'const word: string = "ok";\nconsole.log(word);\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("ok") }\n',
    "rust": 'fn main() { println!("ok"); }\n',
    "php": '<?php\necho "ok\\n";\n',
    "lua": 'print("ok")\n',
    "perl": 'print "ok\\n";\n',
    "r": 'cat("ok\\n")\n',
    "ruby": 'puts "ok"\n',
    "csharp": 'class P { static void Main() { System.Console.WriteLine("ok"); } }\n',
    "d": 'import std.stdio;\nvoid main() { writeln("ok"); }\n',
}
# The crates the languages image gives Rust programs (sandboxes/langs/rust-crates.sh): asked only when a spec's own
# text uses one of them (``library_problems``), so that a backend without them answers INFRA_ERROR for such tasks.
RUST_CRATES = ("rand", "regex", "md5")
_USES_CRATE = re.compile(r"\b(?:use\s+|extern\s+crate\s+)(?:" + "|".join(RUST_CRATES) + r")\b|\b(?:"
                         + "|".join(RUST_CRATES) + r")\s*::")
CRATES_HELLO = ('use rand::Rng;\nuse regex::Regex;\nfn main() {\n    let _ = rand::thread_rng().gen::<u8>();\n'
                '    let ok = Regex::new("^o+k$").unwrap().is_match("ok");\n'
                '    let sum = format!("{:x}", md5::compute(b"ok"));\n'
                '    println!("{}", if ok && sum == "444bcb3a3fcf8389296c49467f27e1d6" { "ok" } else { "no" });\n}\n')
PROBE_TIMEOUT_S = 120.0

# sandbox -> {language: None (works) | the reason it does not}; a probe under way is a task others await.
_RESULTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def backend_name(ctx: Context) -> str:
    runtime = getattr(ctx.config, "sandbox_runtime", "") or ""
    backend = getattr(ctx.config, "sandbox_backend", "docker") or "docker"
    return f"{backend} ({runtime})" if backend == "docker" and runtime and runtime != "runc" else backend


# What a backend builds for its host's toolchain before a language or library works (the bubblewrap backend:
# ``sandbox/bwrap_langs.py``; Docker's image has it built), by the probe's key. Rust's crates are built before Rust's
# own probe too, so that a Rust program is compiled with them (as in the languages image) from the first one on.
PREPARE = {"go": ("go",), "lib:testify": ("go",), "rust": ("rust-crates",), "lib:rust crates": ("rust-crates",)}


async def problem(ctx: Context, lang: Language) -> str | None:
    """None when ``lang`` works on this sandbox backend, else why not (the INFRA_ERROR's detail)."""
    if lang.name not in HELLO:
        return None
    return await _cached(ctx, lang.name, lambda: _probe(ctx, LANGUAGES[lang.name], HELLO[lang.name],
                                                        prepare=lang.name))


async def crates_problem(ctx: Context) -> str | None:
    """None when Rust's crates (``RUST_CRATES``) work on this sandbox backend, else why not."""
    return await _cached(ctx, "lib:rust crates", lambda: _probe(ctx, LANGUAGES["rust"], CRATES_HELLO,
                                                               what=f"the rust crates ({', '.join(RUST_CRATES)})",
                                                               prepare="lib:rust crates"))


async def _prepared(ctx: Context, key: str, what: str) -> str | None:
    """None when what the backend builds for ``key`` (``PREPARE``) is there (or it builds nothing), else why not:
    ``what`` does not work on this backend. Rust's own probe goes on without its crates (their probe says so)."""
    prepare = getattr(ctx.sandbox, "prepare", None)
    if prepare is None:
        return None
    for name in PREPARE.get(key, ()):
        reason = await prepare(name)
        if reason is not None and key != "rust":
            return f"{what} does not work on the {backend_name(ctx)} sandbox backend: {reason}"
    return None


async def launcher_problem(ctx: Context, lang: Language) -> str | None:
    """None when function_tests' launcher for ``lang`` (Lua, Perl, R: ``dynamic_tests.LAUNCHERS``) runs a program
    on this sandbox backend where no new process can start, as its tests step does; else why not. R's launcher is
    R's own binary at Debian's path, not the ``Rscript`` the language's probe runs: a host whose R lies elsewhere
    would otherwise fail every R test program with an exit status scored as the completion's."""
    if lang.name not in dynamic_tests.LAUNCHERS:
        return None
    launched = replace(LANGUAGES[lang.name], run=dynamic_tests.LAUNCHERS[lang.name])
    source = dynamic_tests.HELLO.get(lang.name, HELLO[lang.name])
    return await _cached(ctx, f"launcher:{lang.name}", lambda: _probe(
        ctx, launched, source, what=f"function_tests' {lang.name} launcher", no_fork=True))


async def _probe(ctx: Context, lang: Language, source: str, what: str = "", no_fork: bool = False,
                 prepare: str = "") -> str | None:
    what = what or f"the {lang.name} toolchain"
    reason = await _prepared(ctx, prepare, what)
    if reason is not None:
        return reason
    file, compile_argv, run = lang.files(source)
    job = Job(steps=[Step("compile", list(compile_argv), PROBE_TIMEOUT_S, stop_on_failure=True,
                          output_limit=64 * 1024),
                     Step("run", run_argv(lang, run, ctx.config.cpus, ctx.config.memory_mb), PROBE_TIMEOUT_S,
                          output_limit=64 * 1024, no_fork=no_fork)],
              files={file: source}, image=lang.image)
    run_result = await ctx.sandbox.run(job)
    steps = run_result.steps
    if not steps and (run_result.host_timeout or run_result.oom_killed):
        return "unknown"
    for step in steps:
        if step.timed_out:
            return "unknown"
        if not step.ok:
            said = (step.spawn_error or step.stderr.strip() or step.stdout.strip() or
                    f"exit code {step.exit_code}").splitlines()
            return (f"{what} does not work on the {backend_name(ctx)} sandbox backend "
                    f"(its {step.name} step of a hello-world program failed: {truncate(' | '.join(said[:3]), 300)})")
    if len(steps) < 2 or steps[-1].stdout.strip() != "ok":
        return (f"{what} does not work on the {backend_name(ctx)} sandbox backend (a hello-world "
                f"program printed {truncate(steps[-1].stdout.strip(), 80) if steps else 'nothing'!r})")
    return None


# What a spec's own text (its setup and tests, never the completion) names that needs a library of
# ``languages.LIBRARIES``: (languages, text, library).
NEEDS = ((("c", "cpp"), "boost/", "boost"), (("c", "cpp"), "openssl/", "openssl"),
         (("go",), "github.com/stretchr/testify", "testify"))


async def library_problems(ctx: Context, lang: Language, trusted: str) -> str | None:
    """None when every library ``trusted`` (the spec's setup and tests) needs is in this backend's sandbox, else
    why not (the INFRA_ERROR's detail: a bubblewrap host without Boost's headers is not the completion's
    fault). What the completion includes decides nothing here (it could name a missing library to dodge)."""
    for langs, text, library in NEEDS:
        if lang.name in langs and text in trusted:
            reason = await _cached(ctx, f"lib:{library}", lambda library=library: _probe_library(ctx, lang, library))
            if reason is not None:
                return reason
    if lang.name == "rust" and _USES_CRATE.search(trusted):
        return await crates_problem(ctx)
    for module in dynamic_imports(lang.name, trusted):
        reason = await _cached(ctx, f"lib:{lang.name}:{module}",
                               lambda module=module: _probe_dynamic(ctx, lang, module))
        if reason is not None:
            return reason
    return None


# The modules trusted Lua, Perl or R (a spec's setup and tests) loads: MultiPL-E's Lua tests need luaunit and its
# Perl tests Test::Deep (both in the languages image; a bubblewrap host may lack them), and a module a sandbox lacks
# is never the completion's fault (INFRA_ERROR), as a missing Python module is not (``python_module_problems``).
# Perl's pragmas are lowercase.
_DYNAMIC_IMPORTS = {
    "lua": re.compile(r"\brequire\s*\(?\s*['\"]([A-Za-z_][\w.]*)['\"]"),
    "perl": re.compile(r"^\s*(?:use|require)\s+([A-Z][\w]*(?:::\w+)*)", re.MULTILINE),
    "r": re.compile(r"\b(?:library|require|requireNamespace)\s*\(\s*['\"]?([A-Za-z][\w.]*)"),
    "ruby": re.compile(r"^\s*require\s*\(?\s*['\"]([A-Za-z_][\w/.-]*)['\"]", re.MULTILINE),
}


# Go: the packages trusted Go imports must be among those precompiled for go-build.sh (its importcfg: the languages
# image's, or the one the bubblewrap backend built for the host's Go, whose older standard library may lack some:
# cmp, slices, maps before Go 1.21). A completion's imports decide nothing (it could name a missing package to dodge).
_GO_IMPORTS = re.compile(r'^import[ \t]*(?:\(([^)]*)\)|(?:[\w.]+[ \t]+)?("[^"\n]*"))', re.MULTILINE)
_GO_PATH = re.compile(r'"([\w./~+-]+)"')


def dynamic_imports(language: str, trusted: str) -> tuple[str, ...]:
    if language == "go":
        found = {path for block, one in _GO_IMPORTS.findall(trusted) for path in _GO_PATH.findall(block or one)}
        return tuple(sorted(found - {"unsafe"}))  # (the compiler's own: in no importcfg)
    pattern = _DYNAMIC_IMPORTS.get(language)
    return tuple(sorted(set(pattern.findall(trusted)))) if pattern is not None else ()


async def _probe_dynamic(ctx: Context, lang: Language, module: str) -> str | None:
    argv = {"lua": ["lua5.4", "-e", f"require('{module}')"], "perl": ["perl", f"-M{module} ()", "-e", "1"],
            "go": ["grep", "-q", f"^packagefile {module.replace('.', chr(92) + '.')}=", f"{LANGS_DIR}/go/importcfg"],
            "r": ["Rscript", "-e", f"suppressMessages(library({module}))"],
            "ruby": list(ruby_argv("-e", "require ARGV.shift; exit!(0)", module))}[lang.name]  # (no autorun)
    run_result = await ctx.sandbox.run(Job(steps=[Step("library", argv, PROBE_TIMEOUT_S, output_limit=4096)],
                                           image=lang.image))
    step = run_result.steps[0] if run_result.steps else None
    if step is None or step.timed_out:
        return "unknown"
    if step.ok:
        return None
    if lang.name == "go":
        return (f"the go package {module} is not in the {backend_name(ctx)} sandbox backend's Go environment (the "
                "spec's setup or tests import it; go-build.sh links only the packages precompiled for its Go)")
    return (f"{lang.name} module {module} is not in the {backend_name(ctx)} sandbox backend's environment (the "
            "spec's setup or tests load it)")


@functools.lru_cache(maxsize=1024)
def python_imports(source: str) -> tuple[str, ...]:
    """The modules that trusted Python (a spec's setup or tests) imports whatever happens: ``import`` statements at
    its top level (not inside try, if or a function, where a missing module may be expected), outside the
    standard library, by their top-level name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return tuple(sorted(n for n in names if n not in sys.stdlib_module_names and n != "__future__"))


async def python_module_problems(ctx: Context, python: list[str], sources: list[str], own: set[str]) -> str | None:
    """None when every module the spec's trusted Python imports (``python_imports``; ``own``: the names the job
    itself provides, the completion's module and the spec's files) can be found by ``python`` in this backend's
    sandbox, else why not (the INFRA_ERROR's detail: tests that import a library the sandbox lacks fail for every
    completion, and that is not the completion's fault). What the completion imports decides nothing here."""
    wanted = sorted({m for text in sources for m in python_imports(text)} - own)
    for module in wanted:
        reason = await _cached(ctx, f"py:{module}", lambda module=module: _probe_module(ctx, python, module))
        if reason is not None:
            return reason
    return None


async def _probe_module(ctx: Context, python: list[str], module: str) -> str | None:
    argv = [*python, "-c", "import importlib.util, sys; print(importlib.util.find_spec(sys.argv[1]) is not None)",
            module]
    run_result = await ctx.sandbox.run(Job(steps=[Step("module", argv, PROBE_TIMEOUT_S, output_limit=4096)]))
    step = run_result.steps[0] if run_result.steps else None
    if step is None or step.timed_out or not step.ok:
        return "unknown"
    if step.stdout.strip() == "True":
        return None
    return (f"the Python module {module!r} is not in the {backend_name(ctx)} sandbox backend's Python environment "
            "(the spec's setup or tests import it)")


async def _cached(ctx: Context, key: str, make) -> str | None:
    if ctx.sandbox is None:
        return None
    try:
        results = _RESULTS.setdefault(ctx.sandbox, {})
    except TypeError:  # a sandbox that cannot be weakly referenced: probe every time is too slow; trust it
        return None
    found = results.get(key)
    if found is None:
        found = results[key] = asyncio.ensure_future(make())
    try:
        reason = await asyncio.shield(found)
    except Exception:  # noqa: BLE001 - a probe that could not run says nothing about the toolchain or library
        results.pop(key, None)
        return None
    if reason == "unknown":
        results.pop(key, None)  # (a limit hit under load: asked again next time, the check goes on)
        return None
    return reason


async def _probe_library(ctx: Context, lang: Language, library: str) -> str | None:
    reason = await _prepared(ctx, f"lib:{library}", library)
    if reason is not None:
        return reason
    argv = next(list(a) for fam, name, a in LIBRARIES if name == library)
    run_result = await ctx.sandbox.run(Job(steps=[Step("library", argv, PROBE_TIMEOUT_S, output_limit=4096)],
                                           image=lang.image))
    step = run_result.steps[0] if run_result.steps else None
    if step is None or step.timed_out:
        return "unknown"
    if step.ok and step.stdout.strip():
        return None
    return (f"{library} is not in the {backend_name(ctx)} sandbox backend's {lang.name} environment (the spec's "
            "setup or tests use it)")


def known(sandbox) -> dict[str, str | None]:
    """The languages probed so far on ``sandbox``: {language: None (works) | why not}."""
    out = {}
    for name, task in _RESULTS.get(sandbox, {}).items():
        if (":" not in name and task.done() and not task.cancelled() and task.exception() is None
                and task.result() != "unknown"):
            out[name] = task.result()
    return out
