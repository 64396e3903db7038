"""function_tests: a completion plus a test program in the same language (MultiPL-E's form); it passes when the
tests ran to their end.

The program is ``setup`` (the prompt, when the completion continues it) + the completion + the spec's
``tests``, wrapped by the service: a guard between the completion and the tests (``_GUARDS``: it undoes the
simple ways a completion neuters the checks that follow it, such as ``#define assert``, a shadowing
``assert_eq!`` or a patched ``node:assert``) and an end that runs only once the tests' code has returned
(``_ENDS``). The end prints a per-job nonce as the program's last line. The nonce never appears as such in
the program or the sandbox: the end holds two random byte strings, as local constants under names drawn
per job, and prints their XOR. Pass = exit status 0 and the nonce as the last line of stdout. A compiled
program's source files are removed before it runs (the binary stays). Go's `go test` form (``func TestXxx(t
*testing.T)``, no ``main``) runs through a test main of the service's: ``kinds/go_tests.py``. What a completion
can still forge in this form is in docs/security.md (*function_tests*).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import replace
from fnmatch import fnmatch

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import (
    csharp_tests,
    d_tests,
    dynamic_tests,
    go_tests,
    java_source,
    probe,
    register,
    ruby_tests,
    rust_source,
)
from verifier_service.kinds._sandboxed import exit_detail, limit_verdict
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.kinds.compiled import prepare, run_compiled
from verifier_service.kinds.languages import LANGS_DIR, LANGUAGES, Language, link_libs, ruby_argv, run_argv
from verifier_service.kinds.source_text import block_end, closing_brace, line_end, wipe
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, tail, truncate

# Python is python_assert's: there the tests run in a judge process the completion cannot reach (in one process,
# a Python completion reads any constant of the tests through its callers' frames).
SUPPORTED = ("c", "cpp", "java", "javascript", "typescript", "go", "rust", "bash", "php", "lua", "perl", "r",
             "csharp", "d", "ruby")
# Node.js and Bash run the program's text from memory: the launcher reads the file, removes it, then runs it, so
# the completion (which runs later, in the same process) finds no file that holds the end of the tests.
# (Inside a function: a top-level const of an -e script is a global binding, which a completion's sloppy-mode
# implicit global of the same name, such as `m = ...`, would meet as a constant.)
NODE_LAUNCHER = ("(() => { const fs = require('fs'), path = require('path'), Module = require('module');"
                 "const file = path.resolve(process.argv[1]); const text = fs.readFileSync(file, 'utf8');"
                 "for (const f of ['solution.js', 'solution.ts']) { try { fs.unlinkSync(f); } catch (e) {} }"
                 "process.argv.splice(1, 1); const m = new Module(file, null); m.filename = file;"
                 "m.paths = Module._nodeModulePaths(path.dirname(file)); m._compile(text, file); })();")
BASH_LAUNCHER = "s=$(<solution.sh); rm -f solution.sh; eval \"$s\""
# PHP likewise (no variable holds the text: a completion's top-level code shares the eval's scope). A text that
# opens with `<?php` is evaluated from just after the tag, so that a `declare(strict_types=1)` is its first statement.
PHP_LAUNCHER = ("eval((static function () { $t = file_get_contents('solution.php'); unlink('solution.php'); "
                "return preg_match('/^<\\?php\\s/', $t) ? substr($t, 5) : '?>' . $t; })());")


def _bytes_literal(data: bytes, lang: str) -> str:
    return ", ".join(str(b) if lang != "java" else str(b - 256 if b > 127 else b) for b in data)


def _guard(lang: str, name: str) -> str:
    """Code between the completion and the tests: the tests' checks mean what they say again."""
    if lang in ("c", "cpp"):
        # The tests' own translation unit: no macro of the completion's reaches it; this only renames its main.
        return f"\n#undef main\n#define main {name}_tests_main\n"
    if lang == "rust":
        # A completion's macro_rules! (assert_eq, vec, ...) shadows the standard one for the code after it: these
        # shadow it back (a `vec!` that ignores its elements would make the tests' expected values what it returns).
        return "".join(f"\n#[allow(unused_macros)]\nmacro_rules! {m} {{ ($($t:tt)*) => {{ ::{src}::{m}!($($t)*) }}; }}"
                       for src, names in RUST_MACROS.items() for m in names) + "\n"
    if lang == "bash":
        # POSIX mode: special builtins (exit, return, set, trap, unset, eval) come before the completion's
        # functions of the same name; the other commands the tests may rely on are its functions no more.
        return ("\nPOSIXLY_CORRECT=1 2>/dev/null; set -o posix\n"
                f"[[ :$SHELLOPTS: == *:posix:* ]] || : \"${{{name}_unset:?the tests cannot run in POSIX mode}}\"\n"
                "trap - DEBUG RETURN ERR EXIT\nunalias -a 2>/dev/null\n"
                "unset -f test echo printf builtin command enable declare local type read true false 2>/dev/null\n"
                "enable test echo printf builtin command true false 2>/dev/null\n")
    return "\n"


# The standard macros a test program uses, by the crate that exports them (the guard's ``macro_rules!``).
RUST_MACROS = {"core": ("assert", "assert_eq", "assert_ne", "debug_assert", "debug_assert_eq", "debug_assert_ne",
                        "panic", "unreachable", "todo", "unimplemented", "matches", "write", "writeln", "concat",
                        "stringify"),
               "std": ("vec", "format", "print", "println", "eprint", "eprintln", "dbg")}


