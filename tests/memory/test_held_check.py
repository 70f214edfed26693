"""One listing per merge transaction (``Indexer.held_check``; specs/memory.md, "Freshness"): inside
``Memory.transaction()`` the tree lock is held throughout, so the first read lists the tree and a later read or
the write takes that check's word while the directory and the index are as it left them, within REUSE_S. A file
another program adds or replaces meanwhile moves the directory and is listed again; this transaction's own write
ends the reuse; past REUSE_S the tree is listed again whatever it looks like.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bundlekit.memory import Memory, indexer
from bundlekit.memory import backend as backend_module
from bundlekit.memory.backend import DirectoryBackend
from bundlekit.memory.lock import TreeLock

from .conftest import Clock, count_listings, fields


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each listing of a tree looked at, in order. The tree counts as settled (``RACY_NS`` 0):
    the fixtures write it milliseconds before, and a directory changed within a timestamp tick is listed again."""
    monkeypatch.setattr(indexer, "RACY_NS", 0)
    return count_listings(monkeypatch)


def _text(key: str, body: str) -> str:
    return (f"---\nname: {key}\ndescription: d\ntype: project\ncreated: 2026-01-01T00:00:00Z\n"
            f"updated: 2026-01-01T00:00:00Z\nrevision: 1\n---\n\n{body}\n")


@pytest.fixture
def grown(tree: Path, clock: Clock) -> Memory:
    mem = Memory(tree, clock=clock)
    for number in range(3):
        mem.write(f"project_m{number}", **fields(name=f"Memory {number}", body=f"body {number}"))
    mem.close()
    return Memory(tree, clock=clock)


def test_a_merge_transaction_lists_the_tree_once(grown: Memory, listings: list[int]) -> None:
    with grown.transaction() as tx:
        names = tx.names()
        tx.records_of(names)
        tx.digests()
        tx.apply({"project_m0.md": _text("project_m0", "merged")}, {})
    assert len(listings) == 1
    assert "merged" in (grown.read("project_m0") or pytest.fail("gone")).body


def test_a_file_added_by_another_program_mid_transaction_is_listed(grown: Memory, tree: Path) -> None:
    with grown.transaction() as tx:
        assert "project_new.md" not in tx.names()
        time.sleep(0.05)  # past the file system's timestamp tick: the directory's stamp moves with the add
        (tree / "project_new.md").write_text(_text("project_new", "from elsewhere"), encoding="utf-8")
        assert "project_new.md" in tx.names()
        assert "project_new.md" in tx.digests()


def test_the_transactions_own_write_ends_the_reuse(grown: Memory, listings: list[int]) -> None:
    with grown.transaction() as tx:
        tx.names()
        tx.apply({"project_added.md": _text("project_added", "written")}, {})
        assert "project_added.md" in tx.names()
    assert len(listings) == 2


def test_past_the_reuse_window_the_tree_is_listed_again(grown: Memory, listings: list[int],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer, "REUSE_S", 0.0)
    with grown.transaction() as tx:
        tx.names()
        tx.digests()
    assert len(listings) == 2


def test_a_transaction_ended_leaves_no_check_for_the_next(grown: Memory, listings: list[int]) -> None:
    with grown.transaction() as tx:
        tx.names()
    with grown.transaction() as tx:
        tx.names()
    assert len(listings) == 2


def _frozen_stamp(monkeypatch: pytest.MonkeyPatch, tree: Path, when_ns: int) -> None:
    """The tree directory's stamp as a coarse-clock file system gives it: every change within the tick ``when_ns``
    (1 s on ext3 and HFS+, 2 s on FAT) leaves the same (inode, mtime, ctime)."""
    inode = tree.stat().st_ino
    monkeypatch.setattr(DirectoryBackend, "stamp", lambda self: (inode, when_ns, when_ns))


def test_a_file_replaced_within_the_directorys_timestamp_tick_is_read_again(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another program replaces a memory after the transaction's first listing, within the tick that stamped the
    # directory: its stamp stays, so only the racy rule (RACY_NS) has the merge's digests see the new bytes.
    _frozen_stamp(monkeypatch, tree, time.time_ns())
    with grown.transaction() as tx:
        before = tx.digests()["project_m0.md"]
        tx.names()
        replaced = tree / "project_m0.tmp"
        replaced.write_text(_text("project_m0", "written elsewhere"), encoding="utf-8")
        replaced.replace(tree / "project_m0.md")
        after = tx.digests()["project_m0.md"]
    assert after != before


def test_a_directory_stamped_in_the_future_is_listed_again(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch, listings: list[int]
) -> None:
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns() + 3_600_000_000_000)  # the clock was set back an hour
    with grown.transaction() as tx:
        tx.names()
        tx.digests()
    assert len(listings) == 2


def test_a_directory_settled_past_the_tick_is_listed_once(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch, listings: list[int]
) -> None:
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns() - 3_000_000_000)
    with grown.transaction() as tx:
        tx.names()
        tx.digests()
    assert len(listings) == 1


def _edit_in_place(tree: Path, key: str, body: str) -> None:
    (tree / f"{key}.md").write_text(_text(key, body), encoding="utf-8")  # the same inode: the directory stays


