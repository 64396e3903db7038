"""``trainer data convert --format spider``: Spider (Yu et al., 2018) rows -> ``sql`` specs.

The input is Spider's own ``dev.json`` (or ``train_spider.json``): rows of ``db_id``, ``question`` and ``query``
(the gold). Each row's database is read from ``database/<db_id>/<db_id>.sqlite`` beside the input (the layout
of Spider's zip) and written into the spec as its ``setup``: the database's SQL dump (``CREATE`` and ``INSERT``
statements, SQLite's own ``iterdump``), which the sandbox replays into a fresh in-memory database for every
check. Before a dump is used it is replayed here and every table compared with the file's, so a dump that
would not rebuild the same rows (a value SQLite cannot write back as it read it) leaves its rows out, flagged.

The gold query goes into the spec (``gold``): its rows, computed in the sandbox, are the expected ones, and
the comparison follows Spider's execution accuracy (``exec_eval.py`` of taoyds/test-suite-sql-eval): a multiset
of rows, in order when the gold has an ``ORDER BY``, the columns in any order (``match: columns_any_order``, as
the official judge permutes them). DISTINCT counts (the judge's ``--keep_distinct``; its default deletes the
word from both queries, so a duplicated row would pass). The prompt is the question and the database's
``CREATE`` statements; the reference is the gold in a fenced ``sql`` block.

Rows left out, flagged by id: a database the input's folder lacks, and a database whose dump makes a spec
larger than a request may be (``MAX_SETUP_BYTES``, under the service's ``max_spec_bytes`` of 4 MiB).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.convert import Converted, ConvertError, _need, _row, fenced

SQL_INSTRUCTION = ("Write one SQLite query that answers the question, in a single ```sql code block.")
MAX_SETUP_BYTES = 4 * 1024 * 1024 - 64 * 1024  # the service's max_spec_bytes (4 MiB), less room for the rest


@dataclass(frozen=True)
class Database:
    """One Spider database as a spec carries it: ``setup`` (its dump) and ``schema`` (its CREATE statements);
    ``problem`` says why it cannot be used (then both are empty)."""
    setup: str = ""
    schema: str = ""
    problem: str = ""


def _table_rows(db: sqlite3.Connection, table: str) -> Counter:
    quoted = '"' + table.replace('"', '""') + '"'
    rows = db.execute(f"SELECT * FROM {quoted}").fetchall()
    return Counter(tuple((type(v).__name__, v) for v in row) for row in rows)  # type-tagged: 1 and '1' differ


def _same_tables(original: sqlite3.Connection, rebuilt: sqlite3.Connection) -> str:
    """Why the rebuilt database's tables differ from the original's ("" when they do not)."""
    names = [r[0] for r in original.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for name in names:
        try:
            if _table_rows(original, name) != _table_rows(rebuilt, name):
                return f"table {name!r} does not come back the same from its dump"
        except sqlite3.Error as exc:
            return f"table {name!r}: {exc}"
    return ""


def load_database(path: Path, max_setup_bytes: int = MAX_SETUP_BYTES) -> Database:
    """``path``'s SQL dump and schema, checked by replaying the dump."""
    if not path.is_file():
        return Database(problem=f"database file {path} not found")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return Database(problem=f"cannot open {path}: {exc}")
    try:
        statements = list(db.iterdump())
        setup = "\n".join(statements) + "\n"
        size = len(setup.encode("utf-8"))
        if size > max_setup_bytes:
            return Database(problem=f"its SQL dump is {size} bytes, more than a spec may carry "
                                    f"({max_setup_bytes} bytes)")
        schema = "\n".join(r[0].strip() + ";" for r in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY rowid"))
        rebuilt = sqlite3.connect(":memory:")
        try:
            rebuilt.executescript(setup)
            why = _same_tables(db, rebuilt)
        finally:
            rebuilt.close()
        if why:
            return Database(problem=why)
        return Database(setup=setup, schema=schema)
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        return Database(problem=f"cannot dump {path.name}: {exc}")
    finally:
        db.close()


def spider(rows: Iterable[dict[str, Any]], database_dir: Path, max_setup_bytes: int = MAX_SETUP_BYTES) -> Converted:
    """Spider rows as ``sql`` specs; databases from ``database_dir/<db_id>/<db_id>.sqlite``."""
    out = Converted()
    databases: dict[str, Database] = {}
    for number, row in enumerate(rows):
        _need(row, "db_id", "question", "query")
        db_id = str(row["db_id"])
        if "/" in db_id or db_id.startswith("."):
            raise ConvertError(f"row {number}: db_id {db_id!r} is not a database name")
        if db_id not in databases:
            databases[db_id] = load_database(database_dir / db_id / f"{db_id}.sqlite", max_setup_bytes)
        database = databases[db_id]
        rid = f"spider-{db_id}-{number}"
        if database.problem:
            out.flag(rid, f"database {db_id}: {database.problem}")
            continue
        gold = str(row["query"]).strip()
        spec = {"kind": "sql", "setup": database.setup, "gold": gold, "match": "columns_any_order"}
        prompt = (f"Database schema (SQLite):\n\n{fenced(database.schema, 'sql')}\n\nQuestion: "
                  f"{str(row['question']).strip()}\n\n{SQL_INSTRUCTION}")
        out.rows.append(_row(rid, prompt, spec, fenced(gold, "sql")))
    return out