def _end(lang: str, name: str, a: bytes, b: bytes, args: str = "") -> str:
    """Code that runs after the tests' own code returned: prints the XOR of ``a`` and ``b`` in hex (C/C++:
    ``args`` is what the tests' main is called with, ``argc, argv`` when it takes them)."""
    la, lb = _bytes_literal(a, lang), _bytes_literal(b, lang)
    n = len(a)
    if lang in ("c", "cpp"):
        return (f"\n#undef main\n#include <stdio.h>\nint main(int argc, char **argv) {{\n"
                f"    (void)argc; (void)argv;\n    {name}_tests_main({args});\n"
                f"    const unsigned char x[{n}] = {{{la}}};\n    const unsigned char y[{n}] = {{{lb}}};\n"
                f"    fflush(stdout);\n    for (int i = 0; i < {n}; i++) printf(\"%02x\", x[i] ^ y[i]);\n"
                "    printf(\"\\n\");\n    return 0;\n}\n")
    if lang == "java":
        return ""  # a class of its own (``_java_end``)
    if lang == "rust":
        return ""  # main is the tests' own: see ``_wrap`` (the tests' main is renamed)
    if lang == "go":
        return ""
    if lang in ("javascript", "typescript"):
        return (f"\n;(() => {{ const x = [{la}], y = [{lb}];\n"
                f"  {name}_write(x.map((v, i) => (v ^ y[i]).toString(16).padStart(2, '0')).join('') + '\\n'); }})();\n")
    if lang == "php":
        return (f"\n${name}_x = [{la}]; ${name}_y = [{lb}]; ${name}_s = '';\n"
                f"for (${name}_i = 0; ${name}_i < {n}; ${name}_i++) {{ ${name}_s .= \\sprintf('%02x', "
                f"${name}_x[${name}_i] ^ ${name}_y[${name}_i]); }}\n"
                f"\\fwrite(\\STDOUT, \"\\n\" . ${name}_s . \"\\n\");\n")
    if lang == "bash":
        xs = " ".join(str(v) for v in a)
        ys = " ".join(str(v) for v in b)
        return (f"\ntrap - DEBUG RETURN ERR EXIT\nunset -f printf builtin enable 2>/dev/null\nenable printf\n"
                f"{name}_x=({xs}); {name}_y=({ys}); {name}_o=''\n"
                f"for (( {name}_i = 0; {name}_i < {n}; {name}_i++ )); do printf -v {name}_h '%02x' "
                f"$(( {name}_x[{name}_i] ^ {name}_y[{name}_i] )); {name}_o+=${name}_h; done\n"
                f"printf '%s\\n' \"${name}_o\"\nexit 0\n")
    raise ValueError(lang)


_C_DEFINITION = re.compile(r"^[ \t]*((?!static\b|inline\b)[A-Za-z_][\w \t*&:<>,]*?[\s*&]"
                           r"([A-Za-z_]\w*)[ \t]*\([^(){};#=\n]*\))\s*\{", re.MULTILINE)


def c_header(setup: str, completion: str = "") -> str:
    """What the tests' translation unit (C, C++) knows of the completion's: the setup's declarations. A setup
    that opens the function the completion continues (MultiPL-E's and HumanEval-X's prompts end with its
    signature and ``{``) declares it: the ``{`` becomes ``;``. Otherwise the completion's own top-level
    function definitions are declared too, as prototypes only (a type, a name, plain parameters: no ``#``, no
    macro of its reaches the tests)."""
    stripped = setup.rstrip()
    if stripped.endswith("{"):
        return _prototypes_only(f"{stripped[:-1].rstrip()};\n")
    if _ends_with_declarator(stripped) and java_source.blank(completion).lstrip().startswith("{"):
        # A setup that ends with the signature, the completion with the body's `{` (McEval's prompts).
        return _prototypes_only(f"{stripped};\n")
    blanked = java_source.blank(completion)
    protos = [completion[m.start(1):m.end(1)].strip() + ";" for m in _C_DEFINITION.finditer(blanked)
              if m.group(2) != "main"]
    return setup + "".join(f"\n{p}" for p in protos) + ("\n" if protos else "")


def _ends_with_declarator(setup: str) -> bool:
    """Whether the setup's last line of code (outside comments and strings, not a preprocessor line) is a
    function's signature with nothing after its ``)``: the function the completion's ``{`` opens."""
    blanked = java_source.blank(setup).rstrip()
    last = blanked.rsplit("\n", 1)[-1]
    return blanked.endswith(")") and not last.lstrip().startswith("#") and \
        _C_DEFINITION.search(f"{blanked}{{", max(0, blanked.rfind(";") + 1, blanked.rfind("}") + 1)) is not None


def _prototypes_only(text: str) -> str:
    """``text`` with each top-level function definition (a helper the prompt defines, HumanEval's
    ``encode_cyclic``) turned into its prototype: the definition stays in the completion's unit only."""
    blanked = java_source.blank(text)
    out, last = [], 0
    for m in _C_DEFINITION.finditer(blanked):
        if m.start() < last or blanked[:m.start()].count("{") != blanked[:m.start()].count("}"):
            continue
        end = closing_brace(blanked, m.end() - 1)
        if end is None:
            continue
        out += [text[last:m.start(1)], text[m.start(1):m.end(1)].strip(), ";"]
        last = end + 1
    out.append(text[last:])
    return "".join(out)


def c_units(lang: str, setup: str, completion: str, tests: str, a: bytes, b: bytes, name: str) -> dict[str, str]:
    """C and C++: two translation units linked together, so that no macro, ``#pragma`` or ``#undef`` of the
    completion's reaches the tests: ``completion.c`` (setup + completion, and the ``}`` MultiPL-E's tests begin
    with, which closes the completion's function) and ``tests.c`` (the setup's declarations + the tests + the
    end). The compile step (``c_compile``) also keeps the completion from defining a library function the
    tests' unit calls (``__assert_fail``, ``abort``, ``printf``...): those of its symbols stay local to it."""
    ext = "c" if lang == "c" else "cpp"
    rest = tests.lstrip()
    close = ""
    if rest.startswith("}"):
        close, rest = "\n}\n", rest[1:]
    main = re.search(r"\bmain\s*\(([^)]*)\)", rest)
    args = "argc, argv" if main is not None and main.group(1).strip() not in ("", "void") else ""
    return {f"completion.{ext}": f"{setup}{completion}{close}",
            f"tests.{ext}": f"{c_header(setup, completion)}{_guard(lang, name)}#line 1 \"tests.{ext}\"\n{rest}\n"
                            f"{_end(lang, name, a, b, args)}"}


