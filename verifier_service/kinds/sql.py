"""sql: the completion is a query; it runs on SQLite in the sandbox and its rows are compared outside it.

The spec's ``setup`` (an SQL script: schema and data) makes each database; each of ``cases`` may add a script
of its own (``stdin``: more rows, for a test-suite style check over several databases) and give the expected
rows (``expected``) where there is no ``gold`` query. The gold query and the completion's run in the sandbox
(``runner/sql_harness.py``: the completion's read-only, with a time limit); the result sets are
compared here: the same number of columns, the same rows (a multiset, unless the order counts: then in the
order of the gold's ORDER BY, rows that tie on it in any order: on its columns when they are selected, else on
the ties the gold shows when run with tie-breaks both ways; where the gold's ``LIMIT k`` cuts a tie, the rows
from that tie on may be any rows of the tie, each once, as the gold run without its LIMIT shows them; a LIMIT
with an OFFSET keeps the gold's own rows), cells equal by type (NULL, number,
text, blob), integers exactly and reals within ``float_tolerance``. The columns are compared in the gold's
order; with ``match: columns_any_order`` (Spider's official execution judge) in any order that makes the result
sets the same (the completion's columns permuted: ``SELECT age, name`` for a gold's ``SELECT name, age``).
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import re
from collections.abc import Iterator
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
COLUMN_MODES = ("columns_in_order", "columns_any_order")
MAX_COLUMN_ORDERS = 720  # column permutations tried (columns_any_order) before the result counts as different
MAX_COLUMN_STEPS = 20_000  # steps of the search for them
MAX_COLUMN_CELLS = 500_000  # cells compared over all the permutations tried (a wide, long result: fewer tries)
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
    """NULL only NULL; an integer only the same number exactly (beyond 2**53 too: Python compares an int with
    a float exactly); two reals within ``tol * max(1, |want|)``; text and blobs exactly."""
    if want is None or got is None:
        return got is None and want is None
    number = (int, float)
    if isinstance(want, number) or isinstance(got, number):
        if not (isinstance(want, number) and isinstance(got, number)):
            return False
        if got == want:
            return True
        if type(got) is int or type(want) is int:
            return False  # counts, ids and sums of integers are exact: no tolerance
        g, w = float(got), float(want)
        if math.isnan(w) or math.isnan(g) or math.isinf(w) or math.isinf(g):
            return False
        return abs(g - w) <= tol * max(1.0, abs(w))
    return got == want


def _cell_key(v: Any) -> tuple:
    if v is None:
        return (0, 0.0, "")
    if isinstance(v, (int, float)):
        return (1, float(v) if not (isinstance(v, float) and math.isnan(v)) else math.inf, "")
    return (2, 0.0, f"{v[0]}:{v[1]}")


def _sort_key(row: list[Any]) -> tuple:
    return tuple(_cell_key(v) for v in row)


_ORDER_TAIL = re.compile(r"\b(?:limit|offset)\b|;", re.IGNORECASE)
_TERM_SUFFIX = re.compile(r"\s+(?:collate\s+\S+|asc|desc|nulls\s+(?:first|last))\s*$", re.IGNORECASE)


def _masked(query: str) -> str:
    """The query with strings, comments and parenthesised parts blanked (same length, positions kept)."""
    text = _STRINGS_AND_COMMENTS.sub(lambda m: " " * len(m.group()), query)
    while True:
        stripped = _PARENS.sub(lambda m: " " * len(m.group()), text)
        if stripped == text:
            return text
        text = stripped


def order_span(query: str) -> tuple[int, int] | None:
    """Where the terms of a query's top-level ORDER BY start and end (before LIMIT, OFFSET or ``;``), or None."""
    masked = _masked(query)
    found = list(_ORDER_BY.finditer(masked))
    if not found:
        return None
    start = found[-1].end()
    tail = _ORDER_TAIL.search(masked, start)
    end = tail.start() if tail else len(query)
    spaced = _STRINGS_AND_COMMENTS.sub(  # only comments blanked: a term may end in a parenthesis (``count(*)``)
        lambda m: " " * len(m.group()) if m.group()[:2] in ("--", "/*") else m.group(), query)
    while end > start and spaced[end - 1].isspace():
        end -= 1
    return start, end


