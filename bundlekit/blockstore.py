"""The local block store under ``$BUNDLEKIT_HOME``: content-addressed, crash-safe.

Layout (``specs/gateway.md`` has the full description)::

    <root>/blocks/<shard>/<cid>   one file per block, named by its CIDv1 in base32
    <root>/pins.json              the pin set, rewritten atomically
    <root>/pins.lock              fcntl lock guarding read-modify-write of pins.json
    <root>/gc.lock                shared while importing, exclusive while collecting
    <root>/ipns/<name>            the latest IPNS record published for a name (``bundlekit.names``)
    <root>/packs/<id>.pack        many verified blocks in one file (a CARv1), written by a large load
    <root>/packs/<id>.idx         its index: each block's CID, offset and length, sorted by CID

A block file is named by the canonical CIDv1 string of its CID (a CIDv0 is
stored as the equivalent dag-pb CIDv1, so both spellings find the same file).
The shard is the two characters before the last one of that name (the
"next-to-last/2" rule of go-ipfs flatfs): the leading characters of a CID are
its constant prefix, the last one carries only a few digest bits.

Every block is written to a hidden temp file in its shard directory
(``bundlekit._fs``: ``.<cid>.<pid>.<random>.tmp``), fsynced and then renamed
over its final name, so a crash never leaves a torn block under a
CID name; leftover temp files are never listed as blocks and ``gc`` removes
them. Every ``get`` re-hashes the block, so even a file damaged on disk is
reported (``BlockMismatch``), never served, and removed so a re-import repairs it.

A load that keeps thousands of blocks (a first follow: one block per memory) writes them into one pack
(:class:`PackWriter`) instead of a file each: the pack and its index are written as temp files, synced, and
renamed (the pack first, then the index that makes it visible), so a killed write leaves only temp files and
no block is found before its pack is durable. A block is looked for in its own file first, then in the packs.
"""

from __future__ import annotations

import array
import contextlib
import errno
import fcntl
import functools
import hashlib
import itertools
import json
import operator
import os
import re
import secrets
import shutil
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from bundlekit._fs import (
    AtomicFile, atomic_write_bytes, fsync_dir, open_regular, os_reason, read_up_to, sweep_stale_temps, sync_files,
)
from bundlekit._lazy import lazy_module
from bundlekit._signals import shielded
from bundlekit.car.format import encode_header
from bundlekit.car.reader import read_car
from bundlekit.car.writer import CarWriter
from bundlekit.errors import (  # ImportLimitError, RecordLimitError: re-exported, drawn in the error tree
    BlockMismatch,
    BundlekitError,
    CIDError,
    CodecError,
    DAGLimitExceeded,
    ImportLimitError,
    ImportStopped,
    MissingBlock,
    RecordLimitError,
    UnsupportedBlock,
    UsageError,
    VerificationError,
)
from bundlekit.ipld.cid import (
    MAX_BLOCK_SIZE,
    RAW,
    SHA2_256,
    SUPPORTED_CODECS,
    as_cidv1,
    cid_from_text,
    cid_to_str,
    encode_varint,
    parse_cid,
    parse_cid_bytes,
    verify_block,
)
from bundlekit.ipld.getter import BlockGetter, HeldRoot
from bundlekit.ipld.walk import block_links, walk_dag

if TYPE_CHECKING:
    import bundlekit.storereport as storereport
    from bundlekit.storereport import BlockProblem, StoreReport
else:  # imported by `store verify` (DEVELOPERS.md, "Lazy imports": every other use of the store never reads it)
    storereport = lazy_module("bundlekit.storereport")

try:
    import bundlekit._packscan as _packscan
except ImportError:  # not built: a pack index is checked with the interpreter's loops
    _packscan = None  # type: ignore[assignment]

__all__ = [
    "IPNS_RECORD_MEDIA_TYPE",
    "BlockStore",
    "CarImport",
    "PackWriter",
    "ImportLimitError",
    "RecordLimitError",
    "RootPin",
    "default_store_root",
]

PINS_FILE = "pins.json"
#: The blocks (CID and size) of the DAG pinned last, as its walk found them: the next pin and a thin CAR take a
#: block of it as held, unstat'ed, while that root stays pinned (``BlockStore.pinned_walk``).
WALK_FILE = "last-pin-walk"
_WALK_MAGIC = b"bundlekit-pin-walk/3\n"
_WALK_DIGEST = 32  # the record ends in the SHA-256 of what precedes it: a damaged record (a flipped link index,
# a size that still adds up, a cut at an entry's end) reads as none, and the parse memo's key includes it
_WALK_MAX = 256 << 20  # bytes of the walk record read at most (a DAG of ~5 million blocks); a longer one is ignored
PINS_VERSION = 1
# import_car writes this many blocks to temp files, syncs them together, then renames them.
IMPORT_BATCH = 256
FSYNC_THREADS = 8
# Temp files younger than this may belong to a put running in another process.
STALE_TEMP_SECONDS = 3600.0
# Temp files of bundlekit before the shared write helper (``_fs``): gc still removes them.
LEGACY_TEMP_PREFIX = ".tmp-"
_WRITE_HINT = "check free space and permissions"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# How an IPNS record travels over HTTP (IANA; the trustless gateway specification).
IPNS_RECORD_MEDIA_TYPE = "application/vnd.ipfs.ipns-record"
# Bytes of a kept record read to judge it for eviction: a record is at most 10 KiB (ipld/ipns_entry).
_MAX_KEPT_RECORD = 64 * 1024
_IPNS_NAME = re.compile(r"k[0-9a-z]{40,120}")  # fullmatch: "$" would let a trailing newline in
# ``verify`` names at most this many bad blocks (and this many bad records); past it they are counted.
MAX_NAMED = 1000
# A block file's name as a CID, uncached: ``verify`` reads each name once, and the cache would hold 65,536.
_name_cid: Callable[[str], bytes] = cid_from_text.__wrapped__
_RAW_V1 = bytes((1, RAW))  # the first bytes of a raw-codec CIDv1: a block without links
# The longest CID a block file is named after: its base32 name (1.6 characters a byte, and "b") within a
# file name's 255 bytes. A sha2-256 CID is 34 or 36 bytes; only a long identity CID is refused.
_MAX_CID_BYTES = 150
# ``verify`` reads at most this much of a file under ipns/ (a record is at most 10 KiB: the check refuses more).
_RECORD_READ = 64 * 1024
PACKS_DIR = "packs"
_PACK_SUFFIX, _INDEX_SUFFIX = ".pack", ".idx"
#: An index: this line, then per block its CIDv1 (36 bytes: sha2-256, dag-pb or raw), the offset of its bytes in
#: the pack (8 bytes) and their length (4 bytes), big-endian, sorted by CID.
_INDEX_MAGIC = b"bundlekit-pack-index/1\n"
_ENTRY = 48
_PACK_CID = 36
#: The first four bytes of every CID a pack holds: CIDv1, raw or dag-pb, sha2-256 of 32 bytes.
_PACK_PREFIXES = (bytes((1, RAW, 0x12, 0x20)), bytes((1, 0x70, 0x12, 0x20)))
#: An index is read whole up to this size (1.4 million blocks, seven times a sync's bound); a larger one is not read.
_INDEX_MAX = 64 << 20
#: How long after the packs folder last changed its mtime is not trusted alone (``_Packs._changed``): the coarsest
#: timestamp a file system keeps (FAT's two seconds).
_RACY_NS = 2_000_000_000


def default_store_root(env: dict[str, str] | None = None) -> Path:
    """``$BUNDLEKIT_HOME``, else ``$XDG_DATA_HOME/bundlekit``, else ``~/.local/share/bundlekit``. A relative
    ``XDG_DATA_HOME`` is ignored, as the XDG Base Directory Specification says ("must be absolute ... consider the
    path invalid and ignore it"): it resolved against the working directory, so a build run in a tree made the
    user's sealing key (``bundle.buildcheck``) and store inside the tree, carried with it by any copy."""
    env = dict(os.environ) if env is None else env
    home = env.get("BUNDLEKIT_HOME")
    if home:  # os.path's expanduser: ``~nosuchuser`` stays as written (pathlib's raised RuntimeError, exit 1)
        return Path(os.path.expanduser(home))
    data = Path(os.path.expanduser(env.get("XDG_DATA_HOME") or ""))
    base = data if data.is_absolute() else Path.home() / ".local" / "share"
    return base / "bundlekit"


def _read_whole(path: str) -> bytes:
    """A file's bytes in as few system calls as possible (open, fstat, read, close).

    Every syscall releases the GIL; in a gateway thread sharing the process
    with a busy client, each release can cost a scheduler interval.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size)
        if len(data) != size:  # short read: fall back to a loop
            parts = [data]
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


class _Tally:
    """Blocks and bytes read from a CAR so far. A plain class, as the store's other private values: a dataclass
    costs ~0.3 to 0.5 ms of every command's start-up to define (issue 37)."""

    __slots__ = ("blocks", "bytes")

    def __init__(self) -> None:
        self.blocks = 0
        self.bytes = 0


def _counted(blocks: Iterator[tuple[bytes, bytes]], limit: int | None, tally: _Tally,
             admit: Callable[[int], None] | None = None) -> Iterator[tuple[bytes, bytes]]:
    """``blocks`` counted into ``tally``; ``ImportLimitError`` at the one past ``limit``, before it is written;
    ``admit(size)`` before each block is written (it raises to end the import)."""
    for cid, data in blocks:
        if limit is not None and tally.blocks >= limit:
            raise ImportLimitError(f"the CAR holds more than {limit} blocks, the limit of one import")
        if admit is not None:
            admit(len(data))
        tally.blocks += 1
        tally.bytes += len(data)
        yield cid, data


def _utc_now() -> datetime:
    return datetime.now(UTC)


