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
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
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


def find_answer(text: str) -> tuple[str, str] | None:
    """(answer, where it came from: boxed | answer_tag | number), or None."""
    for m in reversed(list(_BOXED.finditer(text))):
        content = _balanced(text, m.end())
        if content is not None and content.strip():
            return content.strip(), "boxed"
    for content in reversed(_ANSWER.findall(text)):
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
        parsed = _parse_answer(answer, source)
        detail = f"expected {truncate(spec.gold, 200)}, got {truncate(answer, 200)}"
        if not parsed:
            test = TestOutcome("answer", Verdict.FAILED, f"{detail} (the answer could not be parsed)")
        elif gold and _verify(gold, parsed):
            test = TestOutcome("answer", Verdict.PASSED, detail)
        else:
            test = TestOutcome("answer", Verdict.FAILED, detail)
        return Outcome.from_tests([test], detail=test.detail, extracted=truncate(answer))
