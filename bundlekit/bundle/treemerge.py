"""What a merge by tree difference reads of two bundles: the memories and days that differ, nothing else.

``merge`` of a bundle whose common ancestor with the tree is known (``bundle.merge``, step 2) needs, per key,
the base's, ours' and theirs' versions only where theirs differs from the base: everywhere else the merged
tree is ours, untouched (``specs/sync.md``, 2: "theirs changed nothing"). :func:`read_difference` compares
the base's and theirs' ``memory/`` directories by CID (``bundle.treediff``: every sub-shard both hold alike is
skipped), checks each path theirs holds there as a loader checks it (``manifest.check_walked_path``), holds
theirs to its manifest's file count, and reads the changed memory files of both sides (verified blocks, each
within the manifest's bytes; theirs' fetched together first, ``prefetch``, when the blocks come from gateways)
and the day files (every one: a ``forgot`` decides by what the base's timeline
holds). The index and the embeddings are never read: the tree rebuilds its own.

For ``bundlekit/2`` plaintext bundles (``bundle.merge`` falls back to whole loads for anything else).
"""

from __future__ import annotations

import hashlib

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bundlekit.bundle._bounded import read_bounded
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.manifest import EMBEDDINGS_PATH, INDEX_PATH, MEMORY_DIR, check_walked_path, claimed_bytes, file_count
from bundlekit.errors import (
    BlockMismatch,
    BundlekitError,
    IntegrityError,
    ManifestError,
    PathNotFound,
    UnsafePathError,
)
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory.merge import TreeState
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader
from bundlekit.bundle.treediff import Change, diff_dirs, lookup

__all__ = ["Difference", "read_difference", "same_tree"]

_TIMELINE = "timeline"
_RAW_SHA256 = bytes([0x01, 0x55, 0x12, 0x20])  # a CIDv1 raw block by SHA-256: a small file of the default profile


@dataclass
class Difference:
    """The base's and theirs' sides of what differs: ``theirs`` holds the changed memories (by key) and every day
    file, ``base_files`` the base's bytes of the changed memories and its day files (parsed by
    :meth:`base_state`, which reuses ours' record of a file ours holds unchanged); ``names`` the memory files
    (``<key>.md``) that differ; ``base_memory`` the base's ``memory/`` directory."""

    theirs: TreeState
    base_files: dict[str, bytes]
    base_label: str
    names: set[str] = field(default_factory=set)
    base_memory: bytes | None = None

    def base_state(self, ours: TreeState) -> TreeState:
        """The base's side: a memory ours holds with the very same bytes is ours' record (parsed once, not twice)."""
        same = {}
        rest = {}
        for path, data in self.base_files.items():
            mine = ours.records.get(path[:-3]) if path.endswith(".md") else None
            if mine is not None and mine.raw.encode("utf-8") == data:
                same[mine.key] = mine
            else:
                rest[path] = data
        parsed = TreeState.from_files(self.base_label, rest)
        return TreeState(self.base_label, {**parsed.records, **same}, parsed.days)


def read_difference(
    get: Callable[[bytes], bytes], *, base: tuple[bytes, Mapping[str, Any]], theirs: tuple[bytes, Mapping[str, Any]],
    labels: tuple[str, str], prefetch: Callable[[Sequence[bytes], int], None] | None = None,
) -> Difference:
    """``base`` and ``theirs`` are (root CID, validated manifest); ``get`` serves verified blocks of both (the
    store first, a gateway for what it lacks). Raises ``ManifestError`` for a path no bundle may hold,
    ``IntegrityError`` for a count other than theirs' manifest's or bytes that do not verify."""
    reader = UnixFSReader(get, verify=False)
    base_top, theirs_top = dict(reader.list_dir(base[0])), dict(reader.list_dir(theirs[0]))
    base_mem, theirs_mem = base_top.get(MEMORY_DIR), theirs_top.get(MEMORY_DIR)
    if base_mem is None or theirs_mem is None:
        raise ManifestError(f"a bundle has a manifest but no {MEMORY_DIR}/ directory")
    changes = _checked(reader, diff_dirs(reader, base_mem, theirs_mem))
    added = sum(1 for b, t in changes.values() if b is None and t is not None)
    removed = sum(1 for b, t in changes.values() if b is not None and t is None)
    if file_count(base[1]) + added - removed != file_count(theirs[1]):
        raise IntegrityError(f"{labels[1]} holds {file_count(base[1]) + added - removed} files under {MEMORY_DIR}/, "
                             f"its manifest counts {file_count(theirs[1])}")
    # Each side's files within its own manifest's bytes, together (what a load holds them to): a bundle that
    # deleted much is smaller than the base files it deleted, and a base's day files are all read.
    read_base, read_theirs = _Budget(get, claimed_bytes(base[1])), _Budget(get, claimed_bytes(theirs[1]))
    names = {p[len(MEMORY_DIR) + 1:] for p in changes if p.endswith(".md") and p != INDEX_PATH
             and not p.startswith(f"{MEMORY_DIR}/{_TIMELINE}/")}
    if prefetch is not None:  # theirs' changed files fetched together, within what its manifest claims
        prefetch([t for p, (_b, t) in changes.items() if t is not None and _memory(p)], claimed_bytes(theirs[1]))
    days = _base_days(reader, base_mem, read_base)
    base_files = {_tree_path(p): days.get(_tree_path(p)) or read_base(b, p) for p, (b, _t) in changes.items()
                  if b is not None and _memory(p)}
    theirs_files = {_tree_path(p): read_theirs(t, p) for p, (_b, t) in changes.items() if t is not None and _memory(p)}
    # Theirs' day files that did not change are the base's very bytes: validated once, with the base's side
    # (``Difference.base_state``, before any merge decides), not a second time here.
    unchanged = {path[len(_TIMELINE) + 1:]: data for path, data in days.items()
                 if (MEMORY_DIR + "/" + path) not in changes}
    parsed = TreeState.from_files(labels[1], theirs_files)
    theirs_state = TreeState(labels[1], parsed.records, {**unchanged, **parsed.days})
    return Difference(theirs_state, {**base_files, **days}, labels[0], names, base_mem)


