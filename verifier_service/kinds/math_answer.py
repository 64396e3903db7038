"""math: the completion's final answer must equal the gold answer (math-verify).

The answer must be *marked*: the content of a ``\\boxed{...}`` / ``\\fbox{...}``, of an
``<answer>...</answer>`` tag, or (``markers`` with ``hashes``: GSM8K's convention) of a ``#### ...`` line.
The last marked answer is the final one; an empty or unclosed final box, or no marked answer at all, is no
final answer (MALFORMED). Every distinct marked answer must be right (several different ones are a hedge).
``answer_fallback: last_value`` (opt-in) reads the last math segment (``$...$``) or number of an unmarked
completion's final sentence (a completion cut off mid-reasoning has none there; one cut mid-math or
mid-sentence, "... is $3/15 =", has no answer), and refuses a final sentence that hedges ("either 17/3 or
14/3").

Before math-verify compares, both sides are normalised the same way: Python/sympy syntax (``x**2``, ``4*x``)
becomes LaTeX, ``\\text{1.25}`` is 1.25, ``2\\,000`` is 2000, ``90°`` is 90, ``1.5e3`` is 1.5 \\times 10^{3},
``\\$`` goes. Two plain decimals compare exactly (no float tolerance); a percentage answers a plain-number gold
as its number or as its number / 100 (``60\\%`` answers 60 and 0.6); numbers with base subscripts compare in
their bases (``52_9`` is not ``52_8``); units named on both sides must carry the same exponents.
math-verify's own timeouts use ``signal.alarm`` and are switched off: this kind runs in a killable worker
process that enforces the time limit.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds.base import Param, PureKind
from verifier_service.kinds.tags import tagged_spans
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_HASHES = re.compile(r"^[ \t]*####(.*)$", re.MULTILINE)  # greedy to the line's end: stripped after, linear
_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_NUMBER = re.compile(rf"(?<![\w.])(?:[-\u2212](?=\d))?{_INT}(?:\.\d+)?(?:\s*/\s*{_INT}(?:\.\d+)?)?(?!\d)")
_MATH_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")
_MATH_SEGMENT = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)

MARKERS = ("boxed", "answer_tag", "hashes")
DEFAULT_MARKERS = "boxed,answer_tag"
FALLBACKS = ("none", "last_value")


def _math_verify() -> Any:
    import math_verify
    import math_verify.grader
    import math_verify.parser

    # The timeouts are off on purpose (the worker pool enforces the limit): skip the warning saying so.
    for module in (math_verify.grader, math_verify.parser):
        if hasattr(module, "TIMEOUT_WARNING_SHOWN"):
            module.TIMEOUT_WARNING_SHOWN = True
    return math_verify


def _parse(text: str) -> list[Any]:
    return _math_verify().parse(text, parsing_timeout=None)


def _verify(gold: list[Any], answer: list[Any]) -> bool:
    return bool(_math_verify().verify(gold, answer, timeout_seconds=None))


# ---- normalisation: one rule for the gold and the answer ------------------------------------------------

_PY_POWER = re.compile(r"\*\*\s*(\([^()]*\)|-?[\w.]+)")
_PY_TIMES = re.compile(r"(?<=[\w).])\s*\*\s*(?=[\w(\\.])")
_TEXT_NUMBER = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{\s*(-?\d[\d,.]*)\s*\}")
_THIN_SPACE = re.compile(r"(?<=\d)\s*(?:\\[,;:! ]|\{,\}|~|\\thinspace\b)\s*(?=\d{3}(?!\d))")
_DEGREES = re.compile(r"\s*(?:°|\^\s*\{?\s*\\circ\s*\}?|\\degree\b)")
_E_NOTATION = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])")
_DOLLAR = re.compile(r"\\\$\s*")


def normalise(text: str) -> str:
    """The same answer in the form math-verify reads best (see the module docstring)."""
    if "**" in text or _PY_TIMES.search(text):
        text = _PY_POWER.sub(lambda m: "^{" + m.group(1).strip("()") + "}", text)
        text = _PY_TIMES.sub(r" \\cdot ", text)
    text = _TEXT_NUMBER.sub(r"\1", text)
    text = _THIN_SPACE.sub("", text)
    text = _DEGREES.sub("", text)
    text = _E_NOTATION.sub(r"\1\\times 10^{\2}", text)
    text = _DOLLAR.sub("", text)
    return text.strip()


_COMMAND_OR_TEXT = re.compile(r"\\(?:text|mbox|mathrm|textbf|operatorname)\s*\{[^{}]*\}|\\[A-Za-z]+")


def _lost_variables(text: str, parsed: list[Any] | tuple[Any, ...]) -> bool:
    """``text`` names variables (letters outside commands and ``\\text{}``) but parsed to a lone number:
    math-verify reads a trailing letter as a unit and drops it (``4t`` is 4)."""
    import sympy

    if not parsed or not isinstance(parsed[0], sympy.Number):
        return False
    letters = re.sub(r"[^A-Za-z]", "", _COMMAND_OR_TEXT.sub(" ", text))
    return bool(letters) and not re.fullmatch(r"[eEi]", letters)


def _parse_expression(text: str) -> list[Any]:
    """``text`` (normalised, no delimiters) as math-verify reads it; where that drops the variables, read
    again in parentheses (``(4t)`` is 4t)."""
    parsed = _parse("\\boxed{" + text + "}")
    if _lost_variables(text, parsed):
        parsed = _parse("\\boxed{(" + text + ")}") or parsed
    return parsed


@lru_cache(maxsize=1024)
def _parse_gold(gold: str) -> tuple[Any, ...]:
    text = normalise(gold)
    parsed: list[Any] = []
    if not _MATH_DELIMITED.match(text):
        parsed = _parse(f"${text}$")
        if _lost_variables(text, parsed):
            parsed = _parse(f"$({text})$") or parsed
    return tuple(parsed or _parse_expression(text))


def _gold_problem(gold: str, parsed: tuple[Any, ...]) -> str | None:
    """Why a gold's parse cannot be trusted: a gold with variables in it that parsed to one number (the
    parser kept a number and dropped the rest: any completion giving that number would pass)."""
    if not parsed:
        return "could not be parsed as a math answer"
    if _lost_variables(normalise(gold), parsed):
        return f"parsed to the lone number {parsed[0]}, dropping its variables"
    return None


def _balanced(text: str, start: int) -> str | None:
    """The text from ``start`` up to the brace that closes an already opened one; None if it never closes."""
    depth = 1
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2  # \{ and \} are literal braces
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
        i += 1
    return None


# ---- which answers the completion gives -----------------------------------------------------------------

def _marked(text: str, markers: tuple[str, ...]) -> list[tuple[int, str | None, str]]:
    """Every marked answer, in order of position: (position, content stripped or None when the box never
    closes, where: boxed | answer_tag | hashes). A tag around a box is that box."""
    found: list[tuple[int, str | None, str]] = []
    if "boxed" in markers:
        for m in _BOXED.finditer(text):
            content = _balanced(text, m.end())
            found.append((m.start(), None if content is None else content.strip(), "boxed"))
    if "answer_tag" in markers:
        for start, block in tagged_spans(text, "<answer>", "</answer>"):
            if "boxed" in markers and _BOXED.search(block):
                continue
            found.append((start, block.strip(), "answer_tag"))
    if "hashes" in markers:
        for m in _HASHES.finditer(text):
            found.append((m.start(), m.group(1).strip(), "hashes"))
    found.sort(key=lambda f: f[0])
    return found


def find_answer(text: str, markers: tuple[str, ...] = ("boxed", "answer_tag"),
                fallback: str = "none") -> tuple[str, str] | None:
    """(the final answer, where it came from: boxed | answer_tag | hashes | math | number), or None. An
    empty or unclosed final marked answer is None: the completion did not finish."""
    marked = _marked(text, markers)
    if marked:
        _, content, where = marked[-1]
        return (content, where) if content else None
    if fallback != "last_value" or _cut_off(text):
        return None
    text = _final_sentence(text)  # a value earlier in the reasoning is no final answer (a cut-off completion)
    number = next(reversed(list(_NUMBER.finditer(text))), None)
    segment = next(reversed(list(_MATH_SEGMENT.finditer(text))), None)
    if segment is not None and (number is None or segment.end() >= number.end()):
        content = next(g for g in segment.groups() if g is not None).strip()
        if content:
            return content, "math"
    if number is not None:
        return re.sub(r"\s+", "", number.group()).replace(",", "").replace("\u2212", "-"), "number"
    return None


_HEDGE_WORDS = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably|might|could)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<!\d)[.!?](?!\d)|\n")


def _final_sentence(text: str) -> str:
    """The completion's last sentence (math segments kept whole; "." between digits is a decimal point)."""
    masked = _MATH_SEGMENT.sub(lambda m: "\0" * len(m.group()), text)
    ends = [m.end() for m in _SENTENCE_END.finditer(masked) if masked[m.end():].strip()]
    return text[ends[-1]:] if ends else text


