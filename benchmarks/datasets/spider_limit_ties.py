"""Checks, apart from the ``sql`` kind's code, the candidates that ours passes and Spider's judge fails under a
gold ``... ORDER BY e LIMIT k``: is the candidate's result one the gold allows when rows tie on ``e`` at the
LIMIT?

For each such candidate in ``benchmarks.datasets.spider``'s ``--out`` file (ours PASSED, the judge with
``--keep_distinct`` 0) it runs, on the row's ``.sqlite`` file, the gold without its LIMIT with ``e`` selected
beside the gold's columns, takes the key of row k, and asks whether the candidate's rows (its columns in some
order) are the rows before that key's tie (as a multiset) plus rows of the tie (each at most once), k in all.
The gold is taken apart with a plain regular expression (its last ``ORDER BY ... LIMIT n``, its first
``FROM``), not with the kind's parser; golds it cannot take apart are listed as unchecked.

    python -m benchmarks.datasets.spider_limit_ties /tmp/spider-agreement.jsonl [--data /work/data/spider] [--all]

With ``--all``, every candidate of such a gold is checked, whatever the verdicts, and the count of those where
ours (PASSED or not) and this check disagree is printed (a control: a candidate ours fails should be one the
gold does not allow; columns in another order count, as with the spider converter's ``columns_any_order``).
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import sqlite3
import sys
from pathlib import Path

_TAIL = re.compile(r"\border\s+by\s+(.+?)\s+limit\s+(\d+)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DIRECTION = re.compile(r"\s+(?:asc|desc)\s*$", re.IGNORECASE)


def allowed(db: sqlite3.Connection, gold: str, got: list[tuple]) -> bool | None:
    """Whether ``got`` is a result the gold's ORDER BY ... LIMIT allows; None when the gold cannot be taken apart."""
    tail = _TAIL.search(gold)
    select = re.search(r"\bfrom\b", gold, re.IGNORECASE)
    if tail is None or select is None or "," in tail.group(1):
        return None
    key, k = _DIRECTION.sub("", tail.group(1)), int(tail.group(2))
    try:
        want = db.execute(gold).fetchall()
        full = db.execute(f"{gold[:select.start()]}, {key} {gold[select.start():tail.start()]} "
                          f"ORDER BY {tail.group(1)}").fetchall()
    except sqlite3.Error:
        return None
    if not want:
        return not got
    width = len(want[0])
    if len(full) < k:
        return None
    edge = full[k - 1][width:]
    before = collections.Counter(r[:width] for r in full[:k] if r[width:] != edge)
    tie = collections.Counter(r[:width] for r in full if r[width:] == edge)
    if any(len(r) != width for r in got):
        return False
    for order in itertools.islice(itertools.permutations(range(width)), 720):  # the judge's column orders
        rows = collections.Counter(tuple(r[i] for i in order) for r in got)
        if len(got) == len(want) and not before - rows and not (rows - before) - tie:
            return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("verdicts", type=Path, help="the --out file of benchmarks.datasets.spider")
    parser.add_argument("--data", type=Path, default=Path("/work/data/spider"))
    parser.add_argument("--all", action="store_true", help="check every candidate of such golds (a control)")
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    for line in args.verdicts.read_text().splitlines():
        r = json.loads(line)
        chosen = args.all or (r["ours"] == "PASSED" and str(r["distinct_kept"]) == "0")
        if not chosen or not _TAIL.search(r["gold"]):
            continue
        name = r["id"].split("-")[1]
        db = sqlite3.connect(f"file:{args.data / 'database' / name / (name + '.sqlite')}?mode=ro", uri=True)
        try:
            got = db.execute(r["query"]).fetchall()
            verdict = allowed(db, r["gold"], got)
        except sqlite3.Error:
            verdict = None
        finally:
            db.close()
        word = {True: "allowed", False: "NOT ALLOWED", None: "unchecked"}[verdict]
        if args.all:
            word = f"ours {r['ours']}, {word}"
        counts[word] += 1
        print(f"{word}\t{r['id']}\t{r['candidate']}\t{r['query']}\t{got[:3] if verdict is not None else ''}")
    print(dict(counts), file=sys.stderr)
    return 1 if counts["NOT ALLOWED"] or counts["ours PASSED, NOT ALLOWED"] else 0


if __name__ == "__main__":
    sys.exit(main())
