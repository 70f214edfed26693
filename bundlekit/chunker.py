"""Fixed-size chunking of a byte stream, one chunk in memory at a time.

Every chunk is exactly ``chunk_size`` bytes except the last, which is shorter
and never empty, except that an empty stream yields one empty chunk (an empty
file is still one leaf; the reference importers do the same).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["iter_bytes_chunks", "iter_chunks"]


def iter_chunks(stream: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yield fixed-size chunks read from ``stream``.

    Short reads (pipes, sockets, some file objects) are topped up so chunk
    boundaries depend only on the content, never on how reads were split.
    ``OSError`` from the stream propagates; the importer names the path.
    """
    emitted = False
    while True:
        chunk = stream.read(chunk_size)
        if not chunk:
            break
        if len(chunk) < chunk_size:
            parts = [chunk]
            have = len(chunk)
            while have < chunk_size:
                more = stream.read(chunk_size - have)
                if not more:
                    break
                parts.append(more)
                have += len(more)
            chunk = b"".join(parts)
        emitted = True
        yield bytes(chunk)
        if len(chunk) < chunk_size:
            break
    if not emitted:
        yield b""


def iter_bytes_chunks(data: bytes, chunk_size: int) -> Iterator[bytes]:
    """The same chunking over an in-memory ``bytes`` value."""
    if not data:
        yield b""
        return
    for start in range(0, len(data), chunk_size):
        yield data[start : start + chunk_size]
