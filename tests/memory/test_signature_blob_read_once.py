"""The index's signature blob read once per generation by one connection (issue 37: a follower's round at 100,000
memories read the 6 MB blob for each of its two checks and again for its write): read again whenever another
connection commits (a planted blob is never answered from memory), never kept from a transaction that changed a
row, and always the blob of the rows (the slow path) whatever sequence of writes, rollbacks and plants came first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit.memory import Memory
from bundlekit.memory import catalog as catalog_module
from bundlekit.memory.catalog import CATALOG_FILE, Row
from bundlekit.memory.catalog import database as catalog_database
from bundlekit.memory.catalog import stat as catalog_stat
from bundlekit.memory.backend import DirectoryBackend
from bundlekit.memory.naming import HIDDEN_DIR

from .conftest import fields


def _catalog(mem: Memory, tree: Path) -> catalog_module.Catalog:
    for key in ("alpha", "beta", "gamma"):
        mem.write(key, **fields(name=key.title()))
    mem.list()  # the index in step with the files, its blob of the current generation
    mem.close()
    return catalog_module.Catalog(tree / HIDDEN_DIR / CATALOG_FILE)


def _reads(catalog: catalog_module.Catalog) -> list[str]:
    """The statements that read the blob's bytes, as the connection runs them (a check's, or a write's to diff)."""
    seen: list[str] = []
    catalog.db.conn.set_trace_callback(
        lambda sql: seen.append(sql) if "'sigs')" in sql or "SELECT rowid, value FROM state" in sql else None)
    return seen


def _rows_blob(catalog: catalog_module.Catalog) -> tuple[bytes, bytes] | None:
    rows = catalog.db.conn.execute("SELECT file, ino, mtime_ns, size FROM memory ORDER BY file").fetchall()
    return catalog_stat._split(catalog_stat.pack([r[0] for r in rows], [n for r in rows for n in r[1:]]))


def _row(name: str, signature: tuple[int, int, int]) -> Row:
    return Row(name[:-3], "reference", signature, b"\0" * 32, (0.5, 0.0, None), 10, ("n", "d", "b"), ("line", False))


def test_two_checks_and_a_write_at_one_generation_read_the_blob_once(mem: Memory, tree: Path) -> None:
    catalog = _catalog(mem, tree)
    try:
        reads = _reads(catalog)
        scan = DirectoryBackend(tree).scan()
        assert catalog.stat.compare(scan)[0] and catalog.stat.compare(scan)[0]
        assert catalog.stat.signature_blob() == _rows_blob(catalog)
        with catalog.writing(0):
            catalog.stat.put("delta.md", _row("delta.md", (1, 2, 3)))
        assert catalog.stat.signature_blob() == _rows_blob(catalog)  # the new generation's, as the write held it
        assert len(reads) == 1
    finally:
        catalog.close()


def test_a_blob_planted_by_another_connection_at_the_same_generation_is_read_not_remembered(
        mem: Memory, tree: Path) -> None:
    catalog = _catalog(mem, tree)
    try:
        before = catalog.stat.signature_blob()
        assert before is not None
        planted = catalog_stat.pack(["alpha.md", "beta.md", "gamma.md"], [7, 7, 7] * 3)
        with sqlite3.connect(tree / HIDDEN_DIR / CATALOG_FILE) as other:
            other.execute("UPDATE state SET value = ? WHERE name = 'sigs'", (planted,))
        other.close()
        assert catalog.stat.signature_blob() == catalog_stat._split(planted)
        scan = DirectoryBackend(tree).scan()
        assert not catalog.stat.compare(scan)[0]  # the listing is checked against what is stored now
    finally:
        catalog.close()


def test_a_rolled_back_transactions_blob_is_not_kept_for_its_generation(mem: Memory, tree: Path) -> None:
    """A transaction that changed a row and read the blob of its own generation, then rolled back: the next
    transaction reaches that generation number with other rows, and the blob read then is theirs."""
    catalog = _catalog(mem, tree)
    try:
        with pytest.raises(RuntimeError), catalog.writing(0):
            catalog.stat.put("delta.md", _row("delta.md", (1, 2, 3)))
            catalog.stat.finish(0)  # its blob stored inside the transaction, of the generation it moved to
            assert catalog.stat.signature_blob() is not None
            raise RuntimeError("rolled back")
        with catalog.writing(0):
            catalog.stat.put("epsilon.md", _row("epsilon.md", (4, 5, 6)))
        assert catalog.stat.signature_blob() == _rows_blob(catalog)
    finally:
        catalog.close()


_NAMES = st.sampled_from([f"{c}{i}.md" for c in "abc" for i in range(4)])
_SIG = st.tuples(st.integers(0, 2**40), st.integers(0, 2**62), st.integers(0, 5000))
_STEP = st.one_of(
    st.tuples(st.just("put"), _NAMES, _SIG), st.tuples(st.just("remove"), _NAMES, _SIG),
    st.tuples(st.just("rollback"), _NAMES, _SIG), st.tuples(st.just("plant"), _NAMES, _SIG),
    st.tuples(st.just("read"), _NAMES, _SIG),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, max_size=12))