_LIMIT_CLAUSE = re.compile(r"\s*limit\b[^,;]*?(?:;\s*)?$", re.IGNORECASE)
_OFFSET = re.compile(r"\boffset\b", re.IGNORECASE)


def limit_start(query: str) -> int | None:
    """Where a query's top-level LIMIT clause starts, when it follows the top-level ORDER BY and has no offset
    (``LIMIT k``, not ``LIMIT k OFFSET m`` nor ``LIMIT m, k``) and nothing but a ``;`` and comments follows it;
    else None."""
    span = order_span(query)
    if span is None:
        return None
    masked = _masked(query)
    tail = masked[span[1]:]
    if not _LIMIT_CLAUSE.match(tail) or _OFFSET.search(tail):
        return None
    return span[1] + len(tail) - len(tail.lstrip())


def _exact(row: list[Any]) -> tuple:
    """A row as a key that equal rows share (``cells_match`` with no tolerance: 3 and 3.0 alike; NaN never)."""
    def cell(v: Any) -> Any:
        if type(v) is float:
            return ("#", v) if v == v else ("nan", object())
        if type(v) is int and abs(v) <= 2**53:
            return ("#", float(v))
        return ("=", repr(v))
    return tuple(cell(v) for v in row)


def _multiset_within(rows: list[list[Any]], pool: list[list[Any]], tol: float) -> bool:
    """Whether every row of ``rows`` matches a row of its own in ``pool`` (cells as ``cells_match``): equal rows
    first, then rows with reals (the only ones the tolerance can match otherwise) greedily, within a bounded
    number of tries (a matching it misses fails an answer, never passes one)."""
    left = collections.Counter(_exact(r) for r in pool)
    unmatched = []
    for row in rows:
        key = _exact(row)
        if left[key] > 0:
            left[key] -= 1
        elif any(type(v) is float for v in row):
            unmatched.append(row)
        else:
            return False
    if not unmatched:
        return True
    spare = []  # the pool's rows with reals not taken by an equal row
    for r in pool:
        key = _exact(r)
        if left[key] > 0:
            left[key] -= 1
            if any(type(v) is float for v in r):
                spare.append(r)
    if len(unmatched) * len(spare) > 250_000:
        return False
    for row in unmatched:
        for i, r in enumerate(spare):
            if all(cells_match(a, b, tol) for a, b in zip(row, r, strict=True)):
                del spare[i]
                break
        else:
            return False
    return True


def limit_cut(want: list[list[Any]], ascending: list[list[Any]], descending: list[list[Any]],
              full_ascending: list[list[Any]], full_descending: list[list[Any]]) -> tuple[int, list[list[Any]]] | None:
    """Where a LIMIT cut a tie of the gold's ORDER BY: (the tie's first row, every row of the tie) when the
    tie that holds the gold's last row goes on past it. From the gold's rows (``want``), the tie-break runs
    (``ascending``, ``descending``) and the same runs without the LIMIT, cut after that tie (the harness's
    ``gold_full_*``). None when there is no such tie or the runs do not agree (each run without the LIMIT must
    begin with the rows of the same run with it, hold the same rows both ways, and the gold's rows from the
    tie on must be rows of the tie)."""
    k = len(want)
    if not k or len(full_ascending) != len(full_descending) or len(full_ascending) <= k:
        return None
    if repr(full_ascending[:k]) != repr(ascending) or repr(full_descending[:k]) != repr(descending):
        return None
    if collections.Counter(map(repr, full_ascending)) != collections.Counter(map(repr, full_descending)):
        return None
    blocks = tie_blocks(full_ascending, full_descending) or []
    start, end = next(((i, j) for i, j in blocks if i < k <= j), (k, k))
    if end <= k:
        return None
    pool = full_ascending[start:end]
    if collections.Counter(map(repr, want[start:])) - collections.Counter(map(repr, pool)):
        return None
    return start, pool


