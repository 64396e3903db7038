"""function_tests' `go test` form (HumanEval-X's and MultiPL-E's Go tests): tests that declare ``func TestXxx(t
*testing.T)`` functions and no ``main``, run by a test main of the service's.

Two files make one package main: ``tests_main.go`` (the service's, compiled first) and ``solution.go`` (setup +
completion + tests, its package clause renamed ``main``: MultiPL-E's say ``package x_test``). A completion cannot
comment out or swallow the tests' end: no comment or raw string spans two files. The test main:

- binds the ``testing`` package's flags to the standard flag set in its first package-level variable, which Go
  initialises before any variable or ``init`` of the completion's (declaration order follows the files' order),
  and puts every ``test.*`` flag back to its default once every ``init`` ran (``-test.run``, ``-test.skip``,
  ``-test.list``, ``-test.count``, ``-test.cpu`` a completion set would run fewer tests or none), with
  ``-test.paniconexit0`` on (an ``os.Exit(0)`` inside a test is a panic, as under ``go test``);
- runs the test functions the trusted tests declare (found in the tests' text only, never the completion's)
  through ``testing.MainStart``, each wrapped so that it counts as done only when it returned without failing;
- prints the per-job end (``function_tests``' nonce, as the XOR of two constants) only when ``Run`` answered 0
  and every test is done. What a completion can still forge is ``function_tests.FORGEABLE["go"]``.
"""

from __future__ import annotations

import re

MAIN_FILE = "tests_main.go"
SOURCE_FILE = "solution.go"

_TEST = re.compile(r"^func[ \t]+(Test(?![a-z])\w*)[ \t]*\([ \t]*\w+[ \t]+\*[ \t]*testing\.T[ \t]*\)", re.MULTILINE)
_TEST_MAIN = re.compile(r"^func[ \t]+TestMain[ \t]*\(", re.MULTILINE)
_MAIN = re.compile(r"^func[ \t]+main[ \t]*\(", re.MULTILINE)
PACKAGE = re.compile(r"^package[ \t]+[A-Za-z_]\w*", re.MULTILINE)


def test_names(tests: str) -> list[str]:
    """The test functions of ``tests`` in the `go test` form, in order ([]: the tests are a ``main``)."""
    if _MAIN.search(tests):
        return []
    return list(dict.fromkeys(m.group(1) for m in _TEST.finditer(tests)))


def has_test_main(tests: str) -> bool:
    return _TEST_MAIN.search(tests) is not None


def units(setup: str, completion: str, tests: str, a: bytes, b: bytes, name: str) -> dict[str, str]:
    """{file: text}: the service's test main first (``go-build.sh`` compiles the files in this order)."""
    program = PACKAGE.sub("package main", f"{setup}{completion}\n{tests}\n", count=1)
    return {MAIN_FILE: test_main(test_names(tests), a, b, name), SOURCE_FILE: program}


def test_main(tests: list[str], a: bytes, b: bytes, name: str) -> str:
    n = name
    wrapped = "".join(f"\t\t{{Name: {_go_string(t)}, F: func(t *{n}_testing.T) {{ {t}(t); {n}_done[{i}] = "
                      f"!t.Failed() }}}},\n" for i, t in enumerate(tests))
    xs = ", ".join(str(v) for v in a)
    ys = ", ".join(str(v) for v in b)
    return f"""package main

import (
\t{n}_flag "flag"
\t{n}_os "os"
\t{n}_testing "testing"
\t{n}_deps "testing/internal/testdeps"
)

var {n}_flags = {n}_bind()

func {n}_bind() *{n}_flag.FlagSet {{
\t{n}_testing.Init()
\treturn {n}_flag.CommandLine
}}

var {n}_done [{len(tests)}]bool

func main() {{
\t{n}_os.Args = {n}_os.Args[:1]
\t{n}_flags.VisitAll(func(f *{n}_flag.Flag) {{
\t\tif len(f.Name) > 5 && f.Name[:5] == "test." {{
\t\t\t_ = f.Value.Set(f.DefValue)
\t\t}}
\t}})
\t_ = {n}_flags.Set("test.paniconexit0", "true")
\t{n}_tests := []{n}_testing.InternalTest{{
{wrapped}\t}}
\t{n}_code := {n}_testing.MainStart({n}_deps.TestDeps{{}}, {n}_tests, nil, nil, nil).Run()
\tif {n}_code != 0 {{
\t\t{n}_os.Exit({n}_code)
\t}}
\tfor i, ok := range {n}_done {{
\t\tif !ok {{
\t\t\t{n}_os.Stderr.WriteString("the test " + {n}_tests[i].Name + " did not run to its end\\n")
\t\t\t{n}_os.Exit(1)
\t\t}}
\t}}
\t{n}_x := []byte{{{xs}}}
\t{n}_y := []byte{{{ys}}}
\t{n}_s := make([]byte, 0, {2 * len(a) + 1})
\tfor i := range {n}_x {{
\t\tv := {n}_x[i] ^ {n}_y[i]
\t\t{n}_s = append({n}_s, "0123456789abcdef"[v>>4], "0123456789abcdef"[v&15])
\t}}
\t{n}_s = append({n}_s, '\\n')
\t{n}_os.Stdout.Write({n}_s)
}}
"""


def _go_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
