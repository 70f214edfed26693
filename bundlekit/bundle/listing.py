"""The files of a bundle by path, whatever its manifest's format: ``bundlekit/1`` lists them, ``bundlekit/2``'s
DAG is the list (``specs/bundle.md``, "Manifest").

For readers that show or serve a bundle's files one by one (``bundlekit open``'s pages) rather than load it
(``bundle.load`` walks the DAG itself, as it streams). A ``bundlekit/2`` path is checked as it is met
(``manifest.check_walked_path``) and the directory must hold exactly the manifest's count of files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bundlekit.bundle.manifest import (
    INDEX_PATH,
    MEMORY_DIR,
    check_walked_path,
    claimed_bytes,
    file_count,
    is_listed,
)
from bundlekit.errors import IntegrityError, ManifestError

__all__ = ["bundle_files"]

ListDir = Callable[[bytes], list[tuple[str, bytes]]]


def bundle_files(manifest: dict[str, Any], list_dir: ListDir, root: bytes) -> dict[str, dict[str, Any]]:
    """Bundle path -> ``{"cid": bytes | str, "size": int}`` for every file under ``memory/``: a ``bundlekit/1``
    manifest's own entries (CIDs as text, exact sizes), or a ``bundlekit/2`` DAG's (binary CIDs, each size the
    manifest's bytes of all files together: a bound, not the length). Raises ``ManifestError`` for a path no
    bundle may hold, ``IntegrityError`` for a count other than the manifest's or no index."""
    if is_listed(manifest):
        files: dict[str, dict[str, Any]] = manifest["memory"]["files"]
        return files
    encrypted = manifest["encryption"] is not None
    bound = claimed_bytes(manifest)
    top = dict(list_dir(root))
    if MEMORY_DIR not in top:
        raise ManifestError(f"the bundle has a manifest but no {MEMORY_DIR}/ directory")
    found: dict[str, dict[str, Any]] = {}
    pending = [(MEMORY_DIR, top[MEMORY_DIR])]
    while pending:
        where, cid = pending.pop()
        for name, child in list_dir(cid):
            path = f"{where}/{name}"
            if where == MEMORY_DIR and name == "timeline":
                pending.append((path, child))
                continue
            check_walked_path(path, encrypted=encrypted)
            found[path] = {"cid": child, "size": bound}
            if len(found) > file_count(manifest):
                raise IntegrityError(f"the bundle holds more files than the {file_count(manifest)} its manifest counts")
    if len(found) != file_count(manifest) or INDEX_PATH not in found:
        raise IntegrityError(f"the bundle holds {len(found)} files, its manifest counts {file_count(manifest)}")
    return found