def order_keys(query: str, columns: list[str]) -> list[int] | None:
    """The result columns a query's top-level ORDER BY sorts on, in order (``ORDER BY 2``, a column's name or
    alias); None when there is none or a term is not surely a column of the result (an expression, a column not
    selected, a qualified ``t.name``: a result column called ``name`` may be another table's, and ordering on
    it would let rows trade places that ``t.name`` orders; then the ties are found by running the gold with
    tie-breaks, ``tie_blocks``)."""
    span = order_span(query)
    if span is None:
        return None
    start, end = span
    masked = _masked(query)
    terms, cut = [], start
    for i in range(start, end + 1):
        if i == end or masked[i] == ",":
            terms.append(query[cut:i].strip())
            cut = i + 1
    names = [str(c).lower() for c in columns]
    keys = []
    for term in terms:
        while True:
            shorter = _TERM_SUFFIX.sub("", term)
            if shorter == term:
                break
            term = shorter.strip()
        if term.isdigit() and 1 <= int(term) <= len(columns):
            keys.append(int(term) - 1)
            continue
        if "." in _masked(term):  # (a dot inside a quoted name is the name's own)
            return None
        name = term.strip().strip('"`[]').lower()
        if not name or names.count(name) != 1:
            return None
        keys.append(names.index(name))
    return keys or None


def tie_blocks(ascending: list[list[Any]], descending: list[list[Any]]) -> list[tuple[int, int]] | None:
    """Runs of rows that tie on a gold's ORDER BY, from the gold run twice with every result column added to its
    ORDER BY as a tie-break, ascending and descending (tied rows come out in opposite orders): a block ends
    wherever the rows so far are the same multiset in both. Rows the ORDER BY puts apart keep their order in both
    runs, so every block lies within a tie (rows that are equal in every column cannot be told apart, and need
    not be). None when the runs do not line up."""
    if len(ascending) != len(descending):
        return None
    blocks, start, balance = [], 0, collections.Counter()
    for n, (a, b) in enumerate(zip(ascending, descending, strict=True)):
        balance[repr(a)] += 1
        balance[repr(b)] -= 1
        if not +balance and not -balance:
            blocks.append((start, n + 1))
            start = n + 1
    if start < len(ascending):
        blocks.append((start, len(ascending)))  # a LIMIT that cut a tie: which tied rows made it may differ
    return blocks


def rows_match(got: list[list[Any]], want: list[list[Any]], ordered: bool, tol: float,
               keys: list[int] | None = None, blocks: list[tuple[int, int]] | None = None,
               cut: tuple[int, list[list[Any]]] | None = None) -> tuple[bool, str]:
    """Whether two result sets (rows of comparable values) are the same; (False, why) when not. Ordered with
    ``keys`` (the gold's ORDER BY columns): the key columns in the gold's order, rows that tie on them in any
    order; ordered with ``blocks`` (``tie_blocks``: the ORDER BY is on columns not selected): the blocks in the
    gold's order, the rows within a block in any order. Ordered with ``cut`` (``limit_cut``: the gold's LIMIT
    ends within a tie): the rows before the tie as above, the rows from it on any rows of the tie (each once)."""
    if len(got) != len(want):
        return False, f"{len(got)} rows, expected {len(want)}"
    if ordered and cut is not None and 0 <= cut[0] < len(want):
        start, pool = cut
        same, why = rows_match(got[:start], want[:start], True, tol, keys,
                               [(i, j) for i, j in blocks or () if j <= start] or None)
        if not same:
            return False, why
        if not _multiset_within(got[start:], pool, tol):
            return False, (f"rows {start + 1}-{len(got)} are not all among the {len(pool)} rows that tie there on "
                           "the gold's ORDER BY (where its LIMIT cuts them)")
        return True, ""
    if ordered and not keys and blocks and any(j - i > 1 for i, j in blocks):
        for i, j in blocks:
            if j - i == 1:
                if not all(cells_match(a, b, tol) for a, b in zip(got[i], want[i], strict=True)):
                    return False, (f"row {i + 1} is {_show(got[i])}, expected {_show(want[i])} (in the order of "
                                   "the gold's ORDER BY)")
                continue
            same, why = rows_match(got[i:j], want[i:j], False, tol)
            if not same:
                return False, f"rows {i + 1}-{j} (tied on the ORDER BY): {why}"
        return True, ""
    if ordered and keys:
        i = 0
        while i < len(want):
            j = i + 1
            while j < len(want) and all(cells_match(want[j][k], want[i][k], 0.0) for k in keys):
                j += 1
            for n in range(i, j):
                if not all(cells_match(got[n][k], want[n][k], tol) for k in keys):
                    return False, (f"row {n + 1} is {_show(got[n])}, expected {_show(want[n])} (in the order of "
                                   f"the gold's ORDER BY)")
            same, why = rows_match(got[i:j], want[i:j], False, tol)
            if not same:
                return False, f"rows {i + 1}-{j} (tied on the ORDER BY): {why}"
            i = j
        return True, ""
    if not ordered:
        got, want = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if not all(cells_match(a, b, tol) for a, b in zip(g, w, strict=True)):
            if not ordered and len(got) <= 2000 and _matching(got, want, tol):
                return True, ""  # numbers within the tolerance sorted differently
            return False, f"row {i + 1} is {_show(g)}, expected {_show(w)}" + ("" if ordered else " (rows sorted)")
    return True, ""


