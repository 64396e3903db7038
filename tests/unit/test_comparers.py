"""The comparers that decide a reward, tried on generated inputs (hypothesis) against reference rules written here.

Each reference is written independently of the code under test, in another style (a character-by-character
scanner instead of regular expressions, canonical forms instead of recursion over both values, exact fractions),
from the rules the docs state:

- python_io ``values_match``: JSON values; booleans and null only equal themselves; an integer expected value
  only its exact value (no tolerance); a float expected value any number within ``tol * max(1, |e|)``;
- stdio ``outputs_match``: tokens split on ASCII space, tab, CR, LF only; in ``tokens_ci`` mode ASCII A-Z equal to
  a-z and no other character folded; in ``lines`` mode the lines (split on LF) each as tokens, blank lines at the
  end not counted; in ``float`` mode numbers by a strict ASCII grammar, an integer expected token matched exactly,
  a float one within ``tol * max(1, |e|)``, anything else (``inf``, ``nan``, non-ASCII digits) as text;
- the judge's ``same`` (``exact_types``): equal with the same type at every position, dict keys included;
- ``strict_json.parse``: RFC 8259 JSON only, no duplicate keys.

And totality: none of them raises, whatever the completion's value (huge integers meeting floats, NaN, deep
nesting, arbitrary text), so nothing a completion returns can turn its verdict into INFRA_ERROR.
"""

from __future__ import annotations

import json
import math
import string
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from verifier_service.kinds import get_kind, strict_json
from verifier_service.kinds.python_io import UNENCODABLE, decode_value, values_match
from verifier_service.kinds.stdio import outputs_match
from verifier_service.spec import spec_from_json
from verifier_service.verdict import Verdict

RUNNER = Path(__file__).resolve().parents[2] / "verifier_service" / "runner"
sys.path.insert(0, str(RUNNER))
import io_harness  # noqa: E402
import judge  # noqa: E402
from exact_types import same, same_in  # noqa: E402

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- python_io: values_match -------------------------------------------------------------------------------

HUGE = 10 ** 400


def ref_values_match(actual, expected, tol):
    """The documented rule, by cases on the expected value's JSON type."""
    def number(x):
        return type(x) in (int, float)

    if type(expected) is bool:
        return type(actual) is bool and actual == expected
    if expected is None:
        return actual is None
    if type(expected) is str:
        return type(actual) is str and actual == expected
    if type(expected) is int:
        if not number(actual) or (type(actual) is float and not math.isfinite(actual)):
            return False
        return Fraction(actual) == Fraction(expected)
    if type(expected) is float:
        if not number(actual):
            return False
        if math.isnan(expected):
            return type(actual) is float and math.isnan(actual)
        if type(actual) is float and math.isnan(actual):
            return False
        if math.isinf(expected) or (type(actual) is float and math.isinf(actual)):
            return type(actual) is float and actual == expected
        diff = abs(Fraction(actual) - Fraction(expected))
        return diff <= Fraction(tol) * max(1, abs(Fraction(expected)))
    if type(expected) is list:
        if type(actual) is not list or len(actual) != len(expected):
            return False
        return all(ref_values_match(a, e, tol) for a, e in zip(actual, expected, strict=True))
    if type(expected) is dict:
        if type(actual) is not dict or UNENCODABLE in actual or set(actual) != set(expected):
            return False
        return all(ref_values_match(actual[k], expected[k], tol) for k in expected)
    return False


scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-HUGE, max_value=HUGE)
           | st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, True, False, HUGE, -HUGE, 2 ** 53 + 1, float(2 ** 53)])
           | st.floats() | st.text(max_size=5))
json_values = st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=3), children, max_size=4), max_leaves=12)


