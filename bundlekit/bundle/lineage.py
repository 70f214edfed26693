"""Lineage: which bundles a memory tree came from (its hidden metadata).

A tree written by ``load -o`` or ``fork`` remembers the root CID it came from
in a hidden file at its top, ``.bundlekit-lineage.json`` (``{"parents": [...]}``;
the memory store ignores dot files, so it never enters a bundle as a memory).
Forking a second bundle into the same tree adds its root: the tree then has
several parents. The next ``build`` of the tree writes them to the manifest's
``parents`` field (``specs/provenance.md``, "Lineage").

``bundle.log`` walks the ``parents`` of published bundles back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Final

from bundlekit._fs import atomic_write_bytes
from bundlekit.bundle.manifest import MAX_PARENTS
from bundlekit.errors import CIDError, MemoryStoreError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str

__all__ = ["LINEAGE_NAME", "read_parents", "record_parent"]

LINEAGE_NAME: Final = ".bundlekit-lineage.json"


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
    parents = set(read_parents(tree)) | {cid_to_str(root)}
    if len(parents) > MAX_PARENTS:
        raise UsageError(f"{tree} already remembers {MAX_PARENTS} parent bundles; a manifest holds no more")
    data = json.dumps({"parents": sorted(parents)}, sort_keys=True).encode("utf-8") + b"\n"
    atomic_write_bytes(Path(tree) / LINEAGE_NAME, data, error=MemoryStoreError)
