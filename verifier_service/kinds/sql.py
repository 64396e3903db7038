"""sql: the completion is a query; it runs on SQLite in the sandbox and its rows are compared outside it.

The spec's ``setup`` (an SQL script: schema and data) makes each database; each of ``cases`` may add a script
of its own (``stdin``: more rows, for a test-suite style check over several databases) and give the expected
rows (``expected``) where there is no ``gold`` query. The gold query and the completion's run in the sandbox
(``runner/sql_harness.py``: the completion's read-only, with a time limit); the result sets are
compared here: the same number of columns, the same rows (a multiset, unless the order counts), cells equal
by type (NULL, number, text, blob) and numbers within ``float_tolerance``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from verifier_service.errors import InvalidSpec
from verifier_service.kinds import register
from verifier_service.kinds._sandboxed import HARNESS_DIR, PYTHON, exit_detail, limit_verdict, run_job, streams
from verifier_service.kinds.base import Context, Param, VerifierKind
from verifier_service.kinds.strict_json import parse
from verifier_service.sandbox.base import Job, Step
from verifier_service.spec import MISSING, Spec
from verifier_service.verdict import Outcome, TestOutcome, Verdict, truncate

COMPARE_MODES = ("auto", "ordered", "unordered")
MAX_ROWS = 20_000  # rows read of each result set (more: the result differs from any gold that has fewer)
OUTPUT_LIMIT = 32 << 20
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\n(.*?)```", re.DOTALL)
_STRINGS_AND_COMMENTS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?\*/",
                                   re.DOTALL)
_PARENS = re.compile(r"\([^()]*\)")
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)


def query_of(text: str) -> str:
    """The query of a completion: its last fenced block if it has one (```sql ... ```), else all of it."""
    blocks = _FENCE.findall(text)
    return (blocks[-1] if blocks else text).strip()


def orders_rows(query: str) -> bool:
    """Whether a query's result is ordered: an ORDER BY outside every parenthesis, string and comment."""
    text = _STRINGS_AND_COMMENTS.sub(" ", query)
    while True:
        stripped = _PARENS.sub(" ", text)
        if stripped == text:
            break
        text = stripped
    return _ORDER_BY.search(text) is not None


# ---- comparing result sets ---------------------------------------------------------------------------------

def _value(tagged: Any) -> Any:
    """A harness cell as a comparable value: None, a number (int or float), ("s", text) or ("b", hex)."""
    tag = tagged[0] if isinstance(tagged, list) and tagged else None
    if tag == "n":
        return None
    if tag == "i" and type(tagged[1]) is int:
        return tagged[1]
    if tag == "f" and isinstance(tagged[1], str):
        try:
            return float(tagged[1])
        except ValueError:
            return ("s", tagged[1])
    if tag in ("s", "b") and isinstance(tagged[1], str):
        return (tag, tagged[1])
    return ("?", repr(tagged))


def expected_value(value: Any) -> Any:
    """A spec's expected cell (JSON) as a comparable value: null, a number, text; true/false as 1/0 (SQLite's)."""
    if value is None or type(value) in (int, float):
        return value
    if type(value) is bool:
        return int(value)
    return ("s", value if isinstance(value, str) else json.dumps(value))


def cells_match(got: Any, want: Any, tol: float) -> bool:
    """NULL only NULL; a number only a number within ``tol * max(1, |want|)``; text and blobs exactly."""
    if want is None or got is None:
        return got is None and want is None
    number = (int, float)
    if isinstance(want, number) or isinstance(got, number):
        if not (isinstance(want, number) and isinstance(got, number)):
            return False
        if got == want:
            return True
        g, w = float(got), float(want)
        if math.isnan(w) or math.isnan(g) or math.isinf(w) or math.isinf(g):
            return False
        return abs(g - w) <= tol * max(1.0, abs(w))
    return got == want


