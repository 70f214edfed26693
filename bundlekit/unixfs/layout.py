"""The balanced file layout: chunks in, a UnixFS file DAG out, streaming.

Leaves are collected into file nodes of at most ``max_links`` links; full
nodes are pushed one level up, and so on. At the end each level's remainder is
closed bottom-up. The result is the same tree ipfs-unixfs-importer's
``balanced`` layout and @ipld/unixfs's ``withWidth`` build (and kubo's
balanced builder), but only ``max_links`` pending links per level are ever
held, so memory does not grow with the file.

A file of exactly one chunk is that leaf itself (a raw block, or a dag-pb
leaf carrying the data) rather than a node with one link.

``LeafHasher`` hashes the leaves of multi-chunk files on a small thread pool
(``hashlib`` releases the GIL on large buffers, so two cores hash at once)
while the caller reads the next chunks; leaves come back in chunk order, so
the blocks and their order are exactly those of the single-threaded path.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple, Protocol

from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import FILE, PBLink, UnixFSData, encode_node
from bundlekit.unixfs.chunker import pread_full
from bundlekit.unixfs.profiles import Profile

__all__ = ["BlockSink", "FileBuilder", "FileNode", "LeafHasher", "leaf_block", "make_leaf"]


class BlockSink(Protocol):
    """Anything with ``put(cid, data)``; see DEVELOPERS.md."""

    def put(self, cid: bytes, data: bytes) -> None: ...


class FileNode(NamedTuple):
    """A finished leaf or file node: its CID, content bytes below it, and Tsize."""

    cid: bytes
    size: int
    tsize: int


def leaf_block(chunk: bytes, profile: Profile) -> tuple[FileNode, bytes]:
    """The leaf for ``chunk`` and its block bytes, not yet written anywhere (thread-safe)."""
    if profile.raw_leaves:
        # CIDv0 cannot address raw blocks, so raw leaves are always CIDv1
        # (what kubo and the JS importer do with --raw-leaves on CIDv0).
        return FileNode(make_cid(1, RAW, chunk), len(chunk), len(chunk)), chunk
    block = encode_node((), UnixFSData(FILE, data=chunk or None, filesize=len(chunk)).encode())
    return FileNode(make_cid(profile.cid_version, DAG_PB, block), len(chunk), len(block)), block


def make_leaf(chunk: bytes, profile: Profile, emit: BlockSink) -> FileNode:
    """Write one leaf block for ``chunk``; a single-chunk file is exactly this leaf."""
    node, block = leaf_block(chunk, profile)
    emit.put(node.cid, block)
    return node


def _usable_cpus() -> int:
    """The CPUs this process may run on (a container's cpuset, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _read_leaf(fd: int, size: int, offset: int, profile: Profile) -> tuple[FileNode, bytes] | None:
    """The leaf of the chunk at ``offset`` in ``fd``; ``None`` past the end of the file."""
    chunk = pread_full(fd, size, offset)
    return leaf_block(chunk, profile) if chunk else None


class LeafHasher:
    """Turns the chunks of a file into leaves on a thread pool, in order, a few chunks ahead.

    ``leaves(chunks)`` pulls chunks from the caller's iterator (the reads stay
    in the caller's thread) and keeps at most ``2 * workers`` of them in
    flight, so memory is bounded by a handful of chunks whatever the file
    size. The pool starts on the first use and ``close()`` stops it; with
    one CPU (or ``workers=1``) the leaves are made inline.
    """

    __slots__ = ("_pool", "_profile", "_workers")

    def __init__(self, profile: Profile, workers: int | None = None) -> None:
        self._profile = profile
        self._workers = workers if workers is not None else min(4, _usable_cpus())
        self._pool: ThreadPoolExecutor | None = None

    def leaves(self, chunks: Iterable[bytes]) -> Generator[tuple[FileNode, bytes], None, None]:
        """``leaf_block`` of each chunk, in order."""
        profile = self._profile
        it = iter(chunks)
        first = next(it, None)
        if first is None:
            return
        second = next(it, None)
        if second is None or self._workers < 2:
            # One chunk (most files) or one CPU: the pool's hand-offs would cost more than they save.
            yield leaf_block(first, profile)
            if second is not None:
                yield leaf_block(second, profile)
            for chunk in it:
                yield leaf_block(chunk, profile)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="bundlekit-hash")
        submit = self._pool.submit
        window: deque[Future[tuple[FileNode, bytes]]] = deque()
        limit = 2 * self._workers
        window.append(submit(leaf_block, first, profile))
        window.append(submit(leaf_block, second, profile))
        for chunk in it:
            window.append(submit(leaf_block, chunk, profile))
            if len(window) >= limit:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()

    def file_leaves(self, fd: int, first: bytes) -> Generator[tuple[FileNode, bytes], None, None]:
        """The leaves of the regular file open at ``fd``, whose first chunk (a full one) is ``first``.

        The chunks after it are read with ``pread`` by the pool's threads, so
        reading (page cache copies) runs on both cores as well as hashing; a
        short or empty chunk ends the file, as it ends :func:`read_full`'s
        reading. ``OSError`` from a read propagates. Every read has finished
        when the iterator is exhausted or closed, so the caller may close ``fd``.
        """
        profile = self._profile
        size = profile.chunk_size
        if self._workers < 2:
            yield leaf_block(first, profile)
            offset = size
            while True:
                chunk = pread_full(fd, size, offset)
                if not chunk:
                    return
                yield leaf_block(chunk, profile)
                if len(chunk) < size:
                    return
                offset += size
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="bundlekit-hash")
        submit = self._pool.submit
        window: deque[Future[tuple[FileNode, bytes] | None]] = deque()
        offset = size
        try:
            yield leaf_block(first, profile)
            while True:
                while len(window) < 2 * self._workers:
                    window.append(submit(_read_leaf, fd, size, offset, profile))
                    offset += size
                leaf = window.popleft().result()
                if leaf is None:
                    return
                yield leaf
                if leaf[0].size < size:
                    return
        finally:
            # Reads past the end (or after an error) finish before the caller closes fd.
            for future in window:
                future.cancel()
            for future in window:
                if not future.cancelled():
                    future.exception()

    def close(self) -> None:
        """Stop the pool (waiting for chunks still being hashed); the hasher can start it again."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class FileBuilder:
    """Accumulates one file's chunks into a balanced DAG.

    ``emit(cid, data)`` receives every block as soon as it exists (children
    before parents). Call ``add(chunk)`` for each chunk in order, then
    ``finish()`` once.
    """

    __slots__ = ("_count", "_emit", "_levels", "_max", "_profile", "_version")

    def __init__(self, profile: Profile, emit: BlockSink) -> None:
        self._emit = emit
        self._profile = profile
        self._version = profile.cid_version
        self._max = profile.max_links
        self._levels: list[list[FileNode]] = [[]]
        self._count = 0

    def add(self, chunk: bytes) -> None:
        """Turn one chunk into a leaf block and place it in the tree."""
        self._count += 1
        self._push(0, make_leaf(chunk, self._profile, self._emit))

    def add_leaf(self, node: FileNode, block: bytes) -> None:
        """Write a leaf made by ``leaf_block`` (e.g. on ``LeafHasher``'s pool) and place it in the tree."""
        self._count += 1
        self._emit.put(node.cid, block)
        self._push(0, node)

    def _push(self, level: int, node: FileNode) -> None:
        levels = self._levels
        row = levels[level]
        row.append(node)
        if len(row) == self._max:
            levels[level] = []
            if level + 1 == len(levels):
                levels.append([])
            self._push(level + 1, self._reduce(row))

    def _reduce(self, children: list[FileNode]) -> FileNode:
        """One file node over ``children``: links with empty names, blocksizes = content sizes."""
        sizes = [c.size for c in children]
        data = UnixFSData(FILE, filesize=sum(sizes), blocksizes=sizes).encode()
        block = encode_node([PBLink(c.cid, b"", c.tsize) for c in children], data)
        cid = make_cid(self._version, DAG_PB, block)
        self._emit.put(cid, block)
        return FileNode(cid, sum(sizes), len(block) + sum(c.tsize for c in children))

    def finish(self) -> FileNode:
        """Close every level bottom-up and return the root."""
        if self._count == 0:
            self.add(b"")
        if self._count == 1:
            return self._levels[0][0]
        levels = self._levels
        level = 0
        while True:
            row = levels[level]
            higher = any(levels[j] for j in range(level + 1, len(levels)))
            if not higher and len(row) == 1 and level > 0:
                return row[0]
            if row:
                levels[level] = []
                if level + 1 == len(levels):
                    levels.append([])
                self._push(level + 1, self._reduce(row))
            level += 1
