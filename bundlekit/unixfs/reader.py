"""Reading UnixFS files and directories back out of a block getter.

``UnixFSReader`` serves unpack, ls, the gateway and the loader. It reads any
layout the importers produce: a raw block as a whole file, dag-pb leaves that
carry data, balanced or trickle-shaped trees (the reader only follows links in
order), flat directories and HAMT-sharded directories. Everything it reads is
checked:

* every block against its CID (unless the getter already does: ``verify=False``);
* file nodes for size consistency: ``filesize == len(data) + sum(blocksizes)``,
  one ``blocksizes`` entry per link, and each child's size equal to its entry;
* directory link names (``check_name``): not empty, ``.``, ``..``, no ``/``,
  ``\\`` or NUL, valid UTF-8, unique within the directory (``UnsafePathError``);
* HAMT shards: murmur3 hash type, power-of-two fanout, link names of the
  exact shape (uppercase hex slot, then the entry name; the slot alone for a
  sub-shard), bitfield agreeing with the links;
* a ``WalkBudget`` (``bundlekit.ipld.walk``), shared by every call on one
  reader: every block read is a visit (a reused block at each read), every
  entry ``walk`` yields counts, every byte ``iter_file`` yields is spent and a
  file's declared size is checked against ``max_bytes`` before its first
  byte, depth is bounded; all ``DAGLimitExceeded``, checked while walking.
  A HAMT that links one shard twice is refused at once (``CodecError``: its
  entries would be duplicated), and when ``walk`` meets a directory it has
  already expanded it asks ``claim`` what the whole DAG expands to and
  refuses it up front when that passes ``max_entries``. Everything is
  iterative.

HAMT lookups iterate all shard links instead of hashing names: shards are
small and it keeps this module free of the hash function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bundlekit.errors import CodecError, DAGLimitExceeded, PathNotFound, UnsafePathError, UnsupportedBlock
from bundlekit.ipld.block import block_codec, check_block
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str
from bundlekit.ipld.dagpb import (
    DIRECTORY,
    FILE,
    HAMT_SHARD,
    METADATA,
    RAW_T,
    SYMLINK,
    PBLink,
    UnixFSData,
    decode_node,
)
from bundlekit.ipld.walk import MAX_DEPTH, MAX_ENTRIES, WalkBudget, WalkLimits

__all__ = ["HAMT_MURMUR3", "MAX_ENTRIES", "Claim", "Stat", "UnixFSReader", "check_name"]

HAMT_MURMUR3 = 0x22  # multicodec murmur3-x64-64, the only HAMT hash UnixFS uses
_HEX = frozenset(b"0123456789ABCDEF")
# Link names that check_name passes at once (besides "." and ".."): printable ASCII without "/" or "\\".
_PLAIN_NAME = re.compile(rb"[ -.0-\[\]-~]+").fullmatch
# Such names, each followed by "/" (_plain_entries).
_PLAIN_NAMES = re.compile(rb"(?:[ -.0-\[\]-~]+/)*").fullmatch


@dataclass(frozen=True)
class Stat:
    """What a CID is: ``kind`` is "file", "directory", "raw" (a raw block: a whole
    small file) or "symlink"; ``size`` is the content length for files, raw
    blocks and symlinks, and the number of entries is not computed for
    directories (their size is 0)."""

    cid: bytes
    kind: str
    size: int


@dataclass(frozen=True)
class Claim:
    """What a UnixFS DAG claims to expand to, every reuse counted: ``entries`` (paths,
    the root included) and ``bytes`` (the declared sizes of its files), read from
    ``blocks`` distinct blocks (directory nodes, HAMT shards, file roots)."""

    entries: int
    bytes: int
    blocks: int


class _Node:
    """One block as the reader parsed it: ``ufs`` is None for a raw block, ``data`` the raw block's bytes or the
    UnixFS Data payload. A plain class: a dataclass costs ~0.3 ms of every reading command's start-up to define
    (issue 37)."""

    __slots__ = ("cid", "kind", "size", "links", "ufs", "data")

    def __init__(self, cid: bytes, kind: str, size: int, links: list[PBLink], ufs: UnixFSData | None,
                 data: bytes) -> None:
        self.cid, self.kind, self.size, self.links, self.ufs, self.data = cid, kind, size, links, ufs, data


def check_name(name: bytes, where: str) -> str:
    """Return ``name`` decoded, or raise ``UnsafePathError`` naming it and the directory ``where``.

    Refused: empty, ``.``, ``..``, containing ``/``, ``\\`` or NUL, or not
    valid UTF-8. These are exactly the names that could escape or corrupt an
    output directory on some platform.
    """
    if _PLAIN_NAME(name) is not None and name not in (b".", b".."):  # the usual name: nothing to refuse
        return name.decode("ascii")
    shown = name.decode("utf-8", "backslashreplace")
    at = f"directory {where!r}" if where else "the root directory"
    if name in (b"", b".", b".."):
        raise UnsafePathError(f"unsafe link name {shown!r} in {at}; the DAG is hostile or corrupt, refusing it")
    for bad in (b"/", b"\\", b"\0"):
        if bad in name:
            raise UnsafePathError(
                f"unsafe link name {shown!r} in {at}: contains {bad.decode()!r}; the DAG is hostile or corrupt"
            )
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafePathError(f"link name {shown!r} in {at} is not valid UTF-8; refusing it") from exc


def _plain_entries(links: list[PBLink]) -> list[tuple[str, bytes]] | None:
    """A flat directory's entries when every name is plain (``_PLAIN_NAME``) and unique; else None.

    What ``check_name`` and the duplicate check make of such names, with one
    regex, one set and one decode for the whole directory instead of calls per
    name. None sends the caller through them (they name the problem). Names
    are joined with ``/``, which no plain name holds: the count of separators
    rules out a name that does.
    """
    names = [link.name for link in links]
    joined = b"/".join(names)
    if (
        _PLAIN_NAMES(joined + b"/") is None
        or joined.count(b"/") != len(names) - 1
        or len(set(names)) != len(names)
        or b"." in names
        or b".." in names
    ):
        return None
    return list(zip(joined.decode("ascii").split("/"), [link.cid for link in links], strict=True))


class UnixFSReader:
    """Files and directories of UnixFS DAGs, read through ``get_block``.

    ``get_block`` returns a block's bytes or raises ``MissingBlock``. Errors:
    ``MissingBlock``, ``BlockMismatch`` / ``UnsupportedBlock`` (bad or unknown
    blocks), ``CodecError`` (malformed dag-pb or UnixFS, inconsistent sizes),
    ``UnsafePathError`` (link names), ``PathNotFound`` (``resolve``),
    ``DAGLimitExceeded`` (limits).
    """

    def __init__(
        self,
        get_block: Callable[[bytes], bytes],
        *,
        verify: bool = True,
        max_depth: int = MAX_DEPTH,
        max_entries: int = MAX_ENTRIES,
        budget: WalkBudget | None = None,
        raw_size: Callable[[bytes], int | None] | None = None,
    ) -> None:
        self._get_block = get_block
        self._verify = verify
        self._raw_size = raw_size
        # Without a caller's budget, the defaults with this reader's depth and entry limits.
        self._own_budget = budget is None
        self.budget = budget if budget is not None else WalkBudget(
            WalkLimits(max_depth=max_depth, max_entries=max_entries)
        )
        self.max_depth = self.budget.limits.max_depth
        self.max_entries = self.budget.limits.max_entries
        self._last: _Node | None = None

    def _name_walk(self, root: bytes) -> None:
        if self._own_budget:
            self.budget.what = f"the DAG under {cid_to_str(root)}"

    # -- blocks -------------------------------------------------------------

    def _load(self, cid: bytes) -> _Node:
        # One node is remembered: walk() loads a file's root and the caller's
        # iter_file() on it (unpack does exactly that) then costs no second read.
        self.budget.visit()
        last = self._last
        if last is not None and last.cid == cid:
            return last
        node = self._parse(cid, self._get_block(cid))
        self._last = node
        return node

    def _parse(self, cid: bytes, data: bytes) -> _Node:
        if self._verify:
            check_block(cid, data)
        codec = block_codec(cid)
        if codec == RAW:
            return _Node(cid, "raw", len(data), [], None, data)
        if codec != DAG_PB:
            raise UnsupportedBlock(f"block {cid_to_str(cid)} has codec 0x{codec:x}, which is not UnixFS")
        try:
            links, payload = decode_node(data)
            if payload is None:
                raise CodecError("dag-pb node without UnixFS Data")
            ufs = UnixFSData.decode(payload)
        except CodecError as exc:
            raise CodecError(f"block {cid_to_str(cid)} is not valid UnixFS: {exc}") from exc
        content = ufs.data or b""
        if ufs.type in (FILE, RAW_T):
            return _Node(cid, "file", self._file_size(cid, links, ufs), links, ufs, content)
        if ufs.type in (DIRECTORY, HAMT_SHARD):
            return _Node(cid, "directory", 0, links, ufs, content)
        if ufs.type == SYMLINK:
            return _Node(cid, "symlink", len(content), links, ufs, content)
        kind = "metadata" if ufs.type == METADATA else f"type {ufs.type}"
        raise UnsupportedBlock(f"block {cid_to_str(cid)} is a UnixFS {kind} node, which bundlekit does not read")

    @staticmethod
    def _file_size(cid: bytes, links: list[PBLink], ufs: UnixFSData) -> int:
        """The node's content size, after checking filesize and blocksizes agree."""
        own = len(ufs.data or b"")
        if len(ufs.blocksizes) != len(links):
            raise CodecError(
                f"file node {cid_to_str(cid)} has {len(links)} links but {len(ufs.blocksizes)} blocksizes; "
                "the file DAG is corrupt"
            )
        total = own + sum(ufs.blocksizes)
        if ufs.filesize is not None and ufs.filesize != total:
            raise CodecError(
                f"file node {cid_to_str(cid)} claims filesize {ufs.filesize} but its data and blocksizes "
                f"add up to {total}; the file DAG is corrupt"
            )
        return total

    # -- public API ---------------------------------------------------------

    def stat(self, cid: bytes) -> Stat:
        """Kind and size of ``cid`` (reads one block)."""
        node = self._load(cid)
        return Stat(cid, node.kind, node.size)

    def iter_file(self, cid: bytes) -> Iterator[bytes]:
        """Stream the content of the file at ``cid``, one block's data at a time, in order.

        Raises ``PathNotFound`` if ``cid`` is not a file, ``CodecError`` when a
        child's size disagrees with its parent's ``blocksizes`` entry.
        """
        root = self._load(cid)
        if root.kind not in ("file", "raw"):
            raise PathNotFound(f"{cid_to_str(cid)} is a {root.kind}, not a file")
        budget = self.budget
        # The declared size is checked first: a file reusing one subtree can claim a petabyte.
        budget.check_bytes(budget.bytes + root.size)
        if root.data:
            budget.spend(len(root.data))
            yield root.data
        # Each frame: the node whose links are being read, and the next link index.
        stack: list[tuple[_Node, int]] = [(root, 0)] if root.links else []
        while stack:
            node, i = stack[-1]
            if i >= len(node.links):
                stack.pop()
                continue
            stack[-1] = (node, i + 1)
            assert node.ufs is not None  # only dag-pb nodes have links
            expected = node.ufs.blocksizes[i]
            if len(stack) > self.max_depth:
                raise DAGLimitExceeded(
                    f"file {cid_to_str(cid)} is deeper than {self.max_depth} levels; refusing to read further"
                )
            child = self._load(node.links[i].cid)
            if child.kind not in ("file", "raw"):
                raise CodecError(f"file {cid_to_str(cid)} links to a {child.kind} ({cid_to_str(child.cid)})")
            if child.size != expected:
                raise CodecError(
                    f"block {cid_to_str(child.cid)} holds {child.size} bytes but its parent "
                    f"{cid_to_str(node.cid)} says {expected}; the file DAG is corrupt"
                )
            if child.data:
                budget.spend(len(child.data))
                yield child.data
            if child.links:
                stack.append((child, 0))

    def list_dir(self, cid: bytes, path: str = "") -> list[tuple[str, bytes]]:
        """Entries ``(name, cid)`` of the directory at ``cid`` (``path`` is only for messages).

        Plain directories keep their stored order; HAMT entries are sorted by
        the UTF-8 bytes of their names, the order a plain directory uses.
        Raises ``PathNotFound`` if ``cid`` is not a directory.
        """
        return self._entries(self._load(cid), path)

    def shard(self, cid: bytes) -> tuple[int, list[PBLink]] | None:
        """A HAMT-sharded directory's fanout and links (checked as ``list_dir`` checks them: the links' names are
        the caller's to check), or None for a plain directory; ``PathNotFound`` for anything else. What a
        comparison of two directories needs to skip each sub-shard both hold alike (``bundle.treediff``)."""
        node = self._load(cid)
        if node.kind != "directory":
            raise PathNotFound(f"{cid_to_str(cid)} is a {node.kind}, not a directory")
        assert node.ufs is not None
        if node.ufs.type != HAMT_SHARD:
            return None
        return self._check_shard(node, None, cid_to_str(cid)), list(node.links)

    def _entries(self, node: _Node, path: str) -> list[tuple[str, bytes]]:
        if node.kind != "directory":
            shown = f"{path!r} ({cid_to_str(node.cid)})" if path else cid_to_str(node.cid)
            raise PathNotFound(f"{shown} is a {node.kind}, not a directory")
        assert node.ufs is not None
        if node.ufs.type == DIRECTORY:
            plain = _plain_entries(node.links)
            if plain is not None:
                return plain
            raw_entries = [(link.name, link.cid) for link in node.links]
        else:
            raw_entries = self._hamt_entries(node, path)
        entries: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        for raw_name, child in raw_entries:
            name = check_name(raw_name, path)
            if name in seen:
                at = f"directory {path!r}" if path else "the root directory"
                raise UnsafePathError(f"duplicate link name {name!r} in {at}; the DAG is hostile or corrupt")
            seen.add(name)
            entries.append((name, child))
        if node.ufs.type == HAMT_SHARD:
            entries.sort(key=lambda e: e[0].encode("utf-8"))
        return entries

    def _hamt_entries(self, root: _Node, path: str) -> list[tuple[bytes, bytes]]:
        """Every ``(name, cid)`` of a HAMT shard and its sub-shards, iteratively."""
        out: list[tuple[bytes, bytes]] = []
        fanout = self._check_shard(root, None, path)
        width = len(f"{fanout - 1:X}")
        shards = {root.cid}
        stack: list[tuple[_Node, int]] = [(root, 0)]
        while stack:
            shard, depth = stack.pop()
            for link in shard.links:
                slot, rest = link.name[:width], link.name[width:]
                if len(slot) != width or not set(slot) <= _HEX:
                    raise CodecError(
                        f"HAMT shard {cid_to_str(shard.cid)} has a link named {link.name!r}, which does not "
                        f"start with {width} uppercase hex digits; the directory is corrupt"
                    )
                if rest:
                    out.append((rest, link.cid))
                    if len(out) > self.max_entries:
                        raise DAGLimitExceeded(
                            f"directory {path or cid_to_str(root.cid)!r} has more than {self.max_entries} "
                            "entries; refusing to list it (raise --max-entries only for DAGs you trust)"
                        )
                    continue
                if link.cid in shards:
                    # Each sub-shard holds the names of one hash prefix: linked twice, its names repeat.
                    raise CodecError(
                        f"HAMT directory {path or cid_to_str(root.cid)!r} links shard {cid_to_str(link.cid)} "
                        "more than once (a HAMT never reuses a shard: its entries would repeat); the "
                        "directory is hostile or corrupt"
                    )
                shards.add(link.cid)
                if depth + 1 > self.max_depth:
                    raise DAGLimitExceeded(f"HAMT under {cid_to_str(root.cid)} is deeper than {self.max_depth}")
                sub = self._load(link.cid)
                self._check_shard(sub, fanout, path)
                stack.append((sub, depth + 1))
        return out

    @staticmethod
    def _check_shard(node: _Node, fanout: int | None, path: str) -> int:
        ufs = node.ufs
        name = cid_to_str(node.cid)
        if ufs is None or ufs.type != HAMT_SHARD:
            raise CodecError(f"HAMT sub-shard {name} is not a HAMT shard node; the directory {path!r} is corrupt")
        if ufs.hash_type != HAMT_MURMUR3:
            raise UnsupportedBlock(f"HAMT shard {name} uses hash type {ufs.hash_type!r}; only murmur3 (0x22) is read")
        got = ufs.fanout
        if got is None or got < 2 or got & (got - 1) or got > 1024:
            raise CodecError(f"HAMT shard {name} has fanout {got!r}; it must be a power of two up to 1024")
        if fanout is not None and got != fanout:
            raise CodecError(f"HAMT sub-shard {name} has fanout {got}, its parent {fanout}")
        width = len(f"{got - 1:X}")
        bits = int.from_bytes(ufs.data or b"", "big")
        slots: set[int] = set()
        for link in node.links:
            try:
                slot = int(link.name[:width].decode("ascii"), 16)
            except (UnicodeDecodeError, ValueError):
                continue  # the name shape is reported by the caller, with its context
            if slot >= got or not bits >> slot & 1 or slot in slots:
                raise CodecError(f"HAMT shard {name}: link {link.name!r} disagrees with the shard's bitfield")
            slots.add(slot)
        if bits.bit_count() != len(node.links):
            raise CodecError(f"HAMT shard {name}: bitfield has {bits.bit_count()} slots, {len(node.links)} links")
        return got

    def resolve(self, root: bytes, path: str) -> bytes:
        """The CID at ``path`` ("a/b.md", slashes only) under the directory ``root``.

        Raises ``PathNotFound`` for a missing entry or a file in the middle,
        ``UnsafePathError`` for ``.`` / ``..`` segments.
        """
        cid = root
        walked: list[str] = []
        for segment in path.strip("/").split("/") if path.strip("/") else []:
            if segment in ("", ".", ".."):
                raise UnsafePathError(f"path {path!r} has an empty, '.' or '..' segment; give a plain relative path")
            entries = self.list_dir(cid, "/".join(walked))
            match = [child for name, child in entries if name == segment]
            if not match:
                where = "/".join(walked) or "the root directory"
                raise PathNotFound(f"no entry {segment!r} in {where} of {cid_to_str(root)}")
            walked.append(segment)
            cid = match[0]
        return cid

    def walk(self, root: bytes) -> Iterator[tuple[str, bytes, str, int]]:
        """Yield ``(path, cid, kind, size)`` for ``root`` (path "") and everything under it, pre-order.

        ``kind`` is "file", "directory" or "symlink" (a raw block is a "file"),
        as the importer reports entries. ``DAGLimitExceeded`` past the
        budget's entries, visits or depth; a DAG that reuses a directory is
        measured first (``claim``) and refused before its first repeated
        entry when it claims more entries than the budget allows.
        """
        self._name_walk(root)
        budget = self.budget
        expanded: set[bytes] = set()
        measured = False
        stack: list[tuple[str, bytes, int]] = [("", root, 0)]
        while stack:
            path, cid, depth = stack.pop()
            budget.entry()
            node = self._load(cid)
            kind = "file" if node.kind == "raw" else node.kind
            yield path, cid, kind, node.size
            if kind != "directory":
                continue
            if cid in expanded and not measured:
                measured = True
                self._refuse_claim(root, budget.entries - 1)
            expanded.add(cid)
            children = self._entries(node, path)
            if children and depth >= self.max_depth:
                raise DAGLimitExceeded(f"{cid_to_str(root)} nests directories deeper than {self.max_depth}")
            for name, child in reversed(children):
                stack.append((f"{path}/{name}" if path else name, child, depth + 1))

    def _refuse_claim(self, root: bytes, spent: int) -> None:
        claim = self.claim(root)
        if spent + claim.entries > self.max_entries:
            raise DAGLimitExceeded(
                f"{self.budget.what} has more than {self.max_entries} entries: it reuses directories and "
                f"claims {claim.entries}; refusing to list it (raise --max-entries only for DAGs you trust)"
            )

    def claim(self, root: bytes) -> Claim:
        """What the DAG at ``root`` claims to expand to (``Claim``), reading each distinct
        directory node, HAMT shard and file root once, whatever the claimed size.
        A raw block's size is its length: with ``raw_size`` (the getter's stored
        length of a block, ``None`` when it has none: a CAR index knows it without
        reading) such a file is not read here; the walk reads and verifies it.

        The reads are charged to a fresh budget with this reader's limits (so a
        walk after it is not charged twice). Raises what ``walk`` raises for
        names, codecs and depth.
        """
        own = self.budget
        self.budget = WalkBudget(own.limits, what=own.what, cancelled=own.cancelled)
        try:
            return self._claim(root)
        finally:
            self.budget = own

    def _claim(self, root: bytes) -> Claim:
        memo: dict[bytes, tuple[int, int]] = {}
        # (cid, children once listed, depth, path for messages)
        stack: list[tuple[bytes, list[bytes] | None, int, str]] = [(root, None, 0, "")]
        while stack:
            cid, kids, depth, path = stack[-1]
            if cid in memo:
                stack.pop()
                continue
            if kids is None:
                size = self._raw_size(cid) if self._raw_size is not None else None
                if size is not None and block_codec(cid) == RAW:
                    memo[cid] = (1, size)
                    stack.pop()
                    continue
                node = self._load(cid)
                if node.kind != "directory":
                    memo[cid] = (1, node.size)
                    stack.pop()
                    continue
                entries = self._entries(node, path)
                kids = [child for _name, child in entries]
                stack[-1] = (cid, kids, depth, path)
                if kids:
                    self.budget.check_depth(depth + 1)
                pushed: set[bytes] = set()
                for name, child in entries:
                    if child not in memo and child not in pushed:
                        pushed.add(child)
                        stack.append((child, None, depth + 1, f"{path}/{name}" if path else name))
                continue
            memo[cid] = (1 + sum(memo[c][0] for c in kids), sum(memo[c][1] for c in kids))
            stack.pop()
        entries_total, size = memo[root]
        return Claim(entries_total, size, len(memo))

    def listing(self, root: bytes) -> list[tuple[str, bytes, str, int]]:
        """``walk`` collected into a list, with each directory's size set to the sum
        of the sizes beneath it (the importer's ``ImportedEntry.size``).

        Holds every entry in memory (bounded by ``max_entries``); use ``walk``
        to stream.
        """
        entries = list(self.walk(root))
        index = {path: i for i, (path, _c, _k, _s) in enumerate(entries)}
        sizes = [size for _p, _c, _k, size in entries]
        # Pre-order puts children after their parent, so reversed order is bottom-up.
        for i in range(len(entries) - 1, 0, -1):
            parent = entries[i][0].rpartition("/")[0]
            sizes[index[parent]] += sizes[i]
        return [(p, c, k, sizes[i]) for i, (p, c, k, _s) in enumerate(entries)]
