"""Packs of the block store (specs/gateway.md, 2.2a): many verified blocks in one file and its index, visible
only once both are durable; read, verified, repaired, collected and checked as block files are."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from bundlekit._fs import is_temp_name
from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.cli import cli
from bundlekit.errors import BlockMismatch, BundlekitError, MissingBlock
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.unixfs.importer import ListSink, import_tree
from bundlekit.unixfs.profiles import get_profile

REPO = Path(__file__).resolve().parents[2]


def _blocks(count: int) -> list[tuple[bytes, bytes]]:
    return [(make_cid(1, RAW, b"block %d" % i), b"block %d" % i) for i in range(count)]


def _packed(store: BlockStore, blocks: list[tuple[bytes, bytes]]) -> None:
    writer = store.pack(blocks[0][0])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.commit()


def _damage(store: BlockStore, what: bytes) -> None:
    """Change the bytes ``what`` inside the store's one pack to upper case (a block that no longer hashes)."""
    pack = next((store.root / "packs").glob("*.pack"))
    data = pack.read_bytes()
    at = data.index(what)
    pack.write_bytes(data[:at] + what.upper() + data[at + len(what):])


def _pack_files(store: BlockStore) -> list[str]:
    return sorted(p.name for p in (store.root / "packs").iterdir())


def test_packed_blocks_are_found_read_and_sized_without_a_block_file_each(store: BlockStore) -> None:
    blocks = _blocks(50)
    _packed(store, blocks)
    assert all(store.has(cid) and store.get(cid) == data for cid, data in blocks)
    assert store._size(blocks[7][0]) == len(blocks[7][1])
    assert not list(store.blocks_dir.iterdir())  # no shard folder, no block file
    assert len(_pack_files(store)) == 2
    assert sorted(store.iter_blocks()) == sorted(cid for cid, _ in blocks)


def test_a_pack_is_a_car_whose_root_is_the_dag_it_was_written_for(store: BlockStore) -> None:
    blocks = _blocks(5)
    _packed(store, blocks)
    pack = next((store.root / "packs").glob("*.pack"))
    with pack.open("rb") as fh:
        roots, read = read_car(fh, verify=True)
        assert roots == [blocks[0][0]] and list(read) == blocks


def test_a_pack_not_committed_is_never_read_and_leaves_no_file(store: BlockStore) -> None:
    writer = store.pack(_blocks(1)[0][0])
    for cid, data in _blocks(3):
        writer.put(cid, data)
    assert not store.has(_blocks(1)[0][0])
    writer.discard()
    assert not store.has(_blocks(1)[0][0]) and _pack_files(store) == []


def test_a_pack_without_its_index_is_never_read(store: BlockStore) -> None:
    blocks = _blocks(4)
    _packed(store, blocks)
    next((store.root / "packs").glob("*.idx")).unlink()
    fresh = BlockStore(store.root, fsync=False)
    assert not fresh.has(blocks[0][0])
    with pytest.raises(MissingBlock):
        fresh.get(blocks[0][0])


def test_a_pack_written_by_another_process_is_seen_by_a_store_already_open(store: BlockStore) -> None:
    assert not store.has(_blocks(1)[0][0])
    _packed(BlockStore(store.root, fsync=False), _blocks(3))
    assert store.get(_blocks(3)[2][0]) == b"block 2"


def test_a_damaged_packed_block_is_refused_dropped_from_its_index_and_repaired_by_a_put(
        store: BlockStore) -> None:
    blocks = _blocks(3)
    _packed(store, blocks)
    _damage(store, b"block 1")
    with pytest.raises(BlockMismatch):
        store.get(blocks[1][0])
    assert not store.has(blocks[1][0]) and store.get(blocks[2][0]) == b"block 2"
    store.put(*blocks[1])
    assert store.get(blocks[1][0]) == b"block 1"


def test_an_index_that_does_not_read_finds_nothing_and_verify_counts_it(store: BlockStore) -> None:
    _packed(store, _blocks(2))
    next((store.root / "packs").glob("*.idx")).write_bytes(b"bundlekit-pack-index/1\n" + b"\x00" * 47)
    fresh = BlockStore(store.root, fsync=False)
    assert not fresh.has(_blocks(1)[0][0])
    report = fresh.verify()
    assert not report.ok and [p.index.suffix for p in report.bad_packs] == [".idx"] and report.unnamed == 0


