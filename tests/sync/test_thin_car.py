"""Issue 37: a writer's CAR holds only the blocks its pinners lack (git's push sends only new objects).

When every pinner tells which blocks it holds (``holds``: the local store), ``sync`` builds a thin CAR
(``BuildOptions.leave_out``, ``pinning.orchestrate.held_by_all``) and the local pin takes the other blocks from
the store, where they were verified when written: the pin still refuses a DAG the store cannot complete.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from bundlekit.blockstore import WALK_FILE, BlockStore
from bundlekit.bundle.merge import build_tree
from bundlekit.car.reader import read_car
from bundlekit.errors import BlockMismatch, MissingBlock
from bundlekit.ipld.cid import RAW, as_cidv1, make_cid
from bundlekit.memory import Memory
from bundlekit.unixfs import hamt
from bundlekit.pinning.orchestrate import held_by_all, pin_all
from bundlekit.pinning.protocol import PINNED
from pinners.local import LocalPinner
from pinners.memory import MemoryPinner


def _tree(root: Path) -> Path:
    mem = Memory(root, namespace="agent")
    mem.init()
    for i in range(12):
        mem.write(f"note_{i:02d}", name=f"Note {i}", description=f"about {i}", type="project", body=f"body {i}")
    return root


def _blocks(car: Path) -> list[bytes]:
    with open(car, "rb") as fh:
        _roots, blocks = read_car(fh)
        return [as_cidv1(cid) for cid, _data in blocks]


def _published_then_edited(tmp_path: Path) -> tuple[Path, BlockStore, LocalPinner]:
    tree, store = _tree(tmp_path / "memory"), BlockStore(tmp_path / "store")
    pinner = LocalPinner(store)
    first = build_tree(tree, tmp_path / "first.car", parents=[])
    assert pin_all(first.car, first.root, [pinner]).ok
    Memory(tree, namespace="agent").write("note_03", name="Note 3", description="about 3", type="project",
                                          body="changed")
    return tree, store, pinner


def test_a_writer_car_leaves_out_what_the_local_store_holds(tmp_path: Path) -> None:
    tree, store, pinner = _published_then_edited(tmp_path)
    thin = build_tree(tree, tmp_path / "thin.car", parents=[], leave_out=held_by_all([pinner]))
    full = build_tree(tree, tmp_path / "full.car", parents=[])
    assert thin.root_bytes == full.root_bytes
    sent = _blocks(thin.car)
    assert as_cidv1(thin.root_bytes) in sent
    assert len(sent) < 8 < len(_blocks(full.car))  # the changed memory, the index, the manifest, directories
    report = pin_all(thin.car, thin.root, [pinner])
    assert report.ok and report.pins[0].status == PINNED
    assert store.dag_size(thin.root_bytes) == store.dag_size(full.root_bytes)


def test_a_thin_car_is_not_pinned_when_the_store_lost_a_block_it_left_out(tmp_path: Path) -> None:
    tree, store, pinner = _published_then_edited(tmp_path)
    thin = build_tree(tree, tmp_path / "thin.car", parents=[], leave_out=held_by_all([pinner]))
    full = _blocks(build_tree(tree, tmp_path / "full.car", parents=[]).car)
    sent = set(_blocks(thin.car))
    lost = next(cid for cid in full if cid not in sent and cid[1] == RAW)
    for root in store.pins():  # the DAG it was held by is unpinned and collected before the pin
        store.unpin(root)
    store.gc()
    assert not store.has(lost)
    report = pin_all(thin.car, thin.root, [pinner])
    assert not report.ok and "missing" in (report.pins[0].error or "")
    assert as_cidv1(thin.root_bytes) not in store.pins()
    with pytest.raises(MissingBlock):
        store.dag_size(thin.root_bytes)


def test_a_pin_takes_the_blocks_of_the_dag_pinned_last_without_looking_at_their_files(tmp_path: Path) -> None:
    tree, store, pinner = _published_then_edited(tmp_path)
    first = next(iter(store.pins()))
    walked = store.pinned_walk()
    assert as_cidv1(first) in walked and sum(walked.values()) == store.dag_size(first)
    assert all(store.has(cid) for cid in walked)
    thin = build_tree(tree, tmp_path / "thin.car", parents=[], leave_out=held_by_all([pinner]))
    seen: list[bytes] = []
    real_size = BlockStore._size

    def size(self: BlockStore, cid: bytes) -> int:
        seen.append(cid)
        return real_size(self, cid)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BlockStore, "_size", size)
        assert pin_all(thin.car, thin.root, [pinner]).ok
    assert seen == []  # every raw leaf left out was the last pin's: no file stat'ed
    assert set(store.pinned_walk()) >= {as_cidv1(thin.root_bytes)}


def test_the_walk_of_a_pin_no_longer_held_vouches_for_nothing(tmp_path: Path) -> None:
    _tree_dir, store, _pinner = _published_then_edited(tmp_path)
    first = next(iter(store.pins()))
    assert store.pinned_walk()
    store.unpin(first)
    assert store.pinned_walk() == {}
    store.pin(first)
    assert store.pinned_walk()
    damaged = next(cid for cid in store.pinned_walk() if cid[1] == RAW)
    store.path_for(damaged).write_bytes(b"not the block")
    with pytest.raises(BlockMismatch):
        store.get(damaged)
    assert store.pinned_walk() == {}  # a block of it was removed as damaged


def test_a_walk_record_that_does_not_read_is_ignored(tmp_path: Path) -> None:
    _tree_dir, store, _pinner = _published_then_edited(tmp_path)
    record = store.root / WALK_FILE
    whole = record.read_bytes()
    for broken in (whole[:-2], whole[:30], b"", b"something else", whole[:22] + b"\xff" + whole[23:]):
        record.write_bytes(broken)
        assert store.pinned_walk() == {}


def test_a_pinner_that_cannot_tell_what_it_holds_gets_every_block(tmp_path: Path) -> None:
    local = LocalPinner(BlockStore(tmp_path / "store"))
    assert held_by_all([local, MemoryPinner()]) is None
    assert held_by_all([]) is None
    holds = held_by_all([local])
    assert holds is not None and not holds(b"\x01\x55\x12\x20" + bytes(32))


def test_a_thin_rebuild_takes_unchanged_sub_shards_from_its_memo_and_builds_a_full_builds_root(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "memory"
    mem = Memory(tree, namespace="agent")
    mem.init()
    text = ("---\nname: n\ndescription: d\ntype: project\ncreated: '2026-01-01T00:00:00Z'\n"
            "updated: '2026-02-01T00:00:00Z'\n---\n\nbody {}\n")
    for i in range(1100):  # ipfs-car shards a directory of more than 1,000 entries
        (tree / f"note_{i:04d}.md").write_text(text.format(i), encoding="utf-8")
    store = BlockStore(tmp_path / "store")
    pinner = LocalPinner(store)
    first = build_tree(tree, tmp_path / "first.car", parents=[], profile="ipfs-car", leave_out=held_by_all([pinner]))
    assert pin_all(first.car, first.root, [pinner]).ok
    for i in range(0, 1100, 97):
        (tree / f"note_{i:04d}.md").write_text(text.format(f"changed {i}"), encoding="utf-8")
    (tree / "note_0001.md").unlink()
    (tree / "added_one.md").write_text(text.format("new"), encoding="utf-8")
    encoded: list[object] = []
    real = hamt._write_shard

    def counted(*args: Any) -> Any:
        encoded.append(args)
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hamt, "_write_shard", counted)
        thin = build_tree(tree, tmp_path / "thin.car", parents=[], profile="ipfs-car",
                          leave_out=held_by_all([LocalPinner(store)]))
    assert 0 < len(encoded) < 40  # the root and the sub-shards over the 13 changed names, not all ~250
    copy = tmp_path / "full" / "memory"
    shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".bundlekit"))
    full = build_tree(copy, tmp_path / "full.car", parents=[], profile="ipfs-car")
    assert thin.root_bytes == full.root_bytes and thin.files == full.files == 1101  # the index too
    assert len(_blocks(thin.car)) < 60  # changed files and the sub-shards above them, not ~250 sub-shards
    assert pin_all(thin.car, thin.root, [LocalPinner(store)]).ok
    with open(full.car, "rb") as fh:
        _roots, blocks = read_car(fh)
        every = {as_cidv1(cid): len(data) for cid, data in blocks}
    assert store.dag_size(thin.root_bytes) == sum(every.values())  # the store completes the DAG


def test_a_block_store_verify_removes_as_damaged_drops_the_walk_and_the_next_thin_pin_is_refused(
    tmp_path: Path,
) -> None:
    # attack37w: `store verify` removed a damaged block of the pinned DAG but kept the walk vouching for it, so
    # the next thin CAR left the block out and its pin was taken as complete with the block nowhere in the store
    tree, store, _pinner = _published_then_edited(tmp_path)
    needed = set(_blocks(build_tree(tree, tmp_path / "full.car", parents=[]).car))
    damaged = next(cid for cid in store.pinned_walk() if cid[1] == RAW and cid in needed)
    store.path_for(damaged).write_bytes(b"not the block")
    report = store.verify()
    assert not store.has(damaged) and report.blocks
    assert store.pinned_walk() == {}
    pinner = LocalPinner(store)
    thin = build_tree(tree, tmp_path / "thin.car", parents=[], leave_out=held_by_all([pinner]))
    assert damaged in set(_blocks(thin.car))  # the store lost it: the CAR carries it again
    assert pin_all(thin.car, thin.root, [pinner]).ok and store.has(damaged)


def test_a_walk_record_naming_a_block_larger_than_any_block_is_ignored(tmp_path: Path) -> None:
    # attack37w: a raw leaf's size in the record became that many zero bytes in the pin's walk: a planted size of
    # 4 GiB made a pin allocate 4 GiB
    _tree_dir, store, _pinner = _published_then_edited(tmp_path)
    record = store.root / WALK_FILE
    whole = record.read_bytes()[:-32]  # without its digest, sealed again below (a crafted record passes it)
    # the last block's size (its 4 bytes before its link count; a raw leaf, the record's last block, has no links)
    assert whole[-4:] == bytes(4)
    record.write_bytes(_sealed(whole[:-8] + (0xFFFFFFFF).to_bytes(4, "big") + whole[-4:]))
    assert store.pinned_walk() == {}


def test_a_walk_record_naming_blocks_beyond_its_pins_dag_is_ignored(tmp_path: Path) -> None:
    # attack37w: a record of the pinned root with one more raw leaf (a block the store never had) made holds()
    # true for it, so a thin CAR left it out and the pin took it as held: a DAG pinned that the store cannot serve
    _tree_dir, store, _pinner = _published_then_edited(tmp_path)
    record = store.root / WALK_FILE
    planted = b"\x01\x55\x12\x20" + bytes(32)
    record.write_bytes(_sealed(record.read_bytes()[:-32] + bytes([len(planted)]) + planted + (5).to_bytes(4, "big")
                               + bytes(4)))
    assert not store.has(planted)
    assert store.pinned_walk() == {}
    assert not LocalPinner(store).holds(planted)


def _sealed(body: bytes) -> bytes:
    """A walk record's bytes closed by its SHA-256, as the store closes one (specs/gateway.md 2.6a)."""
    return body + hashlib.sha256(body).digest()


