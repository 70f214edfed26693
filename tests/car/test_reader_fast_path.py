"""``read_car``'s fast section loop (``car.reader._blocks``) against the careful per-section reader.

The fast loop cuts sections of the usual shape straight out of the buffer and
hands everything else to ``_section``; ``iter_sections`` always uses
``_section``. Both must yield the same blocks and end with the same error
(type and message) on any bytes, read in any chunk sizes: the committed
ipfs-car 3.1.0 vector (tests/car/data/README.md), a CAR with every varint
width and CID shape, and truncated or corrupted copies of them.
"""

from __future__ import annotations

import functools
import io
import random
from pathlib import Path

import pytest

from bundlekit.car.reader import iter_sections, read_car
from bundlekit.car.writer import CarWriter
from bundlekit.errors import BundlekitError
from bundlekit.ipld.cid import DAG_PB, RAW, encode_varint, make_cid

VECTOR = Path(__file__).parent / "data" / "ipfs-car-3.1.0-small.car"


class _Chunks(io.RawIOBase):
    """A stream whose reads return at most ``size`` bytes (as an HTTP body does)."""

    def __init__(self, data: bytes, size: int) -> None:
        self._data, self._pos, self._size = data, 0, size

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        n = self._size if n < 0 else min(n, self._size)
        out = self._data[self._pos : self._pos + n]
        self._pos += len(out)
        return out


@functools.cache
def _mixed_car() -> bytes:
    """Blocks whose section lengths take 1, 2 and 3 varint bytes; CIDv0, CIDv1 raw and dag-pb, a 2-byte codec."""
    out = io.BytesIO()
    blocks = [(make_cid(1, RAW, b""), b"")]
    for size in (1, 90, 91, 92, 127, 128, 16_000, 16_384, 70_000):
        data = random.Random(size).randbytes(size)
        blocks.append((make_cid(1, RAW, data), data))
        blocks.append((make_cid(0, DAG_PB, data), data))
    dag_json = b"\x01" + encode_varint(0x0129) + make_cid(1, RAW, b"{}")[2:]
    blocks.append((dag_json, b"{}"))
    writer = CarWriter(out, [blocks[1][0]])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    return out.getvalue()


def _outcome(blocks_of: object, data: bytes, chunk: int, max_block_size: int) -> tuple[list[tuple[bytes, bytes]], str]:
    got: list[tuple[bytes, bytes]] = []
    try:
        if blocks_of is read_car:
            _roots, blocks = read_car(_Chunks(data, chunk), verify=False, max_block_size=max_block_size)  # type: ignore[arg-type]
            got.extend(blocks)
        else:
            _roots, sections = iter_sections(_Chunks(data, chunk), max_block_size=max_block_size)  # type: ignore[arg-type]
            got.extend((s.cid, s.data) for s in sections if s.data is not None)
    except BundlekitError as exc:
        return got, f"{type(exc).__name__}: {exc}"
    return got, "ok"


def _same(data: bytes, chunk: int, max_block_size: int = 2 * 1024 * 1024) -> None:
    assert _outcome(read_car, data, chunk, max_block_size) == _outcome(iter_sections, data, chunk, max_block_size)


@pytest.mark.parametrize("chunk", [7, 37, 4096, 1 << 30])
def test_fast_loop_yields_the_same_blocks_in_any_chunking(chunk: int) -> None:
    for data in (VECTOR.read_bytes(), _mixed_car()):
        _same(data, chunk)
        assert _outcome(read_car, data, chunk, 1 << 21)[1] == "ok"


def test_fast_loop_refuses_an_oversized_block_as_the_careful_reader_does() -> None:
    _same(_mixed_car(), 1 << 30, max_block_size=16_384)
    assert _outcome(read_car, _mixed_car(), 1 << 30, 16_384)[1].startswith("UnsupportedBlock: ")


def test_fast_loop_fails_like_the_careful_reader_on_every_truncation() -> None:
    data = VECTOR.read_bytes()
    for cut in range(len(data)):
        _same(data[:cut], 1 << 30)
        _same(data[:cut], 5)


def test_fast_loop_fails_like_the_careful_reader_on_corrupted_bytes() -> None:
    rng = random.Random(16)
    for data in (VECTOR.read_bytes(), _mixed_car()[:3000]):
        for _ in range(400):
            bad = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                bad[rng.randrange(len(bad))] = rng.choice((0, 1, 0x12, 0x20, 0x7F, 0x80, 0xFF, rng.randrange(256)))
            _same(bytes(bad), rng.choice((1 << 30, 64)))
