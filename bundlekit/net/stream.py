"""A CAR response read while the loader needs it: a file view of the body, and blocks pulled on demand.

``ChunkReader`` lets ``car.read_car`` parse an HTTP body as it streams in
(no spooling), counting bytes against a cap and turning a broken or
timed-out body into ``CARError``. ``CarPull`` hands the loader the blocks of
one open CAR response in the loader's own thread: ``take(cid)`` reads on
through the response until that block arrives, keeping the verified blocks
it passes on the way (at most ``limit`` bytes of them, each block counted with its CID and
``KEPT_BLOCK_COST``, the Python objects that hold it). No thread, no queue:
the socket's buffers let the gateway run ahead while the loader works, and
the loader's pace holds the gateway back (TCP flow control) instead of
memory growing. When the block cannot come this way (the stream ended or
broke, the kept blocks fill the window, or it was taken already) ``take``
returns None and the caller fetches that block by itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_module
from bundlekit.errors import BundlekitError, CARError

if TYPE_CHECKING:
    import httpx
else:  # named in except clauses only, reached by a body's error: httpx is imported by then
    httpx = lazy_module("httpx")

__all__ = ["DRAIN_BYTES", "KEPT_BLOCK_COST", "WINDOW_BYTES", "CarPull", "ChunkReader"]

# Verified blocks a CAR pull may keep for the loader, which asked for others first. The loader lists a bundle's
# ``memory/`` directory (every HAMT shard) before it reads a file, and a depth-first CAR brings the files between
# the shards: at 100,000 memories the last shards come after ~110 MB of files. At 32 MiB the window filled and
# the rest of a first follow came block by block (82,768 requests, every one cached: 119 s and 1.1 GB of RSS
# against 27 s and 305 MB at 256 MiB; issue 37). A quarter of a CAR response's 1 GiB cap.
WINDOW_BYTES = 256 * 1024 * 1024
# What a kept block costs beyond its data and CID bytes, counted against the window with them: the two bytes
# objects' headers and the dict's slot (about 165 bytes measured: 3,000,000 kept blocks of 4 bytes took 583 MiB of
# RSS). Counting data bytes alone, a gateway sending a CAR of tiny distinct blocks (41 bytes each on the wire, 26
# million in a 1 GiB response) made a load hold 5 GB while the window counted 100 MiB.
KEPT_BLOCK_COST = 192
# What closing a CAR pull still reads to reach the end of the response (and keep its connection).
DRAIN_BYTES = 256 * 1024


class ChunkReader:
    """A ``read(n)`` view of an iterator of byte chunks, raising ``CARError`` past ``limit`` bytes.

    A body that breaks off (a transport error, a timeout, the deadline) is a
    ``CARError`` saying so: to the CAR parser it is a truncated CAR.
    """

    def __init__(self, chunks: Iterator[bytes], limit: int) -> None:
        self._chunks = chunks
        self._limit = limit
        self._rest = b""
        self._seen = 0

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (a short read is not the end; ``b""`` is)."""
        while not self._rest:
            try:
                chunk = next(self._chunks, None)
            except httpx.HTTPError as exc:
                raise CARError(f"CAR response broke off ({type(exc).__name__}: {exc})") from exc
            if chunk is None:
                return b""
            self._seen += len(chunk)
            if self._seen > self._limit:
                raise CARError(f"CAR response is over the {self._limit}-byte limit")
            self._rest = chunk
        if n < 0 or n >= len(self._rest):
            out, self._rest = self._rest, b""
        else:
            out, self._rest = self._rest[:n], self._rest[n:]
        return out


class CarPull:
    """The blocks of one open CAR response, pulled as ``take`` needs them; at most ``limit`` bytes kept.

    ``blocks`` yields ``(cid, data)`` as parsed; ``accept(cid, data)`` says
    whether a block verified (the others are dropped); ``close`` closes the
    response; ``on_end(error)`` is told once how the stream ended (None: at
    its end). Thread-safe (one reader at a time).
    """

    def __init__(
        self,
        blocks: Iterator[tuple[bytes, bytes]],
        accept: Callable[[bytes, bytes], bool],
        close: Callable[[], None],
        on_end: Callable[[Exception | None], None],
        limit: int = WINDOW_BYTES,
    ) -> None:
        self._blocks = blocks
        self._accept = accept
        self._close = close
        self._on_end = on_end
        self._limit = limit
        self._lock = threading.Lock()
        self._kept: dict[bytes, bytes] = {}
        self._bytes = 0
        self._taken: set[bytes] = set()
        self._done = False

    def take(self, cid: bytes) -> bytes | None:
        """The verified block ``cid`` from the stream; None when it cannot come this way."""
        with self._lock:
            kept, taken = self._kept, self._taken
            if kept:
                data = kept.pop(cid, None)
                if data is not None:
                    self._bytes -= len(cid) + len(data) + KEPT_BLOCK_COST
                    taken.add(cid)
                    return data
            if self._done or cid in taken or self._bytes > self._limit:
                return None
            # Read on until it comes (one loop, no call per block beyond ``accept``: this runs for every block).
            accept = self._accept
            try:
                for got, data in self._blocks:
                    if got == cid:  # nearly always the very next block
                        if accept(got, data):
                            taken.add(got)
                            return data
                        continue
                    if not accept(got, data) or got in taken or got in kept:
                        continue
                    kept[got] = data
                    self._bytes += len(got) + len(data) + KEPT_BLOCK_COST
                    if self._bytes > self._limit:
                        return None  # the window is full: the caller fetches this one by itself
            except (BundlekitError, httpx.HTTPError) as exc:
                self._end(exc)
                return None
            self._end(None)
            return None

    def _end(self, error: Exception | None) -> None:
        self._done = True
        self._stop_reading()
        self._on_end(error)

    def _stop_reading(self) -> None:
        """Close the parser's generator (and so, at once, the response's byte iterators under it), then the
        response. Left suspended, they would be finalized by a later garbage collection (the fetcher and
        its pull refer to each other), at a random moment, and a stop signal handled inside a finalizer
        is lost ("Exception ignored"): an ``open`` stopped then would serve on."""
        close = getattr(self._blocks, "close", None)
        try:
            if callable(close):
                close()
        finally:
            self._close()

    def close(self, drain: int = 0) -> None:
        """Stop reading and drop the kept blocks; close the response.

        With ``drain`` (``DRAIN_BYTES`` after a load that went well), a stream
        within that many bytes of its end is read to it first, so the
        connection goes back to the pool instead of being dropped (the loader
        usually takes the last block just before the CAR ends).
        """
        with self._lock:
            if not self._done:
                self._done = True
                self._drain(drain)
                self._stop_reading()
            self._kept.clear()
            self._bytes = 0

    def _drain(self, limit: int) -> None:
        if limit <= 0:
            return
        seen = 0
        try:
            for _cid, data in self._blocks:
                seen += len(data)
                if seen > limit:
                    return
        except (BundlekitError, httpx.HTTPError):
            return
