"""The memory tree: Markdown memories with YAML frontmatter, the MEMORY.md index, daily timelines,
recall and the context block, export/import, and the secret guard. See specs/memory.md.

``Memory`` (``tree``) is the facade; it delegates to ``access`` (the state and reads every operation
shares), ``recall`` and ``context`` (plain functions over the derived index), ``meaning`` (recall by meaning:
the embedder and the vectors) and ``transaction`` (what bundle and merge read and write as one change). The
derived index is the ``catalog`` package: ``database`` (the connection, version, transactions), ``stat``
(which files changed), ``search`` (the search table and ranking), ``listing`` and ``vectors``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_getattr

if TYPE_CHECKING:
    from bundlekit.memory.index import render_index
    from bundlekit.memory.ranking import RecallHit
    from bundlekit.memory.record import MemoryRecord, parse_memory_file, render_memory_file
    from bundlekit.memory.secrets import find_secrets
    from bundlekit.memory.transfer import ImportReport
    from bundlekit.memory.tree import Memory

# Loaded on first use (PEP 562): a memory command imports what it runs, not the secret rules, export and
# import it may never touch (every such command is a fresh process; see bench/memory.py).
_LAZY: dict[str, str] = {
    "ImportReport": "bundlekit.memory.transfer",
    "Memory": "bundlekit.memory.tree",
    "MemoryRecord": "bundlekit.memory.record",
    "RecallHit": "bundlekit.memory.ranking",
    "find_secrets": "bundlekit.memory.secrets",
    "parse_memory_file": "bundlekit.memory.record",
    "render_index": "bundlekit.memory.index",
    "render_memory_file": "bundlekit.memory.record",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "ImportReport",
    "Memory",
    "MemoryRecord",
    "RecallHit",
    "find_secrets",
    "parse_memory_file",
    "render_index",
    "render_memory_file",
]
