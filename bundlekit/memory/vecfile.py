"""The vector file: what recall by meaning ranks with, packed in one file beside the derived index.

A fresh ``memory recall`` ranks every memory by meaning once. Reading 10,000 rows of the ``memory`` and
``vector`` tables out of SQLite as Python objects cost it some 37 ms; this file holds the same columns as
flat arrays, written by the first recall by meaning of an index state that holds every vector and read
whole by every one after it (a few milliseconds: one ``read`` of about 1 KB per memory, then slices of it).

Derived data (it ranks, never decides bytes), and read as foreign: ``<tree>/.bundlekit/vectors.bin``, every
number little-endian::

    magic       8 bytes  b"BKVECS\\r\\n"
    version     uint32   FORMAT (1)
    dimension   uint32   d
    count       uint32   n, the memory rows
    complete    uint32   1 when every row had a vector of d values (the tree needed no embedding)
    gen         int64    the index's generation            \\
    vec_gen     int64    its vectors' generation            } the index state it was written from
    written_ns  int64    its state's written_ns             /
    model_len   uint32   then the model (``<model id>#<dimension>``, UTF-8, at most MAX_MODEL bytes)
    keys_len    uint32   then the keys (UTF-8, NUL between), padded with NULs to a multiple of 8 bytes
    ids         n int64, salience, updated, horizon (-1.0: none) n float64 each, pieces n int64
    vectors     n * d float16 (zeros: none), heads n * d float16 (the name and description's)

:func:`read` answers None (the caller reads the index and writes the file again) for a file that is not
exactly that: absent, not a regular file (never followed through a symlink, never waited on as a FIFO), of
another version, of another index state or model or dimension, more rows than the index's largest row id, a
size that is not the one its header gives, keys that do not split into ``count`` UTF-8 names, columns
that are not :func:`sound` (a salience or time that is NaN or infinite). The file is read, never mapped (a file cut
short while mapped would end the process with SIGBUS): whole, or its columns first and its vectors streamed
after (:func:`stream`, a chunk at a time with ``pread``, the file checked to be the one read). A file that cannot be written is
left as it is (recall reads the index instead).
"""

from __future__ import annotations

import math
import os
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bundlekit._fs import atomic_write_bytes, open_regular
from bundlekit.errors import BundlekitError, MemoryStoreError

__all__ = ["FORMAT", "MAGIC", "VECTOR_FILE", "Columns", "Moved", "Stamp", "Stored", "read", "sound", "stream", "write"]

VECTOR_FILE = "vectors.bin"
MAGIC = b"BKVECS\r\n"
FORMAT = 1
MAX_MODEL = 1024
MAX_KEY_BYTES = 4096  # per row: a key is a file name less ".md" (at most 255 bytes on the file systems we know)
_HEADER = struct.Struct("<8sIIIIqqqII")

Stamp = tuple[int, int, str | None, int]
"""The index state vectors are read from: (generation, vectors' generation, model, written_ns)."""
Stored = tuple[Path, tuple[int, int, int], int, int]
"""Where vectors left in their file are: (path, the file's inode, size and mtime in ns, offset, dimension)."""
STREAM_ROWS = 256  # rows of vectors read at a time by stream(): 128 KB at 256 dimensions, one buffer reused


class Moved(Exception):
    """The vector file changed or went since its columns were read (its vectors are read from the index)."""


@dataclass
class Columns:
    """What recall by meaning ranks with, one entry per memory row, by row id: keys, row ids, salience,
    updated (POSIX seconds), horizon (seconds, -1.0 for none), piece length, and the vectors and head vectors
    (``count * dimension`` little-endian float16 each, zeros for none). ``complete``: every row had a vector."""

    keys: list[str]
    ids: array[int]
    salience: array[float]
    updated: array[float]
    horizon: array[float]
    pieces: array[int]
    vectors: bytes | memoryview
    heads: bytes | memoryview
    complete: bool = False
    stored: Stored | None = None  # vectors and heads left in the file (read by stream()), not in memory


def _sized(count: int, dimension: int) -> int:
    """Bytes of the arrays after the keys."""
    return count * (5 * 8 + 2 * 2 * dimension)


def _padded(length: int) -> int:
    return -length % 8


def write(path: Path, stamp: Stamp, dimension: int, columns: Columns) -> None:
    """Write ``columns`` (of the index state ``stamp``) to ``path``, atomically; nothing when it cannot be written
    (a read-only tree) or the model or keys are past the bounds :func:`read` keeps."""
    gen, vec_gen, model, written_ns = stamp
    model_bytes = (model or "").encode("utf-8", "surrogatepass")
    keys = "\0".join(columns.keys).encode("utf-8", "surrogatepass")
    count = len(columns.keys)
    if len(model_bytes) > MAX_MODEL or len(keys) > count * MAX_KEY_BYTES:
        return
    header = _HEADER.pack(MAGIC, FORMAT, dimension, count, int(columns.complete), gen, vec_gen, written_ns,
                          len(model_bytes), len(keys))
    numbers = [array(a.typecode, a) for a in (columns.ids, columns.salience, columns.updated, columns.horizon,
                                                columns.pieces)]
    if sys.byteorder == "big":
        for values in numbers:
            values.byteswap()
    data = b"".join([header, model_bytes, keys, b"\0" * _padded(len(keys)), *(a.tobytes() for a in numbers),
                     bytes(columns.vectors), bytes(columns.heads)])
    try:
        atomic_write_bytes(path, data, error=MemoryStoreError, sync_dir=False)
    except BundlekitError:
        return  # derived: recall reads the index instead