def _prose_hedge(text: str) -> bool:
    """The unmarked completion's final sentence hedges: it says "or", "either", "maybe", "perhaps", "possibly",
    "probably", "might" or "could" (outside its math). Strict on purpose: the fallback cannot tell which value
    a hedging sentence means."""
    return bool(_HEDGE_WORDS.search(_MATH_SEGMENT.sub(" ", _final_sentence(text))))


_DOLLAR_SIGN = re.compile(r"(?<!\\)\$")
_DANGLING = re.compile(r"(?:[=+\-*/^(\[{,:<>]|\\(?:cdot|times|frac|sqrt|le|ge|neq?)|\b(?:is|are|was|be|equals?|of|to|"
                       r"and|or|the|then|so|gives?|get|yields?))\s*$", re.IGNORECASE)


def _cut_off(text: str) -> bool:
    """An unmarked completion that stops mid-math or mid-sentence: an unclosed ``$``/``\\(``/``\\[``, or a last
    line that ends with an operator or a word that needs what follows ("... so the answer is")."""
    if len(_DOLLAR_SIGN.findall(text)) % 2 or text.count("\\(") > text.count("\\)") \
            or text.count("\\[") > text.count("\\]"):
        return True
    return bool(_DANGLING.search(text.rstrip()))


# ---- hedges: answers that would pass for more than one value --------------------------------------------