@functools.lru_cache(maxsize=1 << 16)
def _block_name(cid: bytes) -> tuple[str, str]:
    """``(shard, file name)`` of a block; memoized because base32 is slow in pure Python. ``CIDError`` (never
    memoized) for a CID no file can be named after: a long identity CID, which a pushed CAR may name as a
    root, would otherwise fail every file call with "file name too long" and sit in the memo at its size."""
    if len(cid) > _MAX_CID_BYTES:
        raise CIDError(f"a CID of {len(cid)} bytes is longer than a block file's name can be")
    name = cid_to_str(as_cidv1(cid))
    return name[-3:-1], name


class _Walked:
    """A walk record read back (``BlockStore._record_walk``): its root, each block's size (CIDv1 -> size, in the
    walk's order) and, for a block with links, its children (CIDv1s, as its links name them)."""

    __slots__ = ("root", "sizes", "links")

    def __init__(self, root: bytes, sizes: dict[bytes, int], links: dict[bytes, list[bytes]]) -> None:
        self.root, self.sizes, self.links = root, sizes, links

    def take_under(self, tops: Iterable[bytes], sizes: dict[bytes, int], links: dict[bytes, list[bytes]]) -> None:
        """Add to ``sizes`` and ``links`` every block of the recorded sub-DAGs under ``tops`` (blocks of this
        walk a pin's walk skipped), without reading one: a block's links are fixed by its CID."""
        stack = list(tops)
        while stack:
            cid = stack.pop()
            if cid in sizes:
                continue
            sizes[cid] = self.sizes[cid]
            children = self.links.get(cid)
            if children:
                links[cid] = children
                stack.extend(children)


def _parse_walk(data: memoryview) -> _Walked:
    """A walk record's body read (:func:`_parse_walk_py`), in one pass of C where ``_packscan`` is built with it
    (~8 -> ~1 ms at 11,000 blocks, each sync round: issue 37); ``ValueError`` or ``IndexError`` for one that does not."""
    parse = getattr(_packscan, "parse_walk", None)
    if parse is None:
        return _parse_walk_py(data)
    root, sizes, links = parse(data, MAX_BLOCK_SIZE)
    return _Walked(root, sizes, links)


def _parse_walk_py(data: memoryview) -> _Walked:
    """A walk record's body (``BlockStore._record_walk``): the root's CID after its length in one byte, then per
    block its CID after its length in one byte, its size in four bytes big-endian, the number of its links in four
    bytes and each link as the four-byte index of its block in the record, every block after those linking it.
    ``ValueError`` or ``IndexError`` for a record cut short, naming a size over ``MAX_BLOCK_SIZE``, a link to no block
    of it or one back to a block at or before the block linking it (a cycle)."""
    end = 1 + data[0]
    root = bytes(data[1:end])
    sizes: dict[bytes, int] = {}
    order: list[bytes] = []
    linked: list[tuple[bytes, memoryview]] = []
    at, total = end, len(data)
    head = _SIZE_COUNT.unpack_from
    while at < total:
        start = at + 1
        at = start + data[at]
        if at + 8 > total:
            raise ValueError("a walk record cut short")
        size, count = head(data, at)
        if size > MAX_BLOCK_SIZE:  # no block is larger: a size a pin's walk would allocate as zero bytes
            raise ValueError("a walk record naming a block larger than any block")
        cid = bytes(data[start:at])
        at += 8
        if count:
            if at + 4 * count > total:
                raise ValueError("a walk record cut short")
            linked.append((cid, data[at:at + 4 * count]))
            at += 4 * count
        sizes[cid] = size
        order.append(cid)
    if not root:
        raise ValueError("a walk record without its root")
    position = {cid: at for at, cid in enumerate(order)}
    links: dict[bytes, list[bytes]] = {}
    for cid, raw in linked:
        indexes = [index for (index,) in _INDEXES.iter_unpack(raw)]
        if min(indexes) <= position[cid]:  # parents first: a link back (a cycle, a block linking itself) is a lie
            raise ValueError("a walk record with a link to a block before the one linking it")
        links[cid] = [order[index] for index in indexes]
    return _Walked(root, sizes, links)


def _pack_walk_py(cids: list[bytes], sizes: dict[bytes, int], links: dict[bytes, list[bytes]],
                  index: dict[bytes, int]) -> bytes:
    """A walk record's block entries (``BlockStore._record_walk``, :func:`_parse_walk` reads them): for each of
    ``cids``, its length in one byte, itself, its size and number of links (four bytes each, big-endian), then each
    link's index; the C ``_packscan.pack_walk`` lays them out the same way in one pass where it is built."""
    parts: list[bytes] = []
    add, head = parts.append, _SIZE_COUNT.pack
    for cid in cids:  # one append a piece, the size and link count packed together (issue 37: 11,000 blocks)
        children = links.get(cid, ())
        add(_BYTE[len(cid)])
        add(cid)
        add(head(sizes[cid], len(children)))
        if children:
            add(struct.pack(f">{len(children)}I", *[index[child] for child in children]))
    return b"".join(parts)


def _parents_first(root: bytes, sizes: Mapping[bytes, int], links: Mapping[bytes, list[bytes]]) -> list[bytes]:
    """The blocks of ``sizes`` ordered so that every block comes after each block linking it (a DAG's reverse
    postorder from ``root``, then any block it does not reach): the record's links then all point forward, and a
    record with a link back (a cycle no real DAG has) reads as none."""
    done: set[bytes] = set()
    post: list[bytes] = []
    stack: list[tuple[bytes, int]] = [(root, 0)] if root in sizes else []
    while stack:
        cid, at = stack.pop()
        children = links.get(cid, ())
        if at == 0:
            if cid in done:
                continue
            done.add(cid)
        if at < len(children):
            stack.append((cid, at + 1))
            if children[at] not in done:
                stack.append((children[at], 0))
        else:
            post.append(cid)
    post.reverse()
    return post + [cid for cid in sizes if cid not in done]


def _links_forward(index: Mapping[bytes, int], links: Mapping[bytes, list[bytes]]) -> bool:
    """Whether every link of ``links`` points from a block to one after it in ``index`` (block -> position): the
    order a walk record needs (:func:`_parse_walk`). A pin's walk usually finds the blocks so already (the root
    first, each block's children after it, the unchanged sub-DAGs taken from the last record in its order): then
    :func:`_parents_first` is not needed (issue 37: ~7 ms of a 10,000-memory writer's round). A link to a block
    not in ``index`` is not forward."""
    missing = len(index)
    for parent, children in links.items():
        at = index.get(parent, missing)
        for child in children:
            if index.get(child, -1) <= at:
                return False
    return True


_INDEXES = struct.Struct(">I")
#: A walk record entry's size and link count, four bytes each, big-endian (``_record_walk``, ``_parse_walk``).
_SIZE_COUNT = struct.Struct(">II")
#: Each length a CID of the record can have as its one byte.
_BYTE = [bytes((n,)) for n in range(256)]


def _check_file(cid: bytes, path: str) -> int:
    """Hash the block file ``path`` against ``cid``; its size (``BlockMismatch``, ``UnsupportedBlock``,
    ``FileNotFoundError``). A file of at most ``MAX_BLOCK_SIZE`` bytes is read whole (``verify_block``); a
    larger one, which no importer writes, is hashed 1 MiB at a time, so a huge file under a CID name costs
    no memory."""
    with open(path, "rb") as fh:
        head = fh.read(MAX_BLOCK_SIZE + 1)
        if len(head) <= MAX_BLOCK_SIZE:
            verify_block(cid, head, max_size=None)
            return len(head)
        info = parse_cid_bytes(cid)
        if info.codec not in SUPPORTED_CODECS or info.hash_code != SHA2_256:
            raise UnsupportedBlock(f"block {cid_to_str(cid)} uses a codec or hash bundlekit cannot check")
        digest, size = hashlib.sha256(head), len(head)
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    if digest.digest() != info.digest:
        raise BlockMismatch(f"block {cid_to_str(cid)} does not match its content")
    return size


def _read_record_file(path: str) -> bytes:
    """The first ``_RECORD_READ`` bytes of a kept record, from a regular file only: never through a link (which
    the store does not write), never blocking on a FIFO planted under a name (``BundlekitError`` saying what
    is there instead)."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BundlekitError("a symbolic link, not a record file") from exc
        if exc.errno == errno.EINVAL:
            raise BundlekitError("not a regular file (a directory, FIFO or device)") from exc
        raise
    try:
        return read_up_to(fd, _RECORD_READ)
    finally:
        os.close(fd)


def _pack_key(cid: bytes) -> bytes | None:
    """The canonical CIDv1 of ``cid`` when a pack can hold it (sha2-256, dag-pb or raw: 36 bytes), else None."""
    key = as_cidv1(cid)
    return key if len(key) == _PACK_CID and key[2:4] == b"\x12\x20" and key[1] in (RAW, 0x70) else None


class _PackIndex:
    """One pack's index as read and checked (:func:`_index_of`): its entries' bytes, CIDs in order, in which a
    binary search finds a CID's offset and length. The columns (every CID, offset, length) are made only for the
    callers that walk every entry (:meth:`columns`): a lookup makes no object per entry of 130,000."""

    __slots__ = ("_data", "_count")

    def __init__(self, data: bytes) -> None:
        """``data``: the index file's bytes, its magic line first (not copied out: 6 MB at 130,000 entries)."""
        self._data, self._count = data, (len(data) - len(_INDEX_MAGIC)) // _ENTRY

    def get(self, key: bytes) -> tuple[int, int] | None:
        """Where the pack holds ``key`` (offset, length), or None."""
        body, lo, hi = self._data, 0, self._count
        while lo < hi:
            mid = (lo + hi) // 2
            at = len(_INDEX_MAGIC) + mid * _ENTRY
            cid = body[at : at + _PACK_CID]
            if cid < key:
                lo = mid + 1
            elif cid == key:
                return (int.from_bytes(body[at + _PACK_CID : at + _PACK_CID + 8], "big"),
                        int.from_bytes(body[at + _PACK_CID + 8 : at + _ENTRY], "big"))
            else:
                hi = mid
        return None

    def columns(self) -> tuple[list[bytes], array.array[int], array.array[int]]:
        """Every entry's CID, offset and length, each in the entries' order."""
        return _columns(self._data[len(_INDEX_MAGIC):])

    def entries(self) -> Iterator[tuple[bytes, int, int]]:
        """Every entry (CID, offset, length), in order."""
        return zip(*self.columns())