def column_orders(got: list[list[Any]], want: list[list[Any]], tol: float,
                  limit: int = MAX_COLUMN_ORDERS) -> Iterator[list[int]]:
    """Orders of ``got``'s columns (``order[j]``: the got column that stands for want's column j) under which
    every column holds the same values as want's (as a multiset, numbers within ``tol``), the identity first;
    at most ``limit`` of them, found in at most ``MAX_COLUMN_STEPS`` steps. Of got's columns that are equal
    row by row only the first unused one is tried (swapping them gives the same rows). Both have rows of the
    same width and the same number of rows."""
    width = len(want[0]) if want else 0

    def values(rows: list[list[Any]], i: int) -> list[Any]:
        return sorted((r[i] for r in rows), key=_cell_key)

    got_columns = [values(got, i) for i in range(width)]
    want_columns = [values(want, j) for j in range(width)]
    def same(a: list[Any], b: list[Any]) -> bool:  # equal lists, or reals within the tolerance
        if a == b:
            return True
        reals = any(type(v) is float for v in a) or any(type(v) is float for v in b)
        return reals and all(cells_match(x, y, tol) for x, y in zip(a, b, strict=True))

    fits = [[i for i in range(width) if same(got_columns[i], want_columns[j])] for j in range(width)]
    if not all(fits):
        return
    for j in range(width):  # the identity first: the completion's own order
        if j in fits[j]:
            fits[j].remove(j)
            fits[j].insert(0, j)
    first_equal: dict[tuple, int] = {}
    twin = [first_equal.setdefault(tuple(repr(r[i]) for r in got), i) for i in range(width)]
    order: list[int] = []
    used: set[int] = set()
    tried = steps = 0

    def extend() -> Iterator[list[int]]:
        nonlocal tried, steps
        j = len(order)
        if j == width:
            tried += 1
            yield list(order)
            return
        for i in fits[j]:
            steps += 1
            if tried >= limit or steps > MAX_COLUMN_STEPS:
                return
            if i in used or any(twin[k] == twin[i] and k not in used for k in range(i)):
                continue
            order.append(i)
            used.add(i)
            yield from extend()
            used.discard(i)
            order.pop()

    yield from extend()


