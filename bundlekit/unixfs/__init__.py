"""UnixFS: the importer that turns bytes into a DAG, and the reader that turns it back.

Modules, lowest first: ``profiles`` (the named settings that pin CIDs),
``chunker``, ``layout`` (balanced file trees), ``hamt`` (flat and sharded
directories), ``importer`` (the entry points), ``reader`` (files and
directories out of a block getter) and ``unpack`` (safe, atomic extraction, its
writes on a second thread in ``_tree_writer``).
Built on ``bundlekit.ipld`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_getattr

if TYPE_CHECKING:
    from bundlekit.unixfs.importer import (
        ImportedEntry,
        ImportResult,
        ListSink,
        NullSink,
        import_file,
        import_path,
        import_tree,
    )
    from bundlekit.unixfs.profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile
    from bundlekit.unixfs.reader import UnixFSReader
    from bundlekit.unixfs.unpack import UnpackOptions, UnpackResult, unpack

# Loaded on first use (PEP 562), so importing one submodule does not import the others.
_LAZY: dict[str, str] = {
    "ImportedEntry": "bundlekit.unixfs.importer",
    "ImportResult": "bundlekit.unixfs.importer",
    "ListSink": "bundlekit.unixfs.importer",
    "NullSink": "bundlekit.unixfs.importer",
    "import_file": "bundlekit.unixfs.importer",
    "import_path": "bundlekit.unixfs.importer",
    "import_tree": "bundlekit.unixfs.importer",
    "DEFAULT_PROFILE": "bundlekit.unixfs.profiles",
    "PROFILES": "bundlekit.unixfs.profiles",
    "Profile": "bundlekit.unixfs.profiles",
    "get_profile": "bundlekit.unixfs.profiles",
    "UnixFSReader": "bundlekit.unixfs.reader",
    "UnpackOptions": "bundlekit.unixfs.unpack",
    "UnpackResult": "bundlekit.unixfs.unpack",
    "unpack": "bundlekit.unixfs.unpack",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "ImportResult",
    "ImportedEntry",
    "ListSink",
    "NullSink",
    "Profile",
    "UnixFSReader",
    "UnpackOptions",
    "UnpackResult",
    "get_profile",
    "import_file",
    "import_path",
    "import_tree",
    "unpack",
]
