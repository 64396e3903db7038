"""math: the completion's final answer must equal the gold answer (math-verify).

The answer is the content of the last ``\\boxed{...}`` / ``\\fbox{...}``,
else of the last ``<answer>...</answer>``, else the last number in the text.
math-verify's own timeouts use ``signal.alarm`` and are switched off: this
kind runs in a killable worker process that enforces the time limit.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds.base import Param, PureKind
from verifier_service.kinds.tags import tagged_blocks
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_INT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
_NUMBER = re.compile(rf"(?<![\w.])(?:[-\u2212](?=\d))?{_INT}(?:\.\d+)?(?:\s*/\s*{_INT}(?:\.\d+)?)?(?!\d)")
_MATH_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")


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


@lru_cache(maxsize=1024)
def _parse_gold(gold: str) -> tuple[Any, ...]:
    text = gold.strip()
    parsed: list[Any] = []
    if not _MATH_DELIMITED.match(text) and "\\boxed" not in text:
        parsed = _parse(f"${text}$")
    return tuple(parsed or _parse(text))


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


def _answers(text: str) -> list[tuple[str, str]]:
    """Every explicit answer of the completion: each ``\\boxed{}`` / ``\\fbox{}``, then each ``<answer>`` tag
    that holds no box (a tag around a box is that box); in order, empty ones left out."""
    found = []
    for m in _BOXED.finditer(text):
        content = _balanced(text, m.end())
        if content is not None and content.strip():
            found.append((content.strip(), "boxed"))
    for content in tagged_blocks(text, "<answer>", "</answer>"):
        if content.strip() and not _BOXED.search(content):
            found.append((content.strip(), "answer_tag"))
    return found


def find_answer(text: str) -> tuple[str, str] | None:
    """(answer, where it came from: boxed | answer_tag | number), or None."""
    for m in reversed(list(_BOXED.finditer(text))):
        content = _balanced(text, m.end())
        if content is not None and content.strip():
            return content.strip(), "boxed"
    for content in reversed(tagged_blocks(text, "<answer>", "</answer>")):
        if content.strip():
            return content.strip(), "answer_tag"
    numbers = _NUMBER.findall(text)
    if numbers:
        number = re.sub(r"\s+", "", numbers[-1]).replace(",", "").replace("\u2212", "-")
        return number, "number"
    return None


def _parse_answer(answer: str, source: str) -> list[Any]:
    if source == "answer_tag" and _MATH_DELIMITED.search(answer):
        return _parse(answer)  # math inside prose: let math-verify find it
    return _parse("\\boxed{" + answer + "}")


# ---- hedges: answers that would pass for more than one value --------------------------------------------

MAX_ANSWERS = 8  # explicit answers checked at most; more is a hedge by itself
_PERCENT = re.compile(r"\\?%")
_EQUALS = re.compile(r"(?<![<>!:=\\])=(?!=)")
# A side of an equation that only names what the answer is: x, x_1, x_{12}, \theta, f(x), y'
_NAME = re.compile(r"\s*(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?'*(?:\s*\(\s*[A-Za-z]\s*\))?\s*")
_TOP_LEVEL_BRACES = re.compile(r"\{[^{}]*\}")


def _top_level(answer: str) -> str:
    """The answer with every brace group blanked out (their = signs are not the answer's)."""
    previous = None
    while previous != answer:
        previous, answer = answer, _TOP_LEVEL_BRACES.sub(lambda m: " " * len(m.group()), answer)
    return answer


def _hedge_rewrite(answer: str, gold: str) -> tuple[list[str], str | None]:
    """The parts of ``answer`` that must each equal the gold, or why it is a hedge.

    - A percent sign means "divided by 100" unless the gold is a percentage too (then both drop it, as
      math-verify does): ``50\\%`` answers 0.5, not 50, where the gold is a plain number.
    - An equation ``lhs = rhs (= ...)``, where the gold is none: every side but those that only name
      the unknown (``x``, ``f(x)``, ``\\theta``) must equal the gold, so ``2+2=5`` does not answer 5
      (``x = 5`` and ``\\frac{10}{2} = 5`` do).
    """
    if _PERCENT.search(answer) and not _PERCENT.search(gold):
        answer = _PERCENT.sub(r"\\cdot\\frac{1}{100}", answer)
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


@register
class MathAnswer(PureKind):
    name = "math"
    description = ("the final answer (last \\boxed{}, else last <answer>, else last number) must equal the gold "
                   "answer, compared symbolically with math-verify")
    params = (
        Param("gold", "string", "the correct answer (LaTeX or plain, e.g. \\frac{1}{2}, 0.5, x^2+1)", required=True),
    )
    default_extract = "raw"

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "gold")
        if not spec.gold.strip():
            raise InvalidSpec("spec.gold is empty")
        if not _parse_gold(spec.gold):
            raise InvalidSpec(f"spec.gold {truncate(spec.gold, 200)!r} could not be parsed as a math answer")
        return spec

    def warm_up(self) -> None:
        """Imports math-verify (sympy, latex2sympy) and compares once, so the first real check is fast."""
        _verify(_parse("$\\frac{1}{2}$"), _parse("\\boxed{0.5}"))

    def check(self, text: str, spec: Spec) -> Outcome:
        found = find_answer(text)
        if found is None:
            return Outcome.malformed("no answer found: no \\boxed{}, no <answer> tag and no number",
                                     truncate(text.strip(), 200))
        answer, source = found
        gold = list(_parse_gold(spec.gold))
        detail = f"expected {truncate(spec.gold, 200)}, got {truncate(answer, 200)}"
        explicit = _answers(text) if source != "number" else [found]
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
        if source == "answer_tag" and _MATH_DELIMITED.search(answer):
            parts, hedge = [answer], None  # prose with math in it: math-verify picks the math
        else:
            parts, hedge = _hedge_rewrite(answer, gold_text)
        if hedge is not None:
            return hedge
        for part in parts:
            parsed = _parse_answer(part, source)
            if not parsed:
                return "the answer could not be parsed"
            if not (gold and _verify(gold, parsed)):
                return "" if len(parts) == 1 else f"its side {truncate(part, 100)!r} is not the answer"
        return None