MAX_ANSWERS = 8  # explicit answers checked at most; more is a hedge by itself
_PERCENT = re.compile(r"\\?%")
_EQUALS = re.compile(r"(?<![<>!:=\\])=(?!=)")
# A side of an equation that only names what the answer is: x, x_1, x_{12}, \theta, f(x), y'
_NAME = re.compile(r"\s*(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?'*(?:\s*\(\s*[A-Za-z]\s*\))?\s*")
_TOP_LEVEL_BRACES = re.compile(r"\{[^{}]*\}")
_OR = re.compile(r"\bor\b", re.IGNORECASE)


def _top_level(answer: str) -> str:
    """The answer with every brace group blanked out (their = signs are not the answer's)."""
    previous = None
    while previous != answer:
        previous, answer = answer, _TOP_LEVEL_BRACES.sub(lambda m: " " * len(m.group()), answer)
    return answer


def _hedge_rewrite(answer: str, gold: str) -> tuple[list[str], str | None]:
    """The parts of ``answer`` that must each equal the gold, or why it is a hedge.

    - Alternatives (``3 \\text{ or } 5``) where the gold offers none are a hedge.
    - An equation ``lhs = rhs (= ...)``, where the gold is none: every side but those that only name
      the unknown (``x``, ``f(x)``, ``\\theta``) must equal the gold, so ``2+2=5`` does not answer 5
      (``x = 5`` and ``\\frac{10}{2} = 5`` do).
    """
    if _OR.search(answer) and not _OR.search(gold):
        return [], "alternatives ('or'): a hedge"
    if "=" in gold:
        return [answer], None
    blanked = _top_level(answer)
    cuts = [m.start() for m in _EQUALS.finditer(blanked)]
    if not cuts:
        return [answer], None
    sides, start = [], 0
    for cut in [*cuts, len(answer)]:
        sides.append(answer[start:cut])
        start = cut + 1
    values = [side for side in sides if not _NAME.fullmatch(side)]
    if not values or any(not side.strip() for side in values):
        return [], "an equation that states no value"
    return [side.strip() for side in values], None


# ---- exact comparisons math-verify does not make ---------------------------------------------------------

_DECIMAL = re.compile(r"[-\u2212]?(?:\d+(?:\.\d*)?|\.\d+)")
_BASE = re.compile(r"([0-9A-Za-z]+)\s*_\s*\{?\s*(\d+)\s*\}?")
_UNIT = re.compile(r"\\(?:text|mbox|mathrm)\s*\{\s*([A-Za-z]+)\s*\}\s*(?:\^\s*\{?\s*(\d+)\s*\}?)?")


