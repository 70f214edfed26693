"""Streaming CAR reader: sections one at a time, blocks verified as they come."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from bundlekit.car.format import (
    _CARV2_HEADER_SIZE,
    _MAX_CID_PEEK,
    _READ_CHUNK,
    CARV2_PRAGMA,
    MAX_HEADER_SIZE,
    decode_header,
)
from bundlekit.errors import CARError, CIDError, UnsupportedBlock
from bundlekit.ipld.block import MAX_BLOCK_SIZE, check_block
from bundlekit.ipld.cid import cid_to_str, decode_varint, read_cid

__all__ = ["Section", "iter_sections", "read_car"]


class Section(NamedTuple):
    """One CAR section: the block's CID, the absolute offset and length of its data, and the data."""

    cid: bytes
    offset: int
    length: int
    data: bytes | None  # None when the caller asked to skip block data


def _truncated(start: int, what: str | bytes, need: int, have: int) -> CARError:
    """The error for a span of ``need`` bytes at ``start`` of which only ``have`` exist."""
    if isinstance(what, bytes):
        what = f"block {cid_to_str(what)}"
    return CARError(
        f"CAR truncated at offset {start}: {what} needs {need} bytes, only {have} remain; "
        "the file is incomplete, fetch or copy it again"
    )


class _Reader:
    """Buffered reads from a binary stream with an absolute offset and an optional end."""

    def __init__(self, stream: BinaryIO, offset: int = 0) -> None:
        self._stream = stream
        self._buf = b""
        self._i = 0
        self.offset = offset  # absolute offset of the next unread byte
        self.end: int | None = None

    def _available(self) -> int:
        return len(self._buf) - self._i

    def _fill(self, n: int) -> None:
        """Try to hold at least ``n`` unread bytes (fewer at end of stream or limit)."""
        if self._available() >= n:
            return
        if self.end is not None:
            n = min(n, self.end - self.offset)
        parts = [self._buf[self._i :]]
        have = len(parts[0])
        while have < n:
            want = max(n - have, _READ_CHUNK)
            if self.end is not None:
                want = min(want, self.end - self.offset - have)
            chunk = self._stream.read(want)
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
        self._buf = b"".join(parts)
        self._i = 0

    def at_eof(self) -> bool:
        if self.end is not None and self.offset >= self.end:
            return True
        self._fill(1)
        return self._available() == 0

    def peek(self, n: int) -> bytes:
        self._fill(n)
        return self._buf[self._i : self._i + n]

    def read_exact(self, n: int, what: str | bytes) -> bytes:
        """``n`` bytes or ``CARError``; ``what`` names them (a CID is formatted only on error)."""
        start = self.offset
        self._fill(n)
        if self._available() < n:
            raise _truncated(start, what, n, self._available())
        out = self._buf[self._i : self._i + n]
        self._i += n
        self.offset += n
        return out

    def skip(self, n: int, what: str | bytes) -> None:
        """Drop ``n`` bytes or raise ``CARError`` naming the whole span (start offset, ``n``)."""
        # Read and drop in chunks so a skipped block never sits in memory whole.
        start, done = self.offset, 0
        while done < n:
            step = min(n - done, _READ_CHUNK)
            self._fill(step)
            if self._available() < step:
                raise _truncated(start, what, n, done + self._available())
            self._i += step
            self.offset += step
            done += step

    def read_varint(self, what: str) -> int:
        start = self.offset
        head = self.peek(10)
        try:
            value, used = decode_varint(head, 0)
        except ValueError as exc:
            if len(head) < 10 and str(exc) == "truncated varint":
                raise CARError(f"CAR truncated at offset {start}: {what} length varint is cut short") from exc
            raise CARError(f"malformed {what} length varint at offset {start}: {exc}") from exc
        self._i += used
        self.offset += used
        return value


def _read_v1_header(reader: _Reader) -> tuple[int, list[bytes]]:
    start = reader.offset
    if reader.at_eof():
        raise CARError(f"CAR is empty at offset {start}: no header; the file is not a CAR")
    length = reader.read_varint("header")
    if length == 0 or length > MAX_HEADER_SIZE:
        raise CARError(f"CAR header length {length} at offset {start} is out of range (1..{MAX_HEADER_SIZE})")
    try:
        body = reader.read_exact(length, "the header")
    except CARError as exc:
        # A text or other non-CAR file fails here: its first byte reads as a length.
        raise CARError(f"{exc} (or the file is not a CAR at all)") from exc
    return decode_header(body)


def _open(stream: BinaryIO) -> tuple[_Reader, list[bytes]]:
    """Read the header (v1, or v2 pragma + header + inner v1 header); leave the reader at the first section."""
    reader = _Reader(stream)
    version, roots = _read_v1_header(reader)
    if version == 1:
        return reader, roots
    raw = reader.read_exact(_CARV2_HEADER_SIZE, "the CARv2 header")
    data_offset = int.from_bytes(raw[16:24], "little")
    data_size = int.from_bytes(raw[24:32], "little")
    if data_offset < len(CARV2_PRAGMA) + _CARV2_HEADER_SIZE:
        raise CARError(f"CARv2 data offset {data_offset} points inside its own header; the file is corrupt")
    reader.skip(data_offset - reader.offset, "the CARv2 padding")
    reader.end = data_offset + data_size
    inner_version, roots = _read_v1_header(reader)
    if inner_version != 1:
        raise CARError(f"CARv2 payload at offset {data_offset} is not a CARv1")
    return reader, roots


