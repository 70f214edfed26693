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

A build names its lineage too (``build_parents``): the tree's parents and its last root,
so a writer who publishes with ``build``/``pin`` and ``name publish`` keeps a line a
follower's merge finds its base on. What it built last is kept in ``.bundlekit/last-build.json``
(``record_build``: the root, the parents it named and a digest of its files), so a rebuild of the
same files names the same parents and gets the same root, never a bundle whose parent is itself.

``bundle.log`` walks the ``parents`` of published bundles back.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _json_text
from pathlib import Path
from typing import Final

from bundlekit._fs import atomic_write_bytes
from bundlekit.bundle.manifest import MAX_PARENTS
from bundlekit.errors import CIDError, MemoryStoreError, UsageError
from bundlekit.ipld.cid import cid_from_text, cid_to_str
from bundlekit.memory.links import ensure_real_dir, open_nofollow
from bundlekit.memory.naming import HIDDEN_DIR

__all__ = ["LAST_BUILD_NAME", "LAST_ROOT_NAME", "LINEAGE_NAME", "build_parents", "files_digest", "heads",
           "read_last", "read_parents", "record_build", "record_last", "record_parent", "set_lineage"]

LINEAGE_NAME: Final = ".bundlekit-lineage.json"
LAST_ROOT_NAME: Final = f"{HIDDEN_DIR}/last-root"
LAST_BUILD_NAME: Final = f"{HIDDEN_DIR}/last-build.json"
_LAST_BUILD_MAX: Final = 16 * 1024  # 64 parents of ~60 characters and a digest fit many times over


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


def _read_hidden(tree: str | os.PathLike[str], name: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the tree's hidden file ``name``: no link followed, no FIFO waited on (the file
    is the tree's, not trusted). ``OSError``/``MemoryStoreError`` when it cannot be read."""
    fd = open_nofollow(Path(tree) / name, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)


def read_last(tree: str | os.PathLike[str] | None) -> str | None:
    """The root the tree was last built into, merged or synced with (CID text); None when unknown (a missing or
    unreadable file: it is a cache)."""
    if tree is None:
        return None
    try:
        return cid_to_str(cid_from_text(_read_hidden(tree, LAST_ROOT_NAME, 256).decode("ascii").strip()))
    except (OSError, ValueError, CIDError, MemoryStoreError):
        return None


def files_digest(files: Mapping[str, tuple[bytes, int]]) -> str:
    """A digest of a bundle's files (bundle path -> (CID, size)): equal digests, the same files. The SHA-256 of
    ``json.dumps({path: [cid.hex(), size], ...}, sort_keys=True)``, the text written here line for line as the
    encoder writes it (each path by its own escaping function; a size an ``int``, not a ``bool``), without a dict
    and list per file (10,000 files: ~10 -> ~6 ms; tests/bundle/test_files_digest.py holds them equal)."""
    if not all(type(size) is int for _cid, size in files.values()):
        text = json.dumps({path: [cid.hex(), size] for path, (cid, size) in files.items()}, sort_keys=True)
    else:
        text = "{" + ", ".join(f'{_json_text(path)}: ["{files[path][0].hex()}", {files[path][1]}]'
                               for path in sorted(files)) + "}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_build(tree: str | os.PathLike[str]) -> tuple[str, list[str], str] | None:
    """The last build's root, parents and files digest; None when unknown or damaged (a cache)."""
    try:
        got = json.loads(_read_hidden(tree, LAST_BUILD_NAME, _LAST_BUILD_MAX))
        parents = got["parents"]
        if not isinstance(parents, list) or len(parents) > MAX_PARENTS or not isinstance(got["files"], str):
            return None
        return (cid_to_str(cid_from_text(got["root"])), sorted({cid_to_str(cid_from_text(p)) for p in parents}),
                got["files"])
    except (OSError, ValueError, KeyError, TypeError, CIDError, MemoryStoreError, RecursionError):
        return None


def build_parents(tree: str | os.PathLike[str] | None, digest: str) -> list[str]:
    """The parents a build of the tree names when none are given (sorted CID texts).

    The tree's parents and its last root: the bundle descends from both. When the last root is the tree's
    last build and that build held the very files digested by ``digest``, the parents that build named
    instead: an unchanged tree built again (``build``, then ``pin`` of the tree) gets the same root.
    """
    if tree is None:
        return []
    last = read_last(tree)
    previous = _read_build(tree) if last is not None else None
    if previous is not None and previous[0] == last and previous[2] == digest:
        return previous[1]
    parents = read_parents(tree)
    if last is not None and last not in parents and len(parents) < MAX_PARENTS:  # full: the tree's own parents
        parents = sorted([*parents, last])
    return parents


def record_build(tree: str | os.PathLike[str], root: bytes, parents: Sequence[str], digest: str, *,
                 last: bool = True) -> None:
    """Remember ``root`` as the tree's last build (its ``parents`` and files ``digest``) and, with ``last``, as
    its last root; ``MemoryStoreError`` when it cannot be written."""
    ensure_real_dir(Path(tree) / HIDDEN_DIR)
    data = json.dumps({"root": cid_to_str(root), "parents": sorted(parents), "files": digest}, sort_keys=True)
    atomic_write_bytes(Path(tree) / LAST_BUILD_NAME, data.encode("utf-8") + b"\n", error=MemoryStoreError)
    if last:
        record_last(tree, root)


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
