"""Issue 37: a pin through a CAR import takes the unchanged sub-DAGs of the DAG pinned last from its walk record
(``last-pin-walk``, with each block's links), reading none of their blocks, and finds exactly what a full walk finds.

A sync round's thin CAR carries only the blocks its store lacks; before this the pin's walk read back every unchanged
directory block of the new root (~950 HAMT shards at 10,000 memories) to find their links.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit import blockstore
from bundlekit.blockstore import WALK_FILE, BlockStore
from bundlekit.car.writer import CarWriter
from bundlekit.errors import MissingBlock
from bundlekit.ipld.cid import RAW, as_cidv1
from bundlekit.unixfs.importer import ListSink, import_tree
from bundlekit.unixfs.profiles import get_profile

_PATHS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c/d", "c/e", "f/g/h"]), st.sampled_from(["x", "y", "z", "w"])),
    min_size=2, max_size=12, unique=True,
).map(lambda pairs: [f"{folder}/{name}.md" for folder, name in pairs])


def _import(files: dict[str, bytes]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    sink = ListSink()
    result = import_tree(sorted(files.items()), sink, get_profile())
    return result.root, sink.blocks


def _car(root: bytes, blocks: list[tuple[bytes, bytes]]) -> io.BytesIO:
    out = io.BytesIO()
    writer = CarWriter(out, [root])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    out.seek(0)
    return out


def _pin_thin(store: BlockStore, files: dict[str, bytes], held: set[bytes]) -> bytes:
    """Import and pin the DAG of ``files`` from a CAR of only the blocks not in ``held`` (a sync's thin CAR)."""
    root, blocks = _import(files)
    store.import_car(_car(root, [(cid, data) for cid, data in blocks if as_cidv1(cid) not in held]), pin=True)
    return root


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=_PATHS, edited=st.integers(min_value=0), body=st.binary(min_size=1, max_size=64))
def test_a_pin_over_the_last_pins_walk_finds_what_a_full_walk_finds(
    tmp_path_factory: object, paths: list[str], edited: int, body: bytes
) -> None:
    work = Path(getattr(tmp_path_factory, "mktemp")("walk"))
    store = BlockStore(work / "store", fsync=False)
    files = {path: f"memory {path}".encode() for path in paths}
    first, blocks = _import(files)
    store.import_car(_car(first, blocks), pin=True)
    files[paths[edited % len(paths)]] = body
    held = set(store.pinned_walk())
    root = _pin_thin(store, files, held)
    walked = store.pinned_walk()
    assert walked == store._dag_sizes(root, None)  # the full walk, every block read
    assert store.pins()[root]["size"] == sum(walked.values())


def test_a_pin_reads_no_unchanged_directory_of_the_dag_pinned_last(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "store", fsync=False)
    files = {f"{folder}/{name}.md": f"{folder} {name}".encode() for folder in ("a", "b", "c/d") for name in "xyz"}
    first, blocks = _import(files)
    store.import_car(_car(first, blocks), pin=True)
    alone, blocks_of_a = _import({path: data for path, data in files.items() if path.startswith("a/")})
    unchanged_dirs = {as_cidv1(cid) for cid, _data in blocks_of_a if as_cidv1(cid)[1] != RAW} - {as_cidv1(alone)}
    files["b/x.md"] = b"changed"
    held = set(store.pinned_walk())
    read: list[bytes] = []
    real_get = BlockStore.get

    def get(self: BlockStore, cid: bytes) -> bytes:
        read.append(as_cidv1(cid))
        return real_get(self, cid)

    setattr(BlockStore, "get", get)
    try:
        root = _pin_thin(store, files, held)
    finally:
        setattr(BlockStore, "get", real_get)
    assert root in store.pins()
    assert unchanged_dirs and not unchanged_dirs & set(read)  # directory a/ untouched
    assert store.pinned_walk() == store._dag_sizes(root, None)


