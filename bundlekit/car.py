"""CARv1 (Content Addressable aRchive): streaming writer, streaming reader, file index.

Layout (specs/car.md has the full rules)::

    car      = header section*
    header   = varint(len(hdr)) hdr           hdr = dag-cbor {"roots": [CID, ...], "version": 1}
    section  = varint(len(cid) + len(data)) cid data

The header is encoded and decoded with ``dag-cbor`` + ``multiformats`` (it is
read once per CAR); the CIDs inside sections go through the fast
``bundlekit.cid.read_cid``. CARv2 files are accepted on read (the v1 payload
they wrap is read; the index is ignored); we only ever write CARv1.

* ``CarWriter`` streams to an open binary file and drops repeated blocks.
* ``CarFileWriter`` writes to a path atomically when the root is only known at
  the end: it reserves the header slot, patches it in place at ``finish`` and
  falls back to one copy when the real root's CID has a different length.
* ``read_car`` yields one verified block at a time.
* ``CarIndex`` makes a CAR file a block getter: one streaming pass records
  ``cid -> (offset, length)``; blocks are read on demand.

Errors: ``CARError`` for malformed or truncated input (the message names the
byte offset), ``BlockMismatch`` / ``UnsupportedBlock`` from verification,
``MissingBlock`` from ``CarIndex.get``, ``UsageError`` for API misuse.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, NamedTuple

from .cid import cid_to_str, decode_varint, encode_varint, read_cid
from .errors import CARError, CIDError, MissingBlock, UnsupportedBlock, UsageError
from .verify import MAX_BLOCK_SIZE, check_block

__all__ = [
    "MAX_BLOCK_SIZE",
    "MAX_HEADER_SIZE",
    "CarWriter",
    "CarFileWriter",
    "CarIndex",
    "encode_header",
    "decode_header",
    "read_car",
    "iter_sections",
    "Section",
]

# A header holds a few roots; anything this large is hostile or not a CAR.
MAX_HEADER_SIZE = 1024 * 1024
# CIDs we can verify are 34-36 bytes; this bounds how far read_cid may look.
_MAX_CID_PEEK = 256
# CARv2: the fixed 11-byte pragma (varint 10 + dag-cbor {"version": 2}) and 40-byte header.
CARV2_PRAGMA = bytes.fromhex("0aa16776657273696f6e02")
_CARV2_HEADER_SIZE = 40
_READ_CHUNK = 256 * 1024
_PREAD = getattr(os, "pread", None)


def encode_header(roots: Sequence[bytes]) -> bytes:
    """The CARv1 header for ``roots`` (binary CIDs), varint length prefix included."""
    import dag_cbor
    from multiformats import CID

    try:
        cids = [CID.decode(bytes(root)) for root in roots]
    except Exception as exc:  # multiformats raises assorted ValueError/KeyError subclasses
        raise CIDError("a CAR root is not a valid binary CID") from exc
    header: dict[str, dag_cbor.IPLDKind] = {"roots": list(cids), "version": 1}
    body = dag_cbor.encode(header)
    return encode_varint(len(body)) + body


def decode_header(body: bytes) -> tuple[int, list[bytes]]:
    """Decode a header body (without its length prefix) into ``(version, roots)``.

    Returns ``(2, [])`` for the CARv2 pragma. Raises ``CARError`` for anything
    that is not dag-cbor, not a map, or has a wrong ``version`` / ``roots``.
    """
    import dag_cbor
    from multiformats import CID

    try:
        header = dag_cbor.decode(body)
    except Exception as exc:  # dag_cbor raises CBORDecodingError and friends
        raise CARError(f"CAR header is not valid dag-cbor ({exc}); the file is not a CAR or is corrupt") from exc
    if not isinstance(header, dict):
        raise CARError("CAR header is not a dag-cbor map; the file is not a CAR")
    version = header.get("version")
    if version == 2 and set(header) == {"version"}:
        return 2, []
    if version != 1 or type(version) is not int:
        raise CARError(f"unsupported CAR version {version!r}; only CARv1 (and CARv2 wrapping v1) are read")
    if set(header) != {"roots", "version"}:
        extra = sorted(str(k) for k in set(header) - {"roots", "version"})
        raise CARError(f"CARv1 header has unexpected keys {extra} or lacks 'roots'")
    roots = header["roots"]
    if not isinstance(roots, list):
        raise CARError("CARv1 header 'roots' is not a list of CIDs")
    out: list[bytes] = []
    for root in roots:
        if not isinstance(root, CID):
            raise CARError("CARv1 header 'roots' is not a list of CIDs")
        out.append(bytes(root))
    return 1, out


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


def _sections(reader: _Reader, max_block_size: int | None, with_data: bool) -> Iterator[Section]:
    while not reader.at_eof():
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
            data = reader.read_exact(data_len, cid)
            yield Section(cid, data_offset, data_len, data)
        else:
            reader.skip(data_len, cid)
            yield Section(cid, data_offset, data_len, None)


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
    roots, sections = iter_sections(stream, max_block_size=max_block_size)

    def blocks() -> Iterator[tuple[bytes, bytes]]:
        for section in sections:
            data = section.data
            assert data is not None  # with_data=True
            if verify:
                check_block(section.cid, data, max_block_size)
            yield section.cid, data

    return roots, blocks()


# Blocks up to this size are joined with their section prefix into one write.
_JOIN_LIMIT = 64 * 1024


class CarWriter:
    """Stream a CARv1 to an open binary file; a block put twice is written once.

    The header (with ``roots``) is written at construction. The writer never
    closes ``out``: its owner does. Memory grows with the number of distinct
    blocks (their CIDs), never with their data.
    """

    def __init__(self, out: BinaryIO, roots: Sequence[bytes]) -> None:
        self._start(out)
        out.write(encode_header(roots))

    def _start(self, out: BinaryIO) -> None:
        self._out = out
        self._seen: set[bytes] = set()
        self._closed = False
        self.blocks = 0
        self.bytes = 0

    def has(self, cid: bytes) -> bool:
        """Whether a block with this CID was written."""
        return cid in self._seen

    def put(self, cid: bytes, data: bytes) -> None:
        """Append one block unless this CID was already written."""
        if self._closed:
            raise UsageError("CarWriter.put called after close; open a new writer")
        if cid in self._seen:
            return
        self._seen.add(cid)
        prefix = encode_varint(len(cid) + len(data)) + cid
        if len(data) <= _JOIN_LIMIT:
            # One write call per small block: most blocks of a memory tree are small,
            # and per-call overhead dominated pack -o on trees of many small files.
            self._out.write(prefix + data)
        else:
            self._out.write(prefix)
            self._out.write(data)
        self.blocks += 1
        self.bytes += len(data)

    def close(self) -> None:
        """Flush the stream (it stays open) and refuse further blocks."""
        if not self._closed:
            self._closed = True
            self._out.flush()


class CarFileWriter:
    """Write a CARv1 to ``dest`` atomically when the root is known only at the end.

    Blocks go to a temp file beside ``dest``. The header slot is reserved when
    the first block arrives, sized for a root CID as long as that first CID
    (every CID of one import has the same shape); ``finish(root)`` patches the
    header in place, or copies the body once behind a correctly sized header if
    the root's CID length differs. Then fsync and ``os.replace``. ``abort()``,
    an exception inside ``with``, or leaving ``with`` without ``finish`` remove
    the temp file: no file ever appears at ``dest`` half-written.
    """

    def __init__(self, dest: str | os.PathLike[str]) -> None:
        self.dest = Path(dest)
        parent = self.dest.parent
        try:
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{self.dest.name}.", suffix=".car-tmp")
        except OSError as exc:
            raise CARError(f"cannot create a temporary CAR file in {parent}: {exc.strerror}") from exc
        self._tmp = Path(tmp)
        try:
            # mkstemp's 0600 suits secrets; a CAR is ordinary output, readable like any written file.
            os.chmod(self._tmp, 0o644)
            self._file: BinaryIO | None = os.fdopen(fd, "wb")
        except OSError as exc:
            os.close(fd)
            self._tmp.unlink(missing_ok=True)
            raise CARError(f"cannot prepare a temporary CAR file in {parent}: {exc.strerror}") from exc
        self._reserved = 0
        self._writer: _BodyWriter | None = None
        self.done = False

    @property
    def blocks(self) -> int:
        """Distinct blocks written so far."""
        return self._writer.blocks if self._writer else 0

    @property
    def data_bytes(self) -> int:
        """Block data bytes written so far."""
        return self._writer.bytes if self._writer else 0

    def _live(self) -> BinaryIO:
        if self._file is None:
            raise UsageError(f"CAR writer for {self.dest} is already finished or aborted")
        return self._file

    def put(self, cid: bytes, data: bytes) -> None:
        """Append one block (deduplicated by CID)."""
        out = self._live()
        if self._writer is None:
            # Reserve the header for a root shaped like this CID; patched at finish.
            self._reserved = len(encode_header([cid]))
            out.write(b"\0" * self._reserved)
            self._writer = _BodyWriter(out)
        self._writer.put(cid, data)

    def finish(self, root: bytes) -> Path:
        """Write the header for ``root``, fsync, and move the file to ``dest``; return ``dest``.

        Raises ``UsageError`` if ``root`` was never put (the CAR would be
        incomplete), ``CARError`` if the file cannot be written.
        """
        out = self._live()
        try:
            header = encode_header([root])
            if self._writer is not None:
                self._writer.join()
            if self._writer is None or not self._writer.has(root):
                raise UsageError(f"root {cid_to_str(root)} was never written to {self.dest}; the CAR would be incomplete")
            if len(header) == self._reserved:
                out.seek(0)
                out.write(header)
                _sync_close(out)
                final = self._tmp
            else:
                final = self._rewrite(out, header)
            os.replace(final, self.dest)
            _fsync_dir(self.dest.parent)
        except OSError as exc:
            self.abort()
            raise CARError(f"cannot write CAR {self.dest}: {exc.strerror}") from exc
        except BaseException:
            self.abort()
            raise
        self._file = None
        self.done = True
        return self.dest

    def _rewrite(self, out: BinaryIO, header: bytes) -> Path:
        """Copy the body behind a header of a different size into a second temp file."""
        _sync_close(out)
        fd, tmp2 = tempfile.mkstemp(dir=self.dest.parent, prefix=f".{self.dest.name}.", suffix=".car-tmp")
        try:
            os.chmod(tmp2, 0o644)
            with os.fdopen(fd, "wb") as dst, open(self._tmp, "rb") as src:
                dst.write(header)
                src.seek(self._reserved)
                while chunk := src.read(_READ_CHUNK):
                    dst.write(chunk)
                dst.flush()
                os.fsync(dst.fileno())
        except BaseException:
            Path(tmp2).unlink(missing_ok=True)
            raise
        self._tmp.unlink(missing_ok=True)
        self._tmp = Path(tmp2)
        return self._tmp

    def abort(self) -> None:
        """Drop everything written so far; ``dest`` is left untouched. Safe to call twice."""
        if self._writer is not None:
            self._writer.join()  # never close the file under a background sync
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass  # the temp file is removed below either way
            self._file = None
        if not self.done:
            self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> CarFileWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.done:
            self.abort()


# Flush to disk in the background every this many bytes (see _BodyWriter).
_WRITEBACK_EVERY = 16 * 1024 * 1024


class _BodyWriter(CarWriter):
    """A CarWriter whose header slot is managed by CarFileWriter.

    The CAR is fsynced before it is renamed into place. Left to the end, that
    fsync writes the whole file while nothing else happens (measured: 0.55 s
    of a 1.5 s pack of 258 MB). So every ``_WRITEBACK_EVERY`` bytes the buffer
    is flushed and a background thread runs ``fdatasync`` (which releases the
    GIL) while the importer goes on hashing; the final fsync then has little
    left to write. At most one background sync runs at a time.
    """

    def __init__(self, out: BinaryIO) -> None:  # no header: the slot is reserved and patched by the owner
        self._start(out)
        self._unsynced = 0
        self._sync_thread: threading.Thread | None = None

    def put(self, cid: bytes, data: bytes) -> None:
        before = self.bytes
        super().put(cid, data)
        self._unsynced += self.bytes - before
        if self._unsynced >= _WRITEBACK_EVERY and not (self._sync_thread and self._sync_thread.is_alive()):
            self._unsynced = 0
            self._out.flush()
            fd = self._out.fileno()
            self._sync_thread = threading.Thread(target=_datasync_quietly, args=(fd,), daemon=True)
            self._sync_thread.start()

    def join(self) -> None:
        """Wait for a background sync, before the file is synced for good or closed."""
        if self._sync_thread is not None:
            self._sync_thread.join()
            self._sync_thread = None


def _datasync_quietly(fd: int) -> None:
    # Only an early start on the final fsync, which reports any real error.
    # macOS and Windows have no fdatasync; fsync does the same work there.
    try:
        getattr(os, "fdatasync", os.fsync)(fd)
    except OSError:
        pass


def _sync_close(out: BinaryIO) -> None:
    out.flush()
    os.fsync(out.fileno())
    out.close()


def _fsync_dir(path: Path) -> None:
    # Makes the rename durable; not every platform can open a directory.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class CarIndex:
    """A CAR file as a block getter: ``get(cid)`` reads one block from disk on demand.

    Opening makes one streaming pass over the file recording
    ``cid -> (offset, length)`` (the first copy wins for repeated blocks), so
    memory is bounded by the number of blocks, never by their data. With
    ``verify`` that pass also re-hashes every block and raises on the first
    bad one; ``get`` always re-verifies what it reads (the file may have
    changed underneath). ``get`` and ``read`` are safe to call from several
    threads. Use as a context manager or call ``close()``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, verify: bool = True, max_block_size: int = MAX_BLOCK_SIZE
    ) -> None:
        self.path = Path(path)
        self.max_block_size = max_block_size
        try:
            self._file: BinaryIO = open(self.path, "rb")
        except OSError as exc:
            raise CARError(f"cannot open CAR {self.path}: {exc.strerror}") from exc
        self._lock = threading.Lock()
        self.index: dict[bytes, tuple[int, int]] = {}
        self.sections = 0
        self.bytes = 0
        try:
            self.roots, sections = iter_sections(self._file, with_data=verify, max_block_size=max_block_size)
            for section in sections:
                if verify:
                    assert section.data is not None
                    check_block(section.cid, section.data, max_block_size)
                self.sections += 1
                self.bytes += section.length
                self.index.setdefault(section.cid, (section.offset, section.length))
        except BaseException:
            self._file.close()
            raise

    def __contains__(self, cid: object) -> bool:
        return cid in self.index

    def __len__(self) -> int:
        return len(self.index)

    def read(self, cid: bytes) -> bytes:
        """The stored bytes of ``cid``, unverified; ``MissingBlock`` if the CAR lacks it."""
        where = self.index.get(cid)
        if where is None:
            raise MissingBlock(f"block {cid_to_str(cid)} is not in {self.path}; the CAR is incomplete")
        offset, length = where
        if self._file.closed:
            raise UsageError(f"the index of {self.path} is closed; read blocks inside its `with` block")
        if _PREAD is not None:
            # pread has no shared file position, so concurrent readers (the gateway) cannot interleave.
            data: bytes = _PREAD(self._file.fileno(), length, offset)
        else:
            with self._lock:
                self._file.seek(offset)
                data = self._file.read(length)
        if len(data) != length:
            raise CARError(f"CAR {self.path} shrank while reading block {cid_to_str(cid)} at offset {offset}")
        return data

    def get(self, cid: bytes) -> bytes:
        """The bytes of ``cid``, verified against it (``BlockMismatch``, ``MissingBlock``)."""
        data = self.read(cid)
        check_block(cid, data, self.max_block_size)
        return data

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CarIndex:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
