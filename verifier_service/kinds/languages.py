"""The language table: how a program in each language is checked, built and run in the sandbox.

One row per language: the source file's name, the compile (or syntax check) step, the run step, which
sandbox image has its toolchain (``IMAGE_DEFAULT``: the lean default image, ``IMAGE_LANGS``: the
languages image, ``sandboxes/langs``), the command that prints its toolchain's version, the files a
compile step produces that the run needs (what the compile cache keeps, ``kinds/compiled.py``), and the
texts its runtime prints when it runs out of memory. Every argv here is the service's: the completion
only chooses the source file's content (and, for Java, the name of its public class).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from verifier_service.kinds import java_source

IMAGE_DEFAULT = ""  # the service's sandbox_image
IMAGE_LANGS = "langs"  # the service's sandbox_langs_image

LANGS_DIR = "/opt/rlvr-langs"  # what sandboxes/langs/install-toolchain.sh puts in the languages image


@dataclass(frozen=True)
class Language:
    name: str
    file: str                      # the source file's name in the work dir
    compile: tuple[str, ...]       # the compile or syntax-check step (stop on failure)
    run: tuple[str, ...]           # the program, run once per case (stdin: the case's input)
    image: str                     # IMAGE_DEFAULT or IMAGE_LANGS
    version: tuple[str, ...]       # prints the toolchain's version (first line of stdout or stderr)
    artifacts: tuple[str, ...] = ()  # what the compile step makes that ``run`` needs (shell globs); () = nothing
    memory_markers: tuple[str, ...] = ()  # stderr texts of a program that ran out of memory
    error_line: str = r"error"     # (regex) the compile output's first line that says what is wrong
    address_space_limit: bool = False  # RLIMIT_AS per run (Python: MemoryError); else the sandbox's cgroup limit
    libs: tuple[str, ...] = ()     # libraries linked where the sandbox has them (C, C++: OpenSSL's libcrypto)

    def files(self, source: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """(source file name, compile argv, run argv) for this source: Java's file is named after the source's
        public top-level type (javac requires it) and the class run is the one that declares ``main``
        (``kinds/java_source.py``: comments and literals name nothing); C and C++ link ``libs`` where the
        sandbox has them (``link_libs``)."""
        if self.libs:
            return self.file, ("sh", "-c", f"{shlex.join(self.compile)} {link_libs(self.compile[0], self.libs)}"), \
                self.run
        if self.name != "java":
            return self.file, self.compile, self.run
        cls = java_source.main_class(source)
        file = f"{java_source.public_type(source) or 'Main'}.java"
        return (file, tuple(file if a == "Main.java" else a for a in self.compile),
                tuple(cls if a == "Main" else a for a in self.run))


def link_libs(cc: str, libs: tuple[str, ...]) -> str:
    """Shell words that link each of ``libs`` the compiler finds (``-print-file-name`` answers the bare name when
    it finds none: a bubblewrap host without OpenSSL's headers still compiles every program that does not use
    it), only where a program needs it (``--as-needed``)."""
    words = [f'$(f=$({cc} -print-file-name=lib{lib}.so); [ "$f" = lib{lib}.so ] || echo -l{lib})' for lib in libs]
    return " ".join(["-Wl,--as-needed", *words]) if words else ""


_GO_BUILD = ("sh", f"{LANGS_DIR}/go-build.sh", "solution.go", "solution")
# The work dir and the libraries the datasets' harnesses put on the classpath (javatuples: MultiPL-E's Java tuples);
# a jar the host lacks (bubblewrap) is skipped by javac and java alike.
JAVA_CLASSPATH = ".:/usr/share/java/javatuples.jar"
JAVA_FLAGS = ("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=75", "-XX:-UsePerfData", "-Xshare:auto")

# Ruby's VM stack (1 MiB by default: about 10,000 nested calls) made 128 MiB, so that deep recursion ends in
# SystemStackError, not sooner than in the other languages; its machine stack limit 32 MiB, below the sandbox's
# 256 MiB (runner/procs.py): under gVisor a Ruby started with a stack limit of 48 MiB or more crashes at once
# (SIGSEGV, before any code of the program's runs).
RUBY_VM_STACK = 128 << 20
RUBY_STACK_KB = 32 << 10


def ruby_argv(*args: str) -> tuple[str, ...]:
    """``ruby *args`` with Ruby's stack limits (``RUBY_VM_STACK``, ``RUBY_STACK_KB``)."""
    return ("sh", "-c", f'ulimit -s {RUBY_STACK_KB} 2>/dev/null; RUBY_THREAD_VM_STACK_SIZE={RUBY_VM_STACK} exec "$@"',
            "sh", "ruby", *args)


LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (
    Language(
        "python", "solution.py",
        compile=("python3", "-s", "-c",
                 "import sys; compile(open('solution.py', encoding='utf-8').read(), 'solution.py', 'exec')"),
        run=("python3", "-s", "solution.py"),
        image=IMAGE_DEFAULT, version=("python3", "--version"),
        memory_markers=("MemoryError",), address_space_limit=True),
    Language(
        "cpp", "solution.cpp",
        compile=("g++", "-O2", "-std=c++17", "-pipe", "-o", "solution", "solution.cpp"),
        run=("./solution",), image=IMAGE_DEFAULT, version=("g++", "--version"), artifacts=("solution",),
        memory_markers=("std::bad_alloc",), libs=("crypto",)),
    Language(
        "c", "solution.c",
        compile=("gcc", "-O2", "-std=gnu17", "-pipe", "-o", "solution", "solution.c", "-lm"),
        run=("./solution",), image=IMAGE_DEFAULT, version=("gcc", "--version"), artifacts=("solution",),
        libs=("crypto",)),
    Language(
        "bash", "solution.sh", compile=("bash", "-n", "solution.sh"), run=("bash", "solution.sh"),
        image=IMAGE_DEFAULT, version=("bash", "--version"),
        memory_markers=("Cannot allocate memory", "out of memory")),
    Language(
        "java", "Main.java",
        compile=("javac", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData", "-proc:none",
                 "-encoding", "UTF-8", "-nowarn", "-cp", JAVA_CLASSPATH, "-d", ".", "Main.java"),
        run=("java", *JAVA_FLAGS, "-ea", "-Xss64m", "-cp", JAVA_CLASSPATH, "Main"),
        image=IMAGE_LANGS, version=("java", "-version"), artifacts=("*.class",),
        memory_markers=("java.lang.OutOfMemoryError",)),
    Language(
        "javascript", "solution.js", compile=("node", "--check", "solution.js"),
        run=("node", "--stack-size=65500", "--require", f"{LANGS_DIR}/node-stdout.js", "solution.js"),
        image=IMAGE_LANGS, version=("node", "--version"),
        memory_markers=("JavaScript heap out of memory",), error_line=r"Error"),
    Language(
        "typescript", "solution.ts",
        compile=("node", f"{LANGS_DIR}/tsc-transpile.js", "solution.ts", "solution.js"),
        run=("node", "--stack-size=65500", "--require", f"{LANGS_DIR}/node-stdout.js", "solution.js"),
        image=IMAGE_LANGS, version=("node", f"{LANGS_DIR}/tsc-transpile.js", "--version"),
        artifacts=("solution.js",), memory_markers=("JavaScript heap out of memory",), error_line=r"error TS"),
    Language(
        "go", "solution.go", compile=_GO_BUILD, run=("./solution",),
        image=IMAGE_LANGS, version=("go", "version"), artifacts=("solution",),
        memory_markers=("runtime: out of memory", "fatal error: out of memory"),
        error_line=r"^\S*solution\.go:\d+"),
    Language(
        "rust", "solution.rs",
        compile=("sh", f"{LANGS_DIR}/rustc.sh", "--edition", "2021", "-O", "-C", "debuginfo=0", "-C", "strip=symbols",
                 "-o", "solution", "solution.rs"),
        run=("./solution",), image=IMAGE_LANGS, version=("rustc", "--version"), artifacts=("solution",),
        memory_markers=("memory allocation of",), error_line=r"^error"),
    # Debian's interpreters and compilers of the languages image (sandboxes/langs/install-toolchain.sh).
    Language(
        "php", "solution.php", compile=("php", "-l", "solution.php"), run=("php", "solution.php"),
        image=IMAGE_LANGS, version=("php", "--version"), memory_markers=("Allowed memory size",),
        error_line=r"(Parse|Fatal) error"),
    Language(
        "lua", "solution.lua", compile=("luac5.4", "-p", "solution.lua"), run=("lua5.4", "solution.lua"),
        image=IMAGE_LANGS, version=("lua5.4", "-v"), memory_markers=("not enough memory",),
        error_line=r"solution\.lua:\d+:"),
    Language(
        "perl", "solution.pl", compile=("perl", "-c", "solution.pl"), run=("perl", "solution.pl"),
        image=IMAGE_LANGS, version=("perl", "-e", "print qq(perl $^V\n)"), memory_markers=("Out of memory",),
        error_line=r"at solution\.pl line \d+"),
    Language(
        "r", "solution.R", compile=("Rscript", "-e", "invisible(parse('solution.R'))"),
        run=("Rscript", "solution.R"), image=IMAGE_LANGS, version=("Rscript", "--version"),
        memory_markers=("cannot allocate vector",), error_line=r"Error"),
    Language(
        "ruby", "solution.rb", compile=ruby_argv("-c", "solution.rb"), run=ruby_argv("solution.rb"),
        image=IMAGE_LANGS, version=ruby_argv("--version"),
        memory_markers=("failed to allocate memory", "NoMemoryError"), error_line=r"solution\.rb:\d+:|syntax error"),
    Language(
        "csharp", "solution.cs", compile=("mcs", "-optimize+", "-nowarn:219,414", "-out:solution.exe", "solution.cs"),
        run=("mono", "solution.exe"), image=IMAGE_LANGS, version=("mcs", "--version"), artifacts=("solution.exe",),
        memory_markers=("OutOfMemoryException",), error_line=r"error CS\d+"),
    Language(
        "d", "solution.d", compile=("gdc", "-O2", "-o", "solution", "solution.d"), run=("./solution",),
        image=IMAGE_LANGS, version=("gdc", "--version"), artifacts=("solution",),
        memory_markers=("OutOfMemoryError",), error_line=r"(?i)error"),
)}