_SCIENTIFIC = re.compile(r"([-\u2212]?(?:\d+(?:\.\d*)?|\.\d+))\\times10\^\{?([+-]?\d{1,4})\}?")


def _decimal(text: str) -> Decimal | None:
    """A plain decimal (``1,234.50``, ``-3``, ``6.77\\times 10^{14}``: what ``1.5e3`` normalises to) as an exact
    Decimal; None for anything else."""
    text = re.sub(r"\s+|\{,\}|(?<=\d),(?=\d{3}(?!\d))", "", text.strip("$ ")).replace("\u2212", "-")
    scientific = _SCIENTIFIC.fullmatch(text)
    if scientific:
        text = f"{scientific.group(1)}e{scientific.group(2)}"
    elif not _DECIMAL.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _exact(part: str, gold: str) -> bool | None:
    """True / False where the two are plain numbers (decimals, percentages, numbers in a base), compared
    exactly; None where math-verify decides."""
    g = _decimal(gold)
    if g is not None:
        percent = _PERCENT.search(part)
        a = _decimal(_PERCENT.sub("", part)) if percent and not _PERCENT.search(gold) else _decimal(part)
        if a is not None:
            return a == g or bool(percent and a / 100 == g)
    pb, gb = _BASE.fullmatch(part.strip()), _BASE.fullmatch(gold.strip())
    if pb or gb:
        pd, gd = (pb.group(1) if pb else part.strip()), (gb.group(1) if gb else gold.strip())
        try:
            if pb and gb:
                return int(pd, int(pb.group(2))) == int(gd, int(gb.group(2)))
            return pd.lstrip("0").lower() == gd.lstrip("0").lower()
        except ValueError:
            return False
    return None


def _units_differ(part: str, gold: str) -> bool:
    """A unit named on both sides with different exponents (``\\text{cm}^3`` for ``\\text{cm}^2``)."""
    theirs = {u: int(e or 1) for u, e in _UNIT.findall(gold)}
    return any(u in theirs and theirs[u] != int(e or 1) for u, e in _UNIT.findall(part))


