"""Verdicts as data: what the checked code did, and the scores that follow.

``Outcome`` is what a verifier kind returns; ``score`` turns it into format /
correctness scores and the composite reward. INFRA_ERROR (the sandbox broke)
carries no reward at all, so a broken sandbox never trains the model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Verdict(enum.Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    PARTIAL = "PARTIAL"
    MALFORMED = "MALFORMED"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    MEMORY_LIMIT = "MEMORY_LIMIT"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    INFRA_ERROR = "INFRA_ERROR"


# A failing test's verdict that names a resource limit wins over PARTIAL/FAILED.
LIMIT_VERDICTS = (Verdict.TIMEOUT, Verdict.MEMORY_LIMIT, Verdict.OUTPUT_LIMIT)

DETAIL_LIMIT = 1000
TAIL_LIMIT = 2000


def truncate(text: str, limit: int = DETAIL_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 15] + f"... [{len(text) - limit + 15} more]"


def tail(text: str, limit: int = TAIL_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"[{len(text) - limit + 15} earlier] ..." + text[-(limit - 15):]


@dataclass
class TestOutcome:
    __test__ = False  # not a pytest class

    name: str
    verdict: Verdict
    detail: str = ""
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED


@dataclass
class Outcome:
    """What a verifier found. ``tests`` drive the scores unless ``verdict`` is
    MALFORMED, COMPILE_ERROR or INFRA_ERROR, which decide on their own."""

    verdict: Verdict
    tests: list[TestOutcome] = field(default_factory=list)
    detail: str = ""
    extracted: str = ""
    stdout_tail: str = ""
    stderr_tail: str = ""

    @classmethod
    def malformed(cls, detail: str, extracted: str = "") -> Outcome:
        return cls(Verdict.MALFORMED, detail=detail, extracted=extracted)

    @classmethod
    def infra_error(cls, detail: str) -> Outcome:
        return cls(Verdict.INFRA_ERROR, detail=detail)

    @classmethod
    def from_tests(cls, tests: list[TestOutcome], **kwargs) -> Outcome:
        """The verdict of a finished test run: PASSED, a limit, PARTIAL, RUNTIME_ERROR or FAILED.
        Without a ``detail``, the detail names the first failing test."""
        kwargs.setdefault("detail", summary_detail(tests))
        return cls(overall_verdict(tests), tests=tests, **kwargs)


def summary_detail(tests: list[TestOutcome]) -> str:
    failing = next((t for t in tests if not t.passed), None)
    if failing is None:
        return f"passed all {len(tests)} tests"
    return f"{failing.name}: {failing.detail}" if failing.detail else f"{failing.name}: {failing.verdict.value}"


def overall_verdict(tests: list[TestOutcome]) -> Verdict:
    if tests and all(t.passed for t in tests):
        return Verdict.PASSED
    failing = [t for t in tests if not t.passed]
    for t in failing:
        if t.verdict in LIMIT_VERDICTS:
            return t.verdict
    if any(t.passed for t in tests):
        return Verdict.PARTIAL
    if any(t.verdict is Verdict.RUNTIME_ERROR for t in failing):
        return Verdict.RUNTIME_ERROR
    return Verdict.FAILED


@dataclass(frozen=True)
class Scores:
    format_score: float
    correctness_score: float
    reward: float | None  # None for INFRA_ERROR: no signal about the code
    tests_passed: int
    tests_total: int


def score(outcome: Outcome, scoring: str, format_weight: float, correctness_weight: float) -> Scores:
    """Format and correctness scores and the composite reward of an outcome.

    format_score is 1 only when the answer has the structure the spec asks for: MALFORMED (no marked
    answer for math, no fenced block where ``extract`` asks for one, no match for format) and
    COMPILE_ERROR (prose or broken code is not well-formed code) score 0. With ``format_weight > 0``, a
    well-formed wrong answer therefore always gets ``format_weight`` more reward than a malformed one.
    """
    total = len(outcome.tests)
    passed = sum(t.passed for t in outcome.tests)
    if outcome.verdict is Verdict.INFRA_ERROR:
        return Scores(0.0, 0.0, None, passed, total)
    if outcome.verdict in (Verdict.MALFORMED, Verdict.COMPILE_ERROR):
        return Scores(0.0, 0.0, 0.0, passed, total)
    fmt = 1.0
    if total == 0:
        correctness = 0.0
    elif scoring == "fraction":
        correctness = passed / total
    else:
        correctness = 1.0 if passed == total else 0.0
    reward = round(format_weight * fmt + correctness_weight * correctness, 9)
    return Scores(fmt, correctness, reward, passed, total)
