"""BlockStore: content-addressed, crash-safe block files and an atomic pin set."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from bundlekit._fs import is_temp_name
from bundlekit.blockstore import BlockStore, default_store_root
from bundlekit.errors import BlockMismatch, BundlekitError, MissingBlock, UsageError
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from tests.fs.test_sync_tree import flushed_before, watch_flushes


def _temp_files(directory: Path) -> list[Path]:
    """Temp files the shared write helper left under ``directory`` (a crash's leftovers)."""
    return [p for p in directory.rglob(".*") if is_temp_name(p.name)]


def test_put_then_get_returns_the_same_bytes(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"hello")
    store.put(cid, b"hello")
    assert store.get(cid) == b"hello"
    assert store.has(cid)


def test_get_of_an_absent_block_raises_missing_block(store: BlockStore) -> None:
    with pytest.raises(MissingBlock):
        store.get(make_cid(1, RAW, b"nope"))


def test_put_refuses_bytes_that_do_not_hash_to_the_cid(store: BlockStore) -> None:
    with pytest.raises(BlockMismatch):
        store.put(make_cid(1, RAW, b"hello"), b"other")
    assert list(store.iter_blocks()) == []


def test_put_many_stores_every_block_of_a_batch(store: BlockStore) -> None:
    blocks = [(make_cid(1, RAW, b"%d" % i), b"%d" % i) for i in range(300)]
    store.put_many(blocks + blocks[:3])  # a block twice in one batch is written once
    assert all(store.get(cid) == data for cid, data in blocks)
    assert _temp_files(store.root) == []


def test_a_batch_is_flushed_through_a_descriptor_opened_before_its_blocks_were_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """syncfs(2) reports only the writeback errors since its descriptor was opened: one opened at the flush would
    miss an error met writing a block back before it, and the block renamed onto lost bytes."""
    store = BlockStore(tmp_path / "s")
    events = watch_flushes(monkeypatch, created="temp")
    store.put_many([(make_cid(1, RAW, b"%d" % i), b"%d" % i) for i in range(5)])
    assert flushed_before(events, "temp"), events


def test_put_many_writes_nothing_of_a_batch_holding_a_block_that_does_not_hash_to_its_cid(
    store: BlockStore,
) -> None:
    good = (make_cid(1, RAW, b"good"), b"good")
    with pytest.raises(BlockMismatch):
        store.put_many([good, (make_cid(1, RAW, b"hello"), b"other")])
    assert list(store.iter_blocks()) == []


def test_block_file_is_named_by_cidv1_in_a_next_to_last_two_shard(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"x")
    store.put(cid, b"x")
    name = cid_to_str(cid)
    assert (store.root / "blocks" / name[-3:-1] / name).read_bytes() == b"x"


def test_cidv0_and_cidv1_spellings_find_the_same_block(store: BlockStore) -> None:
    data = b"\x0a\x02\x08\x01"  # an empty UnixFS directory node
    v0 = make_cid(0, DAG_PB, data)
    v1 = make_cid(1, DAG_PB, data)
    store.put(v0, data)
    assert store.get(v1) == data
    assert list(store.iter_blocks()) == [v1]


def test_a_leftover_temp_file_is_never_listed_as_a_block(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"x")
    shard = store.path_for(cid).parent
    shard.mkdir(parents=True)
    (shard / ".tmp-abc123").write_bytes(b"x"[:0])  # a put killed before its rename
    assert list(store.iter_blocks()) == []
    assert not store.has(cid)


def test_a_damaged_block_file_is_reported_not_served(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"hello")
    store.put(cid, b"hello")
    store.path_for(cid).write_bytes(b"hel")  # torn by something outside bundlekit
    with pytest.raises(BlockMismatch):
        store.get(cid)


def test_a_damaged_block_is_removed_so_a_new_put_repairs_it(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"hello")
    store.put(cid, b"hello")
    store.path_for(cid).write_bytes(b"")  # what a power loss can leave without fsync
    with pytest.raises(BlockMismatch):
        store.get(cid)
    assert not store.has(cid)
    store.put(cid, b"hello")
    assert store.get(cid) == b"hello"


def test_put_of_an_existing_block_is_a_no_op(store: BlockStore) -> None:
    cid = make_cid(1, RAW, b"x")
    store.put(cid, b"x")
    before = store.path_for(cid).stat().st_ino
    store.put(cid, b"x")
    assert store.path_for(cid).stat().st_ino == before


def test_put_leaves_no_temp_files_behind(store: BlockStore) -> None:
    for i in range(20):
        data = str(i).encode()
        store.put(make_cid(1, RAW, data), data)
    leftovers = _temp_files(store.blocks_dir)
    assert leftovers == []


def test_default_root_prefers_bundlekit_home() -> None:
    assert default_store_root({"BUNDLEKIT_HOME": "/x/y", "XDG_DATA_HOME": "/d"}) == Path("/x/y")


def test_default_root_falls_back_to_xdg_data_home() -> None:
    assert default_store_root({"XDG_DATA_HOME": "/d"}) == Path("/d/bundlekit")


@pytest.mark.parametrize("relative", [".data", "data/share", "~nosuchuser-37w/share"])
def test_a_relative_xdg_data_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, relative: str) -> None:
    # attack37w: a relative XDG_DATA_HOME resolved against the working directory, so a build run in a memory
    # tree made the sealing key (build-check.key) inside the tree; the XDG spec says to ignore such a path
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_store_root({"XDG_DATA_HOME": relative}) == tmp_path / ".local" / "share" / "bundlekit"


