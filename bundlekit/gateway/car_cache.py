"""Streamed CAR answers kept as files: a root's CAR never changes, so its second request is a file read.

A gateway answer is kept when it is a ``GET`` answered ``200`` with a CAR (``application/vnd.ipld.car``
content type), streamed (no length), ``Cache-Control: immutable`` and an ``Etag``: the gateway's CAR
ETag names the terminal CID, the path, the scope and the byte range (``respond._car``), and the
content type its CAR parameters, so one key names one sequence of bytes. The first request streams
the CAR as before and copies each piece into an unnamed temporary file (``_fs.scratch_file``:
nothing of it outlives the process); only a stream that ended whole, within :data:`MAX_ENTRY_BYTES`,
is kept. Later requests with the same key get the same headers (the request rules still answer
them: a missing block is still a ``404``) and the file's bytes, read in :data:`READ_BYTES` pieces.
The cache holds at most :data:`MAX_CACHE_BYTES`; the least recently used CAR goes first. Thread-safe.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from bundlekit._fs import scratch_file
from bundlekit.gateway.respond import Response

__all__ = ["MAX_CACHE_BYTES", "MAX_ENTRY_BYTES", "READ_BYTES", "CachedCar", "CarCache", "CarCopy"]

#: Bytes of CARs kept in all; the least recently used go first.
MAX_CACHE_BYTES = 1024 * 1024 * 1024
#: The largest CAR kept; a longer stream is sent as before and not kept.
MAX_ENTRY_BYTES = 256 * 1024 * 1024
#: Bytes read from a kept CAR at a time.
# Small enough to stay in the processor's cache between the read and the socket write (specs/gateway.md).
READ_BYTES = 64 * 1024

_CAR_TYPE = "application/vnd.ipld.car"


class CachedCar:
    """One kept CAR: an unnamed file's descriptor and its size; closed when the last user drops it."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size

    def read(self, offset: int) -> bytes:
        """Up to ``READ_BYTES`` from ``offset`` (empty at the end)."""
        return os.pread(self.fd, min(READ_BYTES, self.size - offset), offset) if offset < self.size else b""

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


class CarCopy:
    """The copy of a CAR being streamed for the first time: ``add`` each piece, then ``keep`` it."""

    def __init__(self, cache: CarCache, key: tuple[str, str]) -> None:
        self._cache = cache
        self._key = key
        self._fd: int | None = scratch_file()
        self._size = 0

    def add(self, data: bytes) -> None:
        """Copy ``data``; past ``MAX_ENTRY_BYTES`` (or on a write error) the copy is dropped."""
        if self._fd is None:
            return
        if self._size + len(data) > MAX_ENTRY_BYTES:
            self.drop()
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            self.drop()
            return
        self._size += len(data)

    def keep(self) -> None:
        """The stream ended whole: the copy becomes the kept CAR of its key."""
        if self._fd is not None:
            self._cache.put(self._key, CachedCar(self._fd, self._size))
            self._fd = None

    def drop(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class CarCache:
    """Kept CARs by key, least recently used first out, within ``max_bytes``."""

    def __init__(self, max_bytes: int = MAX_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], CachedCar] = OrderedDict()
        self._bytes = 0

    @staticmethod
    def key(method: str, response: Response) -> tuple[str, str] | None:
        """The key of a keepable answer (see the module doc), or None."""
        if method != "GET" or response.status != 200 or response.length is not None:
            return None
        kind, etag = response.header("Content-Type") or "", response.header("Etag")
        if not kind.startswith(_CAR_TYPE) or not etag or "immutable" not in (response.header("Cache-Control") or ""):
            return None
        return etag, kind

    def get(self, key: tuple[str, str]) -> CachedCar | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def copy(self, key: tuple[str, str]) -> CarCopy | None:
        """A copy to fill while the CAR streams, or None when no scratch file can be made."""
        try:
            return CarCopy(self, key)
        except OSError:
            return None

    def put(self, key: tuple[str, str], entry: CachedCar) -> None:
        if entry.size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[key] = entry
            self._bytes += entry.size
            while self._bytes > self.max_bytes:
                _key, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
