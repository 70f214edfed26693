"""Agents opening a new tree's index at once: none sees a torn header, none fails the switch to WAL mode.

A landing's CI met this: six test processes listed the fixture tree together while collecting, and one failed
with "database is locked". Two races were behind it, both in ``catalog.database``:

- The header was read in two statements, so a creator's commit between them gave another opener
  ``(application id 0, version 11)``: a "foreign" file, to be deleted and rebuilt under the creator.
- ``PRAGMA journal_mode = WAL`` can answer SQLITE_BUSY at once, without the busy handler, when two
  connections ask for the file at the same moment: SQLite returns rather than risk a deadlock
  (sqlite.org/c3ref/busy_handler.html: "If SQLite determines that invoking the busy handler could result in
  a deadlock, it will go ahead and return SQLITE_BUSY"). The switch is now retried until the timeout.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from bundlekit.memory.catalog import database
from bundlekit.memory.catalog.database import Database

OPENERS = 6
ROUNDS = 150  # before the fix, ~6% of opens saw a torn header: dozens of failures in these rounds


def test_openers_of_a_new_index_at_once_all_succeed(tmp_path: Path) -> None:
    failures: list[BaseException] = []

    def open_it(path: Path, start: threading.Barrier) -> None:
        start.wait()
        try:
            Database(path, timeout=30).close()
        except BaseException as exc:  # noqa: BLE001 (collected and shown below)
            failures.append(exc)

    for round_ in range(ROUNDS):
        path = tmp_path / f"{round_}.sqlite"
        start = threading.Barrier(OPENERS)
        threads = [threading.Thread(target=open_it, args=(path, start)) for _ in range(OPENERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


class _Busy:
    """A connection whose WAL switch is refused as busy ``times`` times (or always), then taken."""

    def __init__(self, times: float, name: str = "SQLITE_BUSY") -> None:
        self.times, self.name, self.calls = times, name, 0

    def execute(self, sql: str) -> Any:
        assert sql == "PRAGMA journal_mode = WAL"
        self.calls += 1
        if self.calls <= self.times:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorname = self.name  # type: ignore[attr-defined]
            raise error
        return None


def test_a_busy_wal_switch_is_retried() -> None:
    conn = _Busy(3)
    database._enter_wal(conn, 5.0)  # type: ignore[arg-type]
    assert conn.calls == 4


def test_a_wal_switch_busy_past_the_timeout_is_raised() -> None:
    conn = _Busy(float("inf"))
    with pytest.raises(sqlite3.OperationalError):
        database._enter_wal(conn, 0.05)  # type: ignore[arg-type]
    assert conn.calls > 1


def test_another_error_of_the_wal_switch_is_raised_at_once() -> None:
    conn = _Busy(1, name="SQLITE_IOERR")
    with pytest.raises(sqlite3.OperationalError):
        database._enter_wal(conn, 5.0)  # type: ignore[arg-type]
    assert conn.calls == 1