def first_error_line(lang: Language, output: str) -> str | None:
    """The compile output's first line that says what is wrong (None: none matches)."""
    pattern = re.compile(lang.error_line, re.IGNORECASE if lang.error_line == "error" else 0)
    return next((line for line in output.splitlines() if pattern.search(line)), None)


def run_argv(lang: Language, run: tuple[str, ...], cpus: float, memory_mb: int) -> list[str]:
    """The run step's argv for a sandbox of ``cpus`` CPUs: Go's runtime sizes its threads by the host's CPUs
    (GOMAXPROCS keeps it within the sandbox's pids limit). No GOMEMLIMIT: a program that keeps its memory
    live would spend its time collecting garbage near the soft limit (a TIMEOUT) instead of meeting the
    sandbox's memory limit (MEMORY_LIMIT)."""
    if lang.name == "go":
        procs = max(1, int(cpus + 0.999))
        return ["env", f"GOMAXPROCS={procs}", *run]
    return list(run)


def families() -> list[str]:
    """The image families the table uses, the default first."""
    return sorted({lang.image for lang in LANGUAGES.values()})


def toolchain_steps(family: str) -> list[tuple[str, list[str]]]:
    """(language, version command) of every language whose toolchain is in ``family``'s image."""
    return [(lang.name, list(lang.version)) for lang in LANGUAGES.values() if lang.image == family]


def _deb(package: str) -> tuple[str, ...]:
    return ("sh", "-c", f"dpkg-query -W -f '${{Version}}\\n' {package} 2>/dev/null")


def _py(module: str) -> tuple[str, ...]:
    return ("python3", "-s", "-c", f"import {module}; print({module}.__version__)")


# The libraries the datasets' harnesses provide (issue 30, class 3), per image family: (family, name, a command
# that prints its version, nothing where it is missing). Debian's packages, pinned by the suite; `doctor` lists them.
LIBRARIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (IMAGE_DEFAULT, "boost", ("sh", "-c", "sed -n 's/^#define BOOST_LIB_VERSION \"\\(.*\\)\"/\\1/p' "
                                          "/usr/include/boost/version.hpp 2>/dev/null")),
    (IMAGE_DEFAULT, "openssl", ("sh", "-c", "sed -n 's/^# *define OPENSSL_FULL_VERSION_STR \"\\(.*\\)\"/\\1/p' "
                                            "/usr/include/openssl/opensslv.h 2>/dev/null")),
    (IMAGE_DEFAULT, "bc", _deb("bc")),
    (IMAGE_DEFAULT, "numpy", _py("numpy")),
    (IMAGE_DEFAULT, "scipy", _py("scipy")),
    (IMAGE_DEFAULT, "sympy", _py("sympy")),
    (IMAGE_DEFAULT, "pandas", _py("pandas")),
    # (testify.version: written by prepare-go.sh where it precompiled testify; an image built before it: dpkg's)
    (IMAGE_LANGS, "testify", ("sh", "-c", f"grep -q '^packagefile github.com/stretchr/testify/assert=' "
                                          f"{LANGS_DIR}/go/importcfg 2>/dev/null && "
                                          f"{{ cat {LANGS_DIR}/go/testify.version 2>/dev/null || "
                                          "dpkg-query -W -f '${Version}\\n' "
                                          "golang-github-stretchr-testify-dev 2>/dev/null; }")),
    (IMAGE_LANGS, "javatuples", _deb("libjavatuples-java")),
    (IMAGE_LANGS, "lodash", _deb("node-lodash")),
    (IMAGE_LANGS, "luaunit", _deb("lua-unit")),
    (IMAGE_LANGS, "test-unit", ruby_argv("-e", "require 'test/unit/version'; puts Test::Unit::VERSION")),
    (IMAGE_LANGS, "test-deep", _deb("libtest-deep-perl")),
    (IMAGE_LANGS, "data-compare", _deb("libdata-compare-perl")),
    (IMAGE_LANGS, "php-extensions", ("sh", "-c", "php -r 'foreach ([\"mbstring\", \"bcmath\", \"intl\", \"xml\"] "
                                                "as $e) { if (!extension_loaded($e)) { exit(1); } } "
                                                "echo PHP_VERSION;' 2>/dev/null")),
    (IMAGE_LANGS, "rust-crates", ("sh", f"{LANGS_DIR}/rustc.sh", "--crates")),  # sandboxes/langs/rust-crates.sh
)


def library_steps(family: str) -> list[tuple[str, list[str]]]:
    """(library, version command) of every library of ``family``'s image."""
    return [(name, list(argv)) for fam, name, argv in LIBRARIES if fam == family]


def version_line(stdout: str, stderr: str) -> str:
    """A version command's answer: the first line it printed (java prints to stderr)."""
    for text in (stdout, stderr):
        line = text.strip().splitlines()[:1]
        if line:
            return line[0].strip()
    return ""