#: An unsigned array type code of each item size this platform has (the C types behind the codes vary by platform).
_UNSIGNED = {array.array(code).itemsize: code for code in "BHILQ"}


def _column(body: bytes, at: int, width: int) -> array.array[int]:
    """The big-endian whole numbers of ``width`` bytes at ``at`` in every entry of ``body``, gathered byte by byte
    with strided slices (no object per entry) into native order."""
    count = len(body) // _ENTRY
    gathered = bytearray(width * count)
    for byte in range(width):
        gathered[byte::width] = body[at + byte::_ENTRY]
    numbers = array.array(_UNSIGNED[width], bytes(gathered))
    if sys.byteorder == "little":
        numbers.byteswap()
    return numbers


_CID_OF_ENTRY = f"{_PACK_CID}s{_ENTRY - _PACK_CID}x"  # an index entry: its CID's bytes, then offset and length
_FIRST = operator.itemgetter(0)


def _columns(body: bytes) -> tuple[list[bytes], array.array[int], array.array[int]]:
    """The CIDs, offsets and lengths of an index's entries (``body``: the index without its magic line), each a
    pass of the interpreter's own loops over the entries (no Python statement per entry)."""
    cids = list(map(_FIRST, struct.iter_unpack(_CID_OF_ENTRY, body)))  # each entry's CID, in C (half a listcomp's time)
    return cids, _column(body, _PACK_CID, 8), _column(body, _PACK_CID + 8, 4)


def _entries_pass(body: memoryview, pack_size: int) -> bool:
    """Whether every entry of ``body`` (a whole number of entries) passes the index's rules (:func:`_index_of`):
    in one pass of C where ``_packscan`` is built (~0.3 ms at 130,000 entries), else with slices, ``map`` and
    ``max`` (~35 ms); the same verdict either way (``tests/gateway/test_pack_index_check.py``)."""
    if _packscan is not None:
        return _packscan.check(body, pack_size, MAX_BLOCK_SIZE)
    raw = bytes(body)
    count = len(raw) // _ENTRY
    cids, offsets, lengths = _columns(raw)
    kinds = raw[1::_ENTRY]  # each CID's codec byte; its version and hash bytes are one value each
    prefixed = (raw[0::_ENTRY].count(1) == raw[2::_ENTRY].count(0x12) == raw[3::_ENTRY].count(0x20) == count
                and kinds.count(RAW) + kinds.count(0x70) == count)
    longest = max(lengths, default=0)
    # the ends: within the pack when the largest offset and length are; else each entry's own
    ends = max(offsets, default=0) + longest <= pack_size or max(map(operator.add, offsets, lengths)) <= pack_size
    return prefixed and longest <= MAX_BLOCK_SIZE and ends and all(map(operator.lt, cids, cids[1:]))


def _index_of(path: str, pack_size: int) -> _PackIndex:
    """A pack's index, checked whole; ``ValueError`` for one that is not an index of a pack of ``pack_size``
    bytes (a size not a whole number of entries, an entry past the pack's end or over ``MAX_BLOCK_SIZE``, CIDs out
    of order or not the CIDv1 of a sha2-256 raw or dag-pb block, more than ``_INDEX_MAX`` bytes): a CID no pack
    holds would make ``verify`` and ``gc`` fail parsing it. Read in one system call where the file allows, and
    checked without an object per entry (:func:`_entries_pass`): every process that reads a packed block reads
    the index, 130,000 entries after a first follow of 100,000 memories."""
    fd = open_regular(path)
    try:
        data = os.read(fd, min(os.fstat(fd).st_size, _INDEX_MAX) + 1)
        if data and len(data) <= _INDEX_MAX:  # a short read, or a file grown since: read on up to the bound
            data += read_up_to(fd, _INDEX_MAX + 1 - len(data))
    finally:
        os.close(fd)
    if len(data) > _INDEX_MAX or not data.startswith(_INDEX_MAGIC) or (len(data) - len(_INDEX_MAGIC)) % _ENTRY:
        raise ValueError("not a pack index")
    with memoryview(data) as view:
        passed = _entries_pass(view[len(_INDEX_MAGIC):], pack_size)
    if not passed:
        raise ValueError("a pack index entry out of order, past its pack or of a CID no pack holds")
    return _PackIndex(data)


def _read_index(path: str, pack_size: int) -> dict[bytes, tuple[int, int]]:
    """A pack's index (CID -> offset, length), checked as :func:`_index_of` checks it (``ValueError``)."""
    return {cid: (offset, length) for cid, offset, length in _index_of(path, pack_size).entries()}


def _pack_size(pack: str) -> int:
    """The size of the pack file ``pack``; ``OSError`` when it is absent or no regular file (a link, a directory,
    a FIFO: its index is then not read)."""
    info = os.lstat(pack)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", pack)
    return info.st_size


def _remove_pack(pack: str) -> None:
    """Remove a pack: its index first (no reader then finds a block of it), then the pack itself; either may be
    gone already, and whatever stands under the names (a directory too) goes."""
    for path in (pack[:-len(_PACK_SUFFIX)] + _INDEX_SUFFIX, pack):
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)


def _index_bytes(entries: Mapping[bytes, tuple[int, int]]) -> bytes:
    """The bytes of an index over ``entries`` (CIDv1 -> offset, length), sorted by CID."""
    parts = [_INDEX_MAGIC]
    for cid in sorted(entries):
        offset, length = entries[cid]
        parts.append(cid + offset.to_bytes(8, "big") + length.to_bytes(4, "big"))
    return b"".join(parts)


def _pack_names(folder: str) -> list[str]:
    """The names in the packs folder but temps (``.``-names), sorted."""
    return sorted(name for name in os.listdir(folder) if not name.startswith("."))


