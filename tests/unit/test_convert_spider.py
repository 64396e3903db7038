"""trainer data convert --format spider: Spider's dev.json rows and their SQLite databases become sql specs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from trainer.convert import ConvertError, convert
from trainer.convert_spider import load_database, spider
from verifier_service.spec import spec_from_json

SCHEMA = """
CREATE TABLE singer (Singer_ID int, Name text, Country text, Age int, Net_Worth real, Photo blob,
                     PRIMARY KEY (Singer_ID));
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52, 30.1, NULL), (2, 'Tribal King', 'United States', 25,
                           0.1 + 0.2, X'00ff'), (3, 'O''Brien', 'France', 43, NULL, NULL);
"""


def make_spider(root: Path, rows: list[dict], databases: dict[str, str]) -> Path:
    for db_id, script in databases.items():
        folder = root / "database" / db_id
        folder.mkdir(parents=True)
        db = sqlite3.connect(folder / f"{db_id}.sqlite")
        db.executescript(script)
        db.close()
    path = root / "dev.json"
    path.write_text(json.dumps(rows))
    return path


ROWS = [
    {"db_id": "concert_singer", "question": "How many singers do we have?", "query": "SELECT count(*) FROM singer"},
    {"db_id": "concert_singer", "question": "Show names of singers by age, oldest first.",
     "query": "SELECT name FROM singer ORDER BY age DESC"},
    {"db_id": "missing_db", "question": "Anything?", "query": "SELECT 1"},
]


def test_rows_carry_the_database_as_setup_and_the_gold(tmp_path):
    out = convert("spider", make_spider(tmp_path, ROWS, {"concert_singer": SCHEMA}))
    assert [r["id"] for r in out.rows] == ["spider-concert_singer-0", "spider-concert_singer-1"]
    spec = json.loads(out.rows[1]["verification"])
    assert spec["kind"] == "sql" and spec["gold"] == ROWS[1]["query"] and spec["match"] == "columns_any_order"
    spec_from_json(spec)
    assert out.rows[1]["reference"] == "```sql\nSELECT name FROM singer ORDER BY age DESC\n```"
    assert "CREATE TABLE singer" in out.rows[0]["prompt"] and "How many singers" in out.rows[0]["prompt"]
    assert "INSERT" not in out.rows[0]["prompt"]  # the prompt has the schema, not the data
    # the setup rebuilds the same rows, with their types (a real, a blob, a quote in a string, NULLs)
    replayed = sqlite3.connect(":memory:")
    replayed.executescript(spec["setup"])
    original = sqlite3.connect(tmp_path / "database/concert_singer/concert_singer.sqlite")
    query = "SELECT *, typeof(Net_Worth), typeof(Photo) FROM singer ORDER BY Singer_ID"
    assert replayed.execute(query).fetchall() == original.execute(query).fetchall()
    assert replayed.execute("SELECT Net_Worth FROM singer WHERE Singer_ID = 2").fetchone()[0] == 0.1 + 0.2


def test_a_missing_database_flags_its_rows(tmp_path):
    out = convert("spider", make_spider(tmp_path, ROWS, {"concert_singer": SCHEMA}))
    assert list(out.flagged) == ["spider-missing_db-2"]
    assert "not found" in out.flagged["spider-missing_db-2"]


def test_a_database_too_large_for_one_spec_is_flagged(tmp_path):
    make_spider(tmp_path, ROWS[:1], {"concert_singer": SCHEMA})
    out = spider(ROWS[:1], tmp_path / "database", max_setup_bytes=100)
    assert not out.rows and "more than a spec may carry" in out.flagged["spider-concert_singer-0"]
    assert "more than a spec may carry" in load_database(
        tmp_path / "database/concert_singer/concert_singer.sqlite", 100).problem


def test_not_spider_rows_are_a_clear_error(tmp_path):
    path = make_spider(tmp_path, [{"question": "no db_id"}], {})
    with pytest.raises(ConvertError, match="db_id"):
        convert("spider", path)
    with pytest.raises(ConvertError, match="not a database name"):
        spider([{"db_id": "../etc", "question": "q", "query": "SELECT 1"}], tmp_path / "database")
