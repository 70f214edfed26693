"""Two UnixFS directories compared by CID, descending only where they differ, as git compares trees.

A bundle's ``memory/`` directory is a HAMT once it holds more than a few hundred files: a change of k files
rewrites the k leaves' shards and the shards above them, and every other shard keeps its CID. :func:`diff_dirs`
compares two directories slot by slot and skips every link both hold alike (one comparison of a CID stands for
a whole sub-shard), so comparing two trees of n files that differ in k reads O(k log n) blocks, not O(n).
:func:`lookup` finds one entry of a HAMT by the hash of its name (fanout 256, the importer's) without listing
the directory. The names met are checked as ``UnixFSReader`` checks every name (``check_name``); what they may
be in a bundle is the caller's to check (``manifest.check_walked_path``).
"""

from __future__ import annotations

from bundlekit.errors import CodecError, DAGLimitExceeded
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.dagpb import PBLink
from bundlekit.unixfs.hamt import FANOUT, name_hash
from bundlekit.unixfs.reader import UnixFSReader, check_name

__all__ = ["MAX_SHARD_DEPTH", "Change", "diff_dirs", "lookup"]

#: A (old CID, new CID) pair; None where the entry is absent on that side.
Change = tuple[bytes | None, bytes | None]
#: Sub-shards below a HAMT's root at most (fanout 256 and 64-bit hashes: 8 levels; a deeper one is hostile).
MAX_SHARD_DEPTH = 8
#: Hex digits of a slot in a fanout-256 shard's link names.
_WIDTH = 2
_HEX = frozenset("0123456789ABCDEF")


def diff_dirs(reader: UnixFSReader, old: bytes | None, new: bytes | None) -> dict[str, Change]:
    """Entry name -> (old CID, new CID) for every entry of the directories ``old`` and ``new`` (None: no
    directory) that is absent on one side or links another CID. Raises what ``UnixFSReader`` raises for a node
    that is no directory or a hostile shard, ``DAGLimitExceeded`` past ``MAX_SHARD_DEPTH``, and ``CodecError``
    for a shard a listing would refuse but a slot-by-slot walk could miss: a name filed under a slot its hash
    does not name (one name twice, in two slots) or one sub-shard linked twice (a diamond, compared again and
    again)."""
    return _Walk(reader).diff(old, new, b"")


class _Walk:
    """One comparison: the sub-shards met on each side (none may be met twice) and the reader."""

    def __init__(self, reader: UnixFSReader) -> None:
        self.reader = reader
        self.seen: tuple[set[bytes], set[bytes]] = (set(), set())

    def diff(self, old: bytes | None, new: bytes | None, prefix: bytes) -> dict[str, Change]:
        reader = self.reader
        if old == new:
            return {}
        if len(prefix) > MAX_SHARD_DEPTH:
            raise DAGLimitExceeded(f"a HAMT directory nests sub-shards deeper than {MAX_SHARD_DEPTH}; it is hostile")
        if old is None or new is None:
            return _compare(self.entries(old, prefix), self.entries(new, prefix))
        a, b = reader.shard(old), reader.shard(new)
        if a is None or b is None or a[0] != FANOUT or b[0] != FANOUT:  # not two shards of ours: every entry
            return _compare(self.entries(old, prefix), self.entries(new, prefix))
        slots_a, slots_b = _by_slot(a[1]), _by_slot(b[1])
        out: dict[str, Change] = {}
        for slot in sorted(set(slots_a) | set(slots_b)):
            la, lb = slots_a.get(slot), slots_b.get(slot)
            if la is not None and lb is not None and la.name == lb.name and la.cid == lb.cid:
                continue  # the same entry, or the same sub-shard: nothing below it differs
            under = prefix + bytes([int(slot, 16)])
            if la is not None and lb is not None and len(la.name) == _WIDTH == len(lb.name):
                self.note(0, la.cid)
                self.note(1, lb.cid)
                out.update(self.diff(la.cid, lb.cid, under))
                continue
            out.update(_compare(self.slot(0, la, under), self.slot(1, lb, under)))
        return out

    def note(self, side: int, shard: bytes) -> None:
        """A sub-shard met on ``side``: one met before is a diamond (``CodecError``, as a listing refuses it)."""
        if shard in self.seen[side]:
            raise CodecError(f"a HAMT directory links shard {cid_to_str(shard)} more than once (a HAMT never reuses "
                             "a shard); the directory is hostile or corrupt")
        self.seen[side].add(shard)

    def entries(self, directory: bytes | None, prefix: bytes) -> dict[str, bytes]:
        """Every entry of ``directory`` (a listing, which refuses duplicates and reused shards); below a slot, each
        name's hash MUST lead to it."""
        if directory is None:
            return {}
        found = dict(self.reader.list_dir(directory))
        if prefix:
            for name in found:
                _check_slot(name, prefix)
        return found

    def slot(self, side: int, link: PBLink | None, under: bytes) -> dict[str, bytes]:
        """The entries under one slot: the entry it links, or every entry of the sub-shard it links."""
        if link is None:
            return {}
        if len(link.name) > _WIDTH:
            name = check_name(link.name[_WIDTH:], "")
            _check_slot(name, under)
            return {name: link.cid}
        self.note(side, link.cid)
        return self.entries(link.cid, under)


def _check_slot(name: str, prefix: bytes) -> None:
    if name_hash(name.encode("utf-8"))[: len(prefix)] != prefix:
        raise CodecError(f"a HAMT shard files {name[:120]!r} under slot {prefix.hex().upper()}, which its hash does "
                         "not name; the directory is hostile or corrupt")


def _by_slot(links: list[PBLink]) -> dict[str, PBLink]:
    slots: dict[str, PBLink] = {}
    for link in links:
        slot = link.name[:_WIDTH].decode("ascii", "replace")
        if len(slot) != _WIDTH or not set(slot) <= _HEX:
            raise CodecError(f"a HAMT shard has a link named {link.name[:40]!r}, which does not start with {_WIDTH} "
                             "uppercase hex digits; the directory is corrupt")
        if slot in slots:
            raise CodecError(f"a HAMT shard links slot {slot!r} twice; the directory is hostile or corrupt")
        slots[slot] = link
    return slots


def _compare(old: dict[str, bytes], new: dict[str, bytes]) -> dict[str, Change]:
    return {name: (old.get(name), new.get(name)) for name in sorted(set(old) | set(new))
            if old.get(name) != new.get(name)}


def lookup(reader: UnixFSReader, directory: bytes, name: str) -> bytes | None:
    """The CID of the entry ``name`` of ``directory`` (None when it has none): in a HAMT of fanout 256, down the
    slots its name hashes to, one shard per level; in any other directory, by listing it."""
    shard = reader.shard(directory)
    if shard is None or shard[0] != FANOUT:
        return dict(reader.list_dir(directory)).get(name)
    digest = name_hash(name.encode("utf-8"))
    links = shard[1]
    for depth in range(min(len(digest), MAX_SHARD_DEPTH + 1)):
        prefix = f"{digest[depth]:02X}".encode("ascii")
        found = [link for link in links if link.name[:2] == prefix]
        if not found:
            return None
        link = found[0]
        if link.name == prefix:
            sub = reader.shard(link.cid)
            if sub is None or sub[0] != FANOUT:
                raise CodecError("a HAMT sub-shard is no shard of the same fanout; the directory is corrupt")
            links = sub[1]
            continue
        return link.cid if link.name[2:] == name.encode("utf-8") else None
    raise DAGLimitExceeded(f"a HAMT directory nests sub-shards deeper than {MAX_SHARD_DEPTH}; it is hostile")