def test_a_home_of_an_unknown_user_is_no_internal_error() -> None:
    # attack37w: BUNDLEKIT_HOME=~nosuchuser made every command exit 1 with "internal error (RuntimeError)"
    assert default_store_root({"BUNDLEKIT_HOME": "~nosuchuser-37w/s"}) == Path("~nosuchuser-37w/s")


def test_default_root_falls_back_to_local_share(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_store_root({}) == tmp_path / ".local" / "share" / "bundlekit"


def test_store_uses_bundlekit_home_when_no_root_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    assert BlockStore().root == tmp_path / "home"
    assert (tmp_path / "home" / "blocks").is_dir()


def test_pin_records_name_date_and_dag_size(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    filled_store.pin(sample_dag.root, "agent")
    meta = filled_store.pins()[sample_dag.root]
    assert meta == {
        "name": "agent",
        "created": "2026-01-02T03:04:05Z",
        "size": sum(len(b) for b in sample_dag.blocks.values()),
    }


def test_pin_of_an_incomplete_dag_raises_missing_block(store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    store.put(sample_dag.root, sample_dag.blocks[sample_dag.root])
    with pytest.raises(MissingBlock):
        store.pin(sample_dag.root)
    assert store.pins() == {}


def test_pins_file_is_valid_json_with_no_temp_left(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    filled_store.pin(sample_dag.root, "a")
    doc = json.loads((filled_store.root / "pins.json").read_text())
    assert doc["version"] == 1
    assert list(doc["pins"]) == [cid_to_str(sample_dag.root)]
    assert [p.name for p in filled_store.root.iterdir() if is_temp_name(p.name)] == []


def test_pins_survive_reopening_the_store(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    filled_store.pin(sample_dag.root, "a")
    assert sample_dag.root in BlockStore(filled_store.root).pins()


def test_unpin_removes_the_pin(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    filled_store.pin(sample_dag.root)
    filled_store.unpin(sample_dag.root)
    assert filled_store.pins() == {}


def test_unpin_of_an_unpinned_root_is_a_usage_error(store: BlockStore) -> None:
    with pytest.raises(UsageError):
        store.unpin(make_cid(1, RAW, b"x"))


def test_gc_keeps_pinned_dags_and_removes_the_rest(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    stray = make_cid(1, RAW, b"stray")
    filled_store.put(stray, b"stray")
    filled_store.pin(sample_dag.root)
    assert filled_store.gc() == 1
    assert not filled_store.has(stray)
    assert all(filled_store.has(cid) for cid in sample_dag.blocks)


def test_gc_without_pins_empties_the_store(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    assert filled_store.gc() == len(sample_dag.blocks)
    assert list(filled_store.iter_blocks()) == []


def test_gc_removes_stale_temp_files_but_not_fresh_ones(store: BlockStore) -> None:
    shard = store.blocks_dir / "aa"
    shard.mkdir()
    stale = shard / ".tmp-old"
    fresh = shard / ".tmp-new"
    stale.write_bytes(b"")
    fresh.write_bytes(b"")
    os.utime(stale, (0, 0))
    store.gc()
    assert not stale.exists()
    assert fresh.exists()


def test_gc_removes_a_stale_temp_file_of_the_write_helper(store: BlockStore) -> None:
    shard = store.blocks_dir / "aa"
    shard.mkdir()
    stale = shard / ".bafkreiexample.4242.0123abcd.tmp"  # a put killed before its rename, long ago
    stale.write_bytes(b"")
    os.utime(stale, (0, 0))
    store.gc()
    assert not stale.exists()


def test_a_pin_file_that_cannot_be_written_is_a_bundlekit_error_and_leaves_no_temp(
    filled_store: BlockStore, sample_dag, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    """Regression: the pin file's write let a raw OSError escape (and a traceback reach the CLI)."""

    def disk_full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(BundlekitError, match="cannot write .*pins.json: No space left on device"):
        filled_store.pin(sample_dag.root, "a")
    monkeypatch.undo()
    assert filled_store.pins() == {}
    assert [p.name for p in filled_store.root.iterdir() if is_temp_name(p.name)] == []


def test_a_pin_file_that_cannot_be_read_is_a_bundlekit_error(store: BlockStore) -> None:
    """Regression: only a missing pin file was handled; any other OSError escaped raw (a traceback)."""
    (store.root / "pins.json").mkdir()
    with pytest.raises(BundlekitError, match="cannot read the pin file .*pins.json: Is a directory"):
        store.pins()


def test_a_lock_file_that_cannot_be_opened_is_a_bundlekit_error(store: BlockStore) -> None:
    """Regression: opening gc.lock or pins.lock let a raw OSError escape (a read-only store, say)."""
    (store.root / "gc.lock").mkdir()
    with pytest.raises(BundlekitError, match="cannot open the lock file .*gc.lock: Is a directory"):
        store.gc()


def test_concurrent_pins_from_many_threads_all_land(store: BlockStore) -> None:
    import threading

    cids = []
    for i in range(16):
        data = f"block {i}".encode()
        cid = make_cid(1, RAW, data)
        store.put(cid, data)
        cids.append(cid)
    threads = [threading.Thread(target=store.pin, args=(cid, f"n{i}")) for i, cid in enumerate(cids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(store.pins()) == set(cids)


def test_gc_waits_for_a_protect_block_to_end(filled_store: BlockStore, sample_dag) -> None:  # type: ignore[no-untyped-def]
    import threading

    removed: list[int] = []
    with filled_store.protect():
        worker = threading.Thread(target=lambda: removed.append(filled_store.gc()))
        worker.start()
        worker.join(timeout=0.3)
        assert worker.is_alive()  # gc is blocked on the lock, not finished
        filled_store.pin(sample_dag.root)
    worker.join()
    assert removed == [0]
    assert all(filled_store.has(cid) for cid in sample_dag.blocks)


@pytest.mark.usefixtures("default_recursion_limit")
def test_a_deeply_nested_pin_file_is_unreadable(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "s")
    store._pins_path().write_text("[" * 5_000 + "]" * 5_000)
    with pytest.raises(BundlekitError, match="the pin file .* is unreadable"):
        store.pins()