@st.composite
def near(draw, value):
    """A value like ``value``, often the same with one scalar nudged or retyped (where comparers go wrong)."""
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], draw(near(value[i])), *value[i + 1:]]
    if isinstance(value, dict) and value and draw(st.booleans()):
        k = draw(st.sampled_from(sorted(value)))
        return {**value, k: draw(near(value[k]))}
    if type(value) in (int, float) and abs(value) < 1e300:
        choice = draw(st.integers(0, 5))
        if choice == 0:
            return float(value) if abs(value) < 1e308 else value
        if choice == 1:
            return value + 1
        if choice == 2:
            return value * (1 + draw(st.sampled_from([1e-9, 1e-7, 1e-6, 1e-3, -1e-7])))
        if choice == 3:
            return value + draw(st.sampled_from([1e-9, 1e-6, 0.5, -1e-7]))
        if choice == 4:
            return bool(value) if value in (0, 1) else str(value)[:20]
    return draw(st.one_of(st.just(value), json_values))


tolerances = st.sampled_from([0.0, 1e-9, 1e-6, 1e-3, 0.5])


@SETTINGS
@given(st.data(), json_values, tolerances)
def test_values_match_follows_the_rule(data, expected, tol):
    actual = data.draw(near(expected))
    assert values_match(actual, expected, tol) == ref_values_match(actual, expected, tol), (actual, expected, tol)


@SETTINGS
@given(json_values, json_values, tolerances)
def test_values_match_is_total(actual, expected, tol):
    assert values_match(actual, expected, tol) in (True, False)


def test_values_match_cases():
    assert not values_match(5.000001, 5, 1e-3)  # an integer expected value: exact, whatever the tolerance
    assert not values_match(10 ** 9 + 1, 10 ** 9, 1e-3)
    assert values_match(5.0, 5, 0) and values_match(5, 5.0, 0)  # one JSON number type
    assert values_match(0.30000000000000004, 0.3, 1e-9)  # honest float noise within the tolerance
    assert values_match(100.00001, 100.0, 1e-6) and not values_match(100.001, 100.0, 1e-6)  # relative to |e|
    assert not values_match(HUGE, 1.5, 1e-6) and not values_match(1.5, HUGE, 1e-6)  # no OverflowError
    assert not values_match(HUGE, float("inf"), 0.5) and not values_match(float("inf"), HUGE, 0.5)
    assert values_match(HUGE + 1, HUGE + 1, 0) and not values_match(HUGE, HUGE + 1, 0.5)
    assert values_match(float("nan"), float("nan"), 0) and not values_match(float("nan"), 1.0, 0.5)
    assert not values_match(True, 1, 0) and not values_match(1, True, 0) and not values_match(0.0, False, 0)
    assert not values_match([1, 2], {"0": 1, "1": 2}, 0) and not values_match("1", 1, 0)
    deep = current = []
    for _ in range(100_000):
        current.append([])
        current = current[0]
    assert not values_match(deep, [[1]], 0) and values_match(deep, deep, 0) in (True, False)


# ---- python_io: what the harness reports ---------------------------------------------------------------------

def reported(value):
    """A return value as the host reads it: encoded by the harness, through JSON, decoded."""
    line = json.dumps({"value": io_harness._encode(value)})
    parsed, error = strict_json.parse(line, events=True)
    assert error is None, error
    return decode_value(parsed["value"])


def test_the_harness_normalises_nothing_that_would_let_a_wrong_type_pass():
    assert not values_match(reported({3, 1, 2}), [1, 2, 3], 0)  # a set is not a (sorted) list
    assert not values_match(reported(frozenset({1})), [1], 0)
    assert not values_match(reported({1: "a", "1": "b"}), {"1": "b"}, 0)  # keys that collide as JSON text
    assert not values_match(reported({"__rlvr_int__": "ff"}), 255, 0)  # the harness's own tag, forged
    assert not values_match(reported({UNENCODABLE: "x"}), {UNENCODABLE: "x"}, 0)
    assert not values_match(reported(b"ab"), "ab", 0)
    # honest values still pass
    assert values_match(reported((1, 2)), [1, 2], 0)  # a tuple is a JSON array, as json.dumps has it
    assert values_match(reported({1: "a"}), {"1": "a"}, 0)  # an int key is its JSON text, as json.dumps has it
    assert values_match(reported(2 ** 100_000 + 1), 2 ** 100_000 + 1, 0)  # a big int crosses as hex
    assert values_match(reported(-(3 ** 20_000)), -(3 ** 20_000), 0)
    assert not values_match(reported(2 ** 100_000), 2 ** 100_000 + 1, 0)
    assert values_match(reported(float("nan")), float("nan"), 0)


