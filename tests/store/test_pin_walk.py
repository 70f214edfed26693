"""Issue 37: a pin through a CAR import takes the unchanged sub-DAGs of the DAG pinned last from its walk record
(``last-pin-walk``, with each block's links), reading none of their blocks, and finds exactly what a full walk finds.

A sync round's thin CAR carries only the blocks its store lacks; before this the pin's walk read back every unchanged
directory block of the new root (~950 HAMT shards at 10,000 memories) to find their links.
"""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundlekit import blockstore
from bundlekit.blockstore import WALK_FILE, BlockStore
from bundlekit.car.writer import CarWriter
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
    first_link = len(b"bundlekit-pin-walk/2\n") + 1 + len(as_cidv1(root)) + 1 + len(as_cidv1(root)) + 8
    assert whole[first_link - 4:first_link] == (2).to_bytes(4, "big")  # a/ and b/
    record.write_bytes(whole[:first_link] + (0xFFFFFFFF).to_bytes(4, "big") + whole[first_link + 4:])
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
