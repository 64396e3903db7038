"""format: the completion must match a regular expression (re.DOTALL).

``match: full`` (the default) matches the whole completion, surrounding
whitespace stripped; ``match: search`` looks for the pattern anywhere. A
completion that does not match is MALFORMED. A pattern that backtracks for
ever is stopped by the worker pool's time limit.
"""

from __future__ import annotations

import re
from functools import lru_cache

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds.base import Param, PureKind
from verifier_service.spec import Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

MATCH_MODES = ("full", "search")


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.DOTALL)


@register
class FormatCheck(PureKind):
    name = "format"
    description = "the completion must match a Python regular expression (re.DOTALL), in full or anywhere"
    params = (
        Param("pattern", "string", "a Python regular expression; re.DOTALL is always on", required=True),
        Param("match", "string", "full: the whole completion (whitespace-stripped) must match; search: the "
              "pattern must occur somewhere", default="full", choices=MATCH_MODES),
    )
    default_extract = "raw"

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "pattern")
        try:
            _compile(spec.pattern)
        except (re.error, OverflowError, RecursionError) as exc:
            raise InvalidSpec(f"spec.pattern is not a valid regular expression: {exc}") from None
        spec = spec.with_defaults(match="full")
        if spec.match not in MATCH_MODES:
            raise InvalidSpec(f"spec.match {spec.match!r} is not valid; valid: {', '.join(MATCH_MODES)}")
        return spec

    def check(self, text: str, spec: Spec) -> Outcome:
        regex = _compile(spec.pattern)
        if spec.match == "search":
            found = regex.search(text)
        else:
            found = regex.fullmatch(text.strip())
        extracted = truncate(text.strip())
        if found is None:
            return Outcome.malformed(f"completion does not match the required format /{truncate(spec.pattern, 200)}/",
                                     extracted)
        return Outcome.from_tests([TestOutcome("format", Verdict.PASSED)], detail="matches the required format",
                                  extracted=extracted)
