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
from bundlekit.ipld.dagpb import PBLink
from bundlekit.unixfs.hamt import FANOUT, name_hash
from bundlekit.unixfs.reader import UnixFSReader, check_name

__all__ = ["MAX_SHARD_DEPTH", "Change", "diff_dirs", "lookup"]

#: A (old CID, new CID) pair; None where the entry is absent on that side.
Change = tuple[bytes | None, bytes | None]
#: Sub-shards below a HAMT's root at most (fanout 256 and 64-bit hashes: 8 levels; a deeper one is hostile).
MAX_SHARD_DEPTH = 8


def diff_dirs(reader: UnixFSReader, old: bytes | None, new: bytes | None) -> dict[str, Change]:
    """Entry name -> (old CID, new CID) for every entry of the directories ``old`` and ``new`` (None: no
    directory) that is absent on one side or links another CID. Raises what ``UnixFSReader`` raises for a node
    that is no directory or a hostile shard, ``DAGLimitExceeded`` past ``MAX_SHARD_DEPTH``."""
    return _diff(reader, old, new, 0)


def _diff(reader: UnixFSReader, old: bytes | None, new: bytes | None, depth: int) -> dict[str, Change]:
    if old == new:
        return {}
    if depth > MAX_SHARD_DEPTH:
        raise DAGLimitExceeded(f"a HAMT directory nests sub-shards deeper than {MAX_SHARD_DEPTH}; it is hostile")
    if old is None or new is None:
        return _compare({} if old is None else dict(reader.list_dir(old)),
                        {} if new is None else dict(reader.list_dir(new)))
    a, b = reader.shard(old), reader.shard(new)
    if a is None or b is None or a[0] != b[0]:  # plain directories, or shards that do not align: every entry
        return _compare(dict(reader.list_dir(old)), dict(reader.list_dir(new)))
    width = len(f"{a[0] - 1:X}")
    slots_a, slots_b = _by_slot(a[1], width), _by_slot(b[1], width)
    out: dict[str, Change] = {}
    for slot in sorted(set(slots_a) | set(slots_b)):
        la, lb = slots_a.get(slot), slots_b.get(slot)
        if la is not None and lb is not None and la.name == lb.name and la.cid == lb.cid:
            continue  # the same entry, or the same sub-shard: nothing below it differs
        if la is not None and lb is not None and len(la.name) == width == len(lb.name):
            out.update(_diff(reader, la.cid, lb.cid, depth + 1))
            continue
        out.update(_compare(_slot_entries(reader, la, width), _slot_entries(reader, lb, width)))
    return out


def _by_slot(links: list[PBLink], width: int) -> dict[bytes, PBLink]:
    slots: dict[bytes, PBLink] = {}
    for link in links:
        slot = link.name[:width]
        if slot in slots:
            raise CodecError(f"a HAMT shard links slot {slot!r} twice; the directory is hostile or corrupt")
        slots[slot] = link
    return slots


def _slot_entries(reader: UnixFSReader, link: PBLink | None, width: int) -> dict[str, bytes]:
    """The entries under one slot: the entry it links, or every entry of the sub-shard it links."""
    if link is None:
        return {}
    if len(link.name) > width:
        return {check_name(link.name[width:], ""): link.cid}
    return dict(reader.list_dir(link.cid))


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