def test_the_blob_a_connection_reads_is_always_the_stored_one(mem: Memory, tree: Path, steps: list[tuple[str, str, tuple[int, int, int]]]) -> None:
    """Any sequence of writes, removals, rolled-back writes, blobs planted by another connection (well formed, of
    the current generation) and reads: what :meth:`signature_blob` answers is the stored blob split, as a fresh
    connection reads it."""
    path = tree / HIDDEN_DIR / CATALOG_FILE
    catalog = _catalog(mem, tree) if not path.exists() else catalog_module.Catalog(path)
    try:
        for what, name, signature in steps:
            if what == "put":
                with catalog.writing(0):
                    catalog.stat.put(name, _row(name, signature))
            elif what == "remove":
                with catalog.writing(0):
                    catalog.stat.remove(name)
            elif what == "rollback":
                with pytest.raises(RuntimeError), catalog.writing(0):
                    catalog.stat.put(name, _row(name, signature))
                    catalog.stat.finish(0)
                    catalog.stat.signature_blob()
                    raise RuntimeError("rolled back")
            elif what == "plant":
                with sqlite3.connect(path) as other:
                    other.execute("UPDATE state SET value = ? WHERE name = 'sigs'", (catalog_stat.pack([name], list(signature)),))
                other.close()
            stored = catalog_module.Catalog(path)
            try:
                expected = stored.stat.signature_blob()
            finally:
                stored.close()
            assert catalog.stat.signature_blob() == expected
    finally:
        catalog.close()


@settings(max_examples=200, deadline=None)
@given(stored=st.one_of(st.none(), st.integers(0, 3), st.binary(max_size=12_000)),
       value=st.binary(max_size=12_000), flips=st.lists(st.integers(0, 11_999), max_size=4), told=st.booleans())
def test_a_bytes_value_written_from_the_old_value_the_caller_read_is_the_value_set_whole(
        stored: bytes | int | None, value: bytes, flips: list[int], told: bool) -> None:
    """``set_bytes(old=)`` diffs against the value the caller read instead of reading it again: what is stored is
    the new value, and an ``old`` of another length than the stored value's (or a stored value that is no bytes)
    writes it whole."""
    if isinstance(stored, bytes) and told:  # a new value of the stored one's length, a few bytes changed
        changed = bytearray(stored)
        for at in flips:
            if at < len(changed):
                changed[at] ^= 0x5A
        value = bytes(changed)
    db = catalog_database.Database(None)
    try:
        with db.transaction():
            if stored is not None:
                db.set("sigs", stored)
        with db.transaction():
            if isinstance(stored, bytes):  # told: the stored value; else one byte longer than it
                db.set_bytes("sigs", value, old=stored if told else stored + b"x")
            else:
                db.set_bytes("sigs", value, old=b"\0" * len(value))
        assert db.state_blob("sigs") == value
    finally:
        db.conn.close()


def _count(catalog: catalog_module.Catalog) -> int:
    return int(catalog.db.conn.execute("SELECT count(*) FROM memory").fetchone()[0])


def test_the_blob_a_write_committed_is_held_and_counts_the_rows_without_a_read(mem: Memory, tree: Path) -> None:
    """After a committed write the blob it wrote answers the next check and ``MEMORY.md``'s count (no 6 MB read
    back, no ``count(*)`` of 100,000 rows), and is the blob of the rows."""
    catalog = _catalog(mem, tree)
    try:
        with catalog.writing(0):
            catalog.stat.put("delta.md", _row("delta.md", (1, 2, 3)))
        reads = _reads(catalog)
        assert catalog.stat.rows_held() == _count(catalog) == 4
        assert catalog.stat.signature_blob() == _rows_blob(catalog)
        assert reads == []
    finally:
        catalog.close()


def test_a_write_that_did_not_commit_holds_nothing_and_another_connections_commit_ends_the_hold(
        mem: Memory, tree: Path) -> None:
    catalog = _catalog(mem, tree)
    try:
        with pytest.raises(RuntimeError), catalog.writing(0):
            catalog.stat.put("delta.md", _row("delta.md", (1, 2, 3)))
            catalog.stat.finish(0)
            raise RuntimeError("rolled back")
        held = catalog.stat.rows_held()
        assert held is None or held == _count(catalog) == 3
        with catalog.writing(0):
            catalog.stat.put("epsilon.md", _row("epsilon.md", (4, 5, 6)))
        assert catalog.stat.rows_held() == 4
        with sqlite3.connect(tree / HIDDEN_DIR / CATALOG_FILE) as other:
            other.execute("UPDATE state SET value = value + 1 WHERE name = 'written_ns'")
        other.close()
        assert catalog.stat.rows_held() is None  # read again before it counts anything
        assert catalog.stat.signature_blob() == _rows_blob(catalog)
        assert catalog.stat.rows_held() == _count(catalog) == 4
    finally:
        catalog.close()
