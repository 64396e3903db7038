"""The one JSON parser every kind uses on text a completion controls.

Strict JSON (RFC 8259, with I-JSON's limits) and nothing more: ``NaN``,
``Infinity`` and ``-Infinity`` are refused (they are not JSON), an object that
names a key twice is refused (parsers disagree on which value wins, so a
checker and the tool runtime could see two different calls), a number past
the range of a double (``1e400``, a 400-digit integer: most parsers cannot
hold it, and comparing it with a float raises), nesting deeper than
``MAX_DEPTH``, and a string with a lone surrogate (``"\\ud800"``: not Unicode
text). It never raises: the answer is ``(value, None)`` or ``(None, reason)``.

The sandbox harnesses' own event lines go through the same function with
``events=True``: a Python float NaN or infinity is a value a function may
return, and a Python string may hold a lone surrogate (an exception's message,
say); the harness writes both as Python's ``json`` does.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 128  # arrays and objects inside each other; deeper is refused (and every later walk stays shallow)
_decoder_cache: dict[bool, json.JSONDecoder] = {}


class _Refused(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate key {json.dumps(key)[:80]} in an object")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


_DOUBLE_RANGE = 2 ** 1024  # past the largest finite double


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(f"the number {text[:40]} is out of range (it overflows a double)")
    return value


MAX_INT_DIGITS = 4300  # Python's default limit, whatever the process set: decimal text -> int is quadratic


def _event_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS + 1:
        raise _Refused(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


def _int(text: str) -> int:
    value = _event_int(text)
    if abs(value) >= _DOUBLE_RANGE:
        raise _Refused(f"the integer {text[:40]}... is out of range (past the largest double)")
    return value


def _decoder(events: bool) -> json.JSONDecoder:
    decoder = _decoder_cache.get(events)
    if decoder is None:
        kwargs: dict[str, Any] = {"object_pairs_hook": _pairs, "parse_int": _event_int}
        if not events:
            kwargs.update(parse_constant=_no_constant, parse_float=_float, parse_int=_int)
        decoder = _decoder_cache[events] = json.JSONDecoder(**kwargs)
    return decoder


def _problem(value: Any, limit: int, text_only: bool) -> str | None:
    """Nesting deeper than ``limit``, or a string (value or key) that is not Unicode text (a lone surrogate,
    which ``\\ud800`` escapes can make), walked without recursion."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, str):
            if text_only and not _is_text(item):
                return "a string holds a lone surrogate (not Unicode text)"
        elif isinstance(item, (list, dict)):
            level += 1
            if level > limit:
                return f"nested more than {limit} levels deep"
            if isinstance(item, dict):
                stack.extend((k, level) for k in item)
                stack.extend((v, level) for v in item.values())
            else:
                stack.extend((v, level) for v in item)
    return None


def _is_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(text: str, *, events: bool = False, max_depth: int = MAX_DEPTH) -> tuple[Any, str | None]:
    """``(value, None)`` for one strict JSON document (whitespace around it allowed), else ``(None, why)``."""
    try:
        value = _decoder(events).decode(text)
    except RecursionError:
        return None, f"nested more than {max_depth} levels deep"
    except (ValueError, TypeError) as exc:  # JSONDecodeError, _Refused, an integer past the digit limit
        return None, (str(exc) or type(exc).__name__)[:300]
    problem = _problem(value, max_depth, text_only=not events)
    if problem is not None:
        return None, problem
    return value, None