def test_a_walk_record_whose_link_names_no_block_of_it_is_ignored(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "store", fsync=False)
    root, blocks = _import({"a/x.md": b"x", "b/y.md": b"y"})
    store.import_car(_car(root, blocks), pin=True)
    record = store.root / WALK_FILE
    whole = record.read_bytes()
    assert store.pinned_walk()
    # the root's entry comes first (the walk's order): its CID, size, link count, then its first link's index
    first_link = len(b"bundlekit-pin-walk/3\n") + 1 + len(as_cidv1(root)) + 1 + len(as_cidv1(root)) + 8
    assert whole[first_link - 4:first_link] == (2).to_bytes(4, "big")  # a/ and b/
    record.write_bytes(_sealed(whole[:first_link] + (0xFFFFFFFF).to_bytes(4, "big") + whole[first_link + 4:-32]))
    assert store.pinned_walk() == {}


def test_the_walk_record_is_parsed_once_per_file_and_again_once_replaced(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "store", fsync=False)
    files = {"a/x.md": b"x", "b/y.md": b"y"}
    first, blocks = _import(files)
    store.import_car(_car(first, blocks), pin=True)
    parsed: list[bytes] = []
    real_parse = blockstore._parse_walk

    def parse(data: memoryview) -> object:
        parsed.append(bytes(data[:8]))
        return real_parse(data)

    setattr(blockstore, "_parse_walk", parse)
    try:
        assert store.pinned_walk() == store.pinned_walk()
        assert len(parsed) == 1
        files["b/y.md"] = b"changed"
        root = _pin_thin(store, files, set(store.pinned_walk()))
        assert as_cidv1(root) in store.pinned_walk() and len(parsed) == 2  # the new record, read anew
    finally:
        setattr(blockstore, "_parse_walk", real_parse)


def _sealed(body: bytes) -> bytes:
    """A walk record's bytes ``body`` (magic included) closed by its digest, as ``_record_walk`` closes one: a record
    crafted so, by someone who can write the store, passes the digest."""
    return body + hashlib.sha256(body).digest()


def _entries(record: bytes) -> list[tuple[bytes, int, list[int]]]:
    """The blocks of a walk record (CID, size, link indexes), in its order."""
    body = record[len(b"bundlekit-pin-walk/3\n"):-32]
    at, found = 1 + body[0], []
    while at < len(body):
        cid = body[at + 1:at + 1 + body[at]]
        at += 1 + body[at]
        size, count = int.from_bytes(body[at:at + 4], "big"), int.from_bytes(body[at + 4:at + 8], "big")
        at += 8
        found.append((cid, size, [int.from_bytes(body[at + 4 * i:at + 4 * i + 4], "big") for i in range(count)]))
        at += 4 * count
    return found


def _encoded(root: bytes, entries: list[tuple[bytes, int, list[int]]]) -> bytes:
    parts = [b"bundlekit-pin-walk/3\n", bytes([len(root)]), root]
    for cid, size, children in entries:
        parts += [bytes([len(cid)]), cid, size.to_bytes(4, "big"), len(children).to_bytes(4, "big")]
        parts += [index.to_bytes(4, "big") for index in children]
    return _sealed(b"".join(parts))


def _pinned(tmp_path: Path, files: dict[str, bytes]) -> tuple[BlockStore, bytes]:
    store = BlockStore(tmp_path / "store", fsync=False)
    root, blocks = _import(files)
    store.import_car(_car(root, blocks), pin=True)
    return store, root


def test_a_walk_record_cut_at_any_byte_or_with_any_byte_flipped_vouches_for_nothing(tmp_path: Path) -> None:
    store, _root = _pinned(tmp_path, {"a/x.md": b"x", "b/y.md": b"y"})
    record = store.root / WALK_FILE
    whole = record.read_bytes()
    assert store.pinned_walk()
    for at in range(len(whole)):
        record.write_bytes(whole[:at])
        assert BlockStore(store.root, fsync=False).pinned_walk() == {}
        record.write_bytes(whole[:at] + bytes([whole[at] ^ 0x01]) + whole[at + 1:])
        assert BlockStore(store.root, fsync=False).pinned_walk() == {}


def test_a_walk_record_of_the_previous_version_vouches_for_nothing(tmp_path: Path) -> None:
    store, _root = _pinned(tmp_path, {"a/x.md": b"x", "b/y.md": b"y"})
    record = store.root / WALK_FILE
    body = record.read_bytes()[:-32].replace(b"bundlekit-pin-walk/3\n", b"bundlekit-pin-walk/2\n", 1)
    record.write_bytes(body)
    assert BlockStore(store.root, fsync=False).pinned_walk() == {}
    record.write_bytes(_sealed(body))
    assert BlockStore(store.root, fsync=False).pinned_walk() == {}


