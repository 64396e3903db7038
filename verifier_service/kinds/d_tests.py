"""D function tests (MultiPL-E's form: the setup is ``import std.math; import std.typecons;`` and the function's
signature, the completion its body, the tests ``unittest { alias candidate = f; assert(...); } void main(){}``, run
there as ``rdmd -unittest -main``; also tests that are a ``main`` of ``assert`` calls, or ``unittest`` blocks that
call several functions of a completion that writes them whole).

What the service changes (``units``, ``compile_script``):

* Two modules, compiled apart: the completion's (``{name}_sol``: setup + completion) and the tests' (``{name}_tests``:
  the tests + the end), which imports only an interface file of the completion's module (``{name}_sol.di``) that
  holds the setup's declarations (the signature the completion continues made a declaration; with no such setup,
  the prototypes of the completion's top-level functions). Neither compile sees the other's source (each runs in a
  directory of its own, no ``-J``): no reflection, CTFE, mixin or template of the completion's reaches the tests.
  The tests' module is compiled with ``-funittest``; the completion's without it (its ``version(unittest)`` code
  and ``unittest`` blocks are not compiled).
* The tests' ``assert`` calls become calls of a checker of the service's (a name drawn per job): a failed check
  flushes the C streams, writes its message and ends the process with ``_exit(1)``, whatever a completion did to
  druntime's ``assertHandler``; no ``catch`` of the tests' turns it into a pass. (``static assert`` is left.)
* The entry point is the end's ``extern(C) main`` (never druntime's unittest runner, so ``Runtime.moduleUnitTester``
  and friends are never called): it reads the end's two secret halves from its stdin into a page of its own, closes
  the stream and makes the page unreadable (``PROT_NONE``), all before ``rt_init`` (which runs the module
  constructors, the completion's ``static this`` too); then it runs the tests' ``unittest`` blocks in order
  (``__traits(getUnitTests)``; a ``unittest`` inside a type or a template is refused: it would not run) and the
  tests' renamed ``main``; a ``Throwable`` that escapes fails the run. Only then it flushes the C streams, writes
  the XOR of the halves in hex and ends with ``_exit(0)`` (no module destructor of the completion's runs after it).
* No new process: before ``rt_init`` the end installs a seccomp filter (fork, vfork, clone without
  ``CLONE_THREAD``, clone3 and other syscall ABIs fail; threads stay), and a copy whose pid is not the end's first
  ends as a failed check does. Otherwise a fork oracle passes: the completion forks at each call, a copy returns a
  candidate and lets the tests go on, and its exit status (or a later call) says which answer passed.
* The interface is a root module of the tests' compile (``-fno-moduleinfo`` there), so that the tests' object holds
  every template instance the tests use (``Nullable!string``'s members, when the setup's signature returns one).
* The completion's object: every global symbol it defines is made local (``objcopy``) except its module's own
  (``_D{len}{name}_sol...``, what the tests call), gdc's weak DSO-registration symbols and the signatures of the
  COMDAT groups the tests' object holds too (the linker keeps the first object's group: the tests'). The objects
  are linked as a module of the service's first (its weak ``gdc.dso_ctor`` is the one that runs), then the tests',
  then the completion's: its ``extern(C)`` ``_d_assert``, ``exit``, ``_exit``, ``write``, ``main``, a template
  instance or a druntime hook serves nothing but the completion. Code of the completion's that would run before
  ``main`` is refused (a section ``.init*``/``.fini*``/``.preinit_array``/``.ctors``/``.dtors`` other than the init
  and fini arrays, an entry there other than gdc's DSO constructor/destructor, a strong ``gdc.*`` symbol of its own,
  a GNU ifunc, an INIT_ARRAY-typed section of another name): it could read the secret before the end does. (Its
  module constructors run in ``rt_init``, after.)
* The sources and objects are removed at the end of the compile step: the program runs with its binary only.
"""

from __future__ import annotations

import re

from verifier_service.kinds.source_text import closing_brace, wipe