@SETTINGS
@given(json_values)
def test_an_honest_value_round_trips(value):
    assume(not (isinstance(value, dict) and UNENCODABLE in value))
    assert values_match(reported(value), value, 0) == ref_values_match(value, value, 0)


@SETTINGS
@given(st.recursive(st.none() | st.integers() | st.text(max_size=3) | st.dictionaries(
    st.sampled_from(["__rlvr_int__", "x"]), st.text("0123456789abcdef-", max_size=6) | st.integers(), max_size=2),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=2), c, max_size=3), max_leaves=8))
def test_decode_value_is_total(value):
    decode_value(value)


# ---- stdio: outputs_match --------------------------------------------------------------------------------------

ASCII_BLANKS = " \t\r\n"


def ref_tokens(text):
    out, current = [], ""
    for ch in text:
        if ch in ASCII_BLANKS:
            if current:
                out.append(current)
            current = ""
        else:
            current += ch
    if current:
        out.append(current)
    return out


def ref_number(token):
    """(Fraction, is_integer) of a token of the grammar [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?,
    ASCII digits only; None otherwise. Scanned by hand."""
    digits = "0123456789"
    i, n = 0, len(token)
    sign = 1
    if i < n and token[i] in "+-":
        sign = -1 if token[i] == "-" else 1
        i += 1
    whole = ""
    while i < n and token[i] in digits:
        whole += token[i]
        i += 1
    frac = ""
    dot = False
    if i < n and token[i] == ".":
        dot = True
        i += 1
        while i < n and token[i] in digits:
            frac += token[i]
            i += 1
    if not whole and not frac:
        return None
    exponent = 0
    has_exp = False
    if i < n and token[i] in "eE":
        has_exp = True
        i += 1
        esign = 1
        if i < n and token[i] in "+-":
            esign = -1 if token[i] == "-" else 1
            i += 1
        edigits = ""
        while i < n and token[i] in digits:
            edigits += token[i]
            i += 1
        if not edigits or len(edigits) > 10:
            return None
        exponent = esign * int(edigits)
    if i != n:
        return None
    value = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac)) * sign
    value *= Fraction(10) ** exponent
    return value, not dot and not has_exp


def ref_fold(text):
    """ASCII letters to lower case, character by character; nothing else changes."""
    return "".join(chr(ord(ch) + 32) if "A" <= ch <= "Z" else ch for ch in text)


def ref_lines(text):
    """The lines (a scan for LF), each as its tokens, without the token-less lines at the end."""
    rows, current = [], ""
    for ch in text + "\n":
        if ch == "\n":
            rows.append(ref_tokens(current))
            current = ""
        else:
            current += ch
    end = len(rows)
    while end and not rows[end - 1]:
        end -= 1
    return rows[:end]


def ref_outputs_match(actual, expected, mode, tol):
    if mode == "exact":
        return actual.replace("\r\n", "\n").rstrip("\n") == expected.replace("\r\n", "\n").rstrip("\n")
    if mode == "lines":
        return ref_lines(actual) == ref_lines(expected)
    if mode == "tokens_ci":
        return ref_tokens(ref_fold(actual)) == ref_tokens(ref_fold(expected))
    got, want = ref_tokens(actual), ref_tokens(expected)
    if mode == "tokens":
        return got == want
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        e = ref_number(w)
        if e is None:
            if g != w:
                return False
            continue
        a = ref_number(g)
        if a is None:
            return False
        if e[1]:
            if a[0] != e[0]:
                return False
        elif abs(a[0] - e[0]) > Fraction(repr(tol)) * max(1, abs(e[0])):
            return False
    return True


def _float_text(x):
    return st.sampled_from([repr(x), f"{x:.6f}", f"{x:.12g}", f"{x:e}", f"{x:.3f}"])