def c_compile(lang: Language) -> tuple[str, ...]:
    """The compile step of C/C++ function tests: both units, then every symbol the completion's unit defines that
    a system library also defines (libc, libm, libstdc++, libgcc_s) made local to it (``objcopy``), then the
    link. The flags are the language's (``-O2`` etc.); the output is ``solution``."""
    argv = list(lang.compile)
    cc = argv[0]
    flags = " ".join(a for a in argv[1:] if a not in ("-o", "solution", "solution.c", "solution.cpp", "-lm"))
    ext = "c" if lang.name == "c" else "cpp"
    # A flag an older compiler (a bubblewrap host's) rejects is probed for, not assumed: GCC before 13 has no
    # -fno-unreachable-traps (and traps nothing at -O0 either).
    probe = f"$({cc} -fno-unreachable-traps -E -x {'c' if ext == 'c' else 'c++'} /dev/null >/dev/null 2>&1 " \
            "&& echo -fno-unreachable-traps)"
    flags = flags.replace("-fno-unreachable-traps", probe)
    script = (
        "set -e\n"
        f"{cc} {flags} -c -o completion.o completion.{ext}\n"
        f"{cc} {flags} -c -o tests.o tests.{ext}\n"
        "for l in libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libcrypto.so; do\n"
        f"  f=$({cc} -print-file-name=$l); [ ! -f \"$f\" ] || nm -D --defined-only \"$f\"\n"
        "done | awk '{print $NF}' | sed 's/@.*//' | sort -u > .libsyms\n"
        "nm -g --defined-only completion.o | awk '{print $NF}' | sort -u > .defsyms\n"
        "comm -12 .libsyms .defsyms > .localize\n"
        "[ ! -s .localize ] || objcopy --localize-symbols=.localize completion.o\n"
        f"{cc} -o solution tests.o completion.o -lm {link_libs(cc, lang.libs)}\n"
        "rm -f completion.o tests.o .libsyms .defsyms .localize\n")
    return ("sh", "-c", script)


def java_tests(setup: str, tests: str, name: str) -> tuple[str, str]:
    """(the tests' class, the tests with their ``main`` renamed ``{name}_main`` and their ``assert`` statements
    made plain checks). The class is found in the trusted text only (``java_source.tests_entry``); the renamed
    main cannot be one the completion wrote (it cannot know the name), so a completion that closes the tests'
    class early and writes its own ``main`` there makes a program that does not compile."""
    entry = java_source.tests_entry(setup, tests)
    text = java_source.blank(tests)
    m = re.search(r"(?<![\w$])static\s+(?:final\s+)?(?:synchronized\s+)?void\s+(main)\s*\(", text)
    if m is not None:
        tests = f"{tests[:m.start(1)]}{name}_main{tests[m.end(1):]}"
    return entry or "Main", java_source.rewrite_asserts(tests)


def assemble(lang: str, setup: str, completion: str, tests: str, a: bytes, b: bytes, name: str) -> str:
    """The program a job runs: setup + completion + guard + tests + end (see the module's docstring); for C and
    C++ the two units joined (what the compile cache's key and the tests read; ``c_units`` is what runs)."""
    body = f"{setup}{completion}"
    if lang in ("c", "cpp"):
        return "\n".join(c_units(lang, setup, completion, tests, a, b, name).values())
    if lang == "java":
        entry, tests = java_tests(setup, tests, name)
        # The end deletes its own class file before any class of the completion's is initialised: what it holds
        # is not on disk while the completion runs (its memory still is: docs/security.md).
        return (f"{body}\n{tests}\n\nclass {name} {{\n    public static void main(String[] args) throws Exception {{\n"
                f"        new java.io.File(\"{name}.class\").delete();\n"
                f"        {entry}.{name}_main(args);\n"
                f"        byte[] x = {{{_bytes_literal(a, 'java')}}};\n"
                f"        byte[] y = {{{_bytes_literal(b, 'java')}}};\n"
                "        StringBuilder s = new StringBuilder();\n"
                "        for (int i = 0; i < x.length; i++) s.append(String.format(\"%02x\", (x[i] ^ y[i]) & 0xff));\n"
                "        System.out.flush();\n        System.out.println(s);\n        System.out.flush();\n    }\n}\n")
    if lang == "rust":
        return rust_program(setup, completion, tests, a, b, name)
    if lang == "csharp":  # the secret is not in the program: the end reads it from its stdin (kinds/csharp_tests.py)
        made = csharp_tests.program(setup, completion, tests, name)
        if made is None:
            raise InvalidSpec("spec.tests (csharp): the tests' static void Main() was not found inside a class")
        return made[0]
    if lang == "d":  # two modules, the end's secret read from stdin (kinds/d_tests.py)
        units = d_tests.units(setup, completion, tests, name)
        return "\n".join(units.values()) if units else f"{body}\n{tests}"
    if lang == "ruby":  # the end is the launcher's; its secret comes on stdin (kinds/ruby_tests.py)
        return ruby_tests.program(setup, completion, tests)
    if lang in dynamic_tests.DYNAMIC_TESTS:  # Lua, Perl, R: kinds/dynamic_tests.py
        return dynamic_tests.program(lang, setup, completion, tests, a, b, name)
    if lang == "go":
        # The tests' main becomes a function of a name drawn per job; the end is the real main.
        renamed = tests.replace("func main()", f"func {name}_tests_main()", 1)
        hexed, hexed_b = f"{{{_bytes_literal(a, lang)}}}", f"{{{_bytes_literal(b, lang)}}}"
        end = (f"\nfunc main() {{\n\t{name}_tests_main()\n\t{name}_x := []byte{hexed}\n"
               f"\t{name}_y := []byte{hexed_b}\n\t{name}_s := make([]byte, 0, {2 * len(a)})\n"
               f"\tfor i := range {name}_x {{\n\t\tv := {name}_x[i] ^ {name}_y[i]\n"
               f"\t\t{name}_s = append({name}_s, \"0123456789abcdef\"[v>>4], \"0123456789abcdef\"[v&15])\n\t}}\n"
               f"\t{name}_s = append({name}_s, '\\n')\n\t{name}_os.Stdout.Write({name}_s)\n}}\n")
        return _go_with_import(f"{body}\n{renamed}{end}", name)
    prologue = ""
    if lang == "bash":
        prologue = "unset -v s\n"  # the launcher's copy of the program's text (BASH_LAUNCHER)
    if lang in ("javascript", "typescript"):
        prologue, tests = _node_trusted(tests, name)
    if lang == "php":
        tests = php_tests(tests, name)
    if lang == "php" and tests.rstrip().endswith("?>"):  # the end is PHP code
        tests = f"{tests.rstrip()}<?php\n"
    return f"{prologue}{body}{_guard(lang, name)}{tests}\n{_end(lang, name, a, b)}"


