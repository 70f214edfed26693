"""A bundle into a memory tree that holds nothing yet: a first follow is a load, not a merge.

``sync``'s first round into a tree with no lineage, no memory files and no day files (``memory init``'s tree, or an
empty directory) has nothing to merge with: a merge against an empty base would add every file of the bundle,
each parsed twice and written with an fsync of its own. :func:`load_into_empty` streams the bundle as
``bundlekit load`` does (``load_bundle``: every block verified, every path checked as a loader checks it, each
file written as soon as its bytes verify, into a staging directory inside the tree's hidden folder, made durable
in one flush), validates what it staged as a merge validates what it writes (``memory.transaction.
checked_changes``: names, frontmatter, the secret guard, day files; keys equal but for case refused), then under
the tree's lock checks the tree still holds nothing, moves each file into place (``_fs.move_files``: a link and
an unlink each, never over a file written meanwhile) and records the bundle's root as the tree's parent. A device-bound memory (``memory.device``) is not
moved, as a merge never lets one cross. The derived index is not built here: the tree's next command builds it
from the files, as after ``bundlekit load`` (``specs/sync.md``, "First follow").
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bundlekit._fs import is_temp_name, move_files
from bundlekit._lazy import lazy_module
from bundlekit._signals import shielded
from bundlekit.bundle.lineage import heads, set_lineage
from bundlekit.bundle.loadoptions import LoadOptions
from bundlekit.bundle.sources import BlockSource
from bundlekit.crypto import KeySpec
from bundlekit.errors import MemoryStoreError
from bundlekit.memory import Memory
from bundlekit.memory.device import is_device_bound
from bundlekit.memory.links import ensure_real_dir
from bundlekit.memory.naming import HIDDEN_DIR, INDEX_NAME, TIMELINE_DIR, check_unique
from bundlekit.memory.transaction import checked_changes

if TYPE_CHECKING:
    from bundlekit.bundle import load
    from bundlekit.memory import files as memory_files
else:  # imported at a first follow (DEVELOPERS.md, "Lazy imports": a writer's round asks is_empty_tree, loads nothing)
    load, memory_files = lazy_module("bundlekit.bundle.load"), lazy_module("bundlekit.memory.files")

__all__ = ["FirstLoad", "is_empty_tree", "load_into_empty"]


@dataclass
class FirstLoad:
    """A first follow: the root loaded, the memory files and day files moved into the tree, notes and warnings
    (files the load skipped, memories kept back), the bundle's verified publisher."""

    root: str
    memories: int
    days: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    publisher: str | None = None


def is_empty_tree(tree: str | os.PathLike[str]) -> bool:
    """True when the tree has no lineage and holds no memory file and no day file (hidden and temporary names,
    and ``MEMORY.md``, derived, aside): a bundle loaded into it loses nothing of it."""
    if heads(tree):
        return False
    root = Path(tree)
    for folder, memories in ((root, True), (root / TIMELINE_DIR, False)):
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith(".") or is_temp_name(name) or name == INDEX_NAME:
                        continue
                    if not memories or name.endswith(".md"):
                        return False
        except (FileNotFoundError, NotADirectoryError):
            continue
    return True


def load_into_empty(
    uri: str, tree: str | os.PathLike[str], *, source: BlockSource | None, key: KeySpec | None,
    options: LoadOptions, allow_secrets: bool = False,
) -> FirstLoad | None:
    """Load the bundle at ``uri`` into the empty tree ``tree`` (module steps); None when the tree is not empty
    (checked before the load and again under the tree's lock after it: the caller merges instead, the blocks the
    load fetched kept by a keeping ``source``). Raises ``MemoryStoreError`` when the tree's hidden folder is a
    link or a file (before anything is loaded), what ``load_bundle`` raises (nothing moved), what
    ``checked_changes`` and ``check_unique`` raise for a file the tree may not take (nothing moved),
    ``MemoryStoreError`` when a move fails."""
    if not is_empty_tree(tree):
        return None
    # A temp name of ``_fs``'s pattern: a staging tree a killed follow left is swept as a dead writer's temp (the
    # tree's next locked write, or the next load's ``atomic_directory`` beside it).
    # The hidden folder checked first: a link there would have the bundle (decrypted, if encrypted) written
    # outside the tree before the lock refused it.
    staging = ensure_real_dir(Path(tree) / HIDDEN_DIR) / f".incoming.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        result = load.load_bundle(uri, source=source, key=key, out_dir=staging, options=options)
        names, kept, days = _checked(uri, result.files, allow_secrets)
        stay = set(kept)
        moves = [*(n for n in names if n not in stay), *(f"{TIMELINE_DIR}/{d}" for d in days)]
        if INDEX_NAME in result.files:
            moves.append(INDEX_NAME)
        assert result.root is not None  # an ipfs:// load always has a root
        root = str(result.root_cid)
        if not _move(tree, staging, moves, root):
            return None
    finally:
        with shielded():
            shutil.rmtree(staging, ignore_errors=True)
    loaded = FirstLoad(root, len(names) - len(kept), len(days), list(result.notes), list(result.warnings),
                       result.publisher)
    if kept:
        loaded.warnings.append(f"{len(kept)} device-bound memories of the bundle were not loaded (first: "
                               f"{kept[0]}): they never cross machines")
    return loaded


def _checked(uri: str, files: dict[str, bytes], allow_secrets: bool) -> tuple[list[str], list[str], list[str]]:
    """Every loaded memory and day file checked as a merge checks what it writes, one at a time (no record is kept:
    a first follow of 100,000 memories holds their bytes once, not their records too); the memory files' names,
    the device-bound ones among them (sorted) and the day files' names."""
    names, kept, keys, days = [], [], [], []
    for path, data in files.items():
        if path.startswith(f"{TIMELINE_DIR}/"):
            day = path[len(TIMELINE_DIR) + 1:]
            checked_changes({}, {day: data}, allow_secrets=allow_secrets, what="loaded")
            days.append(day)
        elif "/" not in path and path != INDEX_NAME and path.endswith(".md"):
            text = memory_files.utf8_text(data, f"{uri}: {path}")
            record = checked_changes({path: text}, {}, allow_secrets=allow_secrets, what="loaded")[path]
            names.append(path)
            keys.append(record.key)
            if is_device_bound(record.meta):
                kept.append(path)
    check_unique(keys, where=uri)
    return names, sorted(kept), days


def _move(tree: str | os.PathLike[str], staging: Path, moves: list[str], root: str) -> bool:
    """Under the tree's lock: the staged files moved in and the root recorded, when the tree is still empty."""
    memory = Memory(tree)
    try:
        with memory.transaction() as tx:
            if tx.names() or tx.days() or heads(tree):
                return False  # something was written meanwhile: a merge decides instead
            move_files(staging, tree, moves, error=MemoryStoreError, replace=(INDEX_NAME,))
            set_lineage(tree, [root])
    finally:
        memory.close()
    return True