number_tokens = st.one_of(
    st.integers(-10 ** 6, 10 ** 6).map(str),
    st.integers(-10 ** 400, 10 ** 400).map(str),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12).flatmap(_float_text),
    st.sampled_from(["007", "-0", "+5", "1.", ".5", "1e400", "-1e400", "1e-400", "9" * 400, "1" + "0" * 400,
                     "1" + "0" * 399 + "1", "0.1", "0.10000001", "3.0", "3", "2.9999999", "1E5"]),
)
odd_tokens = st.sampled_from(["inf", "-inf", "Infinity", "nan", "NaN", "\u0661\u0662", "\uff11", "1_000", "0x10",
                              "1e", "e5", "--1", "1.2.3", "\u00a0", "3\u00a0", "\x1c", "3\x0b", "abc", "Yes", "\u2003",
                              "YES", "yes", "yEs", "\u00c9", "\u00e9", "\u00df", "SS", "ss", "\u212a", "k", "K",
                              "\u0130", "i", "I", "\u0131", "\uff21", "\uff41"])
tokens_ = st.one_of(number_tokens, odd_tokens, st.text(alphabet=string.ascii_letters + string.digits + ".-+e",
                                                       min_size=1, max_size=6))
separators = st.sampled_from([" ", "\n", "\t", "\r\n", "  ", " \n", "\u00a0", "\u2003", "\x1c", "\x0b", "\x0c",
                              "\u3000", "\x85"])


@st.composite
def outputs(draw):
    want = draw(st.lists(tokens_, min_size=1, max_size=6))
    got = [draw(st.one_of(st.just(t), tokens_, number_tokens)) if draw(st.booleans()) else t for t in want]
    if draw(st.integers(0, 6)) == 0:
        got = got[:-1]

    def join(parts):
        return "".join(p + draw(separators) for p in parts) + draw(st.sampled_from(["", "\n", " \n", "\r\n\n"]))

    if draw(st.integers(0, 3)) == 0:  # the same tokens, some in another case
        got = [t.swapcase() if draw(st.booleans()) else t for t in want]
    return join(got), join(want)


MODES = ["exact", "tokens", "tokens_ci", "lines", "float"]


@SETTINGS
@given(outputs(), st.sampled_from(MODES), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3, 0.5]))
def test_outputs_match_follows_the_rule(pair, mode, tol):
    actual, expected = pair
    assert outputs_match(actual, expected, mode, tol) == ref_outputs_match(actual, expected, mode, tol), pair


@SETTINGS
@given(st.text(), st.text(), st.sampled_from(MODES), st.sampled_from([0.0, 1e-6, 1e6]))
def test_outputs_match_is_total(actual, expected, mode, tol):
    assert outputs_match(actual, expected, mode, tol) in (True, False)


@pytest.mark.parametrize("actual, expected, mode", [
    ("9" * 400 + "\n", "9" * 399 + "8\n", "float"),  # a 400-digit integer is not infinity
    ("2" + "0" * 400, "1e400", "float"), ("1e400", "1e401", "float"),  # ... nor is every huge number the same
    ("inf", "1e400", "float"), ("1e400", "inf", "float"), ("inf", "9" * 400, "float"),  # inf is a word
    ("1000000001", "1000000000", "float"),  # an integer expected token: exact, whatever the tolerance
    ("1000000000.5", "1000000000", "float"), ("3.0000001", "3", "float"),
    ("\u0661\u0662", "12", "float"), ("\u0661\u0662", "12", "tokens"),  # non-ASCII digits are not digits
    ("1\u00a02", "1 2", "tokens"), ("1\u20032", "1 2", "float"), ("1\x1c2", "1 2", "tokens"),  # nor spaces
    ("3\x0b", "3", "tokens"),  # a vertical tab is not a separator (testlib's blanks: space, tab, CR, LF)
    ("0.51", "0.5", "float"), ("1 2 3", "1 2", "tokens"), ("1 2", "1 2 3", "float"),
    ("1_000", "1000", "float"), ("0x10", "16", "float"), ("nan", "0.5", "float"),
    # tokens_ci folds ASCII letters only (testlib's upperCase / lowerCase), never Unicode case:
    ("\u00c9t\u00e9", "\u00e9T\u00c9", "tokens_ci"), ("STRASSE", "stra\u00dfe", "tokens_ci"),
    ("\u212a", "k", "tokens_ci"), ("\u0130", "i", "tokens_ci"), ("\u0131", "I", "tokens_ci"),
    ("\uff21", "\uff41", "tokens_ci"),  # fullwidth A / a
    ("YES", "YES NO", "tokens_ci"), ("", "yes", "tokens_ci"), ("yes", "", "tokens_ci"), ("YES", "NO", "tokens_ci"),
    ("Yes", "yes", "tokens"),  # plain tokens stay case-sensitive
    # lines: a line break is not a space, a blank line inside counts, a missing or extra line fails
    ("1 2", "1\n2", "lines"), ("1\n2", "1 2", "lines"), ("1\n2", "1\n\n2", "lines"), ("1\n\n2", "1\n2", "lines"),
    ("1\n", "1\n2\n", "lines"), ("1\n2\n3", "1\n2", "lines"), ("", "1", "lines"), ("1", "", "lines"),
    ("1\x0b2", "1 2", "lines"), ("1\u20282", "1\n2", "lines"),  # VT and U+2028 are neither blanks nor line ends
    ("a", "A", "lines"),
])
def test_outputs_that_must_fail(actual, expected, mode):
    assert not outputs_match(actual, expected, mode, 1e-6)


