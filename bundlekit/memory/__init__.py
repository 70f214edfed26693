"""The memory tree: Markdown memories with YAML frontmatter, the MEMORY.md index, daily timelines,
recall and the context block, export/import, and the secret guard. See specs/memory.md.

Modules: ``tree`` (``Memory``, the tree's API: a facade that delegates to ``access``, the state and reads every
operation shares; ``recall`` and ``context``, recall and the context block as plain functions over the
derived index; ``meaning``, recall by meaning: the embedder and the vectors; ``transaction``, what bundle and
merge read and write as one change) over ``backend`` (a directory or a dict; with
``_statscan``, the optional C listing) and ``links`` (no symlinks inside a tree), ``lock`` (the
cross-process lock) and ``undo`` (a change of several files whole or not at all); one memory file:
``naming`` (keys), ``filesize`` (the 4 MiB bound: what is read of a file, what may be stored), ``record`` (the file), ``frontmatter`` (bounded YAML) and ``quickyaml`` (simple
frontmatter without PyYAML), ``timefmt`` (timestamps); ``index`` (the ``MEMORY.md`` renderer and
parser), ``timeline`` (the daily event log); the derived index: ``catalog`` (the SQLite stat cache and
vectors; a package: ``database``, ``stat``, ``search``, ``listing``, ``vectors``, ``usage``) and ``indexer`` (kept in step with the files); ``listfile`` (``memory list``'s lines kept per index state, read back only when they are the listing's files key for key); ``ranking`` (recall and the context block),
``semantic`` (recall by meaning: the vectors computed, numpy), ``bymeaning`` (recall by meaning, the query,
without numpy; ``query_tokens``: its query words' token ids cached; ``vecfile``: the columns it ranks with,
packed in one file; ``cosines``, with ``_cosine``, the optional C cosines) and ``usage`` (reads after a recall, a decaying boost); the secret guard: ``secrets`` (the rules' old address, re-exporting
``bundlekit._secrets``), ``screen`` (where the guard runs) and ``withhold`` (what output shows of a
memory holding a credential); ``transfer`` (export blobs, import's validation), ``files`` (loaded
files back into memories), ``device`` (device-bound memory and the layers), ``merge`` (the
three-way merge of trees) and ``conflicts`` (its conflict policies, which a command names without it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bundlekit._lazy import lazy_getattr

if TYPE_CHECKING:
    from bundlekit._secrets import find_secrets
    from bundlekit.memory.index import render_index
    from bundlekit.memory.ranking import RecallHit
    from bundlekit.memory.record import MemoryRecord, parse_memory_file, render_memory_file
    from bundlekit.memory.transfer import ImportReport
    from bundlekit.memory.tree import Memory

# Loaded on first use (PEP 562): a memory command imports what it runs, not the secret rules, export and
# import it may never touch (every such command is a fresh process; see bench/memory.py).
_LAZY: dict[str, str] = {
    "ImportReport": "bundlekit.memory.transfer",
    "Memory": "bundlekit.memory.tree",
    "MemoryRecord": "bundlekit.memory.record",
    "RecallHit": "bundlekit.memory.ranking",
    "find_secrets": "bundlekit._secrets",
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
