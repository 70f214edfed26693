"""The memory tree: Markdown memories with YAML frontmatter, the MEMORY.md index, daily timelines,
recall and the context block, export/import, and the secret guard. See specs/memory.md.
"""

from __future__ import annotations

from .index import render_index
from .ranking import RecallHit
from .record import MemoryRecord, parse_memory_file, render_memory_file
from .secrets import find_secrets
from .store import Memory
from .transfer import ImportReport

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
