"""Java source read the way javac reads it, for the three things the service needs from it: the file's name (its
public top-level type), the class whose ``main`` runs, and the tests' ``assert`` statements as plain checks.

Comments, string and text-block literals and char literals are blanked first (so ``// a class here`` or
``"class X"`` names nothing); identifiers are Java's (Unicode letters, ``$``, ``_``); a type is a ``class``,
``interface``, ``enum`` or ``record`` (not ``Foo.class``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifier_service.kinds.source_text import block_end, line_end, wipe

_IDENT = r"(?:[^\W\d]|\$)(?:\w|\$){0,200}"
_TYPE_DECL = re.compile(rf"(?<![.\w$])(class|interface|enum|record)\s+({_IDENT})")
_MAIN = re.compile(r"(?<![\w$])static\s+(?:final\s+)?(?:synchronized\s+)?void\s+main\s*\(")
_MODIFIERS = re.compile(r"(?:@\s*[\w$.]+(?:\s*\([^()]*\))?|\b(?:public|protected|private|static|final|abstract|"
                        r"sealed|non-sealed|strictfp)\b|\s)*$")


def blank(source: str) -> str:
    """``source`` with comments and literals replaced by spaces (newlines kept): the same length and offsets."""
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
        elif source.startswith('"""', i):
            j = i + 3
            while j < n and not source.startswith('"""', j):
                j += 2 if source[j] == "\\" else 1
            wipe(out, i + 1, j)
            i = j + 3
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            wipe(out, i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


@dataclass
class TypeDecl:
    name: str
    public: bool
    depth: int          # 0: a top-level type
    start: int          # offset of its keyword
    has_main: bool = False
    outer: TypeDecl | None = None


def types(source: str, text: str | None = None) -> list[TypeDecl]:
    """Every type declared in ``source`` (``text``: its blanked form), in order, with whether its own body
    (not a nested type's) declares ``static void main(``."""
    text = blank(source) if text is None else text
    decls = {m.start(): m for m in _TYPE_DECL.finditer(text)}
    mains = {m.start() for m in _MAIN.finditer(text)}
    found: list[TypeDecl] = []
    stack: list[tuple[TypeDecl, int]] = []  # (type, the depth its body's braces are at)
    pending: TypeDecl | None = None
    depth = 0
    for i, c in enumerate(text):
        if i in decls:
            m = decls[i]
            head = text[max(0, i - 400):i]
            cut = max(head.rfind(";"), head.rfind("{"), head.rfind("}"))
            mods = head[cut + 1:]
            public = bool(_MODIFIERS.fullmatch(mods)) and re.search(r"\bpublic\b", mods) is not None
            pending = TypeDecl(m.group(2), public, len(stack), i, outer=stack[-1][0] if stack else None)
            found.append(pending)
        elif i in mains and stack:
            stack[-1][0].has_main = True
        elif c == "{":
            depth += 1
            if pending is not None:
                stack.append((pending, depth))
                pending = None
        elif c == "}":
            if stack and stack[-1][1] == depth:
                stack.pop()
            depth -= 1
    return found


def binary_name(decl: TypeDecl) -> str:
    """The name ``java`` runs a type by (``Outer$Inner`` for a nested one)."""
    names = []
    while decl is not None:
        names.append(decl.name)
        decl = decl.outer
    return "$".join(reversed(names))


def public_type(source: str) -> str | None:
    """The public top-level type (javac requires the file to be named after it), if any."""
    return next((d.name for d in types(source) if d.public and d.depth == 0), None)


def main_class(source: str) -> str:
    """The class a whole program runs: the type that declares ``main`` (top-level and public first), else the
    public type, else the first type, else ``Main``."""
    decls = types(source)
    with_main = sorted((d for d in decls if d.has_main), key=lambda d: (d.depth, not d.public))
    if with_main:
        return binary_name(with_main[0])
    chosen = next((d for d in decls if d.public and d.depth == 0), None) or (decls[0] if decls else None)
    return chosen.name if chosen is not None else "Main"


def tests_entry(setup: str, tests: str) -> str | None:
    """The tests' class (function_tests): the type of the trusted text (``setup`` + ``tests``, never the
    completion) whose body declares the tests' ``main``. The tests often close a class the setup opened
    (MultiPL-E's form): that class is the innermost one open where ``main`` is. None: no ``main``."""
    # A class of the tests' own that declares main (HumanEval-X's `public class Main`): named as the tests alone
    # nest it (the setup's class, closed by the completion, does not enclose it).
    own = [d for d in types(tests) if d.has_main]
    if own:
        return binary_name(own[0])
    joined = f"{setup}\n{tests}"
    text = blank(joined)
    offset = len(setup) + 1
    m = next((m for m in _MAIN.finditer(text) if m.start() >= offset), None)
    if m is None:
        return None
    # The tests' main is in a class the setup opened (MultiPL-E's form): the innermost one open where main is.
    inside = [d for d in types(joined, text) if d.start < m.start()]
    return binary_name(inside[-1]) if inside else None


_ASSERT = re.compile(r"(?<![\w$.])assert(?![\w$])")


def rewrite_asserts(tests: str) -> str:
    """The tests with every ``assert C;`` / ``assert C : M;`` statement made a check that does not depend on the
    JVM's assertion flag (which a program can turn off from inside): ``{ if (!(C)) throw new AssertionError(M); }``."""
    text = blank(tests)
    out: list[str] = []
    last = 0
    pos = 0
    while True:
        m = _ASSERT.search(text, pos)
        if m is None:
            break
        end, colon = _statement_end(text, m.end())
        if end is None:
            pos = m.end()
            continue
        cond = tests[m.end():colon if colon is not None else end]
        msg = tests[colon + 1:end] if colon is not None else ""
        out.append(tests[last:m.start()])
        message = f"String.valueOf({msg.strip()})" if msg.strip() else ""
        out.append(f"{{ if (!({cond.strip()})) throw new AssertionError({message}); }}")
        last = pos = end + 1
    out.append(tests[last:])
    return "".join(out)


def _statement_end(text: str, i: int) -> tuple[int | None, int | None]:
    """(offset of the ``;`` that ends the statement starting at ``i``, offset of its top-level ``:``)."""
    depth, ternary, colon = 0, 0, None
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None, None
        elif depth == 0:
            if c == ";":
                return j, colon
            if c == "?":
                ternary += 1
            elif c == ":" and text[j - 1:j + 1] != "::" and text[j:j + 2] != "::":
                if ternary:
                    ternary -= 1
                elif colon is None:
                    colon = j
    return None, None