def test_a_walk_record_with_a_huge_link_count_is_refused_without_reading_past_it(tmp_path: Path) -> None:
    store, root = _pinned(tmp_path, {"a/x.md": b"x", "b/y.md": b"y"})
    entries = _entries((store.root / WALK_FILE).read_bytes())
    body = _encoded(as_cidv1(root), entries)[:-32]
    first = len(b"bundlekit-pin-walk/3\n") + 1 + len(as_cidv1(root)) + 1 + len(entries[0][0]) + 4
    (store.root / WALK_FILE).write_bytes(_sealed(body[:first] + (0xFFFFFFFF).to_bytes(4, "big") + body[first + 4:]))
    assert BlockStore(store.root, fsync=False).pinned_walk() == {}


@pytest.mark.parametrize("target", ["itself", "the root"])
def test_a_cyclic_walk_record_vouches_for_nothing_and_a_pin_walks_in_full(tmp_path: Path, target: str) -> None:
    files = {f"{folder}/{name}.md": f"{folder} {name}".encode() for folder in ("a", "b") for name in "xyz"}
    store, root = _pinned(tmp_path, files)
    entries = _entries((store.root / WALK_FILE).read_bytes())
    shard = next(at for at, (cid, _size, children) in enumerate(entries) if at and children)
    cid, size, children = entries[shard]
    entries[shard] = (cid, size, children + [shard if target == "itself" else 0])
    (store.root / WALK_FILE).write_bytes(_encoded(as_cidv1(root), entries))
    fresh = BlockStore(store.root, fsync=False)
    assert fresh.pinned_walk() == {}  # links point forward only: a link back reads as no record
    files["b/x.md"] = b"changed"
    new = _pin_thin(fresh, files, set())  # the walk reads every block
    assert fresh.pinned_walk() == fresh._dag_sizes(new, None)
    assert not fresh.verify().problems and fresh.gc() >= 0


def test_a_walk_record_for_a_root_that_is_not_pinned_vouches_for_nothing(tmp_path: Path) -> None:
    store, root = _pinned(tmp_path, {"a/x.md": b"x", "b/y.md": b"y"})
    other, _blocks = _import({"c/z.md": b"z"})
    entries = _entries((store.root / WALK_FILE).read_bytes())
    (store.root / WALK_FILE).write_bytes(_encoded(as_cidv1(other), [(as_cidv1(other), 1, [])] + entries))
    assert BlockStore(store.root, fsync=False).pinned_walk() == {}


