"""C# function tests (McEval's and MultiPL-E's forms: the setup opens ``class Program``/``class Problem`` and a
method, the completion finishes it, the tests hold ``static void Main()`` and close the class).

What the service changes (``program``):

* The tests' ``Debug.Assert``/``Trace.Assert`` calls (a bare ``Assert(`` too, under ``using static
  System.Diagnostics.Debug``) become calls of a checker of the service's, reached as ``global::{name}_Check`` (a
  name drawn per job): Mono compiles ``Debug.Assert`` out without ``DEBUG`` and even with it a failed one neither
  throws nor ends the run, and a completion could clear the trace listeners. A failed check ends the process
  then and there (its message on the raw stderr stream, then ``Environment.Exit(1)``), as .NET's
  ``Debug.Assert`` does: no ``catch`` of the tests' turns it into a pass, and the end never runs; the checker
  holds no state a completion could change.
* The tests' ``Main`` is renamed ``{name}_Main``; the entry point is the end's class (``mcs -main:``, chosen here,
  never from the completion's text), which reads the end's two secret halves from its stdin (the runner's socket,
  which no other process can open) into locals before any code of the completion's can run (the end's class has
  no static state; no class of the completion's is initialised before it), calls the tests' Main, and only when it
  returned writes their XOR to a raw stdout stream it opened before the tests ran (``Console.SetOut`` does not
  reach it). No constant of the program holds the secret (reflection on the assembly finds none).
* ``#pragma warning restore`` after the completion and ``-warnaserror`` for CS0435-CS0437: a completion's type in
  a namespace of the framework's (``namespace System { class Console ... }``) is a compile error, not the type
  the tests and the end meet.
* A completion that declares a name the tests use as a type or a qualifier (``Enumerable.SequenceEqual``,
  ``new List<int>``), or an extension method the tests call, is rejected (``shadowed``): in the tests' class the
  completion's members and nested types come before the imported namespaces' types.
"""

from __future__ import annotations

import re
import unicodedata

from verifier_service.kinds.source_text import block_end, line_end, wipe

_VERBATIM = re.compile(r'\$?@\$?"')


def blank(source: str) -> str:
    """``source`` with comments and string/char literals replaced by spaces (newlines kept, offsets the same).
    Interpolated strings are blanked whole (their holes too)."""
    out = list(source)
    i, n = 0, len(source)

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = line_end(source, i)
            wipe(out, i, j)
            i = j
        elif source.startswith("/*", i):
            j = block_end(source, i)
            wipe(out, i, j)
            i = j
        elif (m := _VERBATIM.match(source, i)) is not None:
            j = m.end()
            while j < n:
                if source[j] == '"':
                    if source.startswith('""', j):
                        j += 2
                        continue
                    break
                j += 1
            wipe(out, i, j + 1)
            i = j + 1
        elif c == '"' or (c == "$" and source.startswith('$"', i)) or c == "'":
            q = "'" if c == "'" else '"'
            j = i + (2 if c == "$" else 1)
            while j < n and source[j] != q and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            wipe(out, i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


_SCOPE = re.compile(r"\b(namespace)\s+([\w.]+)\s*\{|\b(class|struct|interface|record)\s+([A-Za-z_]\w*)[^{};()=]*\{"
                    r"|([{}])")


def _scopes(text: str, stack: list[tuple[str, str]], stop: int | None = None) -> list[tuple[str, str]]:
    """The open scopes (kind, name) after scanning ``text`` (blanked) up to ``stop``, from ``stack``."""
    stack = list(stack)
    for m in _SCOPE.finditer(text, 0, len(text) if stop is None else stop):
        if m.group(1):
            stack.append(("namespace", m.group(2)))
        elif m.group(3):
            stack.append(("type", m.group(4)))
        elif m.group(5) == "{":
            stack.append(("block", ""))
        elif stack:
            stack.pop()
    return stack


_MAIN = re.compile(r"((?:(?:public|private|internal|protected|unsafe)\s+)*)static\s+((?:public|private|internal|"
                   r"protected)\s+)?(void|int)\s+(Main)\s*\(")
_USING_STATIC = re.compile(r"\busing\s+static\s+(?:global\s*::\s*)?System\s*\.\s*Diagnostics\s*\.\s*"
                           r"(?:Debug|Trace)\s*;")
_ASSERT = re.compile(r"(?<![\w.@])(?:global\s*::\s*)?(?:System\s*\.\s*Diagnostics\s*\.\s*)?(?:Debug|Trace)\s*\.\s*"
                     r"Assert\s*\(")


def tests_entry(setup: str, tests: str) -> tuple[str, re.Match] | None:
    """(the class that holds the tests' Main, as ``global::A.B``, its match in the tests), found in the trusted
    text only: the scopes the setup leaves open (a method's body the completion continues, MultiPL-E's, which the
    tests close), then the tests up to their Main. The completion is taken to leave the nesting as it found it:
    where it does not, the renamed Main is not where the end calls it and the program does not compile."""
    blanked = blank(tests)
    main = _MAIN.search(blanked)
    if main is None:
        return None
    stack = _scopes(blanked, _scopes(blank(setup), []), main.start())
    names = [n for kind, n in stack if kind != "block"]
    if not names or stack[-1][0] != "type":
        return None
    path = ".".join(p for n in names for p in n.split("."))
    return f"global::{path}", main


_NAME_USE = re.compile(r"(?<![\w.@$])([A-Za-z_]\w*)\s*(?:\.|<[\w\s,.<>\[\]?]*>\s*[.({\[)]|\[\s*\]\s*\w)"
                       r"|\b(?:new|typeof|is|as|default|sizeof|nameof)\s*\(?\s*([A-Za-z_]\w*)"
                       r"|\(\s*([A-Za-z_]\w*)\s*(?:<[\w\s,.<>\[\]?]*>)?\s*\)\s*[\w(]")
_KEYWORDS = {"int", "long", "string", "bool", "double", "float", "char", "object", "decimal", "byte", "short", "uint",
             "ulong", "ushort", "sbyte", "var", "void", "dynamic", "this", "base", "null", "true", "false", "return"}
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})")