_DELIMS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def blank(source: str) -> str:
    """``source`` with comments (``//``, ``/* */``, nesting ``/+ +/``) and string/char literals replaced by spaces
    (newlines kept, offsets the same)."""
    out = list(source)
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = n if (j := source.find("\n", i)) < 0 else j
        elif source.startswith("/*", i):
            j = n if (j := source.find("*/", i + 2)) < 0 else j + 2
        elif source.startswith("/+", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/+", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("+/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif source.startswith('q"', i) and i + 2 < n and not (i and (source[i - 1].isalnum() or source[i - 1] == "_")):
            d = source[i + 2]
            if d in _DELIMS:
                j = source.find(_DELIMS[d] + '"', i + 3)
                j = n if j < 0 else j + 2
            else:  # q"EOS ... EOS" (an identifier delimiter) or q"/.../"
                m = re.match(r"[A-Za-z_]\w*\n", source[i + 2:])
                end = ("\n" + m.group(0)[:-1] + '"') if m else (d + '"')
                j = source.find(end, i + 3)
                j = n if j < 0 else j + len(end)
        elif c == "`" or (c in "rx" and source.startswith('"', i + 1) and
                          not (i and (source[i - 1].isalnum() or source[i - 1] == "_"))):
            q = "`" if c == "`" else '"'
            start = i + (1 if c == "`" else 2)
            j = source.find(q, start)
            j = n if j < 0 else j + 1
            if c == "x":  # a hex string x"..." takes escapes like no other: none
                pass
        elif c == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            j += 1
        elif c == "'":
            j = i + 1
            while j < n and source[j] != "'" and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j += 1
        else:
            i += 1
            continue
        wipe(out, i, j)
        i = j
    return "".join(out)


def _depths(blanked: str) -> list[int]:
    """The brace depth before each character."""
    out, d = [], 0
    for ch in blanked:
        out.append(d)
        d += ch == "{"
        d -= ch == "}"
    return out


# A top-level function definition: a return type on the name's line (at most 4 words: qualifiers, `T[]`, `T!(...)`,
# `T*`), a name, plain parameters (no default values, parentheses 3 levels deep: `Tuple!(Nullable!(long), long) p`),
# attributes, then `{`. (Bounded, so that a completion's text cannot make the matching slow.)
_NEST = r"\((?:[^(){};=\n]|\((?:[^(){};=\n]|\([^(){};=\n]*\))*\))*\)"  # parentheses, 3 levels deep
_TYPE = (r"(?:[A-Za-z_][\w.]*(?:[ \t]*![ \t]*(?:" + _NEST + r"|\w+))?(?:[ \t]*\[[\w \t]*\]|[ \t]*\*){0,4}"
         r"[ \t]+){1,4}")
_PARAMS = r"((?:[^(){};=]|" + _NEST + r")*)"
_DEF = re.compile(r"(?m)^[ \t]*((?:(?:public|export|extern\s*\(\s*D\s*\))\s+)?" + _TYPE +
                  r"([A-Za-z_]\w*)\s*\(" + _PARAMS + r"\)[ \t\w@]*?)\s*\{")
_SIGNATURE_END = re.compile(_TYPE + r"([A-Za-z_]\w*)\s*\(" + _PARAMS + r"\)[ \t\w@]*$")
_UNSAFE_WORDS = re.compile(r"\b(?:mixin|__traits|typeof|import|__FILE__|__MODULE__|q\{)")
_IMPORT = re.compile(r"(?<![\w.])((?:(?:static|public|private|package)\s+)*)import\s+[^;{}]+;")
_KEYWORDS = {"if", "while", "for", "foreach", "foreach_reverse", "switch", "with", "catch", "return", "else",
             "synchronized", "scope", "version", "debug", "static", "assert", "main"}


def _top_level_imports(text: str) -> list[str]:
    blanked = blank(text)
    depths = _depths(blanked)
    return [re.sub(r"^(?:(?:static|public|private|package)\s+)*", "", text[m.start():m.end()])
            for m in _IMPORT.finditer(blanked) if depths[m.start()] == 0 and '"' not in text[m.start():m.end()]]


def _prototypes_only(text: str) -> str:
    """``text`` with each top-level plain function definition (a helper the prompt defines) made its prototype: the
    interface is compiled with the tests (a root module there), and the definition is the completion's module's."""
    blanked = blank(text)
    depths = _depths(blanked)
    out, last = [], 0
    for m in _DEF.finditer(blanked):
        if m.start() < last or depths[m.start()] != 0 or m.group(2) in _KEYWORDS or \
                re.match(r"\s*(?:auto|enum|alias|template|mixin)\b", text[m.start(1):m.end(1)]):
            continue
        end = closing_brace(blanked, m.end() - 1)
        if end is None:
            continue
        out += [text[last:m.end(1)], ";"]
        last = end + 1
    out.append(text[last:])
    return "".join(out)


def header(setup: str, completion: str) -> tuple[str, list[str]] | None:
    """(the declarations the tests know the completion's module by, the functions' names), or None when the
    completion's functions cannot be declared (the setup declares none and the completion's top-level
    functions are not all plain: a template, an ``auto`` return...). MultiPL-E's setup ends with the signature
    the completion's ``{`` opens: it becomes a declaration."""
    stripped = setup.rstrip()
    blanked = blank(stripped)
    if blanked.endswith("{"):
        stripped, blanked = stripped[:-1].rstrip(), blanked[:-1].rstrip()
    last = blanked.rfind(";") + 1, blanked.rfind("}") + 1, blanked.rfind("*/") + 2
    tail = _SIGNATURE_END.search(blanked, max(last))
    if tail is not None and _depths(blanked + " ")[-1] == 0:
        return f"{_prototypes_only(stripped)};\n", [tail.group(1)]
    text = setup + "\n" + completion
    blanked = blank(text)
    depths = _depths(blanked)
    decls, names = [], []
    for m in _DEF.finditer(blanked):
        if depths[m.start()] != 0 or m.group(2) in _KEYWORDS:
            continue
        proto = text[m.start(1):m.end(1)].strip()
        if _UNSAFE_WORDS.search(proto) or re.match(r"(?:auto|enum|alias|template|mixin)\b", proto):
            continue
        decls.append(f"{proto};")
        names.append(m.group(2))
    if not decls:
        return None
    imports = _top_level_imports(text)
    return "".join(f"{i}\n" for i in imports) + "".join(f"{d}\n" for d in decls), list(dict.fromkeys(names))


def nested_unittests(tests: str) -> bool:
    """Whether the tests hold a ``unittest`` block inside a type or a template: the end runs the module's own
    (``__traits(getUnitTests)`` of the tests' module), so such a block would never run."""
    blanked = blank(tests)
    depths = _depths(blanked)
    return any(depths[m.start()] > 0 for m in re.finditer(r"(?<![\w.])unittest\b", blanked))


_ASSERT = re.compile(r"(?<![\w.])assert\s*\(")
_MAIN = re.compile(r"(?<![\w.])(void|int)\s+main\s*\(([^()]*)\)")


def tests_module(setup: str, tests: str, name: str, names: list[str]) -> str:
    """The tests' module: the setup's imports, the completion's module (its functions aliased, so that they come
    before an imported function of the same name, as in MultiPL-E's single module), the tests with their
    ``assert`` calls made checks of the service's and their ``main`` renamed, then the end."""
    blanked = blank(tests)
    depths = _depths(blanked)
    edits = []
    for m in _ASSERT.finditer(blanked):
        if re.search(r"(?<![\w.])static\s*$", blanked[max(0, m.start() - 40):m.start()]):
            continue
        edits.append((m.start(), m.end(), f"{name}_check("))
    main = next((m for m in _MAIN.finditer(blanked) if depths[m.start()] == 0), None)
    call = ""
    if main is not None:
        params = tests[main.start(2):main.end(2)]
        edits.append((main.start(), main.end(), f"{main.group(1)} {name}_tests_main({params})"))
        args = "null" if main.group(2).strip() else ""
        call = f"if ({name}_tests_main({args}) != 0) {name}_fail(\"main returned non-zero\");" \
            if main.group(1) == "int" else f"{name}_tests_main({args});"
    for start, stop, text in sorted(edits, reverse=True):
        tests = tests[:start] + text + tests[stop:]
    imports = "".join(f"{i}\n" for i in _top_level_imports(setup))
    aliases = "".join(f"alias {n} = {name}_sol.{n};\n" for n in names)
    return (f"module {name}_tests;\n{imports}import {name}_sol;\n{aliases}#line 1 \"tests.d\"\n{tests}\n"
            f"{_END.replace('NAME', name).replace('CALL_MAIN', call)}")


_END = """
#line 1 "end.d"
private void NAME_say(const(char)[] s) @trusted nothrow @nogc {
    import core.sys.posix.unistd : write;
    while (s.length) { auto k = write(2, s.ptr, s.length); if (k <= 0) return; s = s[k .. $]; }
}
private void NAME_fail(const(char)[] what) @trusted nothrow @nogc {
    import core.stdc.stdio : fflush;
    import core.sys.posix.unistd : _exit;
    fflush(null);
    NAME_say("the tests failed: "); NAME_say(what); NAME_say("\\n");
    _exit(1);
}
void NAME_check(T)(auto ref T ok) { if (!ok) NAME_fail("assertion failed"); }
void NAME_check(T, M)(auto ref T ok, lazy M message) {
    if (!ok) {
        static if (is(M : const(char)[])) NAME_fail(message); else NAME_fail("assertion failed");
    }
}
// No new process from here on (seccomp: fork, vfork, clone without CLONE_THREAD, clone3, and any syscall of
// another ABI, fail): a forked copy that tried an answer and let the tests go on would tell the completion which
// answer passed (a fork oracle). Threads stay (clone with CLONE_THREAD). Where the filter cannot be installed the
// end's pid check still ends a copy as a failed check does.
private void NAME_no_fork() @trusted nothrow @nogc {
    version (X86_64) {
        import core.sys.linux.sys.prctl : prctl;
        static struct Filter { ushort code; ubyte jt, jf; uint k; }
        static struct Program { ushort len; const(Filter)* filter; }
        enum uint allow = 0x7fff0000, eperm = 0x00050001, enosys = 0x00050026;
        static immutable Filter[14] code = [
            Filter(0x20, 0, 0, 4),            // the audit arch
            Filter(0x15, 1, 0, 0xC000003E),   // x86_64, else deny
            Filter(0x06, 0, 0, eperm),
            Filter(0x20, 0, 0, 0),            // the syscall's number
            Filter(0x35, 7, 0, 0x40000000),   // x32's: deny
            Filter(0x15, 6, 0, 57),           // fork
            Filter(0x15, 5, 0, 58),           // vfork
            Filter(0x15, 5, 0, 435),          // clone3: ENOSYS (the C library falls back to clone)
            Filter(0x15, 0, 2, 56),           // clone: its flags
            Filter(0x20, 0, 0, 16),
            Filter(0x45, 0, 1, 0x10000),      // CLONE_THREAD: allow, else deny
            Filter(0x06, 0, 0, allow),
            Filter(0x06, 0, 0, eperm),
            Filter(0x06, 0, 0, enosys),
        ];
        auto program = Program(cast(ushort) code.length, code.ptr);
        if (prctl(38, 1, 0, 0, 0) != 0 || prctl(22, 2, cast(ulong) &program, 0, 0) != 0)
            NAME_say("note: the fork filter could not be installed\n");
    }
}
extern(C) int main(int argc, char** argv) {
    import core.runtime : rt_init;
    import core.stdc.stdio : fflush;
    import core.sys.posix.sys.mman : mmap, mprotect, MAP_ANON, MAP_FAILED, MAP_PRIVATE, PROT_NONE, PROT_READ,
        PROT_WRITE;
    import core.sys.posix.unistd : _exit, close, getpid, read, write;
    // The secret, read before any code of the completion's can run (no constructor of its runs before main),
    // into a page that stays unreadable while the tests run.
    ubyte* s = cast(ubyte*) mmap(null, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (cast(void*) s == MAP_FAILED) _exit(3);
    size_t got = 0;
    while (got < 64) { auto k = read(0, s + got, 64 - got); if (k <= 0) break; got += k; }
    close(0);
    mprotect(s, 4096, PROT_NONE);
    const pid = getpid();
    NAME_no_fork();
    if (!rt_init()) _exit(3);
    try {
        static foreach (u; __traits(getUnitTests, NAME_tests)) u();
        CALL_MAIN
    } catch (Throwable e) {
        fflush(null);
        NAME_say("the tests failed: "); NAME_say(typeid(e).name); NAME_say(": "); NAME_say(e.msg); NAME_say("\\n");
        _exit(1);
    }
    // A copy of the process (a fork of the completion's, which tried an answer) ends as a failed check does: its
    // exit status and output say nothing of whether its tests passed.
    if (getpid() != pid) NAME_fail("assertion failed");
    fflush(null);
    if (got != 64) _exit(2);
    mprotect(s, 4096, PROT_READ);
    static int nibble(ubyte c) { return c <= 57 ? c - 48 : c - 87; }
    char[33] hex;
    foreach (i; 0 .. 16) {
        int v = (nibble(s[2 * i]) * 16 + nibble(s[2 * i + 1])) ^ (nibble(s[32 + 2 * i]) * 16 + nibble(s[33 + 2 * i]));
        hex[2 * i] = "0123456789abcdef"[v >> 4]; hex[2 * i + 1] = "0123456789abcdef"[v & 15];
    }
    hex[32] = '\\n';
    write(1, hex.ptr, hex.length);
    _exit(0);
    return 0;
}
"""


def units(setup: str, completion: str, tests: str, name: str) -> dict[str, str] | None:
    """The job's files (the completion's module, its interface, the tests' module), or None when the completion's
    functions cannot be declared to the tests (``header``)."""
    made = header(setup, completion)
    if made is None:
        return None
    decls, names = made
    body = f"{setup}{completion}"
    declared = re.match(r"\s*module\s+[\w.]+\s*;", blank(body))  # the completion's module is named here
    if declared is not None:
        body = re.sub(r"[^\n]", " ", body[:declared.end()]) + body[declared.end():]
    return {f"{name}_sol.d": f"module {name}_sol;\n#line 1 \"solution.d\"\n{body}\n",
            f"{name}_sol.di": f"module {name}_sol;\n{decls}",
            f"{name}_tests.d": tests_module(setup, tests, name, names)}


def compile_script(name: str) -> tuple[str, ...]:
    """The compile step: each module in a directory of its own, the completion's object checked for code that runs
    before main and its symbols made local (see the module's docstring), the link (a module of the service's first,
    then the tests' object), the sources and objects removed. Output: ``solution``."""
    mod = f"{name}_sol"
    prefix = f"_D{len(mod)}{mod}"
    groups = ("sed -n 's/^COMDAT group section \\[ *[0-9]*\\] "
              "[^ ]* \\[\\(.*\\)\\] contains.*/\\1/p'")  # the signatures of an object's COMDAT groups
    script = (
        "set -e\n"
        f"mkdir -p .c .h && mv {mod}.d .c/ && mv {mod}.di .h/\n"
        f"(cd .c && gdc -O2 -c -o ../.sol.o {mod}.d)\n"
        # The interface is a root module of the tests' compile, so that the tests' object holds every template
        # instance the tests use (a member of a Nullable!T that the setup's signature returns too); no ModuleInfo
        # there (the completion's module has its own). The first object, a module of the service's, holds the DSO
        # constructor that runs (the first of the weak gdc.dso_ctor definitions).
        f"gdc -O2 -funittest -fno-moduleinfo -I.h -c -o .tests.o {name}_tests.d .h/{mod}.di\n"
        f"echo 'module {name}_first;' > {name}_first.d && gdc -O2 -c -o .first.o {name}_first.d\n"
        # Code that would run before main: only gdc's own DSO constructor/destructor may be in the init arrays.
        # (by name, and by type: an INIT_ARRAY section of another name)
        "readelf -SW .sol.o | sed -n 's/^ *\\[ *[0-9]*\\] \\([^ ]*\\) *\\([A-Z_]*\\) .*/\\1 \\2/p' > .sections\n"
        "bad=$(awk '$1 ~ /^(\\.rela?)?\\.(init|fini|preinit|ctors|dtors)/ && "
        "$1 !~ /^(\\.rela)?\\.(init_array|fini_array)$/ {print $1} "
        "$2 ~ /^(INIT_ARRAY|FINI_ARRAY|PREINIT_ARRAY)$/ && $1 !~ /^\\.(init_array|fini_array)$/ {print $1}' "
        ".sections)\n"
        "refs=$(readelf -rW .sol.o | awk '/^Relocation section/ {s=$3; gsub(/\\047/, \"\", s); next} "
        "s ~ /^\\.rela\\.(init_array|fini_array)/ && $1 ~ /^[0-9a-f]+$/ {print $5, $6, $7}' "
        "| grep -vxE 'gdc\\.dso_(ctor|dtor) \\+ 0' || true)\n"
        "strong=$(nm .sol.o | awk '$NF ~ /^gdc\\./ && $(NF-1) !~ /^[WVwv]$/ {print $NF}')\n"
        "ifunc=$(nm .sol.o | awk '$(NF-1) ~ /^[iI]$/ {print $NF}')\n"
        "if [ -n \"$bad$refs$strong$ifunc\" ]; then\n"
        "  echo \"solution.d: error: the completion has code that runs before main (refused):\" $bad $refs $strong "
        "$ifunc >&2; exit 1\n"
        "fi\n"
        # Every global symbol of the completion's is made local, but its module's own, gdc's DSO symbols (weak:
        # the first object's win) and the signature of a COMDAT group the tests' object holds too (a template
        # instance both use: the linker keeps the tests' group, linked first, and drops the completion's, whose
        # local references to it would otherwise fail the link).
        f"readelf -gW .sol.o | {groups} | sort -u > .g1\n"
        f"readelf -gW .tests.o | {groups} | sort -u > .g2\n"
        "comm -12 .g1 .g2 > .groups\n"
        f"nm -g --defined-only .sol.o | awk '{{print $NF}}' | grep -v '^{prefix}' | grep -v '^gdc\\.' "
        "| grep -vxFf .groups > .localize || true\n"
        "[ ! -s .localize ] || objcopy --localize-symbols=.localize .sol.o\n"
        "gdc -o solution .first.o .tests.o .sol.o\n"
        f"rm -rf .c .h .sol.o .tests.o .first.o .localize .sections .groups .g1 .g2 {name}_tests.d {name}_first.d\n")
    return ("sh", "-c", script)