@pytest.mark.parametrize("actual, expected, mode", [
    ("3\n", "3", "exact"), ("3\r\n4\r\n", "3\n4\n", "exact"), ("3", "3\n\n", "exact"),  # final newlines, CRLF
    ("1  2\n3 \n", "1 2 3\n", "tokens"), ("1\t2\r\n3", "1 2 3", "tokens"), ("  1 2\n\n", "1 2", "tokens"),
    ("0.3333333", "0.33333334", "float"), ("0.500001", "0.5", "float"),  # within 1e-6 (absolute, |e| <= 1)
    ("1000000.9", "1000000.0", "float"),  # within 1e-6 relative to the expected value
    ("3.000000", "3", "float"), ("007", "7", "float"), ("-0", "0", "float"), ("7e0", "7", "float"),
    ("inf", "inf", "float"), ("nan", "nan", "float"), ("YES", "YES", "float"),
    ("9" * 400, "9" * 400, "float"), ("1e400", "1e400", "float"), ("1" + "0" * 400, "1e400", "float"),
    ("1.0000000000000000000001e400", "1e400", "float"),
    ("2.5 abc\n", "2.4999999 abc", "float"),
    ("YES\n", "yes", "tokens_ci"), ("yEs nO\r\n", "YES\nNO\n", "tokens_ci"), ("Impossible", "IMPOSSIBLE", "tokens_ci"),
    ("\u00e9", "\u00e9", "tokens_ci"), ("", "", "tokens_ci"), ("  \n\t", "", "tokens_ci"),  # empty: no tokens
    ("1  2 \r\n3\n", "1 2\n3", "lines"), ("1 2\n3\n\n\n  \n", "1 2\n3", "lines"), ("1\n\n2", "1\n  \n2\n", "lines"),
    ("1\r2", "1 2", "lines"),  # a lone CR is a blank, not a line end (testlib: only LF ends a line)
    ("", "", "lines"), ("\n\n", "", "lines"), ("", " \n", "lines"), ("\t1\n", "1", "lines"),
])
def test_honest_outputs_pass(actual, expected, mode):
    assert outputs_match(actual, expected, mode, 1e-6)


# ---- the judge's exact_types equality -------------------------------------------------------------------------

def canon(value):
    """A hashable form that keeps the exact type at every position (the reference for ``same``)."""
    t = type(value)
    if t in (list, tuple):
        return (t, tuple(canon(v) for v in value))
    if t is dict:
        return (t, frozenset((canon(k), canon(v)) for k, v in value.items()))
    if t in (set, frozenset):
        return (t, frozenset(canon(v) for v in value))
    return (t, value)


exact_scalars = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, -1.0, 2.0, 0.5])
                 | st.text(max_size=2) | st.binary(max_size=2))
hashables = st.recursive(exact_scalars, lambda c: st.tuples(c) | st.tuples(c, c) | st.frozensets(c, max_size=3),
                         max_leaves=6)
exact_values = st.recursive(hashables, lambda c: st.lists(c, max_size=3) | st.tuples(c, c)
                            | st.dictionaries(hashables, c, max_size=3) | st.sets(hashables, max_size=3)
                            | st.frozensets(hashables, max_size=3), max_leaves=10)