def _checked(reader: UnixFSReader, top: dict[str, Change]) -> dict[str, Change]:
    """``memory/``'s changed entries as bundle paths, ``timeline/`` compared the same way; every path theirs
    holds checked as a loader checks it (plaintext)."""
    out: dict[str, Change] = {}
    for name, (b, t) in top.items():
        if name == _TIMELINE:
            try:
                days = diff_dirs(reader, b, t)
            except BundlekitError as exc:
                raise ManifestError(f"{MEMORY_DIR}/{_TIMELINE} is no directory of day files ({exc})") from exc
            out.update({f"{MEMORY_DIR}/{_TIMELINE}/{day}": change for day, change in days.items()})
            continue
        out[f"{MEMORY_DIR}/{name}"] = (b, t)
    for path, (_b, t) in out.items():
        if t is not None:
            try:
                check_walked_path(path, encrypted=False)
            except UnsafePathError as exc:
                raise ManifestError(str(exc)) from exc
    return out


def _memory(path: str) -> bool:
    """A memory file or a day file (what a merge reads), not the index or the embeddings (derived)."""
    return path not in (INDEX_PATH, EMBEDDINGS_PATH)


def _tree_path(path: str) -> str:
    return path[len(MEMORY_DIR) + 1:]


class _Budget:
    """One side's reads, each within what its manifest's bytes leave after the reads before it."""

    def __init__(self, get: Callable[[bytes], bytes], claimed: int) -> None:
        self.get, self.left = get, claimed

    def __call__(self, cid: bytes, path: str) -> bytes:
        data = _read(self.get, self.left, cid, path)
        self.left -= len(data)
        return data


def _read(get: Callable[[bytes], bytes], bound: int, cid: bytes, path: str) -> bytes:
    def too_big(seen: int) -> BundlekitError:
        return IntegrityError(f"{path}: the bundle holds at least {seen} bytes, more than its manifest's files "
                              f"({bound} bytes left of them)")

    try:
        return read_bounded(get, cid, bound, too_big, path)
    except BlockMismatch as exc:
        raise IntegrityError(f"{path}: content does not match its CID {cid_to_str(cid)} ({exc})") from exc
    except PathNotFound as exc:  # a directory (or a symlink) where the layout has a file, as the loader refuses it
        raise ManifestError(f"{path}: {exc}; a bundle holds files under {MEMORY_DIR}/, and day files under "
                            f"{MEMORY_DIR}/{_TIMELINE}/") from exc


def _base_days(reader: UnixFSReader, base_mem: bytes, read: Callable[[bytes, str], bytes]) -> dict[str, bytes]:
    """Every day file of the base (``timeline/<day>`` -> bytes): read from the store, where the base lies; each
    name checked as a loader checks it (the base may be an ancestor no load of this machine walked)."""
    timeline = lookup(reader, base_mem, _TIMELINE)
    if timeline is None:
        return {}
    days = {}
    for day, cid in reader.list_dir(timeline):
        path = f"{MEMORY_DIR}/{_TIMELINE}/{day}"
        try:
            check_walked_path(path, encrypted=False)
        except UnsafePathError as exc:
            raise ManifestError(str(exc)) from exc
        days[f"{_TIMELINE}/{day}"] = read(cid, path)
    return days


def same_tree(
    get: Callable[[bytes], bytes], base_memory: bytes, profile: str, *, digests: Mapping[str, bytes],
    changed: set[str], read_ours: Callable[[str], bytes | None], names: Iterable[str],
) -> bool:
    """True when every memory file of ours outside ``changed`` is the base's (same names, same CIDs). Ours'
    SHA-256s (``digests``, from the tree's derived index) only say no early (a raw-leaf CID of the default profile
    is the SHA-256 of its bytes); a yes is decided by the files' bytes, read and hashed now: an index whose digest
    is stale (a file edited behind its stat signature) must not call a tree holding an unpublished edit the base's
    (``sync`` then skips publishing it). ``names`` are ours' memory files as the tree's directory lists them."""
    reader = UnixFSReader(get, verify=False)
    theirs = {name: cid for name, cid in reader.list_dir(base_memory)
              if name.endswith(".md") and name != INDEX_PATH.rpartition("/")[2] and name not in changed}
    mine = {name for name in names if name not in changed}  # the directory's listing, not the index's rows
    if set(theirs) != mine:
        return False
    if any(cid[:4] == _RAW_SHA256 and cid[4:] != digests.get(name, cid[4:]) for name, cid in theirs.items()):
        return False
    prof = get_profile(profile)
    for name, cid in theirs.items():
        data = read_ours(name)
        if data is None:
            return False
        same = hashlib.sha256(data).digest() == cid[4:] if cid[:4] == _RAW_SHA256 else file_cid(data, prof) == cid
        if not same:
            return False
    return True