@register
class MathAnswer(PureKind):
    name = "math"
    description = ("the final marked answer (\\boxed{}, <answer>, or the markers the spec names) must equal the "
                   "gold answer, compared symbolically with math-verify")
    params = (
        Param("gold", "string", "the correct answer (LaTeX, plain or Python syntax, e.g. \\frac{1}{2}, 0.5, "
              "x**2+1)", required=True),
        Param("answer_markers", "string", "comma-separated answer markers: boxed, answer_tag, hashes (a '#### x' line, "
              "GSM8K's convention)", default=DEFAULT_MARKERS),
        Param("answer_fallback", "string", "none: an unmarked completion has no answer (MALFORMED); last_value: read "
              "its last $...$ or number, refusing a final sentence that offers alternatives", default="none",
              choices=FALLBACKS),
    )
    default_extract = "raw"
    slow_checks = True  # the gold's parse (spec_problem)

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "gold")
        spec = spec.with_defaults(answer_markers=DEFAULT_MARKERS, answer_fallback="none")
        if not isinstance(spec.gold, str) or not spec.gold.strip():
            raise InvalidSpec("spec.gold is empty")
        markers = [m.strip() for m in str(spec.answer_markers).split(",") if m.strip()]
        if not markers or any(m not in MARKERS for m in markers):
            raise InvalidSpec(f"spec.answer_markers {spec.answer_markers!r} is not valid; markers: "
                              f"{', '.join(MARKERS)}")
        if spec.answer_fallback not in FALLBACKS:
            raise InvalidSpec(f"spec.answer_fallback {spec.answer_fallback!r} is not valid; valid: "
                              f"{', '.join(FALLBACKS)}")
        return spec

    def spec_problem(self, spec: Spec) -> str | None:
        """The gold must parse, keeping its variables (its parse can take long: it runs in a pure worker)."""
        problem = _gold_problem(spec.gold, _parse_gold(spec.gold))
        return f"spec.gold {truncate(spec.gold, 200)!r} {problem}" if problem else None

    def warm_up(self) -> None:
        """Imports math-verify (sympy, latex2sympy) and compares once, so the first real check is fast."""
        _verify(_parse("$\\frac{1}{2}$"), _parse("\\boxed{0.5}"))

    def check(self, text: str, spec: Spec) -> Outcome:
        markers = tuple(m.strip() for m in str(spec.answer_markers or DEFAULT_MARKERS).split(","))
        fallback = spec.answer_fallback or "none"
        found = find_answer(text, markers, fallback)
        if found is None:
            marked = _marked(text, markers)
            why = ("the final answer is empty or never closed: no final answer" if marked else
                   f"no marked final answer ({', '.join(markers)})")
            return Outcome.malformed(why, truncate(text.strip(), 200))
        answer, source = found
        gold = list(_parse_gold(spec.gold))
        detail = f"expected {truncate(spec.gold, 200)}, got {truncate(answer, 200)}"
        if source in ("math", "number"):
            if _prose_hedge(text):
                test = TestOutcome("answer", Verdict.FAILED, f"{detail} (the final sentence offers alternatives)")
                return Outcome.from_tests([test], detail=test.detail, extracted=truncate(answer))
            explicit = [found]
        else:
            explicit = [(c, w) for _, c, w in _marked(text, markers) if c]
        distinct = list(dict.fromkeys((a.strip(), where) for a, where in explicit))
        if len(distinct) > MAX_ANSWERS:
            test = TestOutcome("answer", Verdict.FAILED, f"{detail} ({len(distinct)} different answers)")
            return Outcome.from_tests([test], detail=test.detail, extracted=truncate(answer))
        why = None
        for candidate, where in distinct:  # every answer given must be right: several answers are a hedge
            why = self._wrong(candidate, where, spec.gold, gold)
            if why is not None:
                if len(distinct) > 1:
                    why = f"several different answers, and {truncate(candidate, 100)!r} {why}"
                break
        test = TestOutcome("answer", Verdict.PASSED if why is None else Verdict.FAILED,
                           detail if why is None else f"{detail} ({why})" if why else detail)
        return Outcome.from_tests([test], detail=test.detail, extracted=truncate(answer))

    @staticmethod
    def _wrong(answer: str, source: str, gold_text: str, gold: list[Any]) -> str | None:
        """None when ``answer`` equals the gold; else why not ("" when it simply does not)."""
        answer = normalise(answer)
        gold_norm = normalise(gold_text)
        segments = [next(g for g in m.groups() if g is not None) for m in _MATH_SEGMENT.finditer(answer)]
        if source == "answer_tag" and segments:
            # prose with math in it: the math segments are the answer, each must be right, and the prose
            # around them may hold no other value nor alternatives ("432/655 or $\frac{1}{37}$")
            prose = _MATH_SEGMENT.sub(" ", answer)
            if (_OR.search(prose) and not _OR.search(gold_norm)) or _NUMBER.search(prose):
                return "a value or alternatives outside the math: a hedge"
            parts: list[str] = []
            for segment in dict.fromkeys(normalise(seg) for seg in segments):
                more, hedge = _hedge_rewrite(segment, gold_norm)
                if hedge is not None:
                    return hedge
                parts += more
        else:
            parts, hedge = _hedge_rewrite(answer, gold_norm)
            if hedge is not None:
                return hedge
        for part in parts:
            if _units_differ(part, gold_norm):
                return "its unit's exponent differs"
            exact = _exact(part, gold_norm)
            if exact is not None:
                if not exact:
                    return "" if len(parts) == 1 else f"its side {truncate(part, 100)!r} is not the answer"
                continue
            variants = [part]
            if _PERCENT.search(part) and not _PERCENT.search(gold_norm):
                variants = [_PERCENT.sub("", part), _PERCENT.sub(r"\\cdot\\frac{1}{100}", part)]
            parsed_any = False
            ok = False
            import sympy

            gold_has_variables = bool(gold) and not isinstance(gold[0], sympy.Number)
            for variant in variants:
                parsed = _parse_expression(variant) if gold_has_variables else _parse("\\boxed{" + variant + "}")
                parsed_any = parsed_any or bool(parsed)
                if parsed and gold and _verify(gold, parsed):
                    ok = True
                    break
            if not parsed_any:
                return "the answer could not be parsed"
            if not ok:
                return "" if len(parts) == 1 else f"its side {truncate(part, 100)!r} is not the answer"
        return None
