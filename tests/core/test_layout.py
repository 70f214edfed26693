"""Chunking and the balanced file layout."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import pytest

from bundlekit.ipld.cid import DAG_PB, RAW, parse_cid_bytes
from bundlekit.ipld.dagpb import FILE, UnixFSData, decode_node
from bundlekit.unixfs.chunker import iter_bytes_chunks, iter_chunks
from bundlekit.unixfs.importer import ListSink, import_file, import_path
from bundlekit.unixfs.layout import FileBuilder, LeafHasher, leaf_block
from bundlekit.unixfs.profiles import get_profile


class Trickle(io.RawIOBase):
    """Returns at most 3 bytes per read, like a slow pipe."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(3, len(buffer), len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n


def test_chunks_are_fixed_size_except_the_last() -> None:
    assert [len(c) for c in iter_chunks(io.BytesIO(b"x" * 10), 4)] == [4, 4, 2]


def test_a_stream_of_whole_chunks_ends_without_an_empty_chunk() -> None:
    assert [len(c) for c in iter_chunks(io.BytesIO(b"x" * 8), 4)] == [4, 4]


def test_empty_stream_is_one_empty_chunk() -> None:
    assert list(iter_chunks(io.BytesIO(b""), 4)) == [b""]
    assert list(iter_bytes_chunks(b"", 4)) == [b""]


def test_short_reads_do_not_move_chunk_boundaries() -> None:
    data = bytes(range(50))
    assert list(iter_chunks(Trickle(data), 8)) == list(iter_bytes_chunks(data, 8))  # type: ignore[arg-type]


def test_single_chunk_file_is_the_raw_leaf_itself() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(b"hello"), sink, get_profile())
    assert parse_cid_bytes(entry.cid).codec == RAW and sink.blocks == [(entry.cid, b"hello")]


def test_single_chunk_file_with_dag_pb_leaves_is_a_file_leaf() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(b"hello"), sink, get_profile("unixfs-v0-2015"))
    links, data = decode_node(sink.blocks[0][1])
    assert links == [] and data is not None
    assert UnixFSData.decode(data) == UnixFSData(FILE, data=b"hello", filesize=5)
    assert entry.tsize == len(sink.blocks[0][1])


def test_root_node_lists_content_sizes_and_tsizes() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(b"abcdefghij"), sink, get_profile(chunk_size=4))
    root = dict(sink.blocks)[entry.cid]
    links, data = decode_node(root)
    assert data is not None
    assert UnixFSData.decode(data) == UnixFSData(FILE, filesize=10, blocksizes=[4, 4, 2])
    assert [link.tsize for link in links] == [4, 4, 2]
    assert entry.tsize == len(root) + 10 and entry.size == 10


def test_tree_is_balanced_with_max_links_per_node() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(bytes(7)), sink, get_profile(chunk_size=1, max_links=3))
    blocks = dict(sink.blocks)
    root_links, _ = decode_node(blocks[entry.cid])
    # 7 leaves / 3 -> 3 nodes (3, 3, 1) -> root over them
    assert [len(decode_node(blocks[link.cid])[0]) for link in root_links] == [3, 3, 1]


def test_exactly_max_links_chunks_need_one_level() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(b"abc"), sink, get_profile(chunk_size=1, max_links=3))
    links, _ = decode_node(dict(sink.blocks)[entry.cid])
    assert [parse_cid_bytes(link.cid).codec for link in links] == [RAW, RAW, RAW]


def test_pending_links_stay_bounded_by_max_links() -> None:
    profile = get_profile(chunk_size=1, max_links=4)
    builder = FileBuilder(profile, ListSink())
    worst = 0
    for _ in range(500):
        builder.add(b"x")
        worst = max(worst, max(len(level) for level in builder._levels))
    assert worst < 4
    assert parse_cid_bytes(builder.finish().cid).codec == DAG_PB


def test_raw_leaves_stay_cidv1_under_cidv0() -> None:
    sink = ListSink()
    entry = import_file(io.BytesIO(b"abcd"), sink, get_profile("unixfs-v0-2015", raw_leaves=True, chunk_size=2))
    assert parse_cid_bytes(entry.cid).version == 0
    leaves = [cid for cid, _ in sink.blocks if cid != entry.cid]
    assert all(parse_cid_bytes(c).version == 1 and parse_cid_bytes(c).codec == RAW for c in leaves)


def _sequential_blocks(data: bytes, raw_leaves: bool) -> list[tuple[bytes, bytes]]:
    """The blocks of ``data`` built one chunk at a time, no pool: the reference order."""
    profile = get_profile(chunk_size=16, max_links=3, raw_leaves=raw_leaves)
    sink = ListSink()
    builder = FileBuilder(profile, sink)
    for chunk in iter_bytes_chunks(data, profile.chunk_size):
        builder.add(chunk)
    builder.finish()
    return sink.blocks


@pytest.mark.parametrize("raw_leaves", [True, False])
def test_pooled_hashing_emits_the_same_blocks_in_the_same_order(raw_leaves: bool) -> None:
    data = os.urandom(16 * 40 + 5)
    profile = get_profile(chunk_size=16, max_links=3, raw_leaves=raw_leaves)
    sink = ListSink()
    import_file(io.BytesIO(data), sink, profile)
    assert sink.blocks == _sequential_blocks(data, raw_leaves)


@pytest.mark.parametrize("size", [16, 17, 16 * 25, 16 * 25 + 3])
def test_pooled_disk_import_emits_the_same_blocks_as_the_sequential_layout(
    tmp_path: os.PathLike[str], size: int
) -> None:
    """Chunks after the first are read with pread on the pool; a file may end on a chunk boundary."""
    data = os.urandom(size)
    path = os.path.join(tmp_path, "f.bin")
    with open(path, "wb") as fh:
        fh.write(data)
    sink = ListSink()
    import_path(path, sink, get_profile(chunk_size=16, max_links=3, raw_leaves=True))
    assert sink.blocks == _sequential_blocks(data, True)


def test_leaf_hasher_returns_leaves_in_chunk_order_and_can_restart() -> None:
    profile = get_profile(chunk_size=8)
    chunks = [bytes([i]) * 8 for i in range(30)]
    hasher = LeafHasher(profile, workers=2)
    try:
        first = list(hasher.leaves(iter(chunks)))
        hasher.close()
        again = list(hasher.leaves(iter(chunks)))
    finally:
        hasher.close()
    assert first == again == [leaf_block(c, profile) for c in chunks]


def test_leaf_hasher_keeps_a_bounded_number_of_chunks_in_flight() -> None:
    profile = get_profile(chunk_size=8)
    pulled = 0

    def chunks() -> Iterator[bytes]:
        nonlocal pulled
        for i in range(100):
            pulled += 1
            yield bytes([i]) * 8

    hasher = LeafHasher(profile, workers=2)
    try:
        leaves = hasher.leaves(chunks())
        next(leaves)
        assert pulled <= 2 * 2 + 1
    finally:
        hasher.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_file_leaves_read_the_rest_of_the_file_in_order(tmp_path: os.PathLike[str], workers: int) -> None:
    profile = get_profile(chunk_size=8)
    data = os.urandom(8 * 13 + 5)
    path = os.path.join(tmp_path, "f.bin")
    with open(path, "wb") as fh:
        fh.write(data)
    hasher = LeafHasher(profile, workers=workers)
    fd = os.open(path, os.O_RDONLY)
    try:
        leaves = list(hasher.file_leaves(fd, data[:8]))
    finally:
        os.close(fd)
        hasher.close()
    assert leaves == [leaf_block(c, profile) for c in iter_bytes_chunks(data, 8)]
