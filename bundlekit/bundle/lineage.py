"""Lineage: which bundles a memory tree came from (its hidden metadata).

A tree written by ``load -o`` or ``fork`` remembers the root CID it came from
in a hidden file at its top, ``.bundlekit-lineage.json`` (``{"parents": [...]}``;
the memory store ignores dot files, so it never enters a bundle as a memory).
Forking a second bundle into the same tree adds its root: the tree then has
several parents. The next ``build`` of the tree writes them to the manifest's
``parents`` field (``specs/provenance.md``, "Lineage").

The root the tree was last built into, merged or synced with is kept beside the
derived index, in ``.bundlekit/last-root`` (``record_last``; ``build`` records it):
local state of this machine's copy, a cache like the index (lost, it costs a merge
its common ancestor, never data). With the parents it is what the tree's content
descends from (``heads``), where ``bundle.merge`` starts looking for the common
ancestor of a merge.

``bundle.log`` walks the ``parents`` of published bundles back.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Final

from bundlekit._fs import atomic_write_bytes
from bundlekit.bundle.manifest import MAX_PARENTS
from bundlekit.errors import CIDError, MemoryStoreError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.memory.links import ensure_real_dir, open_nofollow
from bundlekit.memory.naming import HIDDEN_DIR

__all__ = ["LAST_ROOT_NAME", "LINEAGE_NAME", "heads", "read_last", "read_parents", "record_last", "record_parent",
           "set_lineage"]

LINEAGE_NAME: Final = ".bundlekit-lineage.json"
LAST_ROOT_NAME: Final = f"{HIDDEN_DIR}/last-root"


def read_parents(tree: str | os.PathLike[str] | None) -> list[str]:
    """The parent roots a tree remembers (sorted CID texts); ``[]`` for none or no directory.

    A damaged lineage file is not fatal to a build but must not be silently
    dropped either: it raises ``MemoryStoreError`` naming the file.
    """
    if tree is None:
        return []
    path = Path(tree) / LINEAGE_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise MemoryStoreError(f"cannot read {path}: {exc.strerror}; check its permissions") from exc
    try:
        parents = json.loads(raw)["parents"]
        if not isinstance(parents, list):
            raise TypeError("parents is not a list")
        return sorted({cid_to_str(cid_from_text(p)) for p in parents})
    except (ValueError, KeyError, TypeError, CIDError, RecursionError) as exc:
        raise MemoryStoreError(
            f"{path} is damaged ({exc}); delete it to forget where this tree came from"
        ) from exc


def record_parent(tree: str | os.PathLike[str], root: bytes) -> None:
    """Add ``root`` to the parents the tree at ``tree`` remembers (atomic rewrite of the hidden file)."""
    _write_parents(tree, set(read_parents(tree)) | {cid_to_str(root)})


def _write_parents(tree: str | os.PathLike[str], parents: set[str]) -> None:
    if len(parents) > MAX_PARENTS:
        raise UsageError(f"{tree} already remembers {MAX_PARENTS} parent bundles; a manifest holds no more")
    data = json.dumps({"parents": sorted(parents)}, sort_keys=True).encode("utf-8") + b"\n"
    atomic_write_bytes(Path(tree) / LINEAGE_NAME, data, error=MemoryStoreError)


def read_last(tree: str | os.PathLike[str] | None) -> str | None:
    """The root the tree was last built into, merged or synced with (CID text); None when unknown (a missing or
    unreadable file: it is a cache)."""
    if tree is None:
        return None
    try:  # no link followed, no FIFO waited on, at most 256 bytes read: the file is the tree's, not trusted
        fd = open_nofollow(Path(tree) / LAST_ROOT_NAME, os.O_RDONLY | os.O_NONBLOCK)
        try:
            data = os.read(fd, 256) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
        return cid_to_str(cid_from_text(data.decode("ascii").strip()))
    except (OSError, ValueError, CIDError, MemoryStoreError):
        return None


def record_last(tree: str | os.PathLike[str], root: bytes) -> None:
    """Remember ``root`` as the tree's last root (``MemoryStoreError`` when it cannot be written)."""
    hidden = Path(tree) / HIDDEN_DIR
    ensure_real_dir(hidden)
    atomic_write_bytes(Path(tree) / LAST_ROOT_NAME, cid_to_str(root).encode("ascii") + b"\n", error=MemoryStoreError)


def heads(tree: str | os.PathLike[str] | None) -> list[str]:
    """Every root the tree's content descends from: its parents and its last root (sorted, unique)."""
    last = read_last(tree)
    return sorted({*read_parents(tree), *([last] if last else [])})


def set_lineage(tree: str | os.PathLike[str], parents: list[str], last: bytes | None = None) -> None:
    """After a merge or a sync: the tree's parents are exactly ``parents`` (and its last root ``last``, when given)."""
    _write_parents(tree, {cid_to_str(cid_from_text(p)) for p in parents})
    if last is not None:
        record_last(tree, last)
