"""Which blocks a gateway response carries: path resolution and ``dag-scope``.

Path resolution lists each directory on the path with ``UnixFSReader.list_dir``
through a *recording* block getter, so the blocks needed to verify each step
(directory nodes, HAMT shards on the way) are known without this module
knowing how directories are laid out; listings are cached by CID
(``DirCache``), since a CID's content never changes. A CAR response is those path blocks
followed by the blocks the scope asks for, at the terminal CID:

* ``block``  - the terminal block only;
* ``entity`` - a UnixFS file: every block of the file; a UnixFS directory:
  its node and, for a HAMT, every shard (enough to list it, not its
  children); anything else: the terminal block;
* ``all``    - the whole DAG under the terminal CID.

Every function takes an optional ``WalkBudget`` (one per request): block
reads count as visits, a reused block at each read, so a few kilobytes of
blocks that claim billions of entries or petabytes are cut off while being
walked, and the budget's ``cancelled`` check stops the work for a client that
has gone (``WalkCancelled``).
"""

from __future__ import annotations

import re

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bundlekit.errors import CodecError, PathNotFound, UnsafePathError
from bundlekit.ipld.cid import DAG_PB, cid_to_str, parse_cid_bytes
from bundlekit.ipld.dagpb import UnixFSData, decode_node
from bundlekit.ipld.walk import WalkBudget, walk_dag
from bundlekit.unixfs.reader import UnixFSReader

__all__ = [
    "DAG_SCOPES",
    "DirCache",
    "RecordingGetter",
    "Resolved",
    "parse_entity_bytes",
    "range_blocks",
    "resolve_path",
    "resolve_range",
    "scope_blocks",
]

DAG_SCOPES = ("block", "entity", "all")

Getter = Callable[[bytes], bytes]


class RecordingGetter:
    """A block getter that remembers every distinct block it handed out, in order."""

    def __init__(self, get_block: Getter) -> None:
        self._get = get_block
        self._seen: set[bytes] = set()
        self.blocks: list[tuple[bytes, bytes]] = []

    def __call__(self, cid: bytes) -> bytes:
        data = self._get(cid)
        if cid not in self._seen:
            self._seen.add(cid)
            self.blocks.append((cid, data))
        return data


@dataclass
class Resolved:
    """The outcome of resolving ``/ipfs/<root>/<segments...>``."""

    cids: list[bytes]  # the root, then the CID each segment resolved to
    path_blocks: list[tuple[bytes, bytes]]  # every block read to get there, root first

    @property
    def terminal(self) -> bytes:
        return self.cids[-1]


@dataclass
class _Listing:
    names: dict[str, bytes]  # name -> child CID
    order: list[tuple[str, bytes]]  # entries in directory order
    blocks: list[tuple[bytes, bytes]]  # the directory node, then any HAMT shards
    cost: int