def _sort_key(row: list[Any]) -> tuple:
    out = []
    for v in row:
        if v is None:
            out.append((0, 0.0, ""))
        elif isinstance(v, (int, float)):
            out.append((1, float(v) if not (isinstance(v, float) and math.isnan(v)) else math.inf, ""))
        else:
            out.append((2, 0.0, f"{v[0]}:{v[1]}"))
    return tuple(out)


def rows_match(got: list[list[Any]], want: list[list[Any]], ordered: bool, tol: float) -> tuple[bool, str]:
    """Whether two result sets (rows of comparable values) are the same; (False, why) when not."""
    if len(got) != len(want):
        return False, f"{len(got)} rows, expected {len(want)}"
    if not ordered:
        got, want = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not all(cells_match(a, b, tol) for a, b in zip(g, w, strict=True)):
            if not ordered and len(got) <= 2000 and _matching(got, want, tol):
                return True, ""  # numbers within the tolerance sorted differently
            return False, f"row {i + 1} is {_show(g)}, expected {_show(w)}" + ("" if ordered else " (rows sorted)")
    return True, ""


def _matching(got: list[list[Any]], want: list[list[Any]], tol: float) -> bool:
    """A greedy one-to-one matching of rows (only reached when sorting put near-equal numbers apart)."""
    left = list(got)
    for w in want:
        for i, g in enumerate(left):
            if all(cells_match(a, b, tol) for a, b in zip(g, w, strict=True)):
                del left[i]
                break
        else:
            return False
    return True


def _show(row: list[Any]) -> str:
    return truncate(repr([v[1] if isinstance(v, tuple) else v for v in row]), 200)