def test_a_walk_record_rewritten_in_place_with_the_same_file_times_is_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filesystem with coarse timestamps, or an inode reused within one tick, shows the same fstat identity for
    another record: its closing digest, read with it, tells them apart."""
    store, root = _pinned(tmp_path, {"a/x.md": b"x", "b/y.md": b"y"})
    record = store.root / WALK_FILE
    whole = record.read_bytes()
    assert store.pinned_walk()
    first = os.stat(record)
    monkeypatch.setattr(blockstore.os, "fstat", lambda _fd: first)  # every file looks as the first did
    entries = _entries(whole)
    entries[1] = (entries[1][0], entries[1][1] + 1, entries[1][2])  # same length, sizes no longer add up
    with open(record, "r+b") as fh:
        fh.write(_encoded(as_cidv1(root), entries))
    assert store.pinned_walk() == {}


def test_store_verify_finding_a_pinned_block_missing_drops_the_walk_record(tmp_path: Path) -> None:
    files = {f"{folder}/{name}.md": f"{folder} {name}".encode() for folder in ("a", "b") for name in "xyz"}
    store, root = _pinned(tmp_path, files)
    shard = next(cid for cid, _size, children in _entries((store.root / WALK_FILE).read_bytes())[1:] if children)
    os.unlink(store._file(shard))  # lost by hand: the next pin would take it from the record
    assert [problem.problem for problem in store.verify().problems] == ["missing"]
    assert store.pinned_walk() == {}
    files["c/n.md"] = b"new"
    with pytest.raises(MissingBlock):  # the pin walks in full and refuses, never claims the DAG complete
        _pin_thin(store, files, {shard})  # a thin CAR that took the shard as held
    assert [pinned for pinned in store.pins()] == [root]


def test_gc_finding_a_pinned_block_missing_drops_the_walk_record(tmp_path: Path) -> None:
    files = {f"{folder}/{name}.md": f"{folder} {name}".encode() for folder in ("a", "b") for name in "xyz"}
    store, _root = _pinned(tmp_path, files)
    shard = next(cid for cid, _size, children in _entries((store.root / WALK_FILE).read_bytes())[1:] if children)
    os.unlink(store._file(shard))
    with pytest.raises(MissingBlock):
        store.gc()
    assert store.pinned_walk() == {}


def _fake_cid(n: int) -> bytes:
    return b"\x01\x71\x12\x20" + hashlib.sha256(n.to_bytes(4, "big")).digest()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), count=st.integers(min_value=1, max_value=12))
def test_a_walk_record_reads_back_the_walk_in_any_order_it_was_found(
    tmp_path_factory: object, data: st.DataObject, count: int
) -> None:
    """Whether the walk's own order already has every link forward (kept as it is) or not (ordered parents first),
    the record reads back the same blocks, sizes and links: a DAG of shared blocks included, in any order."""
    links: dict[bytes, list[bytes]] = {}
    for node in range(1, count):  # each node linked by one or more earlier ones: a DAG the root reaches whole
        for parent in data.draw(st.lists(st.integers(min_value=0, max_value=node - 1), min_size=1, max_size=3,
                                         unique=True)):
            links.setdefault(_fake_cid(parent), []).append(_fake_cid(node))
    order = data.draw(st.permutations(range(count)))
    sizes = {_fake_cid(n): 10 + n for n in order}
    store = BlockStore(Path(getattr(tmp_path_factory, "mktemp")("order")) / "store", fsync=False)
    store._record_walk(_fake_cid(0), sizes, links)
    walked = store._read_walk()
    assert walked is not None and walked.sizes == sizes and walked.links == links


def test_a_walk_found_parents_first_is_recorded_in_its_own_order(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A pin's walk over the last record finds the blocks parents first already: no reordering pass is run, and the
    record lists them as found."""
    store = BlockStore(tmp_path / "store", fsync=False)
    files = {f"{folder}/{name}.md": f"{folder} {name}".encode() for folder in ("a", "b", "c/d") for name in "xyz"}
    first, blocks = _import(files)
    store.import_car(_car(first, blocks), pin=True)
    files["b/x.md"] = b"changed"

    def refused(*_args: object) -> list[bytes]:
        raise AssertionError("the walk was ordered again")

    monkeypatch.setattr(blockstore, "_parents_first", refused)
    root = _pin_thin(store, files, set(store.pinned_walk()))
    assert store.pinned_walk() == store._dag_sizes(root, None)
    assert next(iter(store.pinned_walk())) == as_cidv1(root)


def test_a_pin_over_a_record_of_shared_and_twice_linked_blocks_keeps_every_block_through_gc(tmp_path: Path) -> None:
    """A DAG whose blocks are shared (the same file in two folders, a folder's two names for one file: one block
    linked twice by one parent, and by parents in other sub-DAGs), pinned over the last record with the first
    root unpinned: gc keeps every block the new pin needs, ``store verify`` finds none missing, and the record
    the pin wrote reads back the full walk."""
    store = BlockStore(tmp_path / "store", fsync=False)
    same = b"one body, shared by many names " * 40
    files = {"a/x.md": same, "a/y.md": same, "b/x.md": same, "b/c/x.md": same, "c/y.md": b"own"}
    first, blocks = _import(files)
    store.import_car(_car(first, blocks), pin=True)
    files["c/y.md"] = same  # the changed folder links the shared block too
    files["d/x.md"] = same
    root = _pin_thin(store, files, set(store.pinned_walk()))
    store.unpin(first)
    store.gc()
    dag = store._dag_sizes(root, None)  # every block read: gc left none out
    assert store.pinned_walk() == dag and store.pins()[root]["size"] == sum(dag.values())
    report = store.verify()
    assert report.ok and report.pins == 1, report.summary()
    assert all(store.has(cid) for cid in dag)
