"""Foreign SQLite is read only through ``convert._sqlite.ForeignDatabase``: tables only, bounded."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from bundlekit.convert._sqlite import TEMP_BYTES, ForeignDatabase
from bundlekit.errors import ConvertError


def database(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def numbers(path: Path, rows: int, value: str = "'x'") -> Path:
    return database(
        path,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT {rows}) "
        f"INSERT INTO t SELECT x, {value} FROM c",
    )


def test_rows_of_a_table_come_back_as_dicts(tmp_path: Path) -> None:
    with ForeignDatabase(numbers(tmp_path / "a.db", 3)) as db:
        assert db.rows("t") == [{"id": 1, "v": "x"}, {"id": 2, "v": "x"}, {"id": 3, "v": "x"}]


def test_a_view_is_refused_before_it_runs(tmp_path: Path) -> None:
    path = database(
        tmp_path / "v.db",
        "CREATE VIEW t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
    )
    with ForeignDatabase(path) as db, pytest.raises(ConvertError, match="'t' is a view, not a table"):
        db.rows("t")


def test_a_virtual_table_is_refused(tmp_path: Path) -> None:
    path = database(tmp_path / "f.db", "CREATE VIRTUAL TABLE t USING fts5(content)")
    with ForeignDatabase(path) as db, pytest.raises(ConvertError, match="is a virtual table"):
        db.rows("t")


def test_a_table_with_a_generated_column_is_refused(tmp_path: Path) -> None:
    path = database(
        tmp_path / "g.db",
        "CREATE TABLE t (id INTEGER PRIMARY KEY, "
        "v TEXT GENERATED ALWAYS AS (printf('%.*c', 1000, 'x')) VIRTUAL)",
        "INSERT INTO t (id) VALUES (1)",
    )
    with ForeignDatabase(path) as db, pytest.raises(ConvertError, match=r"generated columns \(v\)"):
        db.rows("t")


def test_a_missing_table_says_so(tmp_path: Path) -> None:
    with ForeignDatabase(numbers(tmp_path / "a.db", 1), what="Thing database") as db:
        with pytest.raises(ConvertError, match="is not a Thing database: it has no table 'nope'"):
            db.rows("nope")


def test_a_statement_past_the_deadline_is_stopped(tmp_path: Path) -> None:
    path = numbers(tmp_path / "n.db", 20_000)
    with ForeignDatabase(path, deadline=0.0) as db, pytest.raises(ConvertError, match="took longer than"):
        db.rows("t")


def test_a_table_over_the_row_cap_is_refused(tmp_path: Path) -> None:
    with ForeignDatabase(numbers(tmp_path / "n.db", 11), max_rows=10) as db:
        with pytest.raises(ConvertError, match="more than 10 rows"):
            db.rows("t")


def test_rows_over_the_byte_budget_are_refused(tmp_path: Path) -> None:
    path = numbers(tmp_path / "b.db", 10, "hex(zeroblob(100))")
    with ForeignDatabase(path, max_bytes=1000) as db:
        with pytest.raises(ConvertError, match="more than 1000 bytes"):
            db.rows("t")


def test_a_value_over_the_length_limit_is_refused(tmp_path: Path) -> None:
    path = numbers(tmp_path / "l.db", 1, "zeroblob(5000)")
    with ForeignDatabase(path, max_value=4096) as db:
        with pytest.raises(ConvertError, match="a value over 4096 bytes"):
            db.rows("t")


def test_reading_changes_no_byte_of_the_file_and_fires_no_trigger(tmp_path: Path) -> None:
    path = database(
        tmp_path / "t.db",
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v)",
        "CREATE TABLE log (x)",
        "CREATE TRIGGER keep AFTER UPDATE ON t BEGIN INSERT INTO log VALUES (1); END",
        "INSERT INTO t VALUES (1, 'x')",
    )
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with ForeignDatabase(path) as db:
        db.rows("t")
        db.rows("log")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.db"]


def test_the_temporary_storage_of_a_read_is_capped(tmp_path: Path) -> None:
    with ForeignDatabase(numbers(tmp_path / "a.db", 1)) as db:
        conn = db._connection()
        assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY
        pages = conn.execute("PRAGMA temp.max_page_count").fetchone()[0]
        assert pages * conn.execute("PRAGMA temp.page_size").fetchone()[0] <= TEMP_BYTES


def test_a_read_leaves_sqlite_s_process_wide_heap_limit_alone(tmp_path: Path) -> None:
    probe = sqlite3.connect(":memory:")
    before = probe.execute("PRAGMA hard_heap_limit").fetchone()[0]
    with ForeignDatabase(numbers(tmp_path / "a.db", 1)) as db:
        db.rows("t")
    assert probe.execute("PRAGMA hard_heap_limit").fetchone()[0] == before
    probe.close()


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ConvertError, match="not a usable SQLite database"):
        with ForeignDatabase(path) as db:
            db.rows("t")
