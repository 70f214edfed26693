"""A CAR pulled block by block as the loader asks (``net.stream``): verified blocks only, bounded memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bundlekit.errors import CARError
from bundlekit.ipld.cid import RAW, make_cid
from bundlekit.net.stream import KEPT_BLOCK_COST, CarPull, ChunkReader

BLOCKS = [(make_cid(1, RAW, bytes([i]) * 100), bytes([i]) * 100) for i in range(10)]


class _Stream:
    def __init__(self, blocks: list[tuple[bytes, bytes]], fail: Exception | None = None) -> None:
        self.blocks = blocks
        self.fail = fail
        self.pulled = 0
        self.closed = False
        self.ended: list[Exception | None] = []

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        for block in self.blocks:
            self.pulled += 1
            yield block
        if self.fail is not None:
            raise self.fail

    def pull(self, limit: int = 10_000, accept: bool = True) -> CarPull:
        return CarPull(iter(self), lambda c, d: accept, self.close, self.ended.append, limit)

    def close(self) -> None:
        self.closed = True


def test_a_block_is_read_only_as_far_as_the_stream_needs() -> None:
    stream = _Stream(BLOCKS)
    pull = stream.pull()
    assert pull.take(BLOCKS[2][0]) == BLOCKS[2][1]
    assert stream.pulled == 3


def test_blocks_passed_on_the_way_are_kept_for_later() -> None:
    stream = _Stream(BLOCKS)
    pull = stream.pull()
    pull.take(BLOCKS[5][0])
    assert pull.take(BLOCKS[1][0]) == BLOCKS[1][1]
    assert stream.pulled == 6


def test_a_full_window_hands_the_block_back_to_the_caller_instead_of_growing() -> None:
    stream = _Stream(BLOCKS)
    kept = len(BLOCKS[0][0]) + 100 + KEPT_BLOCK_COST  # what one kept block of 100 bytes counts
    pull = stream.pull(limit=2 * kept + 50)  # room for two blocks of 100 bytes, then one over
    assert pull.take(BLOCKS[9][0]) is None
    assert stream.pulled == 3  # stopped as soon as the kept blocks passed the window
    assert pull.take(BLOCKS[0][0]) == BLOCKS[0][1]


def test_tiny_blocks_fill_the_window_by_what_keeping_them_costs_not_by_their_bytes() -> None:
    # A hostile gateway's CAR of distinct 4-byte blocks nobody asked for: counted by their data alone, 256 MiB of
    # window held 67 million of them (about 11 GB of Python objects); counted with their CIDs and objects, the
    # window fills after as many as its bytes pay for.
    tiny = [(make_cid(1, RAW, i.to_bytes(4, "big")), i.to_bytes(4, "big")) for i in range(1000)]
    stream = _Stream(tiny)
    kept = len(tiny[0][0]) + 4 + KEPT_BLOCK_COST
    pull = stream.pull(limit=10 * kept)
    assert pull.take(make_cid(1, RAW, b"never sent")) is None
    assert stream.pulled == 11  # ten fit, the eleventh passed the window and the stream stopped there
    assert pull.take(tiny[3][0]) == tiny[3][1]  # what was kept is still handed out


def test_a_block_taken_once_is_not_offered_again() -> None:
    pull = _Stream(BLOCKS).pull()
    pull.take(BLOCKS[0][0])
    assert pull.take(BLOCKS[0][0]) is None


def test_the_end_of_the_stream_closes_it_and_is_reported_once() -> None:
    stream = _Stream(BLOCKS[:2])
    pull = stream.pull()
    assert pull.take(make_cid(1, RAW, b"absent")) is None
    assert stream.closed and stream.ended == [None]


def test_a_broken_stream_is_an_end_with_its_error() -> None:
    stream = _Stream(BLOCKS[:2], fail=CARError("truncated"))
    pull = stream.pull()
    assert pull.take(make_cid(1, RAW, b"absent")) is None
    assert stream.closed and isinstance(stream.ended[0], CARError)


def test_blocks_that_fail_verification_are_never_handed_out() -> None:
    pull = _Stream(BLOCKS).pull(accept=False)
    assert pull.take(BLOCKS[0][0]) is None


def test_the_chunk_reader_stops_past_its_byte_cap() -> None:
    reader = ChunkReader(iter([b"a" * 60, b"b" * 60]), limit=100)
    assert reader.read(1000) == b"a" * 60
    with pytest.raises(CARError, match="over the 100-byte limit"):
        reader.read(1000)


def test_the_chunk_reader_splits_chunks_to_the_size_asked() -> None:
    reader = ChunkReader(iter([b"abcdef"]), limit=100)
    assert [reader.read(4), reader.read(4), reader.read(4)] == [b"abcd", b"ef", b""]


def test_closing_with_a_drain_reads_a_short_rest_to_the_end() -> None:
    stream = _Stream(BLOCKS)
    pull = stream.pull()
    pull.take(BLOCKS[0][0])
    pull.close(drain=1000)
    assert stream.pulled == len(BLOCKS) and stream.closed


def test_closing_without_a_drain_reads_nothing_more() -> None:
    stream = _Stream(BLOCKS)
    pull = stream.pull()
    pull.take(BLOCKS[0][0])
    pull.close()
    assert stream.pulled == 1 and stream.closed