def results_match(got: list[list[Any]], want: list[list[Any]], ordered: bool, tol: float,
                  keys: list[int] | None = None, any_column_order: bool = False,
                  blocks: list[tuple[int, int]] | None = None,
                  cut: tuple[int, list[list[Any]]] | None = None) -> tuple[bool, str]:
    """``rows_match``; with ``any_column_order`` also under each order of got's columns that gives every
    column want's values (Spider's judge: the same result set with its columns permuted)."""
    same, why = rows_match(got, want, ordered, tol, keys, blocks, cut)
    if same or not any_column_order or len(got) != len(want) or not want:
        return same, why
    limit = max(1, min(MAX_COLUMN_ORDERS, MAX_COLUMN_CELLS // max(1, len(want) * len(want[0]))))
    orders: Iterator[Any] = column_orders(got, want, tol, limit)
    if ordered and cut is not None and 0 <= cut[0] < len(want):  # rows past the cut may hold other tied values
        limit = max(1, min(limit, MAX_COLUMN_CELLS // max(1, (len(want) + len(cut[1])) * len(want[0]))))
        orders = (column_orders(got[:cut[0]], want[:cut[0]], tol, limit) if cut[0]
                  else itertools.islice(itertools.permutations(range(len(want[0]))), limit))
    for order in orders:
        order = list(order)
        if order == list(range(len(order))):
            continue  # the completion's own order: compared above
        if rows_match([[r[i] for i in order] for r in got], want, ordered, tol, keys, blocks, cut)[0]:
            return True, ""
    return False, why


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


def _rows(result: Any, cut_too: bool = False) -> list[list[Any]] | None:
    """A harness result's rows as comparable values; None for an error or no result, and for a result cut at
    MAX_ROWS unless ``cut_too``."""
    if not isinstance(result, dict) or not isinstance(result.get("rows"), list) or (result.get("more")
                                                                                      and not cut_too):
        return None
    return [[_value(c) for c in r] for r in result["rows"] if isinstance(r, list)]


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
        Param("compare", "string", "row order: auto (ordered when the gold query has a top-level ORDER BY; rows "
              "that tie on it in any order, and where its LIMIT (without OFFSET) cuts a tie any of the tied rows), "
              "ordered or unordered", default="auto", choices=COMPARE_MODES),
        Param("float_tolerance", "number", "numbers match within tol * max(1, |expected|)", default=1e-6),
        Param("match", "string", "columns: in the gold's (or expected rows') order, or in any order that makes "
              "the results the same (Spider's official judge)", default="columns_in_order", choices=COLUMN_MODES),
    )

    def validate(self, spec: Spec) -> Spec:
        self.require(spec, "setup")
        spec = spec.with_defaults(compare="auto", match="columns_in_order")
        if spec.compare not in COMPARE_MODES:
            raise InvalidSpec(f"spec.compare {spec.compare!r} is not valid; valid: {', '.join(COMPARE_MODES)}")
        if spec.match not in COLUMN_MODES:
            raise InvalidSpec(f"spec.match {spec.match!r} is not valid; valid: {', '.join(COLUMN_MODES)}")
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
        ordered = spec.compare == "ordered" or (spec.compare == "auto" and bool(spec.gold) and orders_rows(spec.gold))
        span = order_span(spec.gold) if ordered and spec.gold else None
        limit_at = limit_start(spec.gold) if span else None
        payload = json.dumps({"setup": spec.setup, "databases": databases, "gold": spec.gold, "query": query,
                              "timeout_s": limit, "max_rows": MAX_ROWS, "gold_ties_at": span[1] if span else None,
                              "gold_limit_at": limit_at})
        runs = 1 + (2 if span else 0) + (2 if limit_at is not None else 0) + 1  # per database
        step = Step("query", [*PYTHON, f"{HARNESS_DIR}/sql_harness.py"], limit * (1 + runs * len(databases)) + 5,
                    stdin=payload, memory_bytes=ctx.config.memory_mb << 20, output_limit=OUTPUT_LIMIT)
        run = await run_job(ctx, Job(steps=[step]))
        if isinstance(run, Outcome):
            return run
        result = run.steps[0] if run.steps else None
        lines = result.stdout.splitlines() if result is not None else []
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
            keys = order_keys(spec.gold, gold.get("columns", [])) if ordered and isinstance(gold, dict) else None
            blocks, cut = None, None
            asc, desc = _rows(event.get("gold_asc"), True), _rows(event.get("gold_desc"), True)
            if ordered and isinstance(gold, dict) and asc is not None and desc is not None:
                if not keys:
                    blocks = tie_blocks(asc, desc)
                full_asc, full_desc = _rows(event.get("gold_full_asc")), _rows(event.get("gold_full_desc"))
                if (full_asc is not None and full_desc is not None and not gold.get("more")
                        and not event["gold_asc"].get("more") and not event["gold_desc"].get("more")):
                    cut = limit_cut(want_rows, asc, desc, full_asc, full_desc)
            tests.append(self._judge(name, got, want_rows, want_cols, ordered, tol, keys,
                                     spec.match == "columns_any_order", blocks, cut))
        return Outcome.from_tests(tests, **extra, **streams(result))

    @staticmethod
    def _judge(name: str, got: Any, want_rows: list, want_cols: int | None, ordered: bool, tol: float,
               keys: list[int] | None = None, any_column_order: bool = False,
               blocks: list[tuple[int, int]] | None = None,
               cut: tuple[int, list[list[Any]]] | None = None) -> TestOutcome:
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
        same, why = results_match(rows, want_rows, ordered, tol, keys, any_column_order, blocks, cut)
        return TestOutcome(name, Verdict.PASSED if same else Verdict.FAILED, why)
