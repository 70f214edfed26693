"""Attacks on the merge by tree difference (issue 37): a stale derived index, hostile HAMT shards (a diamond, a
name filed under a slot its hash does not name). Each test names the defect it pins."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

import bundlekit.memory.merge

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, build_bundle
from bundlekit.bundle.lineage import set_lineage
from bundlekit.bundle.manifest import canonical_json, make_manifest
from bundlekit.bundle.merge import MergeOptions, merge_bundle
from bundlekit.memory import Memory
from bundlekit.bundle.treediff import diff_dirs
from bundlekit.car.writer import CarFileWriter
from bundlekit.errors import CodecError, ConflictError, IntegrityError, UnsafePathError
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import HAMT_SHARD, PBLink, UnixFSData, encode_node
from bundlekit.unixfs.hamt import name_hash
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader

from .test_tree_difference import _edit, _text, _tree, _warm, _writer


def _edit_in_place_keeping_stat(path: Path, old: str, new: str) -> None:
    """An edit the stat signature cannot see: same inode, size and mtime (what a tool that restores times does)."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old.encode() in data
    with open(path, "r+b") as fh:
        fh.write(data.replace(old.encode(), new.encode()))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_ino == st.st_ino


def test_a_stale_index_cannot_make_a_merge_call_a_tree_with_a_local_edit_converged(tmp_path: Path) -> None:
    """The derived index's digest of a file edited behind its stat signature is stale: judged from it, a follower's
    merge said ``converged`` and ``sync`` skipped publishing the local edit, recording the name's root as the tree's."""
    writer = _tree(tmp_path / "w", 5)
    _writer(writer)
    follower = tmp_path / "f"
    shutil.copytree(writer, follower)
    old = 1_000_000_000 * 1_700_000_000  # well before the index's refresh: not a racy row
    for name in follower.glob("*.md"):
        os.utime(name, ns=(old, old))
    _warm(follower)
    _edit_in_place_keeping_stat(follower / "note_000001.md", "Body of note 1", "Edit of note 1")
    _edit(writer, [2])
    root = _writer(writer)
    result = merge_bundle(f"ipfs://{root}", follower, options=MergeOptions(trusted=True))
    assert result.report.counts() == {"updated": 1}
    assert "Edit of note 1" in (follower / "note_000001.md").read_text("utf-8")  # the local edit is kept
    assert not result.converged  # the tree holds an edit the bundle lacks: it must be published


# -- hostile HAMT shards met by the directory comparison (bundle/treediff.py) ---------------------------------------

Blocks = dict[bytes, bytes]


def _put(blocks: Blocks, codec: int, data: bytes) -> bytes:
    cid = make_cid(1, codec, data)
    blocks[cid] = data
    return cid


