"""MultiPL-E rows (``name``, ``language``, ``prompt``, ``tests``) -> ``function_io`` where every test is
``assert f(args) == expected`` with literal arguments and expected value (the expected values then stay out of
the sandbox), else ``function_tests`` (the tests run in the completion's process: docs/security.md says what
a completion can still forge there).

The literals are read back into JSON values from the forms MultiPL-E's translators write: C++
(``std::vector<long>({(long)1})``, ``std::make_tuple(...)``, ``std::map<...>({{k, v}})``, ``std::optional``),
Java (``new ArrayList<Long>(Arrays.asList(...))``, ``Pair.with``, ``Optional.of``, ``new HashMap<..>(Map.of(..))``),
JavaScript/TypeScript (JSON-like), Rust (``vec![...]``, ``String::from``, ``Some``, tuples,
``HashMap::from``), and the dynamic languages' test forms: PHP (``if (candidate(..) !== expected) { throw ..}``:
``array(..)``, ``array("k" => v)``), Lua (``lu.assertEquals(candidate(..), expected)``: tables ``{..}``,
``{["k"] = v}``), Perl (``if(eq_deeply($candidate->(..),expected))``: ``[..]``, ``{"k" => v}``, 1 and ``""`` as
truth values) and R (``if(!identical(candidate(..), expected))``: ``c(..)``, ``list(..)``, ``list('k' = v)``;
an integer literal past 2**53 is the double R reads), Ruby (``assert_equal(expected, candidate.call(..))``:
``[..]``, ``{"k" => v}``, ``nil``). A test this cannot read keeps the row in ``function_tests``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

LANGUAGES = {"cpp": "cpp", "java": "java", "js": "javascript", "ts": "typescript", "rs": "rust",
             "javascript": "javascript", "typescript": "typescript", "rust": "rust", "c++": "cpp",
             "php": "php", "lua": "lua", "pl": "perl", "perl": "perl", "r": "r", "cs": "csharp", "csharp": "csharp",
             "c#": "csharp", "d": "d", "dlang": "d", "rb": "ruby", "ruby": "ruby"}
IO_LANGUAGES = ("cpp", "java", "javascript", "typescript", "rust", "php", "lua", "perl", "r", "ruby")
DYNAMIC = ("php", "lua", "perl", "r", "ruby")

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*")|
    (?P<chr>'(?:[^'\\]|\\.)')|
    (?P<num>(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)(?:[a-zA-Z_]\w*)?)|
    (?P<name>[A-Za-z_$][\w$]*(?:(?:::|\.)[A-Za-z_$][\w$]*)*!?)|
    (?P<op>==|=>|::|\S))""", re.VERBOSE)
# PHP, Lua, Perl, R: a single-quoted text is a string (no character type)
_TOKEN_DYNAMIC = re.compile(_TOKEN.pattern.replace("(?P<chr>'(?:[^'\\\\]|\\\\.)')",
                                                   "(?P<sstr>'(?:[^'\\\\]|\\\\.)*')"), re.VERBOSE)


class Unreadable(ValueError):
    """A test line this reader does not understand."""


def tokens(text: str, language: str = "") -> list[tuple[str, str]]:
    pattern = _TOKEN_DYNAMIC if language in DYNAMIC else _TOKEN
    out, pos = [], 0
    while pos < len(text):
        m = pattern.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise Unreadable(text[pos:pos + 30])
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "$": "$", "@": "@"}


def _unquote_single(text: str, language: str) -> str:
    """A single-quoted string: PHP and Perl know only the escapes \\\\ and \\'; Lua and R all of _unquote's."""
    if language in ("lua", "r"):
        return _unquote(text)
    return re.sub(r"\\([\\'])", r"\1", text[1:-1])


class _Pair:
    """``key => value`` (PHP, Perl) or ``key = value`` (R's named arguments, Lua's ``["key"] = value``)."""

    def __init__(self, key: Any, value: Any):
        self.key, self.value = key, value


def _collect(items: list[Any]) -> Any:
    """A list of values, or a dict when every item is a pair (a mix is not a literal this reads)."""
    pairs = [p for p in items if isinstance(p, _Pair)]
    if not pairs:
        return items
    if len(pairs) != len(items):
        raise Unreadable("a mix of keys and values")
    return {_key(p.key): p.value for p in pairs}


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt == "u" and body[i + 2:i + 3] == "{":
            end = body.index("}", i)
            out.append(chr(int(body[i + 3:end], 16)))
            i = end + 1
        elif nxt == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        elif nxt == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif nxt in _ESC:
            out.append(_ESC[nxt])
            i += 2
        else:
            raise Unreadable(f"escape \\{nxt}")
    return "".join(out)


