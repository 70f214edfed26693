"""UnixFS: the importer that turns bytes into a DAG, and the reader that turns it back.

Modules, lowest first: ``profiles`` (the named settings that pin CIDs),
``chunker``, ``layout`` (balanced file trees), ``hamt`` (flat and sharded
directories), ``importer`` (the entry points), ``reader`` (files and
directories out of a block getter) and ``unpack`` (safe, atomic extraction).
Built on ``bundlekit.ipld`` only.
"""

from __future__ import annotations

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
from bundlekit.unixfs.unpack import UnpackResult, unpack

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "ImportResult",
    "ImportedEntry",
    "ListSink",
    "NullSink",
    "Profile",
    "UnixFSReader",
    "UnpackResult",
    "get_profile",
    "import_file",
    "import_path",
    "import_tree",
    "unpack",
]