class DirCache:
    """Directory listings by CID, least recently used out first, bounded in bytes.

    A directory's CID fixes its content, so an entry can never go stale.
    Without this, every path request decodes each directory on the path again:
    tens of milliseconds for a 1,000-entry memory directory.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[bytes, _Listing] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def listing(self, get_block: Getter, cid: bytes, budget: WalkBudget | None = None) -> _Listing:
        """The listing of directory ``cid``, read through ``get_block`` on a miss (charged to ``budget``).

        Raises what ``UnixFSReader.list_dir`` raises (``PathNotFound`` for a
        non-directory, ``UnsafePathError``, ``MissingBlock``, ``CodecError``
        for a HAMT that reuses a shard, ``DAGLimitExceeded``...).
        """
        with self._lock:
            hit = self._entries.get(cid)
            if hit is not None:
                self._entries.move_to_end(cid)
                return hit

        recorder = RecordingGetter(get_block)
        order = UnixFSReader(recorder, verify=False, budget=budget).list_dir(cid)
        cost = sum(len(data) for _c, data in recorder.blocks) + 100 * len(order)
        listing = _Listing(dict(order), order, recorder.blocks, cost)
        with self._lock:
            if cid not in self._entries and cost <= self.max_bytes:
                self._entries[cid] = listing
                self._bytes += cost
                while self._bytes > self.max_bytes:
                    _old, dropped = self._entries.popitem(last=False)
                    self._bytes -= dropped.cost
        return listing


def resolve_path(
    get_block: Getter,
    root: bytes,
    segments: list[str],
    cache: DirCache | None = None,
    budget: WalkBudget | None = None,
) -> Resolved:
    """Resolve ``segments`` under ``root`` one at a time, collecting the blocks read.

    The root block is always read, so a missing root raises ``MissingBlock``
    before anything else. Raises ``UnsafePathError`` for an empty, ``.`` or
    ``..`` segment or one holding ``/``, ``PathNotFound`` for a missing entry
    or a path through a file, and whatever reading the directories raises.
    """

    cache = cache if cache is not None else DirCache(max_bytes=0)
    blocks: dict[bytes, bytes] = {root: get_block(root)}
    cids = [root]
    for depth, segment in enumerate(segments):
        if segment in ("", ".", "..") or "/" in segment:
            raise UnsafePathError(f"path segment {segment!r} is not a plain name")
        listing = cache.listing(get_block, cids[-1], budget)
        for cid, data in listing.blocks:
            blocks.setdefault(cid, data)
        child = listing.names.get(segment)
        if child is None:
            where = "/".join(segments[:depth]) or "the root directory"
            raise PathNotFound(f"no entry {segment!r} in {where} of {cid_to_str(root)}")
        cids.append(child)
    return Resolved(cids, list(blocks.items()))


def scope_blocks(
    get_block: Getter,
    cid: bytes,
    scope: str,
    cache: DirCache | None = None,
    budget: WalkBudget | None = None,
) -> Iterator[tuple[bytes, bytes]]:
    """The blocks ``dag-scope=scope`` selects at ``cid``, verified, parents first.

    ``get_block`` is trusted to verify (a ``ServedBlocks`` does), so blocks
    are not hashed twice. Raises ``MissingBlock`` (possibly mid-iteration)
    when the source lacks one.
    """

    if scope == "all":
        yield from walk_dag(cid, get_block, verify=False, budget=budget)
        return
    if scope == "entity" and parse_cid_bytes(cid).codec == DAG_PB:

        kind = UnixFSReader(get_block, verify=False, budget=budget).stat(cid).kind
        if kind == "file":
            yield from walk_dag(cid, get_block, verify=False, budget=budget)
            return
        if kind == "directory":
            cache = cache if cache is not None else DirCache(max_bytes=0)
            yield from cache.listing(get_block, cid, budget).blocks
            return
    yield cid, get_block(cid)


# One offset of entity-bytes: decimal digits with an optional minus, as the specification writes
# them (Python's int() would also take "1_0", " 1" or "+1"); 19 digits hold any int64.
_OFFSET = re.compile(r"-?[0-9]{1,19}")


def parse_entity_bytes(value: str) -> tuple[int, int | None]:
    """Parse ``from:to`` of the ``entity-bytes`` parameter; ``to`` is None for ``*``.

    Both may be negative (counted from the end). Raises ``ValueError`` when
    malformed.
    """
    start_text, sep, end_text = value.partition(":")
    if not sep or not _OFFSET.fullmatch(start_text) or not (end_text == "*" or _OFFSET.fullmatch(end_text)):
        raise ValueError("entity-bytes must be from:to, each an integer (to may be *)")
    return int(start_text), None if end_text == "*" else int(end_text)


def resolve_range(start: int, end: int | None, size: int) -> tuple[int, int] | None:
    """Turn ``entity-bytes`` values into an inclusive ``(first, last)`` within ``size``, or None if empty.

    Negative values count from the end; ``end=None`` is the last byte; both
    are clamped to the entity. Raises ``ValueError`` when the range lies
    entirely after the end of the entity (the spec's 400 case).
    """
    first = max(size + start, 0) if start < 0 else start
    last = size - 1 if end is None else (size + end if end < 0 else end)
    if size > 0 and first >= size:
        raise ValueError(f"range starts at byte {first}, after the end of the {size}-byte entity")
    last = min(last, size - 1)
    if size == 0 or last < first:
        return None
    return first, last


def range_blocks(
    get_block: Getter, cid: bytes, first: int, last: int, budget: WalkBudget | None = None
) -> Iterator[tuple[bytes, bytes]]:
    """The blocks of the UnixFS file at ``cid`` needed to verify bytes ``first..last`` (inclusive).

    Depth first, parents before children: a node is sent when its byte span
    meets the range, and only the children whose spans meet it are followed,
    using the ``blocksizes`` of each file node; a block wholly inside the
    range is followed once, however often the file links it. Raises ``CodecError`` for a
    malformed node and ``MissingBlock`` when a needed block is absent; a
    ``budget`` is charged a visit per block read (a reused block at each).
    """

    stack: list[tuple[bytes, int]] = [(cid, 0)]  # (cid, offset of its first byte)
    sent_whole: set[bytes] = set()
    while stack:
        node_cid, offset = stack.pop()
        if budget is not None:
            budget.visit()
        data = get_block(node_cid)
        yield node_cid, data
        if parse_cid_bytes(node_cid).codec != DAG_PB:
            continue  # a raw leaf: its bytes are the content
        links, payload = decode_node(data)
        if payload is None:
            raise CodecError(f"block {cid_to_str(node_cid)} has no UnixFS data")
        ufs = UnixFSData.decode(payload)
        if len(ufs.blocksizes) != len(links):
            raise CodecError(
                f"file node {cid_to_str(node_cid)} has {len(links)} links but {len(ufs.blocksizes)} blocksizes"
            )
        child_offset = offset + len(ufs.data or b"")
        wanted: list[tuple[bytes, int]] = []
        for link, size in zip(links, ufs.blocksizes):
            end = child_offset + size - 1
            if size and child_offset <= last and end >= first:
                # A block wholly inside the range brings its whole subtree: once is enough
                # (a file that reuses a subtree would otherwise be walked at every reuse).
                whole = first <= child_offset and end <= last
                if not (whole and link.cid in sent_whole):
                    wanted.append((link.cid, child_offset))
                    if whole:
                        sent_whole.add(link.cid)
            child_offset += size
        stack.extend(reversed(wanted))