def retyped(value):
    """``value`` with each scalar swapped for an equal one of another type where there is one: 1 -> True -> 1.0."""
    t = type(value)
    if t is bool:
        return int(value)
    if t is int and value in (0, 1):
        return bool(value)
    if t is int:
        return float(value)
    if t is float and value.is_integer():
        return int(value)
    if t is list:
        return tuple(retyped(v) for v in value)
    if t is tuple:
        return tuple(retyped(v) for v in value)
    if t is dict:
        return {retyped(k): retyped(v) for k, v in value.items()}
    if t is set:
        return {retyped(v) for v in value}
    if t is frozenset:
        return frozenset(retyped(v) for v in value)
    return value


@SETTINGS
@given(exact_values, st.data())
def test_same_is_equality_with_exact_types_everywhere(left, data):
    right = data.draw(st.sampled_from([left, retyped(left), data.draw(exact_values)]))
    assert same(left, right) == (canon(left) == canon(right)), (left, right)
    assert same(left, left)


def test_same_cases():
    assert not same({1: "a"}, {True: "a"}) and not same({1: "a"}, {1.0: "a"})
    assert not same({(1, 2): 0}, {(1, 2.0): 0}) and not same({frozenset({1}): 0}, {frozenset({True}): 0})
    assert not same({1, 2}, {1.0, 2}) and not same([{1}], [{True}])
    assert not same([[1]], [[True]]) and not same((1,), [1])
    sub = judge._SubList([1, 2])
    assert not same(sub, judge._SubList([1, 2.0])) and same(sub, judge._SubList([1, 2]))
    assert not same(sub, [1, 2])
    assert same({1: {"a": (1, 2.5)}}, {1: {"a": (1, 2.5)}})


@SETTINGS
@given(exact_values, st.data())
def test_same_in_is_membership_with_exact_types(item, data):
    container = data.draw(st.lists(st.sampled_from([item, retyped(item)]) | exact_values, max_size=4))
    expected = any(canon(item) == canon(element) for element in container)
    assert same_in(item, container) == expected
    assert same_in(item, tuple(container)) == expected


def test_same_in_cases():
    assert not same_in(True, [1, 2]) and not same_in(1.0, {1: "a"}) and same_in(1, {1: "a"})
    assert not same_in(1, {True}) and same_in((1, "a"), [(1, "a")]) and not same_in((1,), [[1]])
    assert same_in("b", "abc") and not same_in(b"b", "abc") and not same_in(1, range(0))


def test_tagged_values_are_read_in_bounded_time():
    """A tagged value carries the JSON type ``encode`` writes; a tagged digit string is refused before any
    conversion (int(str) is quadratic: the runner, which judges calls itself, cannot be killed meanwhile)."""
    candidate = judge.Candidate.__new__(judge.Candidate)
    candidate.remotes = {}
    for wire in ({"t": "int", "v": "9" * 5_000_000}, {"t": "int", "v": "12"}, {"t": "ref", "h": "9" * 5_000_000},
                 {"t": "module", "v": "json_but_not", "h": "1" * 10_000}, {"t": "bool", "v": "yes"},
                 {"t": "str", "v": 12}, {"t": "float", "v": "1e5"}):
        with pytest.raises(judge.CandidateGone):
            candidate.value(wire)
    assert candidate.value({"t": "int", "v": 12, "sub": "MyInt"}) == 12
    assert type(candidate.value({"t": "float", "v": 2, "sub": "F"})) is judge._SubFloat


def test_the_runner_bounds_the_work_of_an_answers_integers():
    """The runner reads answers itself and cannot be killed at the deadline: one answer's integers may cost at
    most four 50,000-digit integers' worth of conversion, whatever their number."""
    import stepio

    many = "[" + ",".join(["9" * 50_000] * 80) + "]"
    with pytest.raises(ValueError, match="in total"):
        stepio._answer_loads(many)
    with pytest.raises(ValueError, match="more than 50,000"):
        stepio._answer_loads("9" * 50_001)
    honest = [3 ** 4000] * 1000 + list(range(10_000))  # many big integers still cross
    assert stepio._answer_loads(json.dumps(honest)) == honest