class _Packs:
    """The store's packs as one lookup (CIDv1 -> pack, offset, length), read when first needed and again when
    the packs folder changed (another process committed or removed a pack). A pack whose index does not read
    is left out (its blocks are not found; ``verify`` names it)."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._stamp: int | None = None
        self._names: list[str] = []
        self._settled = False
        self._lock = threading.Lock()
        self._indexes: list[tuple[str, _PackIndex]] = []  # (pack, its index), in the packs' order
        self.bad: list[tuple[str, str]] = []  # (index path, why it is not read)

    def lookup(self, key: bytes) -> tuple[str, int, int] | None:
        found = self._find(key)
        if found is None and self._changed():
            self.reload()
            found = self._find(key)
        return found

    def _find(self, key: bytes) -> tuple[str, int, int] | None:
        """Where the first pack (in name order) that holds ``key`` holds it: a binary search of each index."""
        for pack, index in self._indexes:
            entry = index.get(key)
            if entry is not None:
                return pack, entry[0], entry[1]
        return None

    @property
    def where(self) -> dict[bytes, tuple[str, int, int]]:
        """Every packed block as read last (CIDv1 -> pack, offset, length; the first pack holding one names it)."""
        where: dict[bytes, tuple[str, int, int]] = {}
        for pack, index in reversed(self._indexes):
            cids, offsets, lengths = index.columns()
            where.update(zip(cids, zip(itertools.repeat(pack), offsets, lengths)))
        return where

    def _changed(self) -> bool:
        """Whether the packs may have changed since they were read: the folder's mtime moved, or, while that mtime
        is within ``_RACY_NS`` of when they were read, the listing differs. A file system stamps a folder with a
        coarse clock (a jiffy, a second, two on FAT), so a pack committed in the same tick as the last change
        leaves the mtime as it was (git's "racy" index entries): the mtime alone would hide that pack for good."""
        try:
            mtime = os.stat(self._folder).st_mtime_ns
            if mtime != self._stamp:
                return True
            if self._settled:
                return False
            names = _pack_names(self._folder)
        except FileNotFoundError:
            return False
        if names != self._names:
            return True
        self._settled = time.time_ns() - mtime >= _RACY_NS
        return False

    def reload(self) -> None:
        """Read the packs' indexes again now."""
        with self._lock:
            try:
                stamp = os.stat(self._folder).st_mtime_ns
                names = _pack_names(self._folder)
            except FileNotFoundError:
                return
            settled = time.time_ns() - stamp >= _RACY_NS
            indexes: list[tuple[str, _PackIndex]] = []
            bad: list[tuple[str, str]] = []
            for name in names:
                if not name.endswith(_INDEX_SUFFIX):
                    continue
                pack = os.path.join(self._folder, name[:-len(_INDEX_SUFFIX)] + _PACK_SUFFIX)
                index = os.path.join(self._folder, name)
                try:
                    size = _pack_size(pack)
                except OSError as exc:
                    bad.append((index, f"its pack {os.path.basename(pack)}: {os_reason(exc)}"))
                    continue
                try:
                    indexes.append((pack, _index_of(index, size)))
                except (OSError, ValueError) as exc:
                    bad.append((index, os_reason(exc) if isinstance(exc, OSError) else str(exc)))
            self._indexes, self.bad, self._stamp, self._names, self._settled = indexes, bad, stamp, names, settled

    def refresh(self) -> dict[bytes, tuple[str, int, int]]:
        """Every packed block, read again now (:meth:`reload`, then :attr:`where`: a dict of every block, for the
        callers that walk them)."""
        self.reload()
        return self.where


def _read_packed(pack: str, offset: int, length: int) -> bytes:
    """``length`` bytes of ``pack`` at ``offset`` (fewer when the file was cut short: the hash then fails);
    ``OSError`` when it is gone or was replaced by no regular file (``_fs.open_regular``)."""
    fd = open_regular(pack)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def _holds(pack: str, key: bytes, entry: tuple[int, int]) -> bool:
    """Whether ``pack`` holds the block ``key`` at ``entry`` (offset, length): its bytes hash to it."""
    try:
        verify_block(key, _read_packed(pack, *entry), max_size=None)
    except (BlockMismatch, UnsupportedBlock):
        return False
    return True


class PackWriter:
    """Verified blocks into one new pack of the store, visible only once committed (``specs/gateway.md``, 2.2a).

    ``put`` appends a block (the caller verified it against its CID; one the pack holds already, or one it
    cannot hold, is skipped: ``accepted`` says which) to a temp CARv1 file whose root is ``root``; ``commit``
    syncs it, writes the index as a temp file and syncs it, then renames the pack and then the index into
    ``packs/`` (the index last: a pack without one is never read) and syncs the folder. ``discard`` (or an
    exception before ``commit``) removes the temp files. A killed writer leaves only temp files, which ``gc``
    and the next writer remove once their process is gone.
    """

    def __init__(self, store: BlockStore, root: bytes) -> None:
        self._store = store
        self._folder = store.root / PACKS_DIR
        self._fsync = store.fsync
        name = f"{secrets.token_hex(8)}"
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BundlekitError(f"cannot create {self._folder}: {os_reason(exc)}; {_WRITE_HINT}") from exc
        sweep_stale_temps(self._folder)
        self._pack = AtomicFile(self._folder / f"{name}{_PACK_SUFFIX}", error=BundlekitError, hint=_WRITE_HINT,
                                sync=self._fsync, sync_dir=False)
        self._index_dest = self._folder / f"{name}{_INDEX_SUFFIX}"
        self._entries: dict[bytes, tuple[int, int]] = {}
        with self._pack.guard() as out:
            header = encode_header([as_cidv1(root)])
            out.write(header)
        self._at = len(header)

    def accepted(self, cid: bytes) -> bool:
        """Whether the pack can hold ``cid`` and does not yet."""
        key = _pack_key(cid)
        return key is not None and key not in self._entries

    def put(self, cid: bytes, data: bytes) -> bool:
        """Append the block (verified by the caller); False when skipped (see ``accepted``)."""
        key = _pack_key(cid)
        if key is None or key in self._entries or len(data) > MAX_BLOCK_SIZE:
            return False
        prefix = encode_varint(len(key) + len(data)) + key
        out = self._pack.file  # ``guard``'s handling inline: a first follow appends 10,000 blocks (issue 37)
        try:
            out.write(prefix + data)
        except OSError as exc:
            raise self._pack.fail(exc) from exc
        except BaseException:
            self._pack.discard()
            raise
        self._entries[key] = (self._at + len(prefix), len(data))
        self._at += len(prefix) + len(data)
        return True

    def __len__(self) -> int:
        return len(self._entries)

    def commit(self) -> None:
        """Make the pack durable and visible (nothing when it holds no block: the temp is removed)."""
        if not self._entries:
            self.discard()
            return
        index = AtomicFile(self._index_dest, error=BundlekitError, hint=_WRITE_HINT, sync=self._fsync, sync_dir=False)
        try:
            with index.guard() as out:
                out.write(_index_bytes(self._entries))
            if self._fsync:
                self._pack.sync()
                index.sync()
            # gc removes a pack without an index: never one between these renames, which a stop signal does not split
            with self._store.protect(), shielded():
                self._pack.commit()
                index.commit()
        except BaseException:
            index.discard()
            self.discard()
            raise
        if self._fsync:
            with contextlib.suppress(OSError):
                fsync_dir(self._folder)

    def discard(self) -> None:
        self._pack.discard()


@dataclass(frozen=True)
class RootPin:
    """One root of ``import_reporting``: its CID and why it could not be pinned (None: pinned, or not asked)."""

    root: bytes
    error: str | None = None


@dataclass(frozen=True)
class CarImport:
    """What ``import_reporting`` did: each root, and the blocks and their bytes read from the CAR."""

    roots: list[RootPin]
    blocks: int
    bytes: int


class _Held:
    """What a pin's walk needs of the blocks of a CAR being imported, kept as they pass (each verified against its
    CID by the reader before it is written): a dag-pb block whole (its links), a raw leaf by its size alone (it has
    no links). The walk then takes them from here instead of reading every block back from the disk and hashing it
    again (a 10,000-file bundle: 0.5 s); a block the CAR lacks is read from the store as before."""

    def __init__(self) -> None:
        self._blocks: dict[bytes, bytes | int] = {}

    def keep(self, blocks: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
        for cid, data in blocks:
            key = as_cidv1(cid)
            self._blocks[key] = len(data) if key[1] == RAW else data  # a CIDv1's codec: raw is one varint byte
            yield cid, data

    def getter(self, read: Callable[[bytes], bytes], size: Callable[[bytes], int],
               pinned: Mapping[bytes, int] | None = None) -> Callable[[bytes], bytes]:
        """A block getter over the kept blocks, ``read`` for the others, but a raw leaf the CAR left out (a thin
        CAR: ``orchestrate.held_by_all``), whose presence and size (``size``) is all a walk needs of it: a raw
        leaf comes back as that many zero bytes (a walk reads no links from it, and counts its size). The store
        verified each block when it wrote it and verifies it again on every ``get``, as kubo pins without
        re-hashing what its blockstore holds (``Datastore.HashOnRead``, off by default). A raw leaf of a DAG
        pinned still (``pinned``: CID -> size, ``BlockStore.pinned_walk``) is held by that pin: its size is
        taken from there, no file looked at (a 10,000-file bundle: 10,000 file names and stats saved)."""
        known = pinned or {}

        def get(cid: bytes) -> bytes:
            key = as_cidv1(cid)
            found = self._blocks.get(key)
            if found is None:
                if key[1] != RAW:
                    return read(cid)
                held = known.get(key)
                return bytes(size(key) if held is None else held)
            return found if isinstance(found, bytes) else bytes(found)

        return get


class BlockStore(BlockGetter):
    """A directory of verified blocks plus a named pin set.

    The store is a block sink (``put``) and a block getter (``get``,
    ``get_many``: ``ipld.getter.BlockGetter``), safe to use from several
    threads and processes at once: block writes are atomic renames of
    identical content, and the pin file is rewritten under a lock. Served by
    the gateway, its roots are its pins (``roots``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        fsync: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """Open (creating if needed) the store at ``root`` (default: ``default_store_root()``).

        ``fsync=False`` skips the per-block fsync (scratch stores in tests and
        benchmarks); renames stay atomic, but a power loss may then leave an
        empty block file, which ``get`` reports as damaged. ``clock`` stamps
        pins (injectable for reproducible tests). Raises ``UsageError`` when
        the directory cannot be created.
        """
        self.root = Path(root) if root is not None else default_store_root()
        self.blocks_dir = self.root / "blocks"
        self._blocks = str(self.blocks_dir)
        self._fsync = self.fsync = fsync
        self._clock = clock or _utc_now
        # the walk record last read, by its file's identity (``_pinned_record``): a round reads it twice
        self._walk_read: tuple[tuple[int, int, int, int, int, bytes], _Walked] | None = None
        self._packs = _Packs(str(self.root / PACKS_DIR))
        try:
            self.blocks_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(
                f"cannot create the block store at {self.root}: {exc.strerror}; "
                "set BUNDLEKIT_HOME or --store to a writable directory"
            ) from exc

    @classmethod
    def existing(cls, root: str | os.PathLike[str] | None = None) -> BlockStore:
        """Open the store at ``root`` (default: ``default_store_root()``) only if it is there (``UsageError``
        otherwise, nothing created): a command that checks a store (``store verify``) must not make one where a
        mistyped ``--store`` or ``$BUNDLEKIT_HOME`` points, and then call it sound."""
        path = Path(root) if root is not None else default_store_root()
        if not (path / "blocks").is_dir():
            raise UsageError(f"no block store at {path}; check --store or $BUNDLEKIT_HOME (a store is made by "
                             "`bundlekit store import` or `bundlekit pin`)")
        return cls(path)

    # -- blocks ---------------------------------------------------------------

    def path_for(self, cid: bytes) -> Path:
        """The file that holds (or would hold) the block ``cid``; raises ``CIDError``."""
        return Path(self._file(cid))

    def _file(self, cid: bytes) -> str:
        shard, name = _block_name(cid)
        return os.path.join(self._blocks, shard, name)

    def has(self, cid: bytes) -> bool:
        """True if a block file or a pack holds ``cid`` (its content is checked on ``get``)."""
        try:
            if os.path.isfile(self._file(cid)):
                return True
        except CIDError:
            return False
        return self._packed(cid) is not None

    def _packed(self, cid: bytes) -> tuple[str, int, int] | None:
        """Where a pack holds ``cid`` (pack file, offset, length), or None."""
        key = _pack_key(cid)
        return None if key is None else self._packs.lookup(key)

    def pack(self, root: bytes) -> PackWriter:
        """A new pack for many verified blocks of the DAG under ``root`` (:class:`PackWriter`): a large load's
        blocks in one file instead of one each. Raises ``BundlekitError`` when it cannot be created."""
        return PackWriter(self, root)

    def get(self, cid: bytes) -> bytes:
        """The verified bytes of block ``cid``.

        Raises ``MissingBlock`` if absent, ``UnsupportedBlock`` for an unknown
        codec or hash, and ``BlockMismatch`` if the stored file no longer
        hashes to ``cid`` (damaged disk, power loss with ``fsync=False``, a
        manual edit). The damaged file is deleted before raising, so that the
        next ``put`` or ``import_car`` of that block repairs the store instead
        of skipping it as already present.
        """
        while True:  # each pass after the first follows a damaged copy removed to the next one: it ends
            packed = None
            try:
                data = _read_whole(self._file(cid))
            except FileNotFoundError:
                packed = self._packed(cid)
                if packed is None:
                    raise MissingBlock(
                        f"block {cid_to_str(cid)} is not in the store at {self.root}; import a CAR that contains it"
                    ) from None
                data, packed = self._read_pack(cid, packed)
            except CIDError:
                raise MissingBlock(f"{cid[:40]!r}... is not a CID this store can hold") from None
            try:
                verify_block(cid, data, max_size=None)
            except BlockMismatch:
                self._remove_damaged(cid, packed)
                elsewhere = self._packed(cid)
                if elsewhere is not None and elsewhere != packed and not os.path.lexists(self._file(cid)):
                    # The damaged copy removed (a file, or the entry of the first pack naming it): another pack's
                    # copy, verified as any. Each pass drops one entry or finds the same one again, so it ends.
                    continue
                raise BlockMismatch(
                    f"the store's copy of block {cid_to_str(cid)} in {self.root} was damaged and has been removed; "
                    "re-import a CAR that holds it"
                ) from None
            return data

    def _read_pack(self, cid: bytes, packed: tuple[str, int, int]) -> tuple[bytes, tuple[str, int, int]]:
        """A packed block's bytes, unverified, and where they were read. A pack gone since the packs were read
        (a ``gc``, in this process or another) sends the lookup to the packs as they are now: the block may be in
        a pack written since (a long-running ``serve`` or ``sync --interval`` would otherwise call a block it
        holds missing until some other block was). ``MissingBlock`` when no pack holds it now; ``BundlekitError``
        for a pack that cannot be read (replaced by a directory, a FIFO, a link; a disk error)."""
        for _attempt in range(2):
            try:
                return _read_packed(*packed), packed
            except FileNotFoundError:
                self._packs.reload()
                found = self._packed(cid)
                if found is None or found == packed:
                    break
                packed = found
            except OSError as exc:
                raise BundlekitError(f"cannot read the pack {packed[0]}: {os_reason(exc)}; run "
                                     "`bundlekit store verify`") from exc
        raise MissingBlock(f"block {cid_to_str(cid)} is not in the store at {self.root} (its pack was removed); "
                           "import a CAR that contains it") from None

    def _remove_damaged(self, cid: bytes, packed: tuple[str, int, int] | None) -> None:
        """A block found damaged: its file removed, or its entry dropped from its pack's index (rewritten
        atomically), so a re-import repairs it; the walk record no longer vouches for the pinned DAG."""
        if packed is None:
            with contextlib.suppress(OSError):
                os.unlink(self._file(cid))
        else:
            self._drop_packed(as_cidv1(cid), packed[0])
        self._forget_walk()

    def _drop_packed(self, key: bytes, pack: str) -> None:
        """Drop ``key`` from the index of ``pack`` when the block it names there now does not hash to it: the
        index and the pack are read again under ``packs.lock``, so a reader whose view was stale (the pack
        replaced under its name, the entry dropped already) never drops a good block."""
        index = pack[:-len(_PACK_SUFFIX)] + _INDEX_SUFFIX
        with contextlib.suppress(OSError, ValueError, BundlekitError), self._flock("packs.lock", exclusive=True):
            entries = _read_index(index, _pack_size(pack))
            entry = entries.get(key)
            if entry is not None and not _holds(pack, key, entry):
                del entries[key]
                atomic_write_bytes(index, _index_bytes(entries), error=BundlekitError, hint=_WRITE_HINT)
        self._packs.reload()

    def _size(self, cid: bytes) -> int:
        """The size of the stored block ``cid``, read from its file's metadata or its pack's index
        (``MissingBlock`` when absent)."""
        try:
            return os.stat(self._file(cid)).st_size
        except (FileNotFoundError, CIDError):
            packed = self._packed(cid)
            if packed is not None:
                return packed[2]
            raise MissingBlock(
                f"block {cid_to_str(cid)} is not in the store at {self.root}; import a CAR that contains it"
            ) from None

    def put(self, cid: bytes, data: bytes) -> None:
        """Store ``data`` under ``cid`` after checking it hashes to ``cid``.

        Idempotent: an existing block is left alone. Raises ``BlockMismatch``
        / ``UnsupportedBlock`` for content that does not verify, ``BundlekitError``
        if the disk write fails.
        """
        verify_block(cid, data, max_size=None)
        self._write(cid, data)

    def put_many(self, blocks: Sequence[tuple[bytes, bytes]]) -> None:
        """Store several blocks, each checked against its CID first (as ``put``), synced together and then
        renamed, as ``import_car`` writes a batch: one wait on the disk instead of one per block. Blocks
        already present are left alone. Raises what ``put`` raises; nothing of the batch is renamed then."""
        for cid, data in blocks:
            verify_block(cid, data, max_size=None)
        self._write_blocks(blocks, batch=None)

    def _write_blocks(self, blocks: Iterable[tuple[bytes, bytes]], *, batch: int | None) -> None:
        """Write ``blocks`` (a block named twice, or by CIDv0 and CIDv1 alike, once) as temp files, then sync
        and rename them together: every ``batch`` blocks, or all at once (``None``). On any failure the
        temp files not yet renamed are removed; what was renamed stays (verified blocks, a cache)."""
        pending: list[AtomicFile] = []
        queued: set[str] = set()
        # opened before any temp is written: the batch's flush reports every writeback error since (sync_files)
        watch = self._watch() if self._fsync else None
        try:
            for cid, data in blocks:
                key = self._file(cid)
                if key in queued:
                    continue
                block = self._write_temp(cid, data)
                if block is not None:
                    pending.append(block)
                    queued.add(key)
                if batch is not None and len(pending) >= batch:
                    self._commit(pending, watch)
                    pending, queued = [], set()
            self._commit(pending, watch)
        except BaseException:
            for block in pending:
                block.discard()
            raise
        finally:
            if watch is not None:
                os.close(watch)

    def _watch(self) -> int | None:
        """A descriptor of the blocks folder, for a batch's flush (None when it cannot be opened: the flush
        opens its own)."""
        try:
            return os.open(self._blocks, os.O_RDONLY | _CLOEXEC)
        except OSError:
            return None

    def _write(self, cid: bytes, data: bytes) -> None:
        pending = self._write_temp(cid, data)
        if pending is not None:
            self._commit([pending])

    def _write_temp(self, cid: bytes, data: bytes) -> AtomicFile | None:
        """Write ``data`` to a fresh temp file in its shard (closed, not synced); None if the block exists."""
        dest = self._file(cid)
        if os.path.exists(dest):
            return None
        # A block lost to a crash before its shard's entry is durable is simply
        # fetched or imported again: no directory fsync per block.
        try:
            pending = self._temp_file(dest, parents=False)
        except BundlekitError:
            if os.path.isdir(os.path.dirname(dest)):
                raise
            pending = self._temp_file(dest, parents=True)  # first block of this shard
        with pending.guard() as out:
            out.write(data)
        pending.close()
        return pending

    def _temp_file(self, dest: str, *, parents: bool) -> AtomicFile:
        return AtomicFile(
            dest, error=BundlekitError, hint=_WRITE_HINT, parents=parents, sync=self._fsync, sync_dir=False
        )

    def _commit(self, pending: list[AtomicFile], watch: int | None = None) -> None:
        """Make temp files durable (fsync, several at once) and rename each onto its block name.

        Syncing in parallel lets the filesystem fold many journal commits into
        one; every file is synced before any rename, so a name never points at
        unsynced data (``watch``: a descriptor of the blocks folder opened before
        the batch was written, through which the flush reports a writeback error
        met before it). On failure, the temp files not yet renamed are removed.
        """
        try:
            if self._fsync:
                if len(pending) == 1:
                    pending[0].sync()
                elif not sync_files(pending, self.blocks_dir, opened=watch):
                    with ThreadPoolExecutor(max_workers=FSYNC_THREADS) as pool:
                        list(pool.map(AtomicFile.sync, pending))
            for block in pending:
                block.commit()
        except BaseException:
            for block in pending:
                block.discard()
            raise

    def iter_blocks(self) -> Iterator[bytes]:
        """Every stored block's CID (CIDv1), in no particular order; temp files are skipped."""
        try:
            shards = list(os.scandir(self.blocks_dir))
        except FileNotFoundError:
            return
        for shard in shards:
            if not shard.is_dir() or shard.name.startswith("."):
                continue
            for entry in os.scandir(shard.path):
                if entry.name.startswith(".") or not entry.is_file():
                    continue
                try:
                    yield parse_cid(entry.name)
                except CIDError:
                    continue  # a stray file someone dropped in: not a block
        yield from self._packs.refresh()

    # -- CAR import / export --------------------------------------------------

    def import_car(
        self,
        stream: BinaryIO,
        *,
        allow_incomplete: bool = False,
        pin: bool = False,
        name: str | None = None,
        max_blocks: int | None = None,
    ) -> list[bytes]:
        """Store every block of the CAR on ``stream``; return its roots.

        Every block is verified against its CID before it is stored (``read_car``
        with verification). Unless ``allow_incomplete``, each root's DAG must
        then be complete in the store, otherwise ``MissingBlock`` is raised
        (the blocks already written stay unpinned and ``gc`` reclaims them).
        ``pin=True`` pins every root (with ``name``) while still holding the
        import lock, so a concurrent ``gc`` cannot collect the fresh blocks in
        between; a pin always requires the complete DAG, whatever
        ``allow_incomplete`` says. Blocks are written in batches: temp files
        first, synced together, then renamed (the same guarantees as ``put``,
        with far fewer waits on the disk). Raises ``CARError`` for a malformed
        or truncated CAR, ``ImportLimitError`` for a CAR past ``max_blocks``
        blocks (the blocks before it stay, unpinned).
        """

        with self._gc_lock(exclusive=False):
            held = _Held() if pin else None
            roots = self._import_blocks(stream, max_blocks, held=held)
            if pin:
                for root in roots:
                    self._pin(root, name, held)  # walks the DAG: refuses an incomplete one
            elif not allow_incomplete:
                for root in roots:
                    self.dag_size(root)
        return roots

    def import_reporting(self, stream: BinaryIO, *, pin_roots: bool = True, max_blocks: int | None = None,
                         admit: Callable[[int], None] | None = None) -> CarImport:
        """Store every block of the CAR on ``stream`` (as ``import_car``; an incomplete DAG is kept), then,
        with ``pin_roots``, pin each root whose DAG is complete in the store, still under the import lock;
        a root that cannot be pinned (its DAG incomplete, past the walk's limits, or a block that hashes
        right but is not valid dag-pb) is reported with its reason instead of failing the import (kubo's
        ``dag import --pin-roots``, which the team hub's push API answers). Raises what ``import_car``
        raises for the CAR itself, and what ``admit(size)``, called before each block is written, raises
        (the push API's: ``ImportStopped`` once its server is stopping, so it ends within the server's grace
        leaving no temp file; ``ImportLimitError`` once the store would pass its size bound)."""
        with self._gc_lock(exclusive=False):
            counted = _Tally()
            roots = self._import_blocks(stream, max_blocks, counted, admit)
            pinned: list[RootPin] = []
            for root in roots:
                error = None
                if pin_roots:
                    try:
                        self.pin(root)
                    except (VerificationError, CodecError) as exc:  # incomplete, too large, or not dag-pb
                        error = str(exc)
                pinned.append(RootPin(root, error))
        return CarImport(pinned, counted.blocks, counted.bytes)

    def _import_blocks(self, stream: BinaryIO, max_blocks: int | None, tally: _Tally | None = None,
                       admit: Callable[[int], None] | None = None, *, held: _Held | None = None) -> list[bytes]:
        """The CAR's blocks written in verified batches (the caller holds the import lock); its roots. ``held``
        keeps what a pin's walk needs of each block (``_Held``)."""
        car_roots, blocks = read_car(stream, verify=True)
        if max_blocks is not None or tally is not None or admit is not None:
            blocks = _counted(blocks, max_blocks, tally or _Tally(), admit)
        if held is not None:
            blocks = held.keep(blocks)
        self._write_blocks(blocks, batch=IMPORT_BATCH)
        return list(car_roots)

    def stored_bytes(self) -> int:
        """Bytes of every block file in the store (temp files and records not counted): what a bound on the
        store's size compares with. One ``stat`` per block, counted as the disk it takes (its allocated
        blocks, at least its size): a million 4-byte blocks hold 4 MB but take 4 GB and a million inodes,
        and a bound on their content alone would let a push of tiny blocks fill the disk."""
        total = 0
        try:
            shards = list(os.scandir(self.blocks_dir))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise BundlekitError(f"cannot list the blocks of {self.root}: {os_reason(exc)}") from exc
        for shard in shards:
            if not shard.is_dir() or shard.name.startswith("."):
                continue
            with contextlib.suppress(FileNotFoundError), os.scandir(shard.path) as entries:
                for entry in entries:
                    if not entry.name.startswith("."):
                        with contextlib.suppress(FileNotFoundError):
                            info = entry.stat(follow_symlinks=False)
                            total += max(info.st_size, info.st_blocks * 512)
        with contextlib.suppress(FileNotFoundError), os.scandir(self.root / PACKS_DIR) as entries:
            for entry in entries:  # packs and their indexes, temps of a pack being written among them
                with contextlib.suppress(FileNotFoundError):
                    info = entry.stat(follow_symlinks=False)
                    total += max(info.st_size, info.st_blocks * 512)
        return total

    def export_car(self, root: bytes, out: BinaryIO) -> None:
        """Stream the DAG under ``root`` as a CARv1 (single root) to ``out``.

        Blocks are written as ``walk_dag`` verifies them, one at a time.
        Raises ``MissingBlock`` if the DAG is incomplete (``out`` then holds a
        partial CAR: write to a temp file if that matters).
        """

        writer = CarWriter(out, [root])
        for cid, data in walk_dag(root, self.get, verify=False):
            writer.put(cid, data)
        writer.close()

    def dag_size(self, root: bytes, held: _Held | None = None) -> int:
        """Total bytes of the distinct blocks of the DAG under ``root``; raises ``MissingBlock`` if incomplete.
        ``held``: the blocks of a CAR just verified and written (``_Held``), walked without reading them back."""
        return sum(self._dag_sizes(root, held).values())

    def _dag_sizes(self, root: bytes, held: _Held | None) -> dict[bytes, int]:
        """Each distinct block of the DAG under ``root`` (CIDv1) with its size (see :meth:`dag_size`)."""
        return self._dag_walk(root, held)[0]

    def _dag_walk(self, root: bytes, held: _Held | None) -> tuple[dict[bytes, int], dict[bytes, list[bytes]]]:
        """The blocks of the DAG under ``root`` (CIDv1 -> size) and the links of each with links (CIDv1s). Through a
        CAR import (``held``), a block of the DAG pinned last with links (:meth:`_pinned_record`) is not read: its
        sub-DAG is taken from the record (the unchanged directory shards of a sync round's new root)."""
        walked = None if held is None else self._pinned_record()
        getter = self.get if held is None else held.getter(self.get, self._size, walked.sizes if walked else None)
        recorded = walked.links if walked is not None else {}
        sizes: dict[bytes, int] = {}
        links: dict[bytes, list[bytes]] = {}
        skip = (lambda cid: as_cidv1(cid) in recorded) if recorded else None
        for cid, data in walk_dag(root, getter, verify=False, skip=skip):
            key = as_cidv1(cid)
            sizes[key] = len(data)
            if key[1] != RAW and (children := block_links(cid, data)):
                links[key] = [as_cidv1(child) for child, _name in children]
        if walked is not None:  # the children the walk skipped: those of a block it read that it did not enter
            walked.take_under([child for children in list(links.values()) for child in children if child not in sizes],
                              sizes, links)
        return sizes, links

    def pinned_walk(self) -> dict[bytes, int]:
        """The blocks (CIDv1 -> size) of the DAG pinned last, as its pin's walk found them complete (``WALK_FILE``),
        while its root is pinned still: a pin keeps them through ``gc``, so they are held without a look at their
        files. Empty when there is none, it is unpinned, its sizes do not add up to the size its pin recorded, or
        the record does not read (a cache: never an error).
        A block found damaged by :meth:`get` and removed drops the record."""
        walked = self._pinned_record()
        return {} if walked is None else dict(walked.sizes)

    def _pinned_record(self) -> _Walked | None:
        """The walk record of the DAG pinned last while it vouches for its blocks (:meth:`pinned_walk`), else None."""
        try:
            walked = self._read_walk()
            pin = None if walked is None else self._read_pins().get(cid_to_str(walked.root))
        except (ValueError, IndexError, BundlekitError):
            return None
        if walked is None:
            return None
        # the pin's own walk: its root among its blocks, their sizes adding up to the size the pin recorded (a
        # record naming blocks of no DAG of this store, planted or carried from another, vouches for nothing)
        sizes = walked.sizes
        whole = isinstance(pin, dict) and pin.get("size") == sum(sizes.values()) and walked.root in sizes
        return walked if whole else None

    def _read_walk(self) -> _Walked | None:
        """The walk record parsed (``ValueError``, ``IndexError`` for one that does not), None when there is none
        or it is not of this version. The same file read before (its device, inode, size, modification and change
        times and its closing digest: a record rewritten in place, or a new one on a reused inode within a coarse
        timestamp's tick, ends in another digest) is not parsed again."""
        try:
            with open(self.root / WALK_FILE, "rb") as fh:
                info = os.fstat(fh.fileno())
                if info.st_size < len(_WALK_MAGIC) + _WALK_DIGEST or info.st_size > _WALK_MAX:
                    return None
                tail = os.pread(fh.fileno(), _WALK_DIGEST, info.st_size - _WALK_DIGEST)
                identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, tail)
                memo = self._walk_read
                if memo is not None and memo[0] == identity:
                    return memo[1]
                data = fh.read(_WALK_MAX + 1)
        except OSError:
            return None
        body = memoryview(data)[:-_WALK_DIGEST]
        if len(data) > _WALK_MAX or not data.startswith(_WALK_MAGIC) or data[-_WALK_DIGEST:] != tail:
            return None
        if hashlib.sha256(body).digest() != tail:
            raise ValueError("a walk record whose digest does not match it (damaged)")
        walked = _parse_walk(body[len(_WALK_MAGIC):])
        self._walk_read = (identity, walked)
        return walked

    def _forget_walk(self) -> None:
        """Drop the walk record: a block was removed (found damaged by ``get`` or ``verify``), so a pinned DAG
        lost it and the walk no longer vouches for its blocks."""
        with contextlib.suppress(OSError):
            os.unlink(self.root / WALK_FILE)

    def _record_walk(self, root: bytes, sizes: Mapping[bytes, int], links: Mapping[bytes, list[bytes]]) -> None:
        """Keep the walk of the DAG just pinned (:meth:`pinned_walk`); a store it cannot be written in still pins.
        When a block cannot be written in it (a CID too long to name a file) no block's links are: a sub-DAG taken
        from the record is then never one it holds only in part."""
        kept = [cid for cid, size in sizes.items() if len(cid) <= _MAX_CID_BYTES and size < 1 << 32]
        linked = links if len(kept) == len(sizes) else {}
        index = {cid: at for at, cid in enumerate(kept)}
        if linked and not _links_forward(index, linked):
            kept = _parents_first(root, sizes, linked)
            index = {cid: at for at, cid in enumerate(kept)}
        pack = getattr(_packscan, "pack_walk", None)
        entries = (_pack_walk_py if pack is None else pack)(
            kept, sizes if isinstance(sizes, dict) else dict(sizes), linked if isinstance(linked, dict) else dict(linked),
            index)
        body = b"".join((_WALK_MAGIC, _BYTE[len(root)], root, entries))
        with contextlib.suppress(BundlekitError):
            atomic_write_bytes(self.root / WALK_FILE, body + hashlib.sha256(body).digest(), error=BundlekitError, hint=_WRITE_HINT,
                               sync_dir=False)

    # -- IPNS records -----------------------------------------------------------

    def _record_path(self, name: str) -> Path:
        if not _IPNS_NAME.fullmatch(name):
            raise UsageError(f"{name[:80]!r} is not an IPNS name (k51...); check the name")
        return self.root / "ipns" / name

    def put_record(
        self,
        name: str,
        record: bytes,
        *,
        keep: Callable[[bytes], bool] | None = None,
        max_names: int | None = None,
        sweep: Callable[[], Callable[[bytes], bool] | None] | None = None,
        admit: Callable[[], None] | None = None,
    ) -> bool:
        """Keep ``record`` as the latest IPNS record of ``name`` (``k51...``), replacing the one before.

        With ``keep``, the record already kept is read under the store's record
        lock and stays when ``keep(kept)`` is true (it is as new as ``record``):
        two resolutions racing to remember what they saw cannot put an older
        record over a newer one. Returns whether ``record`` was written.
        With ``max_names``, a record of a name the store keeps none for is
        refused (``RecordLimitError``) when it keeps records for that many
        names: counted under the same lock, so writers racing with new names
        cannot pass the limit together. With ``sweep`` too, ``sweep()`` is called when the limit is
        reached: it gives a judge, and the records for which ``judge(kept)`` is true (expired ones) are
        removed before the count is taken again, or None to remove nothing now (a sweep reads every record). ``admit()``
        is called, under the lock, before a record of a new name is written: it raises to refuse it (the
        routing API's token and per-client bound).
        The store does not read records: ``bundlekit.names`` verifies them
        before it calls this and after it reads one back (``keep`` and the sweep's judge are its judges).
        """
        path = self._record_path(name)
        judged = keep is not None or max_names is not None or admit is not None
        with self._flock("ipns.lock", exclusive=True):
            kept = self.get_record(name) if judged else None
            if kept is not None and keep is not None and keep(kept):
                return False
            if kept is None and admit is not None:
                admit()
            if kept is None and max_names is not None and self.record_count() >= max_names:
                judge = sweep() if sweep is not None else None
                if judge is None or self._evict_records(judge) == 0 or self.record_count() >= max_names:
                    raise RecordLimitError(f"the store at {self.root} keeps records for {max_names} names, its limit")
            atomic_write_bytes(path, record, error=BundlekitError, hint=_WRITE_HINT, parents=True)
        return True

    def _evict_records(self, evict: Callable[[bytes], bool]) -> int:
        """Remove every kept record ``evict`` judges gone (the caller holds the record lock); how many."""
        removed = 0
        for entry in os.scandir(self.root / "ipns"):
            if not _IPNS_NAME.fullmatch(entry.name):
                continue
            try:
                with open(entry.path, "rb") as fh:
                    gone = evict(fh.read(_MAX_KEPT_RECORD + 1))
                if gone:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise BundlekitError(f"cannot remove the IPNS record {entry.path}: {os_reason(exc)}") from exc
        return removed

    def record_count(self) -> int:
        """How many names the store keeps a record for (what bounds the routing API's new names)."""
        try:
            return sum(1 for entry in os.scandir(self.root / "ipns") if _IPNS_NAME.fullmatch(entry.name))
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise BundlekitError(f"cannot list the IPNS records in {self.root}: {os_reason(exc)}") from exc

    def get_record(self, name: str) -> bytes | None:
        """The IPNS record kept for ``name``, or None."""
        try:
            return self._record_path(name).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BundlekitError(f"cannot read the IPNS record of {name}: {os_reason(exc)}") from exc

    # -- pins -----------------------------------------------------------------

    def pin(self, root: bytes, name: str | None = None) -> None:
        """Pin ``root`` (keep its DAG through ``gc``), recording ``name``, date and DAG size.

        The DAG must be complete in the store (``MissingBlock`` otherwise):
        a pin promises the content can be served. Pinning again updates the
        name and keeps the original date. The walk and the write happen under the
        import lock (shared), so a ``gc`` (exclusive) that read the pins before this
        one was written cannot delete the DAG just walked (the push API's ``pin/add``).
        """
        self._pin(root, name, None)

    def _pin(self, root: bytes, name: str | None, held: _Held | None) -> None:
        """:meth:`pin`, its walk taking the blocks of a CAR just imported from ``held`` (``_Held``)."""
        with self._gc_lock(exclusive=False):
            sizes, links = self._dag_walk(root, held)
            size = sum(sizes.values())
            key = cid_to_str(as_cidv1(root))
            with self._pins_lock():
                pins = self._read_pins()
                previous = pins.get(key, {})
                pins[key] = {
                    "name": name if name is not None else previous.get("name"),
                    "created": previous.get("created")
                    or self._clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "size": size,
                }
                self._write_pins(pins)
            self._record_walk(as_cidv1(root), sizes, links)

    def unpin(self, root: bytes) -> None:
        """Remove the pin on ``root``; its blocks go at the next ``gc``. Raises ``UsageError`` if not pinned."""
        key = cid_to_str(as_cidv1(root))
        with self._pins_lock():
            pins = self._read_pins()
            if key not in pins:
                raise UsageError(f"{cid_to_str(root)} is not pinned in {self.root}; see `bundlekit store ls`")
            del pins[key]
            self._write_pins(pins)

    def pins(self) -> dict[bytes, dict[str, Any]]:
        """Pinned roots (CIDv1) mapped to ``{"name", "created", "size"}``. Keys are parsed by ``cid_from_text``
        (the canonical base32 written by ``pin`` without ``multiformats``, ~40 ms to import; any other text by
        ``parse_cid``)."""
        return {cid_from_text(key): dict(meta) for key, meta in self._read_pins().items()}

    def roots(self) -> list[HeldRoot]:
        """The pinned roots with their names, oldest pin first (as ``store ls`` lists them), held in ``store``:
        what the gateway lists for the store it serves. Raises what ``pins`` raises."""
        pins = sorted(self.pins().items(), key=lambda item: str(item[1].get("created") or ""))
        return [HeldRoot(cid, "store", info.get("name")) for cid, info in pins]

    def _pins_path(self) -> Path:
        return self.root / PINS_FILE

    def _read_pins(self) -> dict[str, dict[str, Any]]:
        path = self._pins_path()
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise BundlekitError(f"cannot read the pin file {path}: {os_reason(exc)}; check its permissions") from exc
        try:
            doc = json.loads(raw)
            pins = doc["pins"]
            if doc.get("version") != PINS_VERSION or not isinstance(pins, dict):
                raise ValueError("unknown version")
            for key, meta in pins.items():  # each a CID mapped to an object, as _write_pins writes them
                if not isinstance(meta, dict):
                    raise ValueError(f"the pin {key[:80]!r} is not an object")
                cid_from_text(key)
        except (ValueError, KeyError, TypeError, RecursionError, CIDError) as exc:
            raise BundlekitError(
                f"the pin file {path} is unreadable ({exc}); restore it from a backup or delete it to drop all pins"
            ) from exc
        return pins

    def _write_pins(self, pins: dict[str, dict[str, Any]]) -> None:
        doc = {"version": PINS_VERSION, "pins": dict(sorted(pins.items()))}
        payload = json.dumps(doc, indent=2, sort_keys=True).encode("utf-8") + b"\n"
        atomic_write_bytes(self._pins_path(), payload, error=BundlekitError, hint=_WRITE_HINT)

    @contextlib.contextmanager
    def protect(self) -> Iterator[BlockStore]:
        """Hold off ``gc`` (in any process) while the block runs; yields the store.

        Blocks ``put`` inside and then pinned before the block exits cannot be
        collected in between::

            with store.protect():
                result = import_tree(files, store, profile)
                store.pin(result.root, "agent")
        """
        with self._gc_lock(exclusive=False):
            yield self

    @contextlib.contextmanager
    def _pins_lock(self) -> Iterator[None]:
        with self._flock("pins.lock", exclusive=True):
            yield

    @contextlib.contextmanager
    def _gc_lock(self, *, exclusive: bool) -> Iterator[None]:
        with self._flock("gc.lock", exclusive=exclusive):
            yield

    @contextlib.contextmanager
    def _flock(self, name: str, *, exclusive: bool) -> Iterator[None]:
        # flock locks belong to the open file description, so this also
        # serialises threads of one process that each open the file.
        path = self.root / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BundlekitError(f"cannot open the lock file {path}: {os_reason(exc)}; {_WRITE_HINT}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    # -- garbage collection ---------------------------------------------------

    def gc(self) -> int:
        """Delete every block not reachable from a pin, and stale temp files; return blocks removed.

        Runs under the exclusive gc lock, so it waits for running imports.
        Raises ``MissingBlock`` if a pinned DAG has lost a block (nothing is
        deleted then: re-import the pinned CAR first).
        """

        removed = 0
        with self._gc_lock(exclusive=True):
            keep: set[bytes] = set()
            try:
                for root in self.pins():
                    for cid, _data in walk_dag(root, self.get, verify=False):
                        keep.add(as_cidv1(cid))
            except MissingBlock:  # a pinned DAG lost a block: the walk record vouches for it no more
                self._forget_walk()
                raise
            for cid, path in self._block_files():  # a block file no pin needs goes, whether a pack holds it too
                if cid in keep:
                    continue
                try:
                    os.unlink(path)
                    removed += 1
                except FileNotFoundError:
                    pass
            removed += self._collect_packs(keep)
            self._remove_stale_temps()
        return removed

    def _collect_packs(self, keep: set[bytes]) -> int:
        """Remove every pack none of whose blocks ``keep`` holds (its index first, so no reader finds a block of
        a pack half gone), and every pack or index no block is found through (a pack whose index is absent or
        does not read, an index whose pack is gone: a writer killed between its two renames, a damaged or
        planted file); the blocks removed. A pack any kept block is in stays whole. Under ``packs.lock``, so a
        reader dropping a damaged block cannot write back the index of a pack removed meanwhile; writers commit
        under the shared gc lock (``PackWriter.commit``), so no pack is met between its two renames."""
        removed = 0
        with self._flock("packs.lock", exclusive=True):
            by_pack: dict[str, list[bytes]] = {}
            for cid, (pack, _offset, _length) in self._packs.refresh().items():
                by_pack.setdefault(pack, []).append(cid)
            for pack, cids in by_pack.items():
                if not any(cid in keep for cid in cids):
                    _remove_pack(pack)
                    removed += len(cids)
            folder = self.root / PACKS_DIR
            with contextlib.suppress(FileNotFoundError):
                for name in os.listdir(folder):
                    stem, suffix = os.path.splitext(name)
                    pack = str(folder / f"{stem}{_PACK_SUFFIX}")
                    if not name.startswith(".") and suffix in (_PACK_SUFFIX, _INDEX_SUFFIX) and pack not in by_pack:
                        _remove_pack(pack)
        self._packs.reload()
        return removed

    def _remove_stale_temps(self) -> None:
        """Temps of dead writers (``_fs.sweep_stale_temps``), any older than ``STALE_TEMP_SECONDS``,
        and the legacy ``.tmp-`` names by age: in the shards, the root (``pins.json``'s) and ``ipns/``."""
        cutoff = time.time() - STALE_TEMP_SECONDS
        sweep_stale_temps(self.root, max_age=STALE_TEMP_SECONDS)
        sweep_stale_temps(self.root / "ipns", max_age=STALE_TEMP_SECONDS)
        sweep_stale_temps(self.root / PACKS_DIR, max_age=STALE_TEMP_SECONDS)
        with os.scandir(self.blocks_dir) as shards:
            for shard in shards:
                if not shard.is_dir():
                    continue
                sweep_stale_temps(shard.path, max_age=STALE_TEMP_SECONDS)
                with os.scandir(shard.path) as entries:
                    for entry in entries:
                        if entry.name.startswith(LEGACY_TEMP_PREFIX):
                            try:
                                if entry.stat().st_mtime < cutoff:
                                    os.unlink(entry.path)
                            except OSError as exc:
                                if exc.errno != errno.ENOENT:
                                    raise

    # -- verification (``bundlekit store verify``) ----------------------------------

    def verify(self, *, check_record: Callable[[str, bytes], bool] | None = None) -> StoreReport:
        """Check the whole store, as ``git fsck`` a repository: every block file re-hashed against its CID
        (a damaged one removed, as ``get`` removes it), every pin's DAG complete, every IPNS record kept under
        ``ipns/`` given to ``check_record(name, record)`` (``bundlekit.names`` verifies it: raises
        ``BundlekitError`` for one that does not verify, returns whether it has expired: an expired record still
        proves its name's sequence, so it is listed, not a problem).

        Runs under the shared gc lock (``gc`` waits; imports go on). Memory stays bounded on a large store:
        block files are read one at a time as the shard directories are scanned (no list of every CID), a
        pin's walk holds the set of its own DAG's blocks (as ``pin`` and ``gc`` do), and at most
        ``MAX_NAMED`` problems are kept (the rest counted). Raises only what cannot be read at all (the pin
        file); everything wrong with the content is in the report.
        """
        report = storereport.StoreReport(self.root)
        with self._gc_lock(exclusive=False):
            damaged = self._verify_blocks(report)
            self._verify_pins(report, damaged)
            self._verify_records(report, check_record)
        return report

    def _verify_blocks(self, report: StoreReport) -> dict[bytes, BlockProblem]:
        """Pass 1: re-hash every block file; the damaged and unsupported ones, by CIDv1."""
        found: dict[bytes, BlockProblem] = {}
        self._verify_packs(report, found)
        reason = ""
        for cid, path in self._block_files():
            try:
                report.bytes += _check_file(cid, path)
                report.blocks += 1
                continue
            except FileNotFoundError:
                continue  # gone since the scan (a concurrent unlink): nothing to check
            except OSError as exc:  # a file no read can open or finish (permissions, a disk error): left alone
                problem, reason = "unreadable", os_reason(exc)
            except BlockMismatch:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                self._forget_walk()
                problem = "damaged"
            except UnsupportedBlock:
                problem = "unsupported"
            report.blocks += 1
            if len(found) < MAX_NAMED:
                found[cid] = storereport.BlockProblem(cid, problem, reason=reason if problem == "unreadable" else "")
            else:
                report.unnamed += 1
        return found

    def _verify_packs(self, report: StoreReport, found: dict[bytes, BlockProblem]) -> None:
        """Pass 1 over the packs: every packed block re-hashed (a damaged one dropped from its index, as ``get``
        drops it); an index that does not read is named (``PackProblem``), with why."""
        for cid, packed in sorted(self._packs.refresh().items()):
            report.blocks += 1
            try:
                data = _read_packed(*packed)
                verify_block(cid, data, max_size=None)
                report.bytes += len(data)
                continue
            except OSError as exc:
                problem = storereport.BlockProblem(cid, "unreadable", reason=os_reason(exc))
            except BlockMismatch:
                self._remove_damaged(cid, packed)
                problem = storereport.BlockProblem(cid, "damaged")
            if len(found) < MAX_NAMED:
                found[cid] = problem
            else:
                report.unnamed += 1
        for index, reason in self._packs.bad:
            if len(report.bad_packs) < MAX_NAMED:
                report.bad_packs.append(storereport.PackProblem(Path(index), reason))
            else:
                report.unnamed += 1

    def _block_files(self) -> Iterator[tuple[bytes, str]]:
        """Every block file (CIDv1, path), streamed shard by shard (temp files and stray names skipped)."""
        try:
            shards = os.scandir(self.blocks_dir)
        except FileNotFoundError:
            return
        with shards:
            for shard in shards:
                if not shard.is_dir() or shard.name.startswith("."):
                    continue
                try:
                    entries = os.scandir(shard.path)
                except OSError as exc:
                    raise BundlekitError(f"cannot list the blocks in {shard.path}: {os_reason(exc)}; "
                                         "check its permissions") from exc
                with entries:
                    for entry in entries:
                        if entry.name.startswith(".") or not entry.is_file():
                            continue
                        try:
                            yield as_cidv1(_name_cid(entry.name)), entry.path
                        except CIDError:
                            continue

    def _verify_pins(self, report: StoreReport, damaged: dict[bytes, BlockProblem]) -> None:
        """Pass 2: walk every pin's DAG; a block it links that no file holds is missing (or was damaged and
        removed in pass 1), named with every pin that needs it."""
        problems = dict(damaged)
        for root, meta in sorted(self.pins().items()):
            report.pins += 1
            pin = (root, meta.get("name") if isinstance(meta.get("name"), str) else None)
            for cid in self._gaps(root, damaged):
                problem = problems.get(cid)
                if problem is None:
                    if len(problems) >= MAX_NAMED:
                        report.unnamed += 1
                        continue
                    problem = problems[cid] = storereport.BlockProblem(cid, "missing")
                if pin not in problem.pins:
                    problem.pins.append(pin)
        report.problems = list(problems.values())
        if len(problems) > len(damaged) or report.unnamed:  # a pinned DAG lacks a block: the record vouches no more
            self._forget_walk()

    def _gaps(self, root: bytes, flagged: dict[bytes, BlockProblem]) -> Iterator[bytes]:
        """The blocks (CIDv1) the DAG under ``root`` links that the store has no file for or that pass 1
        ``flagged`` (an unreadable or unsupported file is still there), each once. The blocks are not hashed
        again (pass 1 did); a block whose links cannot be read ends its branch."""
        seen: set[bytes] = set()
        stack = [as_cidv1(root)]
        while stack:
            cid = stack.pop()
            if cid in seen:
                continue
            seen.add(cid)
            if cid in flagged:
                yield cid
                continue
            try:
                path = self._file(cid)
                packed = None if os.path.isfile(path) else self._packed(cid)
                if packed is None and not os.path.isfile(path):  # absent (a FIFO would block the open)
                    yield cid
                    continue
                if cid[:2] == _RAW_V1:  # a leaf: only whether it is there
                    continue
                if packed is not None:
                    data = _read_packed(*packed)
                else:
                    with open(path, "rb") as fh:
                        data = fh.read(MAX_BLOCK_SIZE + 1)  # a node past the limit has no links worth reading
            except (FileNotFoundError, CIDError):
                yield cid
                continue
            except OSError:
                continue
            with contextlib.suppress(BundlekitError):
                stack.extend(as_cidv1(child) for child, _name in block_links(cid, data))

    def _verify_records(self, report: StoreReport, check: Callable[[str, bytes], bool] | None) -> None:
        """Pass 3: every record under ``ipns/`` given to ``check`` (none: counted, not checked)."""
        try:
            entries = os.scandir(self.root / "ipns")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise BundlekitError(f"cannot list the IPNS records in {self.root}: {os_reason(exc)}") from exc
        with entries:
            for entry in entries:
                if not _IPNS_NAME.fullmatch(entry.name):
                    continue
                report.records += 1
                if check is None:
                    continue
                path = Path(entry.path)
                try:
                    expired = check(entry.name, _read_record_file(entry.path))
                except (BundlekitError, OSError) as exc:
                    reason = os_reason(exc) if isinstance(exc, OSError) else str(exc)
                    if len(report.bad_records) < MAX_NAMED:
                        report.bad_records.append(storereport.RecordProblem(entry.name, path, reason))
                    else:
                        report.unnamed += 1
                    continue
                if expired and len(report.expired) < MAX_NAMED:
                    report.expired.append(entry.name)