def test_a_read_that_finds_work_lists_the_tree_once_when_nothing_moved_before_the_lock(
    grown: Memory, tree: Path, listings: list[int]
) -> None:
    """A build's read (no lock) that finds a changed file takes the lock to bring the index in step: the listing
    it made just before stands when neither the directory nor the index moved meanwhile (issue 37: a sync's
    build listed 10,000 files twice)."""
    _edit_in_place(tree, "project_m1", "edited in place")
    with grown.transaction(lock=False) as tx:
        checked = tx.checked({})
    assert len(listings) == 1
    assert any(name == "project_m1.md" and b"edited in place" in data for name, data, _r in checked.found)


def test_a_file_another_writer_replaced_before_the_lock_is_listed_again(
    grown: Memory, tree: Path, listings: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _edit_in_place(tree, "project_m1", "edited in place")
    hold = DirectoryBackend.hold

    def replaced_first(self: DirectoryBackend) -> object:  # another writer's atomic replace, just before the lock
        time.sleep(0.05)  # past the file system's timestamp tick: the directory's stamp moves with the rename
        (tree / "project_new.md.tmp").write_text(_text("project_new", "from elsewhere"), encoding="utf-8")
        (tree / "project_new.md.tmp").rename(tree / "project_new.md")
        return hold(self)

    monkeypatch.setattr(DirectoryBackend, "hold", replaced_first)
    with grown.transaction(lock=False) as tx:
        checked = tx.checked({})
    assert len(listings) == 2
    assert "project_new.md" in {name for name, _data, _r in checked.found}


def test_a_whole_read_of_a_tree_changed_this_tick_lists_it_once(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch, listings: list[int]
) -> None:
    """A build right after edits (a sync's writer round) finds the directory's stamp racy: a listing made before the
    lock could not be taken at its word under it, so the read takes the lock first and lists the tree once."""
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns())
    _edit_in_place(tree, "project_m1", "edited in place")
    with grown.transaction(lock=False) as tx:
        checked = tx.checked({})
    assert len(listings) == 1
    assert any(name == "project_m1.md" and b"edited in place" in data for name, data, _r in checked.found)
    assert "edited in place" in (grown.read("project_m1") or pytest.fail("gone")).body


def test_a_whole_read_of_a_read_only_index_folder_changed_this_tick_takes_no_lock(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the index folder cannot be written, the lock is not taken before the listing (a read-only tree still
    builds: the lock-free check finds nothing to do)."""
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns())
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    held: list[int] = []
    hold = DirectoryBackend.hold

    def counted(self: DirectoryBackend) -> object:
        held.append(1)
        return hold(self)

    monkeypatch.setattr(DirectoryBackend, "hold", counted)
    with grown.transaction(lock=False) as tx:
        assert len(tx.checked({}).found) == 3
    assert held == []


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many names each ``read_many`` call read, in order, from now on."""
    seen: list[int] = []
    read_many = DirectoryBackend.read_many

    def counted(self: DirectoryBackend, names: list[str]) -> object:
        seen.append(len(names))
        return read_many(self, names)

    monkeypatch.setattr(DirectoryBackend, "read_many", counted)
    return seen


@pytest.mark.skipif(backend_module._statscan is None, reason="the C listing is not built here")
def test_a_builds_read_lists_and_reads_the_tree_in_one_pass(
    grown: Memory, listings: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build's read (``checked``) takes each file's bytes from the listing that read them as it listed them
    (``_statscan.scan`` with a limit): no second pass reads the listed files again."""
    reads = _reads(monkeypatch)
    with grown.transaction(lock=False) as tx:
        checked = tx.checked({})
    assert len(listings) == 1 and reads == []
    assert sorted(name for name, _data, _r in checked.found) == ["project_m0.md", "project_m1.md", "project_m2.md"]


def test_a_second_builds_read_reads_the_files_again_when_the_check_stands(grown: Memory, tree: Path) -> None:
    """The bytes a listing read are handed out once: a second build within the reuse window (the check stands,
    no listing) reads every file again, so an edit in place since is what it carries."""
    with grown.transaction(lock=False) as tx:
        tx.checked({})
    _edit_in_place(tree, "project_m2", "edited after the first build")
    with grown.transaction(lock=False) as tx:
        found = {name: data for name, data, _r in tx.checked({}).found}
    assert b"edited after the first build" in found["project_m2.md"]


def test_a_whole_read_of_a_tree_changed_this_tick_does_not_wait_for_a_writer_holding_the_lock(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock a build's read of a racy tree takes before it lists is taken only when it is free: a writer holding
    it (a sync round publishing) leaves the read to the lock-free check, which finds nothing to do and waits for
    nobody, as it did before the read took the lock first (it waited out the lock's timeout and failed)."""
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns())
    reader = Memory(tree, lock_timeout=0.2)
    with TreeLock(tree).hold():  # another writer (its own open of the lock file: flock excludes it)
        with reader.transaction(lock=False) as tx:
            assert len(tx.checked({}).found) == 3


def test_a_whole_read_of_a_tree_changed_this_tick_reads_where_the_lock_cannot_be_opened(
    grown: Memory, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock that cannot be opened (a folder planted where the lock file lives; one of another user) refuses the
    writes, not a build's read of a tree the index agrees with, whenever the directory last changed."""
    monkeypatch.setattr(indexer, "RACY_NS", 2_000_000_000)
    _frozen_stamp(monkeypatch, tree, time.time_ns())
    lock = tree / ".bundlekit" / "lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    with grown.transaction(lock=False) as tx:
        assert len(tx.checked({}).found) == 3
