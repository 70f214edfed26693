"""Loaded files back into memories: ``(path, bytes)`` pairs -> records by key and timeline entries.

The one conversion behind ``bundle.load.load_memory``, ``fork``, ``diff`` and layered
loading: each gets a memory tree's files as a loader returns them
(``MEMORY.md``, ``<key>.md``, ``timeline/YYYY-MM-DD.jsonl``; plaintext) and
needs memories. Rules:

* ``timeline/<day>`` files are parsed as day files (:func:`timeline.parse_day`:
  name, UTF-8, JSON and entry checks; :class:`MemoryStoreError`);
* ``<key>.md`` files at the top are memories: the key is checked
  (:class:`InvalidKeyError`), the bytes must be UTF-8 and the frontmatter valid
  (:class:`FrontmatterError`); keys that differ only in case are refused;
* ``MEMORY.md`` is left out (the index is always regenerated), and so is any
  other file, which is not part of a memory tree.

Nothing here writes: ``TreeFiles.export_blob()`` hands the result to
``Memory.import_``, which runs the secret guard and applies it all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bundlekit.errors import FrontmatterError
from bundlekit.memory.naming import INDEX_NAME, TIMELINE_DIR, check_unique, key_from_filename
from bundlekit.memory.record import MemoryRecord, parse_memory_file
from bundlekit.memory.timeline import parse_day
from bundlekit.memory.transfer import build_export

__all__ = ["TreeFiles", "read_tree_files", "utf8_text"]


@dataclass(frozen=True)
class TreeFiles:
    """The memories (by key, sorted) and timeline entries (file order, days sorted) of loaded files."""

    records: dict[str, MemoryRecord]
    timeline: list[dict[str, Any]]

    def export_blob(self, *, namespace: str | None = None, index: str = "") -> dict[str, Any]:
        """The export blob ``Memory.import_`` takes: each memory file as it was loaded, the timeline."""
        files = {record.filename: record.raw for record in self.records.values()}
        return build_export(namespace, index, files, self.timeline)


def utf8_text(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text; :class:`FrontmatterError` naming ``where`` if it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(f"{where} is not UTF-8 text; the bundle is malformed") from exc


def read_tree_files(files: Mapping[str, bytes] | Iterable[tuple[str, bytes]], *, source: str = "") -> TreeFiles:
    """The memories and timeline entries of a memory tree's loaded files (see the module rules).

    ``source`` (a URI or directory) prefixes file names in error messages.
    Raises :class:`InvalidKeyError`, :class:`FrontmatterError` or
    :class:`MemoryStoreError` for the first file that is not valid.
    """
    pairs = files.items() if isinstance(files, Mapping) else files
    prefix = f"{source}: " if source else ""
    records: dict[str, MemoryRecord] = {}
    timeline: list[dict[str, Any]] = []
    for path, data in sorted((str(path), bytes(data)) for path, data in pairs):
        day = path.removeprefix(f"{TIMELINE_DIR}/")
        if day != path:
            timeline.extend(parse_day(day, data))
        elif "/" not in path and path != INDEX_NAME and path.endswith(".md"):
            key = key_from_filename(path)
            text = utf8_text(data, f"{prefix}{path}")
            records[key] = parse_memory_file(text, key=key, where=f"{prefix}{path}")
    check_unique(records, where=source or "the loaded files")
    return TreeFiles(records, timeline)
