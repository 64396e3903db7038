"""The sql kind's harness: runs a query (and the gold query) on fresh SQLite databases and prints the rows.

Input (stdin, one JSON object): ``setup`` (the SQL script every database starts from), ``databases`` (one
extra SQL script per database), ``gold`` (the gold query, or ""), ``query`` (the completion's query),
``timeout_s`` (per query), ``max_rows``, ``gold_ties_at`` (where the gold's top-level ORDER BY terms end, or
null: the gold runs twice more with every result column added there as a tie-break, ascending then descending,
so the host sees which rows tie), ``gold_limit_at`` (where the gold's top-level LIMIT clause starts, with
``gold_ties_at``, or null: where the tie-break runs end in a tie, they are made once more without the LIMIT,
``gold_full_asc`` and ``gold_full_desc``, cut at the first row past the gold's last one where both hold the
same rows: the host sees every row that ties with the gold's last one). Output (stdout): one JSON line per
database, ``{"gold": R, "gold_asc": R, "gold_desc": R, "gold_full_asc": R, "gold_full_desc": R, "query": R}``
where R is ``{"columns": [...], "rows": [[cell, ...], ...], "more": bool}`` or ``{"error": "syntax" | "timeout" |
"denied" | "runtime" | "setup", "message": str}``. A cell is tagged: ``["n"]`` (NULL), ``["i", int]``, ``["f",
repr]``, ``["s", str]``, ``["b", hex]``. The comparison happens on the host.

The completion's query runs last on each database, under ``PRAGMA query_only`` and an authorizer that allows
reading only (no ATTACH, no PRAGMA, no writes: nothing it does reaches a file or the next query), with a
progress handler that interrupts it at its deadline (a recursive CTE that never ends). Standard library only.
"""

import json
import sqlite3
import sys
import time

READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
READ_ACTIONS.add(getattr(sqlite3, "SQLITE_RECURSIVE", 33))
SYNTAX_MARKERS = ("syntax error", "incomplete input", "unrecognized token", "no such ", "ambiguous column",
                  "one statement at a time", "wrong number of arguments", "misuse", "near \"",
                  "does not have a column", "has no column", "circular reference")


def read_only(action, *_):
    return sqlite3.SQLITE_OK if action in READ_ACTIONS else sqlite3.SQLITE_DENY


def cell(value):
    if value is None:
        return ["n"]
    if isinstance(value, int):
        return ["i", value]
    if isinstance(value, float):
        return ["f", repr(value)]
    if isinstance(value, bytes):
        return ["b", value.hex()]
    return ["s", str(value)]


def run(db, sql, timeout_s, max_rows):
    deadline = time.monotonic() + timeout_s
    db.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        cursor = db.execute(sql)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = []
        while len(rows) <= max_rows:
            batch = cursor.fetchmany(1000)
            if not batch:
                break
            rows.extend([cell(v) for v in row] for row in batch)
        more = len(rows) > max_rows
        return {"columns": columns, "rows": rows[:max_rows], "more": more}
    except sqlite3.Warning as exc:  # "You can only execute one statement at a time."
        return {"error": "syntax", "message": str(exc)}
    except sqlite3.Error as exc:
        message = str(exc)
        lowered = message.lower()
        if "interrupted" in lowered:
            return {"error": "timeout", "message": f"the query ran past its time limit of {timeout_s:g}s"}
        if "not authorized" in lowered or "readonly" in lowered or "read-only" in lowered:
            return {"error": "denied", "message": f"only a read-only query is allowed ({message})"}
        if any(marker in lowered for marker in SYNTAX_MARKERS):
            return {"error": "syntax", "message": message}
        return {"error": "runtime", "message": message}
    except MemoryError:
        return {"error": "memory", "message": "memory limit exceeded"}
    except (OverflowError, ValueError) as exc:
        return {"error": "runtime", "message": str(exc)}
    finally:
        db.set_progress_handler(None, 0)


def through_tie(asc, desc, count):
    """The two tie-break runs without the LIMIT cut at the first row n >= count where both hold the same rows
    (the end of the tie around the gold's last row); unchanged when there is none."""
    if "rows" not in asc or "rows" not in desc:
        return asc, desc
    balance = {}
    for n, (a, b) in enumerate(zip(asc["rows"], desc["rows"], strict=False)):
        for row, step in ((json.dumps(a), 1), (json.dumps(b), -1)):
            balance[row] = balance.get(row, 0) + step
            if not balance[row]:
                del balance[row]
        if n + 1 >= count and not balance:
            return ({**asc, "rows": asc["rows"][:n + 1], "more": False},
                    {**desc, "rows": desc["rows"][:n + 1], "more": False})
    return asc, desc


def cut_tie(out):
    """Whether the tie-break runs end in a tie that the LIMIT may have cut: their rows differ as multisets (a tie
    that goes on past the last row gives the smallest of its rows one way and the largest the other, unless all
    its rows are equal; then which of them the LIMIT kept does not show)."""
    asc, desc = out.get("gold_asc", {}), out.get("gold_desc", {})
    if "rows" not in asc or "rows" not in desc:
        return False
    return sorted(map(json.dumps, asc["rows"])) != sorted(map(json.dumps, desc["rows"]))


def main():
    job = json.loads(sys.stdin.read())
    for extra in job.get("databases") or [""]:
        db = sqlite3.connect(":memory:", isolation_level=None)
        out = {}
        try:
            db.executescript(job["setup"] + "\n;\n" + extra)
        except sqlite3.Error as exc:
            out = {"setup": f"the spec's SQL script failed: {exc}"}
        else:
            if job.get("gold"):
                out["gold"] = run(db, job["gold"], job["timeout_s"], job["max_rows"])
                at, columns = job.get("gold_ties_at"), out["gold"].get("columns")
                if isinstance(at, int) and columns:
                    breaks = {way: "".join(f", {n} {way.upper()}" for n in range(1, len(columns) + 1))
                              for way in ("asc", "desc")}
                    for way, tie_break in breaks.items():
                        query = job["gold"][:at] + tie_break + " " + job["gold"][at:]
                        out["gold_" + way] = run(db, query, job["timeout_s"], job["max_rows"])
                    limit_at = job.get("gold_limit_at")
                    if isinstance(limit_at, int) and at <= limit_at and "rows" in out["gold"] and cut_tie(out):
                        for way, tie_break in breaks.items():
                            query = job["gold"][:at] + tie_break + " " + job["gold"][at:limit_at]
                            out["gold_full_" + way] = run(db, query, job["timeout_s"], job["max_rows"])
                        out["gold_full_asc"], out["gold_full_desc"] = through_tie(
                            out["gold_full_asc"], out["gold_full_desc"], len(out["gold"]["rows"]))
            db.execute("PRAGMA query_only = ON")
            db.set_authorizer(read_only)
            out["query"] = run(db, job["query"], job["timeout_s"], job["max_rows"])
        db.close()
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