# ---- the one strict JSON parser ------------------------------------------------------------------------------

finite_json = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 80, 2 ** 80)
                           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                           max_leaves=10)


@SETTINGS
@given(finite_json)
def test_strict_json_reads_every_json_document(value):
    parsed, error = strict_json.parse(json.dumps(value))
    assert error is None and parsed == value


@SETTINGS
@given(st.text(max_size=60) | st.text(alphabet='{}[]",:0123456789.eE+-tfnulraNIiy \\', max_size=60))
def test_strict_json_is_total(text):
    value, error = strict_json.parse(text)
    assert (error is None) or value is None


@pytest.mark.parametrize("text", [
    "NaN", "[Infinity]", '{"a": -Infinity}', '{"a": 1, "a": 1}', '{"b": {"a": 1, "a": 2}}', "1e400",
    "9" * 400, "[" * 200 + "]" * 200, '"\\ud800"', '{"\\udfff": 1}', "1" * 5000, "[1,]", "'a'", "01", "{a: 1}",
])
def test_strict_json_refuses(text):
    value, error = strict_json.parse(text)
    assert value is None and error


def test_strict_json_deep_nesting_is_refused_not_raised():
    for depth in (129, 1000, 100_000):
        value, error = strict_json.parse("[" * depth + "]" * depth)
        assert value is None and "nested" in error
    assert strict_json.parse("[" * 128 + "]" * 128)[1] is None


# ---- totality of the pure kinds: a verdict with a reward for any completion -------------------------------------

def _spec(kind, **fields):
    k = get_kind(kind)
    return k, k.validate(spec_from_json({"kind": kind, **fields}))


SCHEMA = {"type": "object", "properties": {
    "n": {"type": "number", "multipleOf": 0.1, "maximum": 1e300}, "i": {"type": "integer", "multipleOf": 3},
    "u": {"type": "array", "uniqueItems": True}, "e": {"enum": [1, [1.0], {"a": True}]}, "d": {"format": "date"},
    "s": {"type": "string", "pattern": "^[a-z]+$", "format": "email"}}, "additionalProperties": {"const": [1]}}
TOOLS = [{"name": "f", "parameters": SCHEMA}, {"name": "g"}]
json_texts = st.one_of(
    finite_json.map(json.dumps),
    st.dictionaries(st.sampled_from(list("niuedsx")), st.one_of(
        finite_json, st.integers(-10 ** 300, 10 ** 300), st.sampled_from([10 ** 307, 1e308, -1e308, 5e-324])),
        max_size=4).map(json.dumps),
    st.text(max_size=40),
    st.sampled_from(["NaN", '{"n": NaN}', '{"i": ' + "9" * 400 + "}", '{"n": 1e400}', "[" * 3000 + "]" * 3000,
                     '{"a": 1, "a": 2}', '"\\ud800"']),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_texts)
def test_json_schema_and_tool_call_checks_are_total(text):
    kind, spec = _spec("json_schema", schema=SCHEMA)
    assert kind.check(text, spec).verdict is not Verdict.INFRA_ERROR
    kind, spec = _spec("tool_call", tools=TOOLS)
    for call in (text, f'{{"name": "f", "arguments": {text}}}', f"<tool_call>{text}</tool_call>",
                 json.dumps({"name": "f", "arguments": text})):
        assert kind.check(call, spec).verdict is not Verdict.INFRA_ERROR


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="0123456789{}\\boxed%=.,-x ", max_size=30) | st.text(max_size=20))
def test_math_check_is_total(text):
    kind, spec = _spec("math", gold="5")
    assert kind.check(text, spec).verdict is not Verdict.INFRA_ERROR


def test_a_raising_check_is_a_failed_verdict_not_infra_error(monkeypatch):
    kind, spec = _spec("format", pattern="a+")

    def broken(text, spec):
        raise OverflowError("what a completion made a checker do")

    monkeypatch.setattr(kind, "check", broken)
    out = kind.verdict("aaa", spec)
    assert out.verdict is Verdict.FAILED and out.tests and not out.tests[0].passed