def test_a_block_whose_first_pack_copy_is_damaged_is_served_from_the_next_pack_holding_it(store: BlockStore) -> None:
    """Two packs hold a block (two loads of overlapping DAGs); the first in name order, whose index names other
    bytes for it (damaged or forged), is dropped and the next pack's copy served, as a damaged block file's is."""
    blocks = _blocks(3)
    _packed(store, blocks)
    _packed(store, blocks)
    first = sorted((store.root / "packs").glob("*.idx"))[0]
    body = first.read_bytes()
    head, entries = body[:23], [body[at:at + 48] for at in range(23, len(body), 48)]
    entries[0], entries[1] = entries[0][:36] + entries[1][36:], entries[1][:36] + entries[0][36:]
    first.write_bytes(head + b"".join(entries))
    fresh = BlockStore(store.root, fsync=False)
    assert all(fresh.get(cid) == data for cid, data in blocks)
    assert len(first.read_bytes()) == 23 + 48  # the two forged entries dropped from the first index, the third kept


def test_verify_rehashes_packed_blocks_and_names_a_damaged_one(store: BlockStore) -> None:
    blocks = _blocks(3)
    _packed(store, blocks)
    _damage(store, b"block 2")
    report = store.verify()
    assert report.blocks == 3 and [(p.cid, p.problem) for p in report.problems] == [(blocks[2][0], "damaged")]
    assert not store.has(blocks[2][0])


def test_gc_removes_a_pack_no_pin_needs_and_keeps_one_a_pin_needs(store: BlockStore) -> None:
    sink = ListSink()
    pinned = import_tree([("a.md", b"kept"), ("b.md", b"also kept")], sink, get_profile())
    _packed(store, [(cid, data) for cid, data in sink.blocks])
    _packed(store, _blocks(4))
    store.pin(pinned.root)
    assert store.gc() == 4
    assert len(_pack_files(store)) == 2 and store.has(pinned.root)
    assert not store.has(_blocks(1)[0][0])
    assert store.verify().ok