def _section(reader: _Reader, max_block_size: int | None, with_data: bool) -> Section:
    """The next section, read with every check and error message (the reader is not at its end)."""
    start = reader.offset
    length = reader.read_varint("section")
    if length == 0:
        raise CARError(f"empty CAR section at offset {start}; the file is corrupt")
    head = reader.peek(min(length, _MAX_CID_PEEK))
    try:
        cid, cid_len = read_cid(head, 0)
    except CIDError as exc:
        if len(head) < min(length, _MAX_CID_PEEK):
            raise CARError(f"CAR truncated at offset {reader.offset}: section CID is cut short") from exc
        raise CARError(f"malformed CID in the section at offset {start}: {exc}") from exc
    if cid_len > length:
        raise CARError(f"the CID of the section at offset {start} runs past its section length {length}")
    reader.read_exact(cid_len, "the section CID")
    data_len = length - cid_len
    if max_block_size is not None and data_len > max_block_size:
        raise UnsupportedBlock(
            f"block {cid_to_str(cid)} at offset {start} is {data_len} bytes, over the "
            f"{max_block_size}-byte limit; raise the limit only for CARs you trust"
        )
    data_offset = reader.offset
    if with_data:
        return Section(cid, data_offset, data_len, reader.read_exact(data_len, cid))
    reader.skip(data_len, cid)
    return Section(cid, data_offset, data_len, None)


def _sections(reader: _Reader, max_block_size: int | None, with_data: bool) -> Iterator[Section]:
    while not reader.at_eof():
        yield _section(reader, max_block_size, with_data)


def _blocks(reader: _Reader, max_block_size: int) -> Iterator[tuple[bytes, bytes]]:
    """``(cid, data)`` of each section: the same sections, checks and errors as ``_sections``, faster.

    Sections that lie whole in the buffer, with a varint length of at most
    3 bytes and a sha2-256 CID of the shape UnixFS writes (CIDv0, or CIDv1 with
    a one-byte codec), are cut straight out of it; anything else (a section
    that crosses the buffer's end, a limit, or any unusual or malformed bytes)
    is read by ``_section``, which raises the errors.
    """
    while True:
        buf, i = reader._buf, reader._i
        stop = len(buf)
        if reader.end is not None:
            stop = min(stop, i + reader.end - reader.offset)
        start = i
        while i < stop:
            b0 = buf[i]
            if b0 < 0x80:
                length, j = b0, i + 1
            elif i + 1 < stop and 0 < buf[i + 1] < 0x80:
                length, j = (b0 & 0x7F) | (buf[i + 1] << 7), i + 2
            elif i + 2 < stop and buf[i + 1] >= 0x80 and 0 < buf[i + 2] < 0x80:
                length, j = (b0 & 0x7F) | ((buf[i + 1] & 0x7F) << 7) | (buf[i + 2] << 14), i + 3
            else:
                break
            end = j + length
            if length < 34 or end > stop:
                break
            if buf[j] == 1 and length >= 36 and buf[j + 2] == 0x12 and buf[j + 3] == 0x20 and buf[j + 1] < 0x80:
                cid_end = j + 36
            elif buf[j] == 0x12 and length >= 34 and buf[j + 1] == 0x20:
                cid_end = j + 34
            else:
                break
            if end - cid_end > max_block_size:
                break
            i = end
            yield buf[j:cid_end], buf[cid_end:end]
        reader.offset += i - start
        reader._i = i
        if reader.at_eof():
            return
        section = _section(reader, max_block_size, True)
        assert section.data is not None  # with_data=True
        yield section.cid, section.data


def iter_sections(
    stream: BinaryIO, *, with_data: bool = True, max_block_size: int | None = MAX_BLOCK_SIZE
) -> tuple[list[bytes], Iterator[Section]]:
    """Roots and the raw sections of a CAR, unverified; offsets are absolute in the stream.

    The header is read at once (``CARError`` now); sections are read lazily
    (``CARError`` / ``UnsupportedBlock`` while iterating).
    """
    reader, roots = _open(stream)
    return roots, _sections(reader, max_block_size, with_data)


def read_car(
    stream: BinaryIO, *, verify: bool = True, max_block_size: int = MAX_BLOCK_SIZE
) -> tuple[list[bytes], Iterator[tuple[bytes, bytes]]]:
    """Read a CAR: ``(roots, iterator of (cid, data))``, one block in memory at a time.

    With ``verify`` every block is re-hashed against its CID while iterating
    (``BlockMismatch`` naming the CID; ``UnsupportedBlock`` for a codec or hash
    function we cannot check). Blocks over ``max_block_size`` raise
    ``UnsupportedBlock`` before their data is read. Truncation or garbage raise
    ``CARError`` naming the offset. Repeated blocks are yielded as stored.
    """
    reader, roots = _open(stream)
    if not verify:
        return roots, _blocks(reader, max_block_size)

    def verified() -> Iterator[tuple[bytes, bytes]]:
        for cid, data in _blocks(reader, max_block_size):
            check_block(cid, data, max_block_size)
            yield cid, data

    return roots, verified()