def read(path: Path, stamp: Stamp, dimension: int, most: int, *, whole: bool = True) -> Columns | None:
    """The columns in ``path`` when it is a vector file of the index state ``stamp`` with at most ``most`` rows
    (the index's largest row id: what bounds the read) of ``dimension`` (see the module docstring), else None.
    Not ``whole``: the vectors are left in the file (``Columns.stored``) for :func:`stream` (a process that
    ranks once reads them through one small buffer: no fresh memory to fault in for 10 MB)."""
    try:  # a directory (which a file object refuses with IsADirectoryError), a FIFO, a device: None
        fd = open_regular(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            info = os.fstat(fd)
            head = file.read(_HEADER.size)
            if len(head) != _HEADER.size:
                return None
            fields = _HEADER.unpack(head)
            magic, version, dim, rows, complete, gen, vec_gen, written_ns, model_len, keys_len = fields
            if (magic, version, dim, gen, vec_gen, written_ns) != (MAGIC, FORMAT, dimension, stamp[0], stamp[1], stamp[3]):
                return None
            if rows > most or complete > 1 or model_len > MAX_MODEL or keys_len > rows * MAX_KEY_BYTES:
                return None
            rest = model_len + keys_len + _padded(keys_len) + _sized(rows, dimension)
            if info.st_size != _HEADER.size + rest:
                return None
            wanted = rest if whole else rest - 2 * 2 * dimension * rows
            body = file.read(wanted)
        except OSError:
            return None
    if len(body) != wanted or body[:model_len] != (stamp[2] or "").encode("utf-8", "surrogatepass"):
        return None
    columns = _columns(memoryview(body)[model_len:], keys_len, rows, dimension, bool(complete))
    if columns is None or not sound(columns):
        return None
    if not whole:
        columns.stored = (path, (info.st_ino, info.st_size, info.st_mtime_ns), _HEADER.size + wanted, dimension)
    return columns


def sound(columns: Columns) -> bool:
    """Whether the ranking columns of ``columns`` keep the formula's scores finite: no salience or ``updated``
    that is NaN or infinite (a NaN there scored NaN, out of any order, and ``--json`` printed ``"score": NaN``,
    which is not JSON; an infinite salience scored infinity). Any other hand-made value only reorders, as a
    hand-made vector does: a horizon that is not a number of seconds counts as none, a piece's length is
    fitted again from the file as read, row ids only place the lexical term. Two passes in C: a sum is NaN or
    infinite when a value is (or when finite ones overflow, as no salience from 0 to 1 or time can)."""
    salience, updated = columns.salience, columns.updated
    if len(salience) != len(columns.keys) or len(updated) != len(columns.keys):
        return False
    return math.isfinite(sum(salience)) and math.isfinite(sum(updated))


def stream(stored: Stored, count: int) -> Iterator[tuple[int, memoryview, memoryview]]:
    """The vectors and head vectors :func:`read` left in the file, :data:`STREAM_ROWS` rows at a time: (first
    row, vectors, heads), each read with ``pread`` into one buffer reused (valid until the next step).
    :class:`Moved` when the file is not the one read (another inode, size or mtime: replaced, cut short) or a
    read comes short."""
    path, identity, offset, dimension = stored
    width = 2 * dimension
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise Moved(str(exc)) from exc
    try:
        info = os.fstat(fd)
        if (info.st_ino, info.st_size, info.st_mtime_ns) != identity:
            raise Moved("the vector file was replaced")
        vectors, heads = bytearray(STREAM_ROWS * width), bytearray(STREAM_ROWS * width)
        for start in range(0, count, STREAM_ROWS):
            size = min(STREAM_ROWS, count - start) * width
            got = os.preadv(fd, [memoryview(vectors)[:size]], offset + start * width)
            got += os.preadv(fd, [memoryview(heads)[:size]], offset + (count + start) * width)
            if got != 2 * size:
                raise Moved("the vector file was cut short")
            yield start, memoryview(vectors)[:size], memoryview(heads)[:size]
    except OSError as exc:
        raise Moved(str(exc)) from exc
    finally:
        os.close(fd)


def _columns(body: memoryview, keys_len: int, count: int, dimension: int, complete: bool) -> Columns | None:
    """The columns of a vector file's ``body`` from its keys on; None when the keys are not ``count`` UTF-8 names."""
    try:
        keys = str(body[:keys_len], "utf-8", "surrogatepass").split("\0") if count else []
    except UnicodeDecodeError:
        return None
    at = keys_len + _padded(keys_len)
    if len(keys) != count or (count and not all(keys)) or any(body[keys_len:at]):
        return None
    ids, pieces = array("q"), array("q")
    salience, updated, horizon = array("d"), array("d"), array("d")
    for values in (ids, salience, updated, horizon, pieces):  # the file's order
        values.frombytes(body[at : at + 8 * count])
        if sys.byteorder == "big":
            values.byteswap()
        at += 8 * count
    size = 2 * dimension * count
    return Columns(keys, ids, salience, updated, horizon, pieces, body[at : at + size], body[at + size : at + 2 * size],
                   complete)