# Names a Rust program's items can shadow (an item beats the prelude, and a primitive type's name too): the end
# checks at compile time that each still means the standard one, so a completion's `struct bool` whose `==`
# always holds (met by the setup's signature and the tests' `assert_eq!`) does not compile. Not `Result`: honest
# code often has its own `type Result<T> = ...`.
_RUST_PRIMITIVES = ("bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
                    "usize", "f32", "f64")
_RUST_NAMES = (
    "fn s(x: &str) -> &::core::primitive::str { x }\n"
    "fn st(x: String) -> ::std::string::String { x }\n"
    "fn v<T>(x: Vec<T>) -> ::std::vec::Vec<T> { x }\n"
    "fn o<T>(x: Option<T>) -> ::core::option::Option<T> { x }\n"
    "fn b<T>(x: Box<T>) -> ::std::boxed::Box<T> { x }\n"
    "fn p(x: ::core::option::Option<u8>) -> ::core::option::Option<u8> "
    "{ match x { Some(v) => Some(v), None => None } }\n"
    "fn q(x: ::core::result::Result<u8, u8>) -> ::core::result::Result<u8, u8> "
    "{ match x { Ok(v) => Ok(v), Err(v) => Err(v) } }\n")


def rust_tests(tests: str, name: str) -> tuple[str, list[str], str]:
    """(the tests as compiled, the end's calls, the end's helpers). Two forms: a ``fn main()`` that runs the checks
    (MultiPL-E's; renamed ``{name}_tests_main``, which the end calls), or ``#[test]`` functions (HumanEval-X's
    ``#[cfg(test)] mod tests``, compiled with ``--cfg test`` as ``cargo test`` does): each gets a wrapper of a name
    drawn per job beside it, which the end calls in order (its module made visible to the crate root), and libtest's
    harness is not used: its pass is a line the completion could print. A ``#[should_panic]`` test passes when it
    panics (with the expected message, when given); an ``#[ignore]`` one is not run; a test that returns a
    ``Result`` passes on ``Ok``. The tests' own ``main`` (if any) is not run then, as under ``cargo test``."""
    found = rust_source.read_tests(tests)
    blanked = rust_source.blank(tests)
    # The crate's main is a top-level item: a `fn main` in a module (McEval's `#[test] fn main()` in `mod tests`)
    # or in an impl is not it. (MultiPL-E's tests begin with the `}` that closes the completion's function.)
    main = next((m for m in re.finditer(r"(?<![\w])fn\s+main\s*\(\s*\)", blanked)
                 if blanked.count("{", 0, m.start()) <= blanked.count("}", 0, m.start())), None)
    if not found.tests:
        if main is None:
            return tests, [], ""
        return f"{tests[:main.start()]}fn {name}_tests_main(){tests[main.end():]}", [f"{name}_tests_main();"], ""
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied from the last
    calls = []
    for k, test in enumerate(found.tests):
        for start, stop in test.attributes:
            edits.append((start, stop, " " * (stop - start)))
        if test.ignored:
            continue
        if test.should_panic:
            expected = f"::core::option::Option::Some({test.expected})" if test.expected is not None else \
                "::core::option::Option::None"
            run = f"crate::{name}_panics(|| {{ let _ = {test.name}(); }}, {expected})"
        else:
            run = f"crate::{name.capitalize()}Passed::passed({test.name}())"
        edits.append((test.end, test.end,
                      f"\n#[allow(dead_code)]\npub(crate) fn {name}_case{k}() -> bool {{ {run} }}\n"))
        path = "::".join(("crate", *test.modules, f"{name}_case{k}"))
        label = "::".join((*test.modules, test.name))
        calls.append(f"if {name}_ok && !{path}() {{ {name}_ok = false; "
                     f"::std::eprintln!(\"test {label} failed\"); }}")
    used = {m for t in found.tests if not t.ignored for m in range(1, len(t.modules) + 1)
            for m in [t.modules[:m]]}
    for module in found.modules:
        if module.path in used:
            edits.append((module.keyword, module.mod_at, "pub(crate) "))
    if main is not None:
        edits.append((main.start(), main.end(), f"#[allow(dead_code)] fn {name}_tests_main()"))
    for start, stop, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        tests = tests[:start] + text + tests[stop:]
    trait = f"{name.capitalize()}Passed"
    helpers = (f"\n#[allow(dead_code)]\ntrait {trait} {{ fn passed(self) -> ::core::primitive::bool; }}\n"
               f"impl {trait} for () {{ fn passed(self) -> ::core::primitive::bool {{ true }} }}\n"
               f"impl<E: ::core::fmt::Debug> {trait} for ::core::result::Result<(), E> {{\n"
               "    fn passed(self) -> ::core::primitive::bool { match self { ::core::result::Result::Ok(()) => true,\n"
               "        ::core::result::Result::Err(e) => { ::std::eprintln!(\"Error: {:?}\", e); false } } }\n}\n"
               f"#[allow(dead_code)]\nfn {name}_panics<F: ::core::ops::FnOnce()>(f: F, expected: "
               "::core::option::Option<&'static ::core::primitive::str>) -> ::core::primitive::bool {\n"
               "    match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(f)) {\n"
               "        ::core::result::Result::Ok(()) => false,\n"
               "        ::core::result::Result::Err(p) => match expected {\n"
               "            ::core::option::Option::None => true,\n"
               "            ::core::option::Option::Some(m) => p.downcast_ref::<&'static ::core::primitive::str>()"
               ".map(|s| s.contains(m))\n"
               "                .or_else(|| p.downcast_ref::<::std::string::String>().map(|s| s.contains(m)))"
               ".unwrap_or(false),\n        },\n    }\n}\n")
    return tests, [f"let mut {name}_ok = true;", *calls], helpers


