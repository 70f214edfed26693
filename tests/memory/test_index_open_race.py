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


@pytest.mark.parametrize("failure", ["transient", "moved"])
def test_an_open_meeting_another_process_rebuild_is_tried_again_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """A rebuild deletes the index under the tree lock while another process opens it without: that open
    fails with "disk I/O error" (a MemoryStoreError: "retry, check free disk space") or DBMOVED (read as a
    read-only tree: "fix the tree's permissions"). Seen with 8 openers, 2 writers and a process rebuilding."""
    from bundlekit.errors import MemoryStoreError
    from bundlekit.memory import Memory, indexer
    from bundlekit.memory.catalog import CatalogUnavailable

    Memory(tmp_path / "tree").write("kept", name="kept", description="d", type="project", body="b")
    real, calls = indexer.Catalog, []
    again = Memory(tmp_path / "tree")

    def racing(path: Path, **kwargs: Any) -> Any:
        calls.append(again._tree.backend._lock._depth)  # the tree lock's depth at this open
        if len(calls) == 1:
            if failure == "transient":
                raise MemoryStoreError("the memory index could not be used (disk I/O error); retry")
            cause = sqlite3.OperationalError("attempt to write a readonly database")
            cause.sqlite_errorname = "SQLITE_READONLY_DBMOVED"  # type: ignore[attr-defined]
            raise CatalogUnavailable(13, str(cause)) from cause
        return real(path, **kwargs)

    monkeypatch.setattr(indexer, "Catalog", racing)
    assert [record.key for record in again.list()] == ["kept"]
    assert calls[0] == 0 and calls[1] >= 1  # the second open held the lock


def test_a_read_only_trees_index_is_not_retried_under_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bundlekit.memory import Memory, indexer
    from bundlekit.memory.catalog import CatalogUnavailable

    Memory(tmp_path / "tree").write("kept", name="kept", description="d", type="project", body="b")
    calls: list[Path] = []

    def read_only(path: Path | None, **kwargs: Any) -> Any:
        if path is not None:
            calls.append(path)
            cause = sqlite3.OperationalError("attempt to write a readonly database")
            cause.sqlite_errorname = "SQLITE_READONLY"  # type: ignore[attr-defined]
            raise CatalogUnavailable(13, str(cause)) from cause
        return indexer.__dict__["_real_catalog"](path, **kwargs)

    monkeypatch.setitem(indexer.__dict__, "_real_catalog", indexer.Catalog)
    monkeypatch.setattr(indexer, "Catalog", read_only)
    assert [record.key for record in Memory(tmp_path / "tree").list()] == ["kept"]  # served from memory
    assert len(calls) == 1
