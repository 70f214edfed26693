"""The memory tree: Markdown memories with YAML frontmatter, the MEMORY.md index, daily timelines,
recall and the context block, export/import, and the secret guard. See specs/memory.md.
"""

from __future__ import annotations

from bundlekit.memory.index import render_index
from bundlekit.memory.ranking import RecallHit
from bundlekit.memory.record import MemoryRecord, parse_memory_file, render_memory_file
from bundlekit.memory.secrets import find_secrets
from bundlekit.memory.transfer import ImportReport
from bundlekit.memory.tree import Memory

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