def _shard(blocks: Blocks, links: list[tuple[int, bytes, bytes]]) -> bytes:
    """A fanout-256 murmur3 HAMT shard of ``(slot, name after the slot, cid)`` links, its bitfield true."""
    bits = 0
    pb = []
    for slot, rest, cid in sorted(links, key=lambda x: (x[0], x[1])):
        bits |= 1 << slot
        pb.append(PBLink(cid, b"%02X" % slot + rest, 1))
    data = UnixFSData(HAMT_SHARD, data=bits.to_bytes((bits.bit_length() + 7) // 8, "big"), hash_type=0x22,
                      fanout=256).encode()
    return _put(blocks, DAG_PB, encode_node(pb, data))


def _slot(name: str, depth: int = 0) -> int:
    return name_hash(name.encode())[depth]


def _other_slot(name: str) -> int:
    return (_slot(name) + 1) % 256


def test_a_shard_filing_a_name_under_a_slot_its_hash_does_not_name_is_refused() -> None:
    """A hostile shard lists ``x.md`` twice, in its own slot and in another: a listing refuses the duplicate, the
    comparison slot by slot took whichever came last (the bundle a loader refuses was merged)."""
    blocks: Blocks = {}
    one, two = _put(blocks, RAW, b"one"), _put(blocks, RAW, b"two")
    base = _shard(blocks, [(_slot("x.md"), b"x.md", one)])
    theirs = _shard(blocks, [(_slot("x.md"), b"x.md", one), (_other_slot("x.md"), b"x.md", two)])
    reader = UnixFSReader(blocks.__getitem__, verify=False)
    with pytest.raises(UnsafePathError):
        reader.list_dir(theirs)  # what a load does
    with pytest.raises(CodecError, match="slot"):
        diff_dirs(reader, base, theirs)


def test_a_shard_whose_slots_link_one_sub_shard_is_refused_as_a_listing_refuses_it() -> None:
    """A diamond: two slots of theirs link one sub-shard (each level would multiply the blocks compared)."""
    blocks: Blocks = {}
    names = [f"n{i}.md" for i in range(4000)]
    by_slot: dict[int, list[str]] = {}
    for name in names:
        by_slot.setdefault(_slot(name), []).append(name)
    (a, in_a), (b, in_b) = [(s, n) for s, n in sorted(by_slot.items()) if len(n) >= 2][:2]
    leaf = _put(blocks, RAW, b"x")

    def sub(members: list[str], depth: int = 1) -> bytes:
        return _shard(blocks, [(_slot(m, depth), m.encode(), leaf) for m in members[:2]])

    base = _shard(blocks, [(a, b"", sub(in_a)), (b, b"", sub(in_b))])
    shared = _shard(blocks, [(_slot(m, 1), m.encode(), _put(blocks, RAW, b"y")) for m in in_a[:2]])
    theirs = _shard(blocks, [(a, b"", shared), (b, b"", shared)])
    reader = UnixFSReader(blocks.__getitem__, verify=False)
    with pytest.raises(CodecError):
        reader.list_dir(theirs)
    with pytest.raises(CodecError):
        diff_dirs(reader, base, theirs)


def test_a_shard_link_whose_slot_is_no_hex_is_refused_without_a_traceback() -> None:
    blocks: Blocks = {}
    one = _put(blocks, RAW, b"one")
    base = _shard(blocks, [(_slot("x.md"), b"x.md", one)])
    bits = (1 << _slot("x.md")) | 1
    data = UnixFSData(HAMT_SHARD, data=bits.to_bytes(32, "big").lstrip(b"\0"), hash_type=0x22, fanout=256).encode()
    theirs = _put(blocks, DAG_PB, encode_node([PBLink(one, b"ZZy.md", 1),
                                               PBLink(one, b"%02Xx.md" % _slot("x.md"), 1)], data))
    with pytest.raises(CodecError, match="hex"):
        diff_dirs(UnixFSReader(blocks.__getitem__, verify=False), base, theirs)


def _import(car: Path) -> None:
    with open(car, "rb") as fh:
        BlockStore().import_car(fh, pin=True)


def _forgetting_child(tmp_path: Path, tree: Path, key: str) -> str:
    """``tree`` built (v2, imported, its lineage), then a copy of it that forgot ``key`` built over it: that root."""
    root = build_bundle(tree, tmp_path / "a.car", options=BuildOptions(manifest_version=2))
    _import(root.car)
    set_lineage(tree, [root.root_cid or ""])
    other = tmp_path / "other"
    shutil.copytree(tree, other)
    memory = Memory(other)
    memory.forget(key)
    memory.close()
    child = build_bundle(other, tmp_path / "b.car",
                         options=BuildOptions(manifest_version=2, parents=[root.root_cid or ""]))
    _import(child.car)
    return child.root_cid or ""


def test_device_notes_do_not_dilute_the_delete_bound_of_a_merge_by_difference(tmp_path: Path) -> None:
    """The whole merge counts only memories that cross machines against the delete bound
    (tests/journeys/test_fork_merge_back.py); the merge by difference counted every file of the tree, so three
    device notes let a stranger's bundle delete the one memory that crosses without --allow-deletes."""
    m = _tree(tmp_path / "m", 1)
    child = _forgetting_child(tmp_path, m, "note_000000")
    for n in range(3):
        (m / f"device_{n}.md").write_text(
            f"---\nname: Device {n}\ndescription: this laptop\ntype: reference\ncreated: 2026-04-14T12:00:00Z\n"
            f"updated: 2026-04-14T12:00:00Z\nx-magicfrog-local-only: true\n---\n\n/home/me/{n}\n", encoding="utf-8")
    with pytest.raises(ConflictError, match="would delete 1 of the 1 memories"):
        merge_bundle(f"ipfs://{child}", m)
    assert (m / "note_000000.md").exists()
    merge_bundle(f"ipfs://{child}", m, options=MergeOptions(allow_deletes=True))
    assert not (m / "note_000000.md").exists() and len(list(m.glob("device_*.md"))) == 3


def test_a_bundle_that_forgot_a_memory_larger_than_all_it_still_holds_merges(tmp_path: Path) -> None:
    """The base's files were read within the smaller of the two manifests' bytes: a bundle that forgot a memory
    larger than everything it still holds could not be merged (``IntegrityError`` on the base's own file)."""
    m = _tree(tmp_path / "m", 0)
    memory = Memory(m)
    memory.write("big_note", name="Big", description="big", type="project", body="A long one. " * 2_000)
    memory.close()
    child = _forgetting_child(tmp_path, m, "big_note")
    result = merge_bundle(f"ipfs://{child}", m, options=MergeOptions(trusted=True))
    assert result.report.counts() == {"deleted": 1} and not (m / "big_note.md").exists()


def test_a_sibling_key_naming_a_memory_the_difference_did_not_read_never_overwrites_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A losing memory of theirs that says it is a sibling of another key (``x-bundlekit-conflict-of``) is kept
    beside that key, under a name from its digest; the merge by difference had not read ours' memories of that
    key, so a memory of ours already holding the name was overwritten (a 40-bit prefix is in reach of a
    stranger's search; here the digest is fixed)."""
    monkeypatch.setattr(bundlekit.memory.merge, "version_digest", lambda _text: "0123456789" + "0" * 54)
    m = _tree(tmp_path / "m", 3)
    root = build_bundle(m, tmp_path / "a.car", options=BuildOptions(manifest_version=2))
    _import(root.car)
    set_lineage(m, [root.root_cid or ""])
    other = tmp_path / "other"
    shutil.copytree(m, other)
    (other / "note_000001.md").write_text(_text("note_000001", "Theirs, older.", updated="2026-04-14T13:00:00Z",
                                                revision=2).replace("revision: 2\n", "revision: 2\n"
                                                "x-bundlekit-conflict-of: note_000002\n"), "utf-8")
    child = build_bundle(other, tmp_path / "b.car",
                         options=BuildOptions(manifest_version=2, parents=[root.root_cid or ""]))
    _import(child.car)
    (m / "note_000001.md").write_text(_text("note_000001", "Ours, newer.", updated="2026-04-14T14:00:00Z",
                                            revision=2), "utf-8")
    mine = _text("note_000002.conflict-0123456789", "A memory of mine.")
    (m / "note_000002.conflict-0123456789.md").write_text(mine, "utf-8")
    merge_bundle(f"ipfs://{child.root_cid}", m)
    assert (m / "note_000002.conflict-0123456789.md").read_text("utf-8") == mine
    kept = [p for p in m.glob("note_000002.conflict-*.md") if "Theirs, older." in p.read_text("utf-8")]
    assert len(kept) == 1


def _v2_bundle(tmp_path: Path, tree: Path, name: str, *, parents: list[str], claimed: int | None = None) -> str:
    """``tree``'s files as a ``bundlekit/2`` bundle (its manifest's bytes ``claimed`` when given), imported."""
    with Memory(tree).transaction(lock=False) as tx:
        files = {f"memory/{path}": data for path, data in tx.files()}
    prof = get_profile()
    manifest = make_manifest(namespace="agent", created=datetime(2026, 4, 15, tzinfo=UTC), profile=prof.name,
                             files={p: (b"", len(d)) for p, d in files.items()}, timeline=[], encryption=None,
                             parents=parents, version=2)
    if claimed is not None:
        manifest["memory"]["bytes"] = claimed
    car = tmp_path / f"{name}.car"
    with CarFileWriter(car) as writer:
        root = import_tree([("manifest.json", canonical_json(manifest)), *files.items()], writer, prof).root
        writer.finish(root)
    _import(car)
    return cid_to_str(root)


def test_a_base_whose_day_files_hold_more_than_its_manifest_claims_is_refused(tmp_path: Path) -> None:
    """The base's files were read each within its manifest's bytes, never together: a base (an ancestor a
    stranger's ``parents`` named, never loaded here) of many day files could make a merge hold far more."""
    m = _tree(tmp_path / "m", 1)
    day = ('{"ts":"2026-04-1%dT12:00:00.000Z","type":"note","text":"' + "x" * 400 + '"}\n')
    for n in range(5):
        (m / "timeline" / f"2026-04-1{n}.jsonl").write_text(day % n, "utf-8")
    base = _v2_bundle(tmp_path, m, "base", parents=[], claimed=1_000)  # each day fits, the five do not
    set_lineage(m, [base])
    other = tmp_path / "other"
    shutil.copytree(m, other)
    _edit(other, [0])
    child = _v2_bundle(tmp_path, other, "child", parents=[base])
    before = (m / "note_000000.md").read_bytes()
    with pytest.raises(IntegrityError, match="more than its manifest"):
        merge_bundle(f"ipfs://{child}", m, options=MergeOptions(trusted=True))
    assert (m / "note_000000.md").read_bytes() == before
