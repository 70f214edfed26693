"""Block sources for the gateway: CAR files indexed by offset, and a chain of sources.

A *block source* is the smallest thing the gateway can serve from: ``get(cid)``
(verified bytes or ``MissingBlock``) and ``has(cid)``. ``BlockStore`` is one;
``CarFileSource`` serves a CAR file without loading it; ``ChainSource`` asks
several in order. Sources must be safe to call from many threads at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from bundlekit.blockstore import normalize_cid
from bundlekit.car.index import CarIndex
from bundlekit.errors import CARError, CIDError, MissingBlock
from bundlekit.ipld.cid import cid_to_str, verify_block

__all__ = ["BlockSource", "CarFileSource", "ChainSource"]


@runtime_checkable
class BlockSource(Protocol):
    """What the gateway reads blocks from; implementations must be thread-safe."""

    def get(self, cid: bytes) -> bytes:
        """The verified bytes of ``cid``; raises ``MissingBlock`` when absent."""
        ...

    def has(self, cid: bytes) -> bool:
        """True if ``get(cid)`` can be expected to succeed."""
        ...


class CarFileSource:
    """Serve the blocks of one CAR file, read on demand with ``os.pread``.

    Opening indexes the file once through ``car.CarIndex`` (verifying every
    block) and keeps only ``cid -> (offset, length)``: memory grows with the
    number of blocks, not their size. ``pread`` needs no shared file position,
    so many request threads read at once without a lock. Each ``get``
    re-verifies the block, so a file changed after indexing is reported, not
    served. Raises ``CARError`` for a malformed, truncated or unreadable CAR.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:

        self.path = Path(path)
        with CarIndex(self.path, verify=True) as index:
            self.roots: list[bytes] = list(index.roots)
            self._index = {normalize_cid(cid): span for cid, span in index.index.items()}
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise CARError(f"cannot open CAR {self.path}: {exc.strerror}; check the path") from exc
        self._lock = threading.Lock()
        self.blocks = len(self._index)

    def has(self, cid: bytes) -> bool:
        try:
            return normalize_cid(cid) in self._index
        except CIDError:
            return False

    def get(self, cid: bytes) -> bytes:
        """The verified block; ``MissingBlock`` if the CAR lacks it, ``BlockMismatch`` if the file changed."""
        try:
            span = self._index.get(normalize_cid(cid))
        except CIDError:
            span = None
        if span is None:
            raise MissingBlock(f"block {cid_to_str(cid)} is not in {self.path.name}")
        offset, length = span
        try:
            data = os.pread(self._fd, length, offset)
        except OSError as exc:
            raise CARError(f"cannot read {self.path}: {exc.strerror}; restart the gateway") from exc
        if len(data) != length:
            raise CARError(f"{self.path} shrank after it was indexed; restart the gateway")
        verify_block(cid, data, max_size=None)
        return data

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class ChainSource:
    """Ask each source in order; the first that has the block answers."""

    def __init__(self, sources: Iterable[BlockSource]) -> None:
        self.sources: Sequence[BlockSource] = tuple(sources)

    def has(self, cid: bytes) -> bool:
        return any(source.has(cid) for source in self.sources)

    def get(self, cid: bytes) -> bytes:
        # One lookup per source: a has() before each get() doubles the disk calls in the hot path.
        for source in self.sources:
            try:
                return source.get(cid)
            except MissingBlock:
                continue
        raise MissingBlock(f"block {cid_to_str(cid)} is in none of the gateway's sources")
