"""Export blobs and the validation half of import (pure: nothing here touches the tree).

The blob is the three.ws export shape::

    {"version": "memory/0.1", "namespace": str | null, "index": str,
     "files": {"<key>.md": "<raw markdown>"}, "timeline": [entry, ...]}

Import is all or nothing: :func:`validate_blob` checks the version, every file
name (key rules, case-insensitive uniqueness), every file's frontmatter, every
timeline entry and, unless allowed, the secret guard (on the text and on the
parsed values; on file names always), before the store changes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bundlekit.errors import InvalidKeyError, MemoryStoreError
from bundlekit.memory.naming import INDEX_NAME, check_unique, key_from_filename
from bundlekit.memory.record import MemoryRecord, parse_memory_file
from bundlekit.memory.screen import guard_entry, guard_key, guard_record
from bundlekit.memory.timeline import encode_entry, validate_entry

__all__ = ["EXPORT_VERSION", "STRATEGIES", "ImportPlan", "ImportReport", "build_export", "validate_blob"]

EXPORT_VERSION = "memory/0.1"
STRATEGIES = ("merge", "replace")


class ImportPlan(NamedTuple):
    """A validated blob: records by key and timeline entries, ready to apply. (A named tuple: cheaper to build
    at import than a dataclass, and every command imports this module.)"""

    records: dict[str, MemoryRecord]
    timeline: list[dict[str, Any]]


@dataclass
class ImportReport:
    """What an import did: keys added, replaced and kept (local won or identical), new timeline entries."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    timeline_added: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "kept": self.kept,
            "timeline_added": self.timeline_added,
        }


def build_export(
    namespace: str | None, index: str, files: Mapping[str, str], timeline: list[dict[str, Any]]
) -> dict[str, Any]:
    """The export blob; ``files`` keys come out sorted."""
    return {
        "version": EXPORT_VERSION,
        "namespace": namespace,
        "index": index,
        "files": {name: files[name] for name in sorted(files)},
        "timeline": timeline,
    }


def validate_blob(blob: object, *, allow_secrets: bool = False) -> ImportPlan:
    """Validate a whole export blob; raise on the first problem, having changed nothing.

    Raises :class:`MemoryStoreError` (bad shape or version, bad timeline entry),
    :class:`InvalidKeyError` (bad or clashing file names), :class:`FrontmatterError`
    (bad files) or :class:`SecretDetectedError`. A ``MEMORY.md`` entry in
    ``files`` is ignored: the index is always regenerated.
    """
    if not isinstance(blob, Mapping):
        raise MemoryStoreError("import expects an export blob (a JSON object); got something else")
    version = blob.get("version")
    if version != EXPORT_VERSION:
        raise MemoryStoreError(
            f"import blob has version {version!r}; only {EXPORT_VERSION!r} is understood. "
            "Export it again with a compatible tool"
        )
    files = blob.get("files", {})
    if not isinstance(files, Mapping):
        raise MemoryStoreError("import blob 'files' must be an object of file name to Markdown text")
    records: dict[str, MemoryRecord] = {}
    for name in sorted(files):
        if name == INDEX_NAME:
            continue
        if not isinstance(name, str):
            raise InvalidKeyError("import blob has a non-string file name")
        guard_key(name, "an import file name")  # before anything echoes the name
        key = key_from_filename(name)
        raw = files[name]
        if not isinstance(raw, str):
            raise MemoryStoreError(f"import blob file {name!r} is not text")
        record = parse_memory_file(raw, key=key, where=f"import file {name}")
        guard_record(record, f"import file {name}", allow_secrets=allow_secrets)
        records[key] = record
    check_unique(records, where="the import blob")
    timeline = blob.get("timeline", [])
    if not isinstance(timeline, list):
        raise MemoryStoreError("import blob 'timeline' must be a list of entries")
    entries: list[dict[str, Any]] = []
    for number, entry in enumerate(timeline, start=1):
        where = f"import timeline entry {number}"
        checked = validate_entry(entry, where)
        try:
            line = encode_entry(checked).decode("utf-8")
        except (TypeError, ValueError) as exc:
            raise MemoryStoreError(f"{where} cannot be written as JSON") from exc
        guard_entry(checked, line, where, allow_secrets=allow_secrets, can_allow=True)
        entries.append(checked)
    return ImportPlan(records=records, timeline=entries)