def test_many_blocks_asked_at_once_are_held_as_each_asked_alone(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "store")
    blocks = [(make_cid(1, RAW, bytes([i])), bytes([i])) for i in range(6)]
    for cid, data in blocks[:3]:
        store.put(cid, data)
    local = LocalPinner(store)
    holds = held_by_all([local])
    assert holds is not None
    cids = [cid for cid, _data in blocks]
    assert holds.many(cids) == {cid for cid in cids if holds(cid)} == set(cids[:3])
    assert local.holds_many(cids) == set(cids[:3])


def test_a_pinner_kept_across_rounds_asks_the_walk_of_the_pin_made_since_not_its_first(tmp_path: Path) -> None:
    # attack39w: `sync --interval` (and mcp's background sync) open the local pinner once; it read the last pin's
    # walk at its first round and kept it. Once that pin was retired and collected, a later round's file with the
    # bytes of that walk (an edit reverted) was held by the stale walk, left out of the thin CAR, and the pin
    # refused it as missing, that round and every round after until the process restarted
    tree, store = _tree(tmp_path / "memory"), BlockStore(tmp_path / "store")
    pinner = LocalPinner(store)
    note = tree / "note_03.md"
    original = note.read_bytes()
    first = build_tree(tree, tmp_path / "first.car", parents=[])
    assert pin_all(first.car, first.root, [pinner]).ok
    Memory(tree, namespace="agent").write("note_03", name="Note 3", description="about 3", type="project",
                                          body="changed")
    second = build_tree(tree, tmp_path / "second.car", parents=[], leave_out=held_by_all([pinner]))
    assert pin_all(second.car, second.root, [pinner]).ok  # the round that read the first pin's walk
    store.unpin(first.root_bytes)
    store.gc()  # `bundlekit unpin --keep 1` and `store gc` between two rounds: the note's first leaf is gone
    note.write_bytes(original)  # the edit undone
    third = build_tree(tree, tmp_path / "third.car", parents=[], leave_out=held_by_all([pinner]))
    report = pin_all(third.car, third.root, [pinner])
    assert report.ok, report.pins[0].error
    assert store.dag_size(third.root_bytes) > 0
