"""What a prompt shows: its text, the literals in it, the example outputs it gives, the function names it names.

The leak probe answers each literal of the prompt as a constant: when one of them earns correctness, the
hidden tests (or the gold answer) hold a value the prompt already shows, and a policy can learn to copy it.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import re
from typing import Any

MAX_LITERALS = 24       # leak probes per row, at most
MAX_LITERAL_CHARS = 200  # a literal longer than this (as Python text) is not tried

_DOCTEST = re.compile(r"^[ \t]*>>>[^\n]*\n[ \t]*(?!>>>)([^\n]+)$", re.M)  # the line a doctest call prints
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_ASSERT_RHS = re.compile(r"^\s*assert\b.*?(?:==|\bis\b)\s*(.+?)\s*$", re.M)
_RETURNS = re.compile(r"\breturns?\s+([^\s.,;:][^\n]*?)(?:[.;]\s|[.;]?$)", re.M | re.I)
_QUOTED = re.compile(r"""(?<![\w\\])('(?:[^'\\\n]|\\.){0,60}'|"(?:[^"\\\n]|\\.){0,60}")""")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_OUTPUT_HEAD = re.compile(r"^\s*(?:#+\s*|\*\*)?(?:sample|example)?\s*output\s*\d*\s*(?:\*\*)?\s*:?\s*(.*)$", re.I)
_INPUT_HEAD = re.compile(r"^\s*(?:#+\s*|\*\*)?(?:sample|example)?\s*(?:input|explanation|note|constraints)\b", re.I)
_NAME_CALL = re.compile(r"(?:`|\bdef\s+|\bassert\s+(?:not\s+)?\(?\s*(?:set\()?)([A-Za-z_]\w*)\s*\(")


def prompt_text(prompt: Any) -> str:
    """A prompt (text or chat messages) as one text."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in prompt)
    return json.dumps(prompt)


def _value(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _key(value: Any) -> str:
    return f"{type(value).__name__}:{value!r}"


def literals(text: str, limit: int = MAX_LITERALS) -> list[Any]:
    """The Python literals a prompt shows, most telling first: the right-hand sides of its example asserts,
    what its doctest examples print, its `backtick` literals, what it says something returns, its quoted
    strings, then its numbers."""
    found: dict[str, Any] = {}

    def add(value: Any) -> None:
        if len(repr(value)) <= MAX_LITERAL_CHARS and _key(value) not in found:
            found[_key(value)] = value

    def group(m: re.Match[str]) -> str:
        return m.group(1)

    # (where, the literal's text in a match, the type it must have: object, any), most telling first
    sources = ((_ASSERT_RHS, group, object), (_DOCTEST, group, object), (_BACKTICK, group, object),
               (_RETURNS, lambda m: m.group(1).strip("` "), object), (_QUOTED, group, str),
               (_NUMBER, lambda m: m.group(0).replace(",", ""), object))
    for pattern, literal, wanted in sources:
        for m in pattern.finditer(text):
            ok, value = _value(literal(m))
            if ok and isinstance(value, wanted):
                add(value)
    return list(found.values())[:limit]


def numbers(text: str, limit: int = MAX_LITERALS) -> list[str]:
    """The numbers a text shows, as written (thousands separators dropped), in order, once each."""
    out: dict[str, None] = {}
    for m in _NUMBER.finditer(text):
        out.setdefault(m.group(0).replace(",", ""), None)
    return list(out)[:limit]


def example_outputs(text: str) -> list[str]:
    """The outputs a problem statement shows ("Output", "Sample Output 1", "Example output:" sections): the
    lines under such a heading up to a blank line or the next heading, or the rest of the heading's line."""
    lines = text.splitlines()
    outputs = []
    i = 0
    while i < len(lines):
        m = _OUTPUT_HEAD.match(lines[i])
        if m and not _INPUT_HEAD.match(lines[i]) and len(lines[i]) < 80:
            rest = m.group(1).strip().strip("`")
            block = []
            j = i + 1
            if rest:
                block = [rest]
            else:
                while j < len(lines) and lines[j].strip().startswith("```") and not block:
                    j += 1
                while j < len(lines) and lines[j].strip() and not lines[j].strip().startswith("```") \
                        and not _INPUT_HEAD.match(lines[j]) and not _OUTPUT_HEAD.match(lines[j]):
                    block.append(lines[j].rstrip())
                    j += 1
            if block:
                outputs.append("\n".join(block))
            i = max(j, i + 1)
            continue
        i += 1
    return list(dict.fromkeys(outputs))


def function_names(text: str, tests: str = "") -> list[str]:
    """Function names a task shows as code (`name(`, ``def name(``, the call an assert makes), builtins left out."""
    names = [m.group(1) for m in _NAME_CALL.finditer(tests)] + [m.group(1) for m in _NAME_CALL.finditer(text)]
    return list(dict.fromkeys(n for n in names if n.isidentifier() and not keyword.iskeyword(n)
                              and not hasattr(builtins, n) and n not in ("check", "candidate")))


def signature(text: str, name: str) -> str | None:
    """The ``def name(...)`` line the prompt shows (its annotations included), when it shows one."""
    m = re.search(rf"^[ \t]*def\s+{re.escape(name)}\s*\((?:[^()]|\([^()]*\))*\)\s*(?:->\s*[^:\n]+)?:", text, re.M)
    return m.group(0).strip() if m else None
