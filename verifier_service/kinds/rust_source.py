"""Rust source text as function_tests reads it: comments and literals blanked (``blank``), and the test functions of
a test program (``#[test] fn``, in ``#[cfg(test)] mod tests { ... }`` as HumanEval-X's tests have them) with the
modules that hold them. Only the spec's own text (the tests) is read this way: what it finds decides which
functions the service's main calls, so nothing the completion wrote is read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from verifier_service.kinds.source_text import line_end, wipe


def blank(source: str) -> str:
    """``source`` with comments (nested block comments too), string, raw string, byte string and character
    literals replaced by spaces (newlines kept): the same length and offsets. A lifetime (``'a``) stays."""
    out = list(source)
    i, n = 0, len(source)

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = line_end(source, i)
            wipe(out, i, j)
            i = j
        elif source.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(out, i, j)
            i = j
        elif (m := re.compile(r"b?r(#*)\"").match(source, i)) and (i == 0 or not _ident(source[i - 1])):
            close = '"' + m.group(1)
            j = source.find(close, m.end())
            j = n if j < 0 else j + len(close)
            wipe(out, i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            wipe(out, i, j + 1)
            i = j + 1
        elif c == "'":
            m = re.compile(r"'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|.))'").match(source, i)
            if m is not None:
                wipe(out, i, m.end())
                i = m.end()
            else:  # a lifetime or a label
                i += 1
        else:
            i += 1
    return "".join(out)


def _ident(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass
class TestFn:
    name: str
    modules: tuple[str, ...]       # the modules that hold it, outermost first (() = the crate root)
    end: int                       # the offset just after its body's closing brace
    attributes: tuple[tuple[int, int], ...]  # (start, end) of its #[test], #[should_panic...] and #[ignore...]
    should_panic: bool = False
    expected: str | None = None    # #[should_panic(expected = "...")]: the string literal, as written
    ignored: bool = False


@dataclass
class Module:
    name: str
    keyword: int                   # where its visibility (if any) or `mod` starts
    mod_at: int                    # where `mod` starts
    path: tuple[str, ...]          # its path from the crate root, itself last


@dataclass
class TestProgram:
    tests: list[TestFn] = field(default_factory=list)
    modules: list[Module] = field(default_factory=list)


_ATTR = re.compile(r"#\s*\[")
_MOD = re.compile(r"((?:pub\s*(?:\([^()]*\))?\s*)?)mod\s+([A-Za-z_]\w*)\s*\{")
_FN = re.compile(r"(?:pub\s*(?:\([^()]*\))?\s*)?(?:(?:const|async|unsafe|extern\s*(?:\"[^\"]*\")?)\s+)*fn\s+"
                 r"([A-Za-z_]\w*)")


def _close(blanked: str, at: int, open_: str, close: str) -> int:
    """The offset just after the bracket that closes the one at ``at``."""
    depth = 0
    for k in range(at, len(blanked)):
        if blanked[k] == open_:
            depth += 1
        elif blanked[k] == close:
            depth -= 1
            if depth == 0:
                return k + 1
    return len(blanked)


def read_tests(source: str) -> TestProgram:
    """The ``#[test]`` functions of ``source`` (a test program) and the modules that hold them. Functions inside
    a function's body or an ``impl`` are not tests libtest would run either; they are skipped."""
    blanked = blank(source)
    found = TestProgram()
    scope: list[tuple[str | None, int]] = []  # (module name or None for any other block, its closing offset)
    pending: list[tuple[int, int, str]] = []  # the attributes before the next item: (start, end, text)
    i, n = 0, len(blanked)
    while i < n:
        while scope and i >= scope[-1][1]:
            scope.pop()
        c = blanked[i]
        if c.isspace():
            i += 1
            continue
        if (m := _ATTR.match(blanked, i)) is not None:
            end = _close(blanked, m.end() - 1, "[", "]")
            pending.append((i, end, source[m.end():end - 1]))
            i = end
            continue
        if (m := _MOD.match(blanked, i)) is not None and (i == 0 or not _ident(blanked[i - 1])):
            body_end = _close(blanked, m.end() - 1, "{", "}")
            inside = all(name is not None for name, _ in scope)
            if inside:
                path = (*[name for name, _ in scope], m.group(2))
                found.modules.append(Module(m.group(2), i, i + len(m.group(1)), path))
            scope.append((m.group(2) if inside else None, body_end))
            pending = []
            i = m.end()
            continue
        if (m := _FN.match(blanked, i)) is not None and (i == 0 or not _ident(blanked[i - 1])):
            brace = blanked.find("{", m.end())
            semi = blanked.find(";", m.end())
            if brace < 0 or (0 <= semi < brace):
                pending = []
                i = m.end()
                continue
            body_end = _close(blanked, brace, "{", "}")
            names = [re.sub(r"\s+", "", text).split("(")[0] for _, _, text in pending]
            if "test" in names and all(name is not None for name, _ in scope):
                test = TestFn(m.group(1), tuple(name for name, _ in scope), body_end,
                              tuple((a, b) for a, b, text in pending
                                    if re.sub(r"\s+", "", text).split("(")[0] in ("test", "should_panic", "ignore")))
                for _, _, text in pending:
                    head = re.sub(r"\s+", "", text).split("(")[0]
                    if head == "should_panic":
                        test.should_panic = True
                        e = re.search(r"expected\s*=\s*(\"(?:[^\"\\]|\\.)*\"|r(#*)\".*?\"\2)", text, re.S)
                        test.expected = e.group(1) if e else None
                    elif head == "ignore":
                        test.ignored = True
                found.tests.append(test)
            pending = []
            scope.append((None, body_end))
            i = brace + 1
            continue
        if c == "{":
            scope.append((None, _close(blanked, i, "{", "}")))
            pending = []
            i += 1
            continue
        pending = [] if c in ";}" else pending
        j = i + 1
        while j < n and _ident(blanked[i]) and _ident(blanked[j]):
            j += 1
        i = j
    return found