@register
class Sql(VerifierKind):
    name = "sql"
    description = ("runs a SQL query on SQLite in the sandbox (the spec's schema and data) and compares its rows "
                   "with the gold query's or the expected rows outside the sandbox")
    sandboxed = True
    params = (
        Param("setup", "string", "SQL script that makes each database: schema and data", required=True),
        Param("gold", "string", "the gold query (its rows are the expected ones), or give cases' expected rows"),
        Param("cases", "cases", "databases: each {stdin: more SQL run after setup, expected: rows (list of lists; "
              "without gold)}; default one database, setup alone"),
        Param("compare", "string", "row order: auto (ordered when the gold query has a top-level ORDER BY), "
              "ordered or unordered", default="auto", choices=COMPARE_MODES),
        Param("float_tolerance", "number", "numbers match within tol * max(1, |expected|)", default=1e-6),
    )

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "setup")
        spec = spec.with_defaults(compare="auto")
        if spec.compare not in COMPARE_MODES:
            raise InvalidSpec(f"spec.compare {spec.compare!r} is not valid; valid: {', '.join(COMPARE_MODES)}")
        if not (math.isfinite(spec.float_tolerance) and spec.float_tolerance >= 0):
            raise InvalidSpec("spec.float_tolerance must be a finite number, not negative")
        for i, case in enumerate(spec.cases):
            if case.args or case.kwargs or case.expected_stdout is not None:
                raise InvalidSpec(f"spec.cases[{i}]: only stdin (more SQL) and expected (rows) belong to kind 'sql'")
            if spec.gold and case.expected is not MISSING:
                raise InvalidSpec(f"spec.cases[{i}].expected: give either gold or expected rows, not both")
            if not spec.gold:
                rows = case.expected
                if rows is MISSING:
                    raise InvalidSpec(f"spec.cases[{i}] has no expected rows (and the spec has no gold query)")
                if not (isinstance(rows, list) and all(isinstance(r, list) for r in rows)
                        and len({len(r) for r in rows}) <= 1):
                    raise InvalidSpec(f"spec.cases[{i}].expected must be a list of rows (lists of equal length)")
        if not spec.gold and not spec.cases:
            raise InvalidSpec("kind 'sql' needs a gold query or cases with expected rows")
        return spec

    async def verify(self, text: str, spec: Spec, ctx: Context) -> Outcome:
        query = query_of(text)
        extra = dict(extracted=truncate(query, 4000))
        if not query:
            return Outcome.malformed("the completion holds no query", truncate(text, 200))
        limit = min(ctx.timeout_s, ctx.config.max_timeout_s)
        cases = spec.cases or ()
        databases = [c.stdin for c in cases] or [""]
        names = [c.name or f"database {i}" for i, c in enumerate(cases)] or ["result"]
        payload = json.dumps({"setup": spec.setup, "databases": databases, "gold": spec.gold, "query": query,
                              "timeout_s": limit, "max_rows": MAX_ROWS})
        step = Step("query", [*PYTHON, f"{HARNESS_DIR}/sql_harness.py"], limit * (1 + 2 * len(databases)) + 5,
                    stdin=payload, memory_bytes=ctx.config.memory_mb << 20, output_limit=OUTPUT_LIMIT)
        run = await run_job(ctx, Job(steps=[step]))
        if isinstance(run, Outcome):
            return run
        result = run.steps[0] if run.steps else None
        lines = result.stdout.splitlines() if result is not None else []
        ordered = spec.compare == "ordered" or (spec.compare == "auto" and bool(spec.gold) and orders_rows(spec.gold))
        tol = spec.float_tolerance if spec.is_set("float_tolerance") else 1e-6
        tests: list[TestOutcome] = []
        for i, name in enumerate(names):
            event, error = parse(lines[i], events=True) if i < len(lines) else (None, "missing")
            if error is not None or not isinstance(event, dict):
                hit = limit_verdict(result, run, limit) if result is not None else None
                verdict, detail = hit or (Verdict.RUNTIME_ERROR, exit_detail(result) if result else "no result")
                tests += [TestOutcome(n, verdict, detail if j == 0 else f"not run: {detail}")
                          for j, n in enumerate(names[i:])]
                break
            if "setup" in event:
                return Outcome.infra_error(f"{name}: {truncate(str(event['setup']), 300)}")
            gold = event.get("gold")
            if isinstance(gold, dict) and "error" in gold:
                why = truncate(str(gold.get("message")), 300)
                return Outcome.infra_error(f"{name}: the spec's gold query failed: {why}")
            got = event.get("query")
            if isinstance(got, dict) and got.get("error") == "syntax":
                return Outcome(Verdict.COMPILE_ERROR, detail=truncate(str(got.get("message")), 300), **extra)
            want_rows = ([[_value(c) for c in r] for r in gold.get("rows", [])] if isinstance(gold, dict)
                         else [[expected_value(c) for c in r] for r in cases[i].expected])
            want_cols = len(gold.get("columns", [])) if isinstance(gold, dict) else (
                len(want_rows[0]) if want_rows else None)
            tests.append(self._judge(name, got, want_rows, want_cols, ordered, tol))
        return Outcome.from_tests(tests, **extra, **streams(result))

    @staticmethod
    def _judge(name: str, got: Any, want_rows: list, want_cols: int | None, ordered: bool, tol: float) -> TestOutcome:
        if not isinstance(got, dict):
            return TestOutcome(name, Verdict.RUNTIME_ERROR, "the query gave no result")
        error = got.get("error")
        if error is not None:
            verdict = {"timeout": Verdict.TIMEOUT, "memory": Verdict.MEMORY_LIMIT}.get(error, Verdict.RUNTIME_ERROR)
            return TestOutcome(name, verdict, truncate(str(got.get("message")), 300))
        columns = got.get("columns") or []
        if want_cols is not None and len(columns) != want_cols:
            return TestOutcome(name, Verdict.FAILED, f"{len(columns)} columns, expected {want_cols}")
        if got.get("more"):
            return TestOutcome(name, Verdict.FAILED, f"more than {MAX_ROWS} rows, expected {len(want_rows)}")
        rows = [[_value(c) for c in r] for r in got.get("rows", []) if isinstance(r, list)]
        if any(len(r) != len(columns) for r in rows) or any(want_cols is not None and len(r) != want_cols
                                                           for r in want_rows):
            return TestOutcome(name, Verdict.FAILED, "rows of different lengths")
        same, why = rows_match(rows, want_rows, ordered, tol)
        return TestOutcome(name, Verdict.PASSED if same else Verdict.FAILED, why)