def rust_program(setup: str, completion: str, tests: str, a: bytes, b: bytes, name: str) -> str:
    """Rust's program: setup + completion (+ the ``}`` MultiPL-E's tests begin with) + guard + tests + the end, the
    real ``main``: it runs the tests (``rust_tests``) and then prints the nonce, only if every test passed."""
    body = f"{setup}{completion}"
    tests, calls, helpers = rust_tests(tests, name)
    if tests.lstrip().startswith("}"):  # MultiPL-E's Rust tests begin by closing the completion's function
        body, tests = f"{body}\n}}\n", tests.lstrip()[1:]
    passed = (f"{name}_ok" if calls[0].startswith("let mut") else "true") if calls else "false"
    checks = "".join(f"fn {t}_(x: {t}) -> ::core::primitive::{t} {{ x }}\n" for t in _RUST_PRIMITIVES)
    end = (f"{helpers}\n#[allow(dead_code, non_snake_case, unused_imports, clippy::all)]\nmod {name}_names {{\n"
           f"use super::*;\n{checks}{_RUST_NAMES}}}\n"
           f"\nfn main() {{\n    " + "\n    ".join(calls) + "\n"
           f"    if !{passed} {{ ::std::process::exit(101); }}\n"
           f"    let x: [u8; {len(a)}] = [{_bytes_literal(a, 'rust')}];\n"
           f"    let y: [u8; {len(b)}] = [{_bytes_literal(b, 'rust')}];\n    use ::std::io::Write;\n"
           "    let s: ::std::string::String = x.iter().zip(y.iter()).map(|(p, q)| ::std::format!(\"{:02x}\", p ^ q))"
           ".collect();\n"
           "    let mut out = ::std::io::stdout();\n    let _ = out.flush();\n"
           "    let _ = ::std::writeln!(out, \"{}\", s);\n    let _ = out.flush();\n}\n")
    return f"{body}{_guard('rust', name)}{tests}{end}"


_PHP_HEREDOC = re.compile(r"<<<[ \t]*(['\"]?)([A-Za-z_]\w*)\1\r?\n")