def _identifiers(blanked: str) -> str:
    """``blanked`` with identifiers as the compiler compares them: Unicode escapes decoded, formatting characters
    (Cf: a zero-width joiner...) dropped, ``@`` (a verbatim identifier) dropped."""
    text = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), blanked)
    return "".join(ch for ch in text if ch != "@" and unicodedata.category(ch) != "Cf")
_GENERIC = r"(?:<(?:[^<>;{{}}=()]|<[^<>;{{}}=()]*>)*>)?"
_DECLARES = r"(?<![\w.$])(?<!new )(?<!::)({names})\s*" + _GENERIC + r"\s*(?:[({{;=,:]|\bwhere\b)"
_EXTENSION = re.compile(r"([A-Za-z_]\w*)\s*" + _GENERIC.replace("{{", "{").replace("}}", "}") + r"\s*\(\s*this\s")


_LOCAL = re.compile(r"(?<=[\w>\]?])\s+([A-Za-z_]\w*)\s*(?:=(?!=)|;|,|\)|\bin\b)")
_METHOD = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)\s*" + _GENERIC.replace("{{", "{").replace("}}", "}") +
                     r"\s*\([^;{}]*\)\s*(?:where\b[^;{}]*)?(?:\{|=>)")
_STATEMENTS = {"if", "for", "foreach", "while", "switch", "catch", "using", "lock", "fixed", "return", "Main"}


def shadowed(completion: str, tests: str) -> list[str]:
    """The names the tests use as a type or a qualifier (``X.``, ``new X``, ``X<...>``) that the completion declares
    (a type, a member, an enum constant...), the extension methods it declares that the tests call, and the methods
    it declares with the name of one the tests declare: each would bind the tests' name to the completion's code.
    (Tests that name a class the completion declares, ``Problem.Add`` from a class of their own, are refused too:
    the completion's class could be a framework type's name.)"""
    tb, cb = _identifiers(blank(tests)), _identifiers(blank(completion))
    used = {m.group(1) or m.group(2) or m.group(3) for m in _NAME_USE.finditer(tb)} - {"global"} - _KEYWORDS
    used -= {m.group(1) for m in _LOCAL.finditer(tb)}  # the tests' own variables: nothing outside reaches them
    words = set(re.findall(r"[A-Za-z_]\w*", tb))
    found = set()
    if used:
        pattern = re.compile(_DECLARES.format(names="|".join(sorted(map(re.escape, used)))))
        found |= {m.group(1) for m in pattern.finditer(cb)}
    found |= {m.group(1) for m in _EXTENSION.finditer(cb) if m.group(1) in words}
    # A method the tests declare (a helper their checks call): an overload of the completion's could be the better
    # match for the tests' call.
    helpers = {m.group(1) for m in _METHOD.finditer(tb)} - _STATEMENTS
    if helpers:
        pattern = re.compile(_DECLARES.format(names="|".join(sorted(map(re.escape, helpers)))))
        found |= {m.group(1) for m in pattern.finditer(cb)}
    return sorted(found)