def test_a_pack_writer_killed_before_its_commit_leaves_only_a_temp_that_the_next_writer_sweeps(
        store: BlockStore, tmp_path: Path) -> None:
    script = (
        "import os, signal, sys\n"
        "from bundlekit.blockstore import BlockStore\n"
        "from bundlekit.ipld.cid import RAW, make_cid\n"
        f"store = BlockStore({str(store.root)!r})\n"
        "writer = store.pack(make_cid(1, RAW, b'block 0'))\n"
        "for i in range(100):\n"
        "    writer.put(make_cid(1, RAW, b'block %d' % i), b'block %d' % i)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == -signal.SIGKILL
    left = _pack_files(store)
    assert left and all(is_temp_name(name) for name in left)
    assert not store.has(_blocks(1)[0][0]) and list(store.iter_blocks()) == []
    old = 1_000_000_000 * 1_700_000_000
    for name in left:
        os.utime(store.root / "packs" / name, ns=(old, old))
    _packed(store, _blocks(2))
    assert not [name for name in _pack_files(store) if is_temp_name(name)]


def test_a_block_a_pack_cannot_hold_is_skipped(store: BlockStore) -> None:
    writer = store.pack(_blocks(1)[0][0])
    identity = bytes((1, DAG_PB, 0x00, 3)) + b"abc"
    assert not writer.put(identity, b"abc") and writer.put(*_blocks(1)[0]) and not writer.put(*_blocks(1)[0])
    writer.commit()
    assert len(writer) == 1


def test_an_index_planted_as_a_fifo_is_not_waited_on(store: BlockStore) -> None:
    """A FIFO under an index's name (the store writes none) is not read: opening it would wait for a writer forever,
    and every lookup of the store with it."""
    blocks = _blocks(2)
    _packed(store, blocks)
    index = next((store.root / "packs").glob("*.idx"))
    index.unlink()
    os.mkfifo(index)
    fresh = BlockStore(store.root, fsync=False)
    assert not fresh.has(blocks[0][0])
    assert not fresh.verify().ok


def test_an_index_through_a_symbolic_link_is_not_read(store: BlockStore, tmp_path: Path) -> None:
    blocks = _blocks(2)
    _packed(store, blocks)
    index = next((store.root / "packs").glob("*.idx"))
    moved = tmp_path / "elsewhere.idx"
    index.rename(moved)
    index.symlink_to(moved)
    assert not BlockStore(store.root, fsync=False).has(blocks[0][0])


def test_an_empty_block_indexed_in_a_pack_that_is_a_fifo_is_not_waited_on(store: BlockStore) -> None:
    """A hostile index naming zero bytes at offset 0 of a pack that is a FIFO: the pack is not opened."""
    empty = make_cid(1, RAW, b"")
    folder = store.root / "packs"
    folder.mkdir()
    os.mkfifo(folder / "00000000000000ff.pack")
    (folder / "00000000000000ff.idx").write_bytes(b"bundlekit-pack-index/1\n" + empty + bytes(12))
    fresh = BlockStore(store.root, fsync=False)
    assert not fresh.has(empty)
    with pytest.raises(MissingBlock):
        fresh.get(empty)


def test_a_pack_replaced_by_a_directory_after_its_index_was_read_is_a_clear_error(store: BlockStore) -> None:
    blocks = _blocks(2)
    _packed(store, blocks)
    assert store.get(blocks[0][0]) == b"block 0"
    pack = next((store.root / "packs").glob("*.pack"))
    pack.unlink()
    pack.mkdir()
    with pytest.raises(BundlekitError, match="cannot read the pack"):
        store.get(blocks[1][0])


def test_a_store_open_across_a_gc_finds_a_block_in_the_pack_written_after(store: BlockStore) -> None:
    """A long-running reader (``serve``, ``sync --interval``) whose view of the packs names a pack ``gc`` removed
    reads the packs again: the block came back in a new pack, and is served, not called missing."""
    blocks = _blocks(5)
    _packed(store, blocks)
    reader = BlockStore(store.root, fsync=False)
    assert reader.get(blocks[3][0]) == b"block 3"
    BlockStore(store.root, fsync=False).gc()
    _packed(BlockStore(store.root, fsync=False), blocks)
    assert reader.get(blocks[3][0]) == b"block 3"


def test_gc_removes_a_pack_whose_writer_was_killed_between_its_two_renames(store: BlockStore) -> None:
    """The pack renamed, its index not: no block is found through it, and it would take disk (and the store's
    size bound) for ever."""
    writer = store.pack(_blocks(1)[0][0])
    for cid, data in _blocks(3):
        writer.put(cid, data)
    writer._pack.commit()
    assert [name.endswith(".pack") for name in _pack_files(store)] == [True] and store.stored_bytes() > 0
    store.gc()
    assert _pack_files(store) == [] and store.stored_bytes() == 0 and store.verify().ok


def test_gc_removes_an_index_whose_pack_is_gone_and_verify_is_clean_again(store: BlockStore) -> None:
    _packed(store, _blocks(3))
    next((store.root / "packs").glob("*.pack")).unlink()
    assert not store.verify().ok
    store.gc()
    assert _pack_files(store) == [] and store.verify().ok


def test_gc_keeps_a_pinned_dag_whose_pack_index_does_not_read(store: BlockStore) -> None:
    """A pin's blocks found through no index: gc refuses (the pinned DAG is incomplete) and removes nothing."""
    sink = ListSink()
    pinned = import_tree([("a.md", b"kept")], sink, get_profile())
    _packed(store, list(sink.blocks))
    store.pin(pinned.root)
    index = next((store.root / "packs").glob("*.idx"))
    good = index.read_bytes()
    index.write_bytes(good + b"\x00")
    with pytest.raises(MissingBlock):
        BlockStore(store.root, fsync=False).gc()
    index.write_bytes(good)
    assert store.verify().ok


@pytest.mark.parametrize("prefix", [bytes((1, 0x13, 0x12, 0x20)), bytes((1, RAW, 0x14, 0x20)),
                                    bytes((1, RAW, 0x12, 0x21)), bytes((0x0A, RAW, 0x12, 0x20))])
def test_an_index_naming_a_cid_no_pack_holds_is_not_read_and_verify_reports_it(
        store: BlockStore, prefix: bytes) -> None:
    """An entry whose 36 bytes are no CIDv1 of a sha2-256 raw or dag-pb block (another codec, hash, digest
    length, version): the index is not read; ``verify`` and ``gc`` go on instead of failing on the CID."""
    blocks = _blocks(2)
    _packed(store, blocks)
    index = next((store.root / "packs").glob("*.idx"))
    data = bytearray(index.read_bytes())
    data[23:27] = prefix
    index.write_bytes(bytes(data))
    fresh = BlockStore(store.root, fsync=False)
    report = fresh.verify()
    assert not report.ok and len(report.bad_packs) == 1 and report.blocks == 0
    fresh.gc()
    assert _pack_files(store) == [] and fresh.verify().ok


def test_store_verify_names_an_index_whose_pack_is_gone_and_store_gc_clears_it(store: BlockStore) -> None:
    """The journey: ``store verify`` fails naming the index and what to do (it counted an unnamed problem, and the
    message sent the user to a stdout that listed nothing); ``store gc`` as told; ``store verify`` is clean."""
    _packed(store, _blocks(3))
    next((store.root / "packs").glob("*.pack")).unlink()
    runner = CliRunner()
    failed = runner.invoke(cli, ["store", "--store", str(store.root), "verify"])
    assert failed.exit_code == 3
    kind, index, reason, advice = failed.stdout.strip().split("\t")
    assert kind == "bad-pack" and index.endswith(".idx") and "its pack" in reason and "store gc" in advice
    assert runner.invoke(cli, ["store", "--store", str(store.root), "gc"]).exit_code == 0
    again = runner.invoke(cli, ["store", "--store", str(store.root), "verify"])
    assert again.exit_code == 0 and again.stdout == ""


def test_a_reader_whose_pack_was_replaced_under_its_name_drops_no_good_block(store: BlockStore) -> None:
    """The pack and index under one name replaced after a reader read the index (a restore from a backup, two
    stores' packs copied together): the stale read fails its hash and is refused, but the new index's good entry
    for that block stays, and the read, sent to the packs as they are now, is served from it."""
    old, new = _blocks(3), [(cid, data) for cid, data in _blocks(3)][::-1]
    _packed(store, old)
    reader = BlockStore(store.root, fsync=False)
    assert reader.get(old[0][0]) == b"block 0"
    pack = next((store.root / "packs").glob("*.pack"))
    other = BlockStore(store.root.parent / "other", fsync=False)
    writer = other.pack(new[0][0])
    writer.put(*_blocks(4)[3])  # the blocks now sit at other offsets
    for cid, data in new:
        writer.put(cid, data)
    writer.commit()
    moved = next((other.root / "packs").glob("*.pack"))
    os.replace(moved.with_suffix(".idx"), pack.with_suffix(".idx"))
    os.replace(moved, pack)
    assert reader.get(old[1][0]) == b"block 1"
    assert BlockStore(store.root, fsync=False).get(old[1][0]) == b"block 1"


def test_a_pack_committed_in_the_same_tick_as_the_last_change_is_found_by_a_store_already_open(
        store: BlockStore) -> None:
    """A file system stamps the packs folder with a coarse clock (a jiffy; a second or two on some): a second
    commit in the tick of the first leaves the folder's mtime as it was, simulated here by setting it back. The
    open store read the packs after the first: it still finds the second's blocks."""
    first, second = _blocks(2), [(cid, data) for cid, data in _blocks(6)[3:]]
    _packed(store, first)
    folder = store.root / "packs"
    stamp = folder.stat().st_mtime_ns
    reader = BlockStore(store.root, fsync=False)
    assert reader.get(first[0][0]) == b"block 0"
    _packed(BlockStore(store.root, fsync=False), second)
    os.utime(folder, ns=(stamp, stamp))
    assert reader.get(second[1][0]) == b"block 4"


def test_gc_removes_a_block_file_no_pin_needs_though_a_pack_holds_it_too(store: BlockStore) -> None:
    """A block kept as a file and in a pack (a re-import of a packed block, a follow round after the first): gc
    left the file because a pack held the block, and then removed the pack, so the file outlived every gc once."""
    blocks = _blocks(3)
    _packed(store, blocks)
    store.put(*blocks[1])
    assert store.gc() == 4
    assert list(store.iter_blocks()) == [] and _pack_files(store) == [] and store.stored_bytes() == 0


def test_a_damaged_block_file_is_removed_and_the_packs_good_copy_served(store: BlockStore) -> None:
    blocks = _blocks(3)
    _packed(store, blocks)
    store.put(*blocks[2])
    store.path_for(blocks[2][0]).write_bytes(b"bit rot")
    assert store.get(blocks[2][0]) == b"block 2"
    assert not store.path_for(blocks[2][0]).exists()


def test_a_stop_signal_between_a_packs_two_renames_waits_for_the_index(store: BlockStore) -> None:
    """SIGTERM delivered as the pack is renamed: held until its index is renamed too, then the command stops as
    interrupted (143); the pack is visible and whole, not a pack without its index."""
    script = (
        "import os, signal, sys\n"
        "import bundlekit._fs\n"
        "from bundlekit._signals import Interrupted, exit_code, stop_signals_interrupt\n"
        "from bundlekit.blockstore import BlockStore\n"
        "from bundlekit.ipld.cid import RAW, make_cid\n"
        "install = bundlekit._fs._install\n"
        "def hit(temp, dest, **kw):\n"
        "    install(temp, dest, **kw)\n"
        "    if str(dest).endswith('.pack'):\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "bundlekit._fs._install = hit\n"
        f"store = BlockStore({str(store.root)!r}, fsync=False)\n"
        "try:\n"
        "    with stop_signals_interrupt():\n"
        "        writer = store.pack(make_cid(1, RAW, b'block 0'))\n"
        "        for i in range(5):\n"
        "            writer.put(make_cid(1, RAW, b'block %d' % i), b'block %d' % i)\n"
        "        writer.commit()\n"
        "except Interrupted as exc:\n"
        "    sys.exit(exit_code(exc))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 128 + signal.SIGTERM
    assert sorted(Path(name).suffix for name in _pack_files(store)) == [".idx", ".pack"]
    fresh = BlockStore(store.root, fsync=False)
    assert fresh.get(_blocks(5)[4][0]) == b"block 4" and fresh.verify().ok


def _entries(store: BlockStore) -> tuple[Path, list[tuple[bytes, int, int]]]:
    """The store's one index and its entries (CID, offset, length), in the file's order."""
    index = next((store.root / "packs").glob("*.idx"))
    body = index.read_bytes()[23:]
    return index, [(body[at:at + 36], int.from_bytes(body[at + 36:at + 44], "big"),
                    int.from_bytes(body[at + 44:at + 48], "big")) for at in range(0, len(body), 48)]


def _rewrite(index: Path, entries: list[tuple[bytes, int, int]]) -> None:
    index.write_bytes(b"bundlekit-pack-index/1\n" + b"".join(
        cid + offset.to_bytes(8, "big") + length.to_bytes(4, "big") for cid, offset, length in entries))


@pytest.mark.parametrize("change", ["swapped", "repeated", "past the end", "over the block bound"])
def test_an_index_with_an_entry_out_of_order_or_out_of_bounds_is_not_read(store: BlockStore, change: str) -> None:
    """Each entry is checked, wherever it stands: CIDs strictly in order, each block within its pack and within
    ``MAX_BLOCK_SIZE``; one that is not makes the whole index unread (its blocks are not found, verify names it)."""
    _packed(store, _blocks(5))
    index, entries = _entries(store)
    pack_size = next((store.root / "packs").glob("*.pack")).stat().st_size
    cid, offset, length = entries[2]
    if change == "swapped":
        entries[2], entries[3] = entries[3], entries[2]
    elif change == "repeated":
        entries[3] = entries[2]
    elif change == "past the end":
        entries[2] = (cid, pack_size - length + 1, length)
    else:
        entries[2] = (cid, offset, 2 * 1024 * 1024 + 1)
    _rewrite(index, entries)
    fresh = BlockStore(store.root, fsync=False)
    assert not any(fresh.has(c) for c, _o, _l in entries)
    assert len(fresh.verify().bad_packs) == 1


def test_an_index_whose_largest_offset_and_largest_length_are_different_entries_is_read(store: BlockStore) -> None:
    """The bound is each entry's end, not the largest offset plus the largest length: a long block early in the
    pack and a short one at its very end are both served."""
    blocks = [(make_cid(1, RAW, b"x" * 5000), b"x" * 5000), *_blocks(3)]
    _packed(store, blocks)
    index, entries = _entries(store)
    pack_size = next((store.root / "packs").glob("*.pack")).stat().st_size
    assert max(o for _c, o, _l in entries) + max(ln for _c, _o, ln in entries) > pack_size
    assert max(o + ln for _c, o, ln in entries) <= pack_size
    fresh = BlockStore(store.root, fsync=False)
    assert all(fresh.get(cid) == data for cid, data in blocks) and fresh.verify().ok


def _read_entry_by_entry(data: bytes, pack_size: int) -> dict[bytes, tuple[int, int]] | None:
    """specs/gateway.md 2.2a's rules checked one entry at a time (the reader before issue 37's, 7666431): the
    index's entries, or None for an index that is not read."""
    magic = b"bundlekit-pack-index/1\n"
    if not data.startswith(magic) or (len(data) - len(magic)) % 48:
        return None
    found: dict[bytes, tuple[int, int]] = {}
    previous = b""
    for at in range(len(magic), len(data), 48):
        cid = data[at:at + 36]
        offset, length = int.from_bytes(data[at + 36:at + 44], "big"), int.from_bytes(data[at + 44:at + 48], "big")
        if (cid <= previous or length > 2 * 1024 * 1024 or offset + length > pack_size
                or cid[:4] not in (bytes((1, RAW, 0x12, 0x20)), bytes((1, DAG_PB, 0x12, 0x20)))):
            return None
        found[cid] = (offset, length)
        previous = cid
    return found


_NUMBERS = st.sampled_from([0, 1, 5, 255, 256, 2 * 1024 * 1024, 2 * 1024 * 1024 + 1, 2**32 - 1, 2**56, 2**63, 2**64 - 1])


_Change = tuple[int, int, int, int, int]


@st.composite
def _index_mutations(draw: st.DrawFn) -> tuple[list[_Change], int, bool, bool]:
    """Changes to a real index of six entries: per change (which entry, a byte of it to flip or -1, a new offset or
    -1, a new length or -1, an entry to copy over it whole or -1), a length to cut the file to (-1: none), and
    whether to sort the entries again, and whether the pack grows to 8 GiB (sparse: lengths over the block bound
    then lie within it)."""
    unchanged = st.just(-1)
    changes = draw(st.lists(st.tuples(
        st.integers(0, 5), st.one_of(unchanged, st.sampled_from([0, 1, 2, 3, 35, 36, 43, 44, 47]), st.integers(0, 47)),
        st.one_of(unchanged, _NUMBERS),
        st.one_of(unchanged, _NUMBERS.filter(lambda n: n < 2**32)), st.one_of(unchanged, unchanged, st.integers(0, 5)),
    ), max_size=3))
    cut = draw(st.one_of(unchanged, unchanged, st.integers(0, 23 + 6 * 48 + 1)))
    return changes, cut, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=_index_mutations())
def test_the_index_is_read_exactly_when_each_entry_passes_the_rules_and_finds_what_a_scan_finds(
        store: BlockStore, mutation: tuple[list[_Change], int, bool, bool]) -> None:
    """A differential against the entry-by-entry reader: any index made of a real one by flipped bytes, changed
    offsets and lengths (past the pack, over the block bound, at 2**64 - 1), cuts, unsorted or repeated entries
    is read or refused as that reader reads or refuses it, and a store over it finds what that reader's entries
    hold; a block found is served only when its bytes hash to its CID (issue 37's reader checks the entries with
    slices and ``map`` and finds them by binary search)."""
    for old in (store.root / "packs").glob("*") if (store.root / "packs").exists() else []:
        old.unlink()
    blocks = _blocks(6)
    _packed(store, blocks)
    index, entries = _entries(store)
    changes, cut, resort, grow = mutation
    pack = next((store.root / "packs").glob("*.pack"))
    if grow:
        os.truncate(pack, 8 << 30)
    pack_size = pack.stat().st_size
    raw = [bytearray(cid + offset.to_bytes(8, "big") + length.to_bytes(4, "big")) for cid, offset, length in entries]
    for which, flip, offset, length, copy in changes:
        entry = raw[which]
        if copy >= 0:
            entry[:] = raw[copy]
        if flip >= 0:
            entry[flip] ^= 0x01 + which
        if offset >= 0:
            entry[36:44] = offset.to_bytes(8, "big")
        if length >= 0:
            entry[44:48] = length.to_bytes(4, "big")
    data = b"bundlekit-pack-index/1\n" + b"".join(sorted(map(bytes, raw)) if resort else map(bytes, raw))
    index.write_bytes(data if cut < 0 else data[:cut])
    expected = _read_entry_by_entry(data if cut < 0 else data[:cut], pack_size)
    wanted, found = dict(blocks), expected or {}
    fresh = BlockStore(store.root, fsync=False)
    assert all(fresh.has(cid) == (cid in found) for cid in {*wanted, *found})
    for cid in found:  # each found block is served only as the bytes of its CID (a damaged one is dropped)
        try:
            assert fresh.get(cid) == wanted.get(cid)
        except BlockMismatch:
            assert not fresh.has(cid)
    assert len(BlockStore(store.root, fsync=False).verify().bad_packs) == (expected is None)
