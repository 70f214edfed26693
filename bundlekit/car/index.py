"""A CAR file as a block getter: one indexing pass, blocks read on demand."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from bundlekit._closing import Closing
from bundlekit.car.format import _PREAD
from bundlekit.car.reader import iter_sections
from bundlekit.errors import CARError, CARFileError, MissingBlock, UsageError
from bundlekit.ipld.block import MAX_BLOCK_SIZE, check_block
from bundlekit.ipld.cid import cid_to_str

__all__ = ["CarIndex"]


class CarIndex(Closing):
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
        self, path: str | os.PathLike[str], *, verify: bool = True, max_block_size: int = MAX_BLOCK_SIZE,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Index the CAR at ``path``; ``progress(bytes_read, file_size)`` after each section, when given."""
        self.path = Path(path)
        self.max_block_size = max_block_size
        try:
            self._file: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - held open until close()
        except OSError as exc:
            raise CARFileError(f"cannot open CAR {self.path}: {exc.strerror}") from exc
        self._lock = threading.Lock()
        self.index: dict[bytes, tuple[int, int]] = {}
        self.sections = 0
        self.bytes = 0
        try:
            self.roots, sections = iter_sections(self._file, with_data=verify, max_block_size=max_block_size)
            size = os.fstat(self._file.fileno()).st_size if progress is not None else 0
            for section in sections:
                if progress is not None:
                    progress(section.offset + section.length, size)
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

    def length(self, cid: bytes) -> int | None:
        """The stored length of ``cid``'s block (read from the index, not the file), or ``None`` if absent."""
        where = self.index.get(cid)
        return None if where is None else where[1]

    def read(self, cid: bytes) -> bytes:
        """The stored bytes of ``cid``, unverified; ``MissingBlock`` if the CAR lacks it, ``CARError`` if unreadable."""
        where = self.index.get(cid)
        if where is None:
            raise MissingBlock(f"block {cid_to_str(cid)} is not in {self.path}; the CAR is incomplete")
        offset, length = where
        if self._file.closed:
            raise UsageError(f"the index of {self.path} is closed; read blocks inside its `with` block")
        try:
            if _PREAD is not None:
                # pread has no shared file position, so concurrent readers (the gateway) cannot interleave.
                data: bytes = _PREAD(self._file.fileno(), length, offset)
            else:
                with self._lock:
                    self._file.seek(offset)
                    data = self._file.read(length)
        except OSError as exc:
            raise CARError(f"cannot read CAR {self.path}: {exc.strerror}; check the file is still there") from exc
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