def php_blank(source: str) -> str:
    """PHP ``source`` with comments, string literals (heredocs too) and the text outside ``<?php ... ?>`` replaced
    by spaces (newlines kept): the same length and offsets. The text is taken to begin in PHP mode."""
    out = list(source)
    i, n = 0, len(source)

    while i < n:
        c = source[i]
        heredoc = _PHP_HEREDOC.match(source, i) if c == "<" else None
        if source.startswith("//", i) or (c == "#" and not source.startswith("#[", i)):
            j = line_end(source, i)
            if (k := source.find("?>", i, j)) >= 0:  # a line comment ends at ?>
                j = k
            wipe(out, i, j)
            i = j
        elif source.startswith("/*", i):
            j = block_end(source, i)
            wipe(out, i, j)
            i = j
        elif source.startswith("?>", i):
            j = n if (j := source.find("<?", i + 2)) < 0 else j
            wipe(out, i, j)
            i = j + 2
        elif heredoc is not None:
            end = re.compile(rf"^[ \t]*{heredoc.group(2)}\b", re.MULTILINE).search(source, heredoc.end())
            j = n if end is None else end.end()
            wipe(out, i, j)
            i = j
        elif c in "\"'`":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            wipe(out, i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


_PHP_ASSERT = re.compile(r"(?<![\w$>:\\])\\?assert\s*\(", re.IGNORECASE)


def php_tests(tests: str, name: str) -> str:
    """The tests with every call of ``assert()`` made a call of a function of the tests' own, which throws an
    AssertionError when its argument is falsy: PHP's assert is no check at all where ``zend.assertions`` is -1
    (php.ini-production's, Debian's CLI default: McEval's tests are assert() calls), and a completion can turn it
    off at run time (``ini_set('assert.active', 0)``, ``assert_options``) from inside the function the tests call.
    The function's name is drawn per job, so the completion can neither call nor define it first."""
    blanked = php_blank(tests)
    calls = list(_PHP_ASSERT.finditer(blanked))
    if not calls:
        return tests
    for m in reversed(calls):
        tests = f"{tests[:m.start()]}{name}_assert({tests[m.end():]}"
    helper = (f"function {name}_assert($assertion, $description = null) {{ if (!$assertion) {{ "
              "if ($description instanceof \\Throwable) { throw $description; } "
              "throw new \\AssertionError($description === null ? 'assert() failed' : (string) $description); } "
              "return true; }\n")
    opening = re.match(r"\s*<\?php\s", tests)
    at = opening.end() if opening else 0
    return f"{tests[:at]}{helper}{tests[at:]}"


_NODE_GLOBALS = ("Object", "Array", "JSON", "Math", "Number", "String", "Boolean", "Symbol", "Map", "Set",
                 "Error", "TypeError", "RangeError", "Reflect", "Promise", "BigInt", "Date", "RegExp", "console",
                 "process", "globalThis", "Function", "isNaN", "parseInt", "parseFloat", "Buffer", "structuredClone")
_REQUIRE = re.compile(r"(?<![\w$.])require\s*\(\s*(['\"])([^'\"\n]{1,200})\1\s*\)")
_IMPORT = re.compile(r"^[ \t]*import\s+(?:(\*\s+as\s+)?([\w$]+)|\{([^}]*)\})\s+from\s+(['\"])([^'\"\n]{1,200})\4\s*;?",
                     re.MULTILINE)
_DECLARE = re.compile(r"^[ \t]*declare\s+(?:var|let|const|function)\b[^\n]*$", re.MULTILINE)


def _node_imports(tests: str) -> str:
    """The tests' ``import`` statements as ``const`` bindings of ``require`` (CommonJS modules: a default import
    is the module itself, ``import assert from "assert"``), so that they can run inside a function."""
    def one(m: re.Match) -> str:
        if m.group(2):
            return f"const {m.group(2)} = require({m.group(4)}{m.group(5)}{m.group(4)});"
        names = ", ".join(p.strip().replace(" as ", ": ") for p in m.group(3).split(",") if p.strip())
        return f"const {{ {names} }} = require({m.group(4)}{m.group(5)}{m.group(4)});"
    return _DECLARE.sub("", _IMPORT.sub(one, tests))


def _node_trusted(tests: str, name: str) -> tuple[str, str]:
    """(code before the completion, the tests as run) for JavaScript and TypeScript. Before the completion: the
    writer the end uses; every module the tests ``require`` by name, loaded and frozen; the standard global
    objects, captured, and their bindings on ``globalThis`` made read-only. The tests then run inside a function
    whose parameters are those captured values (``require`` is one that only answers the modules loaded before
    the completion ran): the completion's changes to ``require``, ``Module._load``, the module cache, a global
    it rebinds or a module-level name it declares (``var JSON = ...``) do not reach the tests. The tests'
    ``console`` is the captured one with an ``assert`` that throws when its condition is false."""
    tests = _node_imports(tests)
    names = sorted({m.group(2) for m in _REQUIRE.finditer(tests)} | {"node:assert", "assert", "assert/strict"})
    loads = ", ".join(f"[{json.dumps(n)}, () => require({json.dumps(n)})]" for n in names)
    params = ", ".join(("require", *_NODE_GLOBALS))
    prologue = (
        f"const {name}_write = process.stdout.write.bind(process.stdout);\n"
        f"const {name}_mods = new Map(); for (const [n, load] of [{loads}]) "
        "{ try { const m = load(); if (m && (typeof m === 'object' || typeof m === 'function')) "
        f"Object.freeze(m); {name}_mods.set(n, m); }} catch (e) {{}} }}\n"
        "Object.freeze(require('node:assert').strict);\n"
        f"const {name}_require = (n) => {{ if ({name}_mods.has(n)) return {name}_mods.get(n); "
        "throw new Error('module ' + n + ' was not loaded before the completion ran'); };\n"
        f"const {name}_globals = [{name}_require, {', '.join(_NODE_GLOBALS)}];\n"
        # The tests' console.assert throws (Node's prints "Assertion failed" and goes on: a test program of
        # console.assert calls, McEval's and HumanEval-X's, would pass any answer).
        f"{name}_globals[{1 + _NODE_GLOBALS.index('console')}] = Object.freeze(Object.create(console, {{ assert: "
        "{ value: (ok, ...m) => { if (!ok) throw new Error(['Assertion failed', ...m.map(String)].join(': ')); } "
        "} }));\n"
        f"for (const g of {json.dumps(list(_NODE_GLOBALS))}) {{ try {{ "
        "const d = Object.getOwnPropertyDescriptor(globalThis, g); if (!d) continue; "
        "Object.defineProperty(globalThis, g, { value: globalThis[g], writable: false, configurable: false, "
        "enumerable: d.enumerable }); } catch (e) {} }\n")
    wrapped = f";(({params}) => {{\n{tests}\n}})(...{name}_globals);\n"
    return prologue, wrapped


def _go_with_import(program: str, name: str) -> str:
    """Adds ``import {name}_os "os"`` after the package clause (the end writes with it)."""
    head, sep, rest = program.partition("package main")
    if not sep:
        return program
    return f"{head}package main\n\nimport {name}_os \"os\"\n{rest}"


# What a completion written against this service can still forge here, per language (the tests share its
# process: the end's secret is in that process's memory). `verifier-service list` and docs/security.md say it.
# The languages whose test program runs where no new process can be started (runner/procs.no_new_processes):
# otherwise the completion could fork at each call and let a copy try an answer on the tests' next steps, which
# tells it the answer that passes (a fork oracle). Not Bash (its command substitutions are processes).
NO_FORK = frozenset({"c", "cpp", "rust", "go", "java", "javascript", "typescript", "php", "lua", "perl", "r",
                     "csharp", "d", "ruby"})
FORGEABLE = {
    "c": "its own binary or memory (/proc/self/exe, /proc/self/mem, a constructor that patches the tests' code)",
    "cpp": "its own binary or memory (/proc/self/exe, /proc/self/mem, a constructor that patches the tests' code)",
    "rust": "its own binary or memory (/proc/self/exe, /proc/self/mem); with no setup that declares the function, "
            "a return type of its own whose == always holds",
    "go": "its own binary or memory (/proc/self/exe, /proc/self/mem)",
    "java": "the JVM's memory (/proc/self/mem); the end's class file is deleted before the completion runs",
    "javascript": "an in-process inspector session (node:inspector shows the end's source); prototype methods "
                  "the tests call (Array.prototype...)",
    "typescript": "an in-process inspector session (node:inspector shows the end's source); prototype methods "
                  "the tests call (Array.prototype...)",
    "bash": "the shell's memory, read by a child process (/proc/$$/mem)",
    "php": "the interpreter's memory (/proc/self/mem), which holds the program's text",
    **dynamic_tests.FORGEABLE,
    "csharp": "the runtime's memory (/proc/self/mem, Marshal.ReadByte / Marshal.Copy on the end's arrays or a "
              "patched method); the end's secret is read from its stdin, not held as a constant; with no setup "
              "that declares the function, or one whose return type is object, dynamic or an interface, a "
              "returned object of its own whose Equals or == always holds",
    "d": "its own memory (/proc/self/mem, or mprotect on the end's page, which holds the secret read from stdin "
         "while the tests run; the tests' expected values are in their machine code, readable from the caller's "
         "frame); the tests' module never sees the completion's source, the completion's symbols other than its "
         "module's own are made local and its code that would run before main is refused",
    "ruby": ruby_tests.FORGEABLE,
}


@register
class FunctionTests(VerifierKind):
    name = "function_tests"
    description = ("runs a completion with a test program in its own language (MultiPL-E's form: "
                   f"{', '.join(SUPPORTED)}); passes when the tests ran to their end. The tests share the "
                   "completion's process: a completion written to attack this service can still forge a pass "
                   "through " + "; ".join(f"{lang}: {what}" for lang, what in FORGEABLE.items()) +
                   ". Where that matters use function_io (C++, Java, JavaScript, TypeScript, Rust, PHP, Lua, Perl, "
                   "R, Ruby), stdio (any language) or python_io (Python): their expected values never enter the "
                   "sandbox")
    sandboxed = True
    default_extract = "raw"
    params = (
        Param("tests", "string", "the test program, in the completion's language (its main runs the checks; Rust: "
              "a main, or #[test] functions, as in a #[cfg(test)] module; Go: a main, or `go test` functions "
              "func TestXxx(t *testing.T), testify available; C#: a static void Main() in a class, the setup's or "
              "their own, Debug.Assert made a check that throws; Mono, C# 7.2, the .NET SDK's implicit usings; D: "
              "unittest blocks and/or a main, MultiPL-E's `rdmd -unittest -main` form, assert made a check that "
              "ends the process, gdc; Ruby: top-level checks or test-unit/Minitest test classes, run by the "
              "service's launcher)",
              required=True),
        Param("language", "string", "language of the completion and the tests", required=True, choices=SUPPORTED),
        Param("setup", "string", "code before the completion (the prompt, when the completion continues it)"),
    )

    def image(self, spec: Spec) -> str:
        return LANGUAGES[spec.language].image

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "tests", "language")
        if spec.language not in SUPPORTED:
            raise InvalidSpec(f"spec.language {spec.language!r} is not supported; valid: {', '.join(SUPPORTED)}")
        if spec.language == "rust" and not rust_tests(spec.tests, "t")[1]:
            raise InvalidSpec("spec.tests (rust) must define fn main() or #[test] functions")
        if spec.language == "go" and go_tests.test_names(spec.tests):  # the `go test` form (kinds/go_tests.py)
            if go_tests.PACKAGE.search(spec.setup + spec.tests) is None:
                raise InvalidSpec("spec.setup or spec.tests (go) must hold the package clause")
            if go_tests.has_test_main(spec.tests):
                raise InvalidSpec("spec.tests (go): TestMain is not supported (the service's test main runs the "
                                  "tests)")
        elif spec.language == "go" and ("func main()" not in spec.tests or
                                        "package main" not in spec.setup + spec.tests):
            raise InvalidSpec("spec.tests (go) must define func main() (or test functions, func TestXxx(t "
                              "*testing.T)) and the program must say package main")
        if spec.language in ("c", "cpp") and "main(" not in spec.tests:
            raise InvalidSpec(f"spec.tests ({spec.language}) must define main")
        if spec.language == "csharp" and csharp_tests.tests_entry(spec.setup, spec.tests) is None:
            raise InvalidSpec("spec.tests (csharp) must hold the tests' static void Main(), inside a class (the "
                              "setup's or the tests' own)")
        if spec.language == "d" and not re.search(r"\bunittest\b|\bmain\s*\(", d_tests.blank(spec.tests)):
            raise InvalidSpec("spec.tests (d) must hold unittest blocks or a main")
        if spec.language == "d" and d_tests.nested_unittests(spec.tests):
            raise InvalidSpec("spec.tests (d): a unittest block inside a type or a template is not run (only the "
                              "module's own unittest blocks and its main are)")
        if spec.language == "java" and "static void main(" not in spec.tests:
            raise InvalidSpec("spec.tests (java) must define the tests' class with its main method")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        base = LANGUAGES[spec.language]
        lang = _function_language(base, spec.tests)
        # Drawn once per program (kept with the compile cache), so that the same completion and tests make the same
        # program and are compiled once; see docs/security.md for why a per-source secret is as strong here.
        cache = getattr(ctx.sandbox, "artifacts", None)
        ident = f"{spec.language}\0{spec.setup}\0{text}\0{spec.tests}"
        secret = cache.secret(ident, 38) if cache is not None else secrets.token_bytes(38)
        name, a, b = "t" + secret[:6].hex(), secret[6:22], secret[22:38]
        nonce = bytes(p ^ q for p, q in zip(a, b, strict=True)).hex()
        files = None
        if spec.language in ("c", "cpp"):
            files = c_units(spec.language, spec.setup, text, spec.tests, a, b, name)
        elif spec.language == "go" and go_tests.test_names(spec.tests):
            files = go_tests.units(spec.setup, text, spec.tests, a, b, name)
            lang = replace(lang, compile=("sh", f"{LANGS_DIR}/go-build.sh", go_tests.MAIN_FILE, "solution",
                                          go_tests.SOURCE_FILE))
        stdin = ""
        extra = dict(extracted=truncate(text, 4000))
        if spec.language == "csharp":  # kinds/csharp_tests.py: the end reads its secret from stdin
            stdin = (a + b).hex()
            lang = replace(lang, compile=csharp_tests.compile_argv(name))
        if spec.language == "d":  # kinds/d_tests.py: two modules; the end reads its secret from stdin
            files = d_tests.units(spec.setup, text, spec.tests, name)
            stdin = (a + b).hex()
            lang = replace(lang, file=f"{name}_sol.d", compile=d_tests.compile_script(name))
        if spec.language == "ruby":  # kinds/ruby_tests.py: the launcher reads the end's secret from stdin
            stdin = ruby_tests.secret_input(a, b)
        program = "\n".join(files.values()) if files else \
            assemble(spec.language, spec.setup, text, spec.tests, a, b, name)
        # (the toolchain first: a host without Go lacks testify too, and that is not what it should be told)
        missing = await probe.problem(ctx, lang) or await probe.launcher_problem(ctx, lang) or \
            await probe.library_problems(ctx, lang, f"{spec.setup}\n{spec.tests}")
        if missing is not None:
            return Outcome(Verdict.INFRA_ERROR, detail=missing, **extra)
        if spec.language == "d" and files is None:
            return Outcome(Verdict.FAILED, detail="the completion's functions cannot be declared to the tests (the "
                           "setup declares none and the completion's top-level functions are templates or return "
                           "auto)", **extra)
        shadowing = csharp_tests.shadowed(text, spec.tests) if spec.language == "csharp" else []
        if shadowing:
            return Outcome(Verdict.FAILED, detail="the completion declares names the tests use as a type, a qualifier, "
                           f"an extension method or a helper of theirs: {', '.join(shadowing)}", **extra)
        prepared = await prepare(ctx, lang, program)
        if isinstance(prepared, Outcome):
            return Outcome(prepared.verdict, detail=prepared.detail, **extra, stdout_tail=prepared.stdout_tail,
                           stderr_tail=prepared.stderr_tail)
        limit = min(ctx.timeout_s, ctx.config.max_timeout_s)
        run_cmd = prepared.run if spec.language != "java" else (*prepared.run[:-1], name)
        files = files or {prepared.file: program}
        # A compiled program's sources (which hold the end's constants) are removed before any of its code runs.
        sources = [f for f in files if lang.artifacts and not any(fnmatch(f, g) for g in lang.artifacts)]
        hide = [Step("hide", ["rm", "-f", "--", *sources], 30.0, stop_on_failure=True)] if sources else []
        steps = [*prepared.steps, *hide,
                 Step("tests", run_argv(lang, run_cmd, ctx.config.cpus, ctx.config.memory_mb), limit, stdin=stdin,
                                       memory_bytes=(ctx.config.memory_mb << 20) if lang.address_space_limit else None,
                                       output_limit=ctx.config.output_limit_bytes,
                                       no_fork=spec.language in NO_FORK)]
        on_step = prepared.then(lambda step: True)

        job = Job(steps=steps, files=files, image=lang.image)
        run = await run_compiled(ctx, prepared, lang, job, on_step, extra)
        if isinstance(run, Outcome):
            return run
        step = run.steps[-1]
        if step.name != "tests":
            return Outcome(Verdict.TIMEOUT if run.host_timeout else Verdict.RUNTIME_ERROR,
                           detail=run.runner_error or "the tests did not run", **extra)
        if step.spawn_error:  # (the sandbox's fault, not the completion's: e.g. no new-process filter here)
            return Outcome(Verdict.INFRA_ERROR, detail=f"the tests could not be started: {step.spawn_error}", **extra)
        lines = step.stdout.rstrip("\n").split("\n")
        ended = lines[-1].strip() == nonce
        hit = limit_verdict(step, run, limit)
        if hit is not None:
            test = TestOutcome("tests", hit[0], hit[1], step.duration_s)
        elif not step.ok:
            # A failed check and a crash look the same from here (an exit status, a signal): the tests failed.
            memory = any(m in step.stderr[-2000:] for m in lang.memory_markers)
            test = TestOutcome("tests", Verdict.MEMORY_LIMIT if memory else Verdict.FAILED,
                               "memory limit exceeded" if memory else f"the tests failed: {exit_detail(step)}",
                               step.duration_s)
        elif not ended:
            test = TestOutcome("tests", Verdict.FAILED, "the tests did not run to their end (the program stopped "
                               "before the end of its tests)", step.duration_s)
        else:
            test = TestOutcome("tests", Verdict.PASSED, "", step.duration_s)
        # The nonce is this source's secret: it is not shown in the result.
        return Outcome.from_tests([test], **extra, stdout_tail=tail(step.stdout.replace(nonce, "<end of tests>")),
                                  stderr_tail=tail(step.stderr))


