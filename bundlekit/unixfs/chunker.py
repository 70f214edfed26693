"""Fixed-size chunking of a byte stream, one chunk in memory at a time.

Every chunk is exactly ``chunk_size`` bytes except the last, which is shorter
and never empty, except that an empty stream yields one empty chunk (an empty
file is still one leaf; the reference importers do the same).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

__all__ = ["iter_bytes_chunks", "iter_chunks", "pread_full", "read_full"]


def read_full(read: Callable[[int], bytes], size: int) -> bytes:
    """Up to ``size`` bytes from ``read``, fewer only at end of stream.

    Short reads (pipes, sockets, raw file descriptors) are topped up so chunk
    boundaries depend only on the content, never on how reads were split.
    """
    data = read(size)
    if not data or len(data) == size:
        return data or b""
    more = read(size - len(data))
    if not more:  # the usual end of a file: no join, so no copy of the last chunk
        return data
    parts = [data, more]
    have = len(data) + len(more)
    while have < size:
        more = read(size - have)
        if not more:
            break
        parts.append(more)
        have += len(more)
    return b"".join(parts)


def pread_full(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes of ``fd`` from ``offset`` (no shared file position: safe from threads).

    Fewer only at end of file, like :func:`read_full`.
    """
    data = os.pread(fd, size, offset)
    if not data or len(data) == size:
        return data
    parts = [data]
    have = len(data)
    while have < size:
        more = os.pread(fd, size - have, offset + have)
        if not more:
            break
        parts.append(more)
        have += len(more)
    return b"".join(parts) if len(parts) > 1 else data


def iter_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield fixed-size chunks read from ``stream`` (``read_full`` tops up short reads).

    ``OSError`` from the stream propagates; the importer names the path.
    """
    chunk = read_full(stream.read, chunk_size)
    yield bytes(chunk)  # an empty stream is one empty chunk
    while len(chunk) == chunk_size:
        chunk = read_full(stream.read, chunk_size)
        if not chunk:
            break
        yield bytes(chunk)


def iter_bytes_chunks(data: bytes, chunk_size: int) -> Iterator[bytes]:
    """The same chunking over an in-memory ``bytes`` value."""
    if not data:
        yield b""
        return
    for start in range(0, len(data), chunk_size):
        yield data[start : start + chunk_size]