class _Reader:
    def __init__(self, toks: list[tuple[str, str]], language: str = ""):
        self.t, self.i, self.language = toks, 0, language

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.t[self.i + k] if self.i + k < len(self.t) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unreadable(f"expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def skip_generics(self) -> None:
        if self.peek()[1] != "<":
            return
        depth = 0
        while True:
            v = self.take()[1]
            depth += v == "<"
            depth -= v == ">"
            if depth == 0:
                return
            if v == "":
                raise Unreadable("unclosed <")

    def items(self, close: str) -> list[Any]:
        out = []
        while self.peek()[1] != close:
            if self.peek()[0] == "end":
                raise Unreadable(f"no {close}")
            if self.language == "lua" and self.peek()[1] == "[":  # ["key"] = value
                self.take()
                key = self.expr()
                self.take("]")
                self.take("=")
                out.append(_Pair(key, self.expr()))
            elif self.language == "lua" and self.peek()[0] == "name" and self.peek(1)[1] == "=":  # key = value
                key = self.take()[1]
                self.take("=")
                out.append(_Pair(key, self.expr()))
            else:
                value = self.expr()
                if self.language in DYNAMIC and self.peek()[1] in ("=>", "="):
                    if (self.peek()[1] == "=") != (self.language == "r"):
                        raise Unreadable(f"{self.peek()[1]} in {self.language}")
                    self.take()
                    value = _Pair(value, self.expr())
                out.append(value)
            if self.peek()[1] == ",":
                self.take()
        self.take(close)
        return out

    def is_cast(self) -> bool:
        # "(" type ")" followed by a value: a cast (C++, Java)
        j = self.i + 1
        depth = 0
        while j < len(self.t):
            kind, v = self.t[j]
            if v == "<":
                depth += 1
            elif v == ">":
                depth -= 1
            elif v == ")" and depth == 0:
                break
            elif not (kind == "name" or v in ("::", ",") or (v in ("*", "&"))):
                return False
            j += 1
        if j == self.i + 1 or j >= len(self.t):
            return False
        nxt = self.t[j + 1] if j + 1 < len(self.t) else ("end", "")
        return nxt[0] in ("num", "str", "chr", "name") or nxt[1] in ("(", "{", "[", "-")

    def expr(self) -> Any:
        value = self.primary()
        while self.peek()[1] == ".":  # "a".to_string(), x.to_owned(), x.into(): the value itself
            if self.peek(1)[1] not in ("to_string", "to_owned", "into", "clone") or self.peek(2)[1] != "(":
                raise Unreadable("a method call")
            self.i += 3
            self.take(")")
        return value

    def primary(self) -> Any:
        kind, v = self.peek()
        if v == "-":
            self.take()
            value = self.primary()
            if type(value) not in (int, float):
                raise Unreadable("minus of a non-number")
            return -value
        if kind == "num" and self.language == "r" and re.fullmatch(r"\d+", v) and int(v) > 2 ** 53:
            self.take()
            return float(int(v))  # (R reads it as a double)
        if kind == "num":
            self.take()
            num = re.match(r"[\d.eE+-]+", v).group(0)
            suffix = v[len(num):].lower()
            if (suffix.startswith("f") and suffix in ("f", "f32", "f64")) or "." in num or "e" in num.lower():
                return float(num.rstrip("."))
            if suffix not in ("", "l", "ll", "i32", "i64", "isize", "usize", "u32", "u64", "d"):
                raise Unreadable(f"number {v}")
            return float(num) if suffix == "d" else int(num)
        if kind == "sstr":
            self.take()
            return _unquote_single(v, self.language)
        if kind == "str":
            self.take()
            value = _unquote(v)
            if self.peek()[1] in (".to_string", ".to_owned", ".into", ".String"):
                raise Unreadable("method")
            return value
        if kind == "chr":
            self.take()
            return _unquote(v)
        if v == "(":
            if self.is_cast():
                self.take()
                while self.take()[1] != ")":
                    pass
                return self.primary()
            self.take()
            inner = self.items(")")
            return inner[0] if len(inner) == 1 else inner
        if v == "[":
            self.take()
            return _collect(self.items("]"))
        if v == "{" and self.language in DYNAMIC:  # a Lua table, a Perl hash ref
            self.take()
            value = _collect(self.items("}"))
            return {} if value == [] and self.language in ("perl", "ruby") else value
        if v == "{":
            self.take()
            if self.peek()[0] in ("str", "name") and self.peek(1)[1] == ":":  # a JS object
                out = {}
                while self.peek()[1] != "}":
                    key = self.take()
                    self.take(":")
                    out[_unquote(key[1]) if key[0] == "str" else key[1]] = self.expr()
                    if self.peek()[1] == ",":
                        self.take()
                self.take("}")
                return out
            return self.items("}")
        if kind == "name":
            return self.named()
        raise Unreadable(f"token {v!r}")

    def dynamic(self, v: str) -> Any:
        """A name in PHP, Lua, Perl or R: their constants and list constructors."""
        constants = {"php": {"NULL": None, "TRUE": True, "FALSE": False}, "lua": {"nil": None},
                     "perl": {"undef": None}, "r": {"NULL": None, "TRUE": True, "FALSE": False},
                     "ruby": {"nil": None}}[self.language]
        if v in constants and self.peek()[1] != "(":
            return constants[v]
        if (self.language, v) in (("php", "array"), ("r", "c"), ("r", "list")) and self.peek()[1] == "(":
            self.take()
            return _collect(self.items(")"))
        raise Unreadable(f"name {v}")

    def named(self) -> Any:
        _, v = self.take()
        if v in ("true", "false"):
            return v == "true"
        if v in ("null", "None", "undefined", "std::nullopt", "nullopt"):
            return None
        if self.language in DYNAMIC:
            return self.dynamic(v)
        if v == "new":
            _, name = self.take()
            self.skip_generics()
            self.take("(")
            args = self.items(")")
            if name in ("ArrayList", "LinkedList", "HashSet"):
                return args[0] if args else []
            if name in ("HashMap", "TreeMap"):
                return args[0] if args else {}
            raise Unreadable(f"new {name}")
        if v == "vec!":
            self.take("[")
            return self.items("]")
        base = v.split("::")[-1].split(".")[-1]
        self.skip_generics()
        opener = self.peek()[1]
        if opener not in ("(", "{"):
            if v in ("Optional.empty", "Optional::empty"):
                return None
            raise Unreadable(f"name {v}")
        self.take()
        args = self.items(")" if opener == "(" else "}")
        if v in ("Optional.of", "Optional.ofNullable") and len(args) == 1:
            return args[0]
        if base in ("vector", "list", "set", "asList", "of") and not v.startswith("Map"):
            return args[0] if len(args) == 1 and isinstance(args[0], list) and base == "vector" else args
        if base in ("make_tuple", "tuple", "make_pair", "pair", "with"):
            return args
        if base in ("optional", "Some", "string", "from", "valueOf") and len(args) == 1 and v != "HashMap::from":
            return args[0]
        if v == "Optional.empty":
            return None
        if base in ("map", "unordered_map") or v == "HashMap::from":
            pairs = args[0] if len(args) == 1 and isinstance(args[0], list) else args
            return {_key(p[0]): p[1] for p in pairs}
        if v == "Map.of":
            return {_key(args[k]): args[k + 1] for k in range(0, len(args), 2)}
        raise Unreadable(f"call {v}")


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if type(k) is bool:
        return "true" if k else "false"
    return str(k)


def read_literal(text: str, language: str = "") -> Any:
    r = _Reader(tokens(text, language), language)
    value = r.expr()
    if r.peek()[0] != "end":
        raise Unreadable(f"left over: {r.peek()[1]!r}")
    return value


def _string_end(text: str, i: int) -> int:
    """The offset just past the string literal that opens at ``i`` (its quote closes it; backslashes escape)."""
    j = i + 1
    while j < len(text) and text[j] != text[i]:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _matching(text: str, start: int) -> int:
    """The offset of the bracket closing the one at ``start`` (strings skipped)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack, i = [], start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i
        i += 1
    raise Unreadable("unbalanced")


def _split_top(text: str) -> list[str]:
    """``text`` split at its top-level commas (brackets and strings skipped)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _string_end(text, i)
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _ruby_cases(tests: str) -> list[dict[str, Any]]:
    """MultiPL-E's Ruby form (humaneval_to_rb.py): ``assert_equal(expected, candidate.call(args))``, expected first."""
    if re.search(r"(?<![\w.])(?:assert(?!_equal\b)\w*|refute\w*|raise|flunk)\b", tests):
        raise Unreadable("a check other than assert_equal")
    cases = []
    for m in re.finditer(r"(?<![\w.])assert_equal\s*\(", tests):
        close = _matching(tests, m.end() - 1)
        parts = _split_top(tests[m.end():close])
        if len(parts) != 2:
            raise Unreadable("assert_equal with a message")
        call = re.fullmatch(r"\s*candidate\.call\s*\((.*)\)\s*", parts[1], re.S)
        if call is None or _matching(parts[1], parts[1].index("(")) != len(parts[1].rstrip()) - 1:
            raise Unreadable("assert_equal of something other than candidate.call(...)")
        args = read_literal(f"[{call.group(1)}]", "ruby") if call.group(1).strip() else []
        cases.append({"args": args, "expected": read_literal(parts[0], "ruby")})
    if not cases:
        raise Unreadable("no assertion")
    if len(re.findall(r"(?<![\w.])candidate\b", tests)) != len(cases) + 1:  # (+ `candidate = method(:f)`)
        raise Unreadable("calls outside assertions")
    return cases


def io_cases(language: str, tests: str, entry: str) -> list[dict[str, Any]]:
    """[{args, expected}] from ``tests`` when every check is ``assert f(args) == expected`` of literals."""
    if language == "ruby":
        return _ruby_cases(tests)
    callee = entry if language == "java" else "candidate"
    # (PHP's tests define `function candidate(...$args)`; Perl's call `$candidate->(...)`)
    call = r"(?<![\w.$])(?<!function )candidate\s*\(" if language != "perl" else r"\$candidate->\s*\("
    if language not in DYNAMIC:
        call = rf"(?<![\w.]){re.escape(callee)}\s*\("
    cases = []
    for m in re.finditer(call, tests):
        open_at = m.end() - 1
        close = _matching(tests, open_at)
        args_text = tests[open_at + 1:close]
        rest = tests[close + 1:]
        cmp = re.match(r"\s*(!==|==|\.equals\(|,)", rest)
        if cmp is None:
            raise Unreadable("a call that is not compared")
        after = rest[cmp.end():]
        # the expected literal runs to the bracket that closes the assertion
        depth, end, k = 0, None, 0
        while k < len(after):
            c = after[k]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    end = k
                    break
                depth -= 1
            elif c in "\"'":  # (a string's brackets are not the assertion's)
                j = k + 1
                while j < len(after) and after[j] != c:
                    j += 2 if after[j] == "\\" else 1
                if j >= len(after):
                    raise Unreadable("string")
                k = j
            k += 1
        if end is None:
            raise Unreadable("no end of the assertion")
        expected_text = after[:end]
        args = read_literal(f"[{args_text}]", language) if args_text.strip() else []
        if not isinstance(args, list):
            raise Unreadable("named arguments")
        cases.append({"args": args, "expected": read_literal(expected_text, language)})
    if not cases:
        raise Unreadable("no assertion")
    calls = len(re.findall(call, tests))
    if calls != len(cases):
        raise Unreadable("calls outside assertions")
    return cases


def entry_of(language: str, prompt: str, tests: str) -> str | None:
    if language == "ruby":  # candidate = method(:name)
        m = re.search(r"\bcandidate\s*=\s*method\(\s*:([A-Za-z_]\w*)\s*\)", tests)
        return m.group(1) if m else None
    m = re.search(r"\bcandidate\s*(?:=|<-)\s*(?:\\&)?([A-Za-z_][\w.]*)", tests) or \
        re.search(r"function candidate\(\.\.\.\$args\)\s*\{\s*return\s+([A-Za-z_]\w*)\(", tests)
    if m:
        return m.group(1) if m.group(1).isidentifier() else None
    found = re.findall(r"([A-Za-z_]\w*)\s*\([^()]*\)\s*(?:->[^{]*)?\{\s*$", prompt.rstrip() + "\n", re.M)
    return found[-1] if found else None


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def multipl_e(rows: Iterable[dict[str, Any]]):
    from trainer.convert import Converted, ConvertError, _need, _row, fenced

    out = Converted()
    for row in rows:
        _need(row, "name", "language", "prompt", "tests")
        language = LANGUAGES.get(str(row["language"]).lower())
        if language is None:
            out.skip(f"language {row['language']!r} is not run here")
            continue
        prompt_text = (f"Complete this {language} function.\n\n{fenced(row['prompt'], language)}\n\n"
                       f"Write the rest of the function (its body) in a single ```{language} code block.")
        spec: dict[str, Any] = {"kind": "function_tests", "extract": "last_fenced_code", "language": language,
                                "setup": row["prompt"], "tests": row["tests"]}
        entry = entry_of(language, row["prompt"], row["tests"])
        if language in IO_LANGUAGES and entry is not None:
            try:
                cases = io_cases(language, row["tests"], entry)
                spec = {"kind": "function_io", "extract": "last_fenced_code", "language": language,
                        "entry_point": entry, "setup": row["prompt"], "cases": cases}
                if any(_has_float(c["expected"]) for c in cases):
                    spec["float_tolerance"] = 1e-6
            except (Unreadable, ValueError, IndexError, RecursionError):
                out.skip("tests not all assert f(args) == expected: kept as function_tests")
        try:
            out.rows.append(_row(row["name"], prompt_text, spec, None))
        except ConvertError:
            if spec["kind"] != "function_io":
                raise
            spec = {"kind": "function_tests", "extract": "last_fenced_code", "language": language,
                    "setup": row["prompt"], "tests": row["tests"]}
            out.skip("function_io spec refused: kept as function_tests")
            out.rows.append(_row(row["name"], prompt_text, spec, None))
    return out