_END = """
internal static class NAME_Check {
    static void Fail(string message) {
        var err = global::System.Console.OpenStandardError();
        var text = global::System.Text.Encoding.UTF8.GetBytes(message + "\\n");
        err.Write(text, 0, text.Length); err.Flush();
        global::System.Environment.Exit(1);
    }
    public static void Assert(bool condition) { if (!condition) Fail("Assertion failed"); }
    public static void Assert(bool condition, string message) { if (!condition) Fail("Assertion failed: " + message); }
    public static void Assert(bool condition, string message, string detail) {
        if (!condition) Fail("Assertion failed: " + message + " " + detail); }
    public static void Assert(bool condition, string message, string format, params object[] args) {
        if (!condition) Fail("Assertion failed: " + message); }
}
internal static class NAME {
    static int Nibble(byte c) { return c <= 57 ? c - 48 : c - 87; }
    // (a method of its own, never inlined: compiling Main refers to no class of the completion's)
    [global::System.Runtime.CompilerServices.MethodImpl(
        global::System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    static void Tests(string[] args) { RUN }
    public static int Main(string[] args) {
        var input = global::System.Console.OpenStandardInput();
        var secret = new byte[64]; int got = 0, k;
        while (got < secret.Length && (k = input.Read(secret, got, secret.Length - got)) > 0) got += k;
        input.Dispose();
        var stdout = global::System.Console.OpenStandardOutput();
        // (Console.Out may be the completion's writer: it is flushed here, where a failure is the tests')
        try { Tests(args); global::System.Console.Out.Flush(); }
        catch (global::System.Exception e) {
            global::System.Console.Error.WriteLine("the tests failed: " + e.GetType().FullName + ": " + e.Message);
            global::System.Environment.Exit(1);
        }
        if (got != secret.Length) return 2;
        var hex = new byte[33];
        for (int i = 0; i < 16; i++) {
            int v = (Nibble(secret[2 * i]) * 16 + Nibble(secret[2 * i + 1])) ^
                    (Nibble(secret[32 + 2 * i]) * 16 + Nibble(secret[33 + 2 * i]));
            hex[2 * i] = (byte)"0123456789abcdef"[v >> 4]; hex[2 * i + 1] = (byte)"0123456789abcdef"[v & 15];
        }
        hex[32] = 10;
        stdout.Write(hex, 0, hex.Length); stdout.Flush();
        return 0;
    }
}
"""


# The .NET SDK's implicit usings of a console project (`dotnet new console`, ImplicitUsings; McEval's harness
# builds its C# tests so: their `.Select` and `.SequenceEqual` need System.Linq), less System.Net.Http (not in
# Mono's default references). Not where the program must begin with #define or extern alias.
IMPLICIT_USINGS = ("using System;\nusing System.Collections.Generic;\nusing System.IO;\nusing System.Linq;\n"
                   "using System.Threading;\nusing System.Threading.Tasks;\n")
_DIRECTIVES_FIRST = re.compile(r"^\s*(?:#\s*(?:define|undef)\b|extern\s+alias\b)", re.MULTILINE)


def program(setup: str, completion: str, tests: str, name: str) -> tuple[str, str] | None:
    """(the program, its entry class) or None when the tests' Main is not found."""
    entry = tests_entry(setup, tests)
    if entry is None:
        return None
    path, main = entry
    blanked = blank(tests)
    returns_int = main.group(3) == "int"
    asserts = _ASSERT
    if _USING_STATIC.search(blank(setup)) or _USING_STATIC.search(blanked):  # a bare Assert( is Debug's
        asserts = re.compile(f"{_ASSERT.pattern}|(?<![\\w.@])Assert\\s*\\(")
    edits = [(m.start(), m.end(), f"global::{name}_Check.Assert(") for m in asserts.finditer(blanked)]
    edits.append((main.start(), main.end(), f"internal static {main.group(3)} {name}_Main("))
    for start, stop, text in sorted(edits, reverse=True):
        tests = tests[:start] + text + tests[stop:]
    takes_args = blanked[main.end():blanked.find(")", main.end())].strip() != ""
    call = f"{path}.{name}_Main({'args' if takes_args else ''})"
    run = f"if ({call} != 0) global::System.Environment.Exit(1);" if returns_int else f"{call};"
    end = _END.replace("NAME", name).replace("RUN", run)
    usings = "" if _DIRECTIVES_FIRST.search(blank(setup or completion)) else f"{IMPLICIT_USINGS}#line 1\n"
    return f"{usings}{setup}{completion}\n#pragma warning restore\n{tests}\n{end}", f"{name}"


def compile_argv(name: str) -> tuple[str, ...]:
    """mcs for the function tests: the end's class is the entry point; a completion's type that conflicts with the
    framework's is an error; System.Numerics referenced (McEval's C#/24 and C#/35 use BigInteger)."""
    return ("mcs", "-optimize+", "-nowarn:105,219,414", "-warnaserror+:435,436,437", "-r:System.Numerics.dll",
            f"-main:{name}", "-out:solution.exe", "solution.cs")