def _function_language(base: Language, tests: str = "") -> Language:
    """The language row for test programs: C++ built with -O0 -fno-unreachable-traps (MultiPL-E's C++ tests'
    main has no ``return``: once renamed, falling off its end is undefined behaviour, which GCC turns into a trap
    at -O0 and into a jump to anywhere when optimising; this way the function returns), Java with assertions on,
    Node.js, Bash, PHP, Lua, Perl and R through their launchers, C and C++ as two units (``c_compile``), Rust tests
    of the ``#[test]`` form with ``--cfg test``."""
    if base.name == "cpp":
        flags = ("-O0", "-fno-unreachable-traps")
        cpp = replace(base, compile=tuple(f for a in base.compile for f in (flags if a == "-O2" else (a,))))
        return replace(cpp, file="completion.cpp", compile=c_compile(cpp), libs=())
    if base.name == "c":
        return replace(base, file="completion.c", compile=c_compile(base), libs=())
    if base.name == "java":
        return replace(base, run=(base.run[0], "-ea", "-XX:+DisableAttachMechanism", *base.run[1:]))
    if base.name in ("javascript", "typescript"):
        return replace(base, run=(*base.run[:-1], "-e", NODE_LAUNCHER, base.run[-1]))
    if base.name == "bash":
        return replace(base, run=("bash", "-c", BASH_LAUNCHER))
    if base.name == "php":
        return replace(base, run=("php", "-r", PHP_LAUNCHER))
    if base.name == "ruby":  # from memory, through the launcher's guard and end (kinds/ruby_tests.py)
        return replace(base, run=ruby_argv(*ruby_tests.LAUNCHER[1:]))
    if base.name in dynamic_tests.LAUNCHERS:  # Lua, Perl, R: from memory, through the launcher's guard
        return replace(base, run=dynamic_tests.LAUNCHERS[base.name])
    if base.name == "rust" and rust_source.read_tests(tests).tests:
        # #[test] functions: `#[cfg(test)]` holds, as under `cargo test` (the tests run from the end: rust_tests).
        at = base.compile.index("-o")
        return replace(base, compile=(*base.compile[:at], "--cfg", "test", *base.compile[at:]))
    return base
