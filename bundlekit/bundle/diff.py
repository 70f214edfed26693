"""Memories added, removed and changed between two bundles or memory trees.

Each side is a memory directory, a local CAR, or anything ``load_bundle``
accepts (a CID, ``ipfs://``, a gateway URL). Bundles are loaded verified (and
decrypted when a key is given). Memories are matched by key and compared by
content: every frontmatter field and the body. The result names the fields
that differ, so a release pipeline can review "description changed" apart
from "body changed". Timeline entries are compared as a set (an entry is
its canonical JSON) and reported as counts added and removed.

The direction is ``diff OLD NEW``, as with ``diff`` and ``git diff``: *added*
means only in the second side, *removed* only in the first. The result carries
each side's label (how the user named it, e.g. ``bundle.car`` and ``memory``)
so a report can say "only in memory" instead of a bare ``+``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.memory import Memory
from bundlekit.memory.files import read_tree_files

if TYPE_CHECKING:
    from bundlekit.bundle.sources import BlockSource
    from bundlekit.crypto._keys import KeySpec
    from bundlekit.memory import MemoryRecord

__all__ = ["Changed", "DiffResult", "Side", "diff_memories", "diff_sources", "read_side", "side_labels"]


@dataclass(frozen=True)
class Changed:
    """One memory present on both sides with different content; ``fields`` sorted, ``body`` included."""

    key: str
    fields: tuple[str, ...]


@dataclass
class DiffResult:
    """Keys added (only in the new side), removed (only in the old side) and changed; ``unchanged`` counts the rest.

    ``old_label`` and ``new_label`` name the two sides as the user gave them
    (``diff OLD NEW``), for reports such as "only in bundle.car".
    """

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[Changed] = field(default_factory=list)
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)
    timeline_added: int = 0
    timeline_removed: int = 0
    old_label: str = "A"
    new_label: str = "B"

    @property
    def different(self) -> bool:
        """True when any memory was added, removed or changed, or a timeline entry differs."""
        return bool(self.added or self.removed or self.changed or self.timeline_added or self.timeline_removed)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (stable key order for pipelines)."""
        return {
            "old": self.old_label,
            "new": self.new_label,
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": [{"key": c.key, "fields": list(c.fields)} for c in self.changed],
            "unchanged": self.unchanged,
            "timeline": {"added": self.timeline_added, "removed": self.timeline_removed},
            "warnings": list(self.warnings),
        }


def diff_memories(
    a: Mapping[str, MemoryRecord],
    b: Mapping[str, MemoryRecord],
    *,
    old_label: str = "A",
    new_label: str = "B",
) -> DiffResult:
    """Compare two key -> record maps, ``a`` the old side and ``b`` the new one. Pure: no I/O."""
    result = DiffResult(
        added=sorted(set(b) - set(a)),
        removed=sorted(set(a) - set(b)),
        old_label=old_label,
        new_label=new_label,
    )
    for key in sorted(set(a) & set(b)):
        fields = _changed_fields(a[key], b[key])
        if fields:
            result.changed.append(Changed(key, fields))
        else:
            result.unchanged += 1
    return result


_MISSING = object()


def _changed_fields(old: MemoryRecord, new: MemoryRecord) -> tuple[str, ...]:
    names = set(old.meta) | set(new.meta)
    fields = {n for n in names if old.meta.get(n, _MISSING) != new.meta.get(n, _MISSING)}
    if old.body != new.body:
        fields.add("body")
    return tuple(sorted(fields))


@dataclass
class Side:
    """One side of a diff: memories by key, timeline entries (canonical JSON text), loader warnings."""

    records: dict[str, MemoryRecord]
    timeline: set[str]
    warnings: list[str]


def _entry_id(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def read_side(
    spec: str,
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> Side:
    """The memories and timeline of one side.

    A directory is read as a memory tree; anything else is loaded as a bundle
    (verified; files skipped by the loader come back as warnings). Raises what
    ``Memory.list`` and ``load_bundle`` raise, ``UsageError`` for a missing path.
    """

    path = Path(spec)
    if path.is_dir():
        mem = Memory(path)
        return Side({r.key: r for r in mem.list()}, {_entry_id(e) for e in mem.timeline()}, [])

    loaded = load_bundle(spec, source=source, key=key, options=options)
    tree = read_tree_files(loaded.files, source=spec)
    return Side(tree.records, {_entry_id(e) for e in tree.timeline}, list(loaded.warnings))


def side_labels(a: str, b: str) -> tuple[str, str]:
    """How a report names the old side ``a`` and the new side ``b``: as given, without a trailing ``/``.

    Two sides spelled the same (``diff memory memory/``) get ``(old)`` and
    ``(new)`` appended, so "only in X" never names both.
    """
    old, new = (spec.rstrip("/") or spec for spec in (a, b))
    if old == new:
        return f"{old} (old)", f"{new} (new)"
    return old, new


def diff_sources(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    *,
    source: BlockSource | None = None,
    key: KeySpec | None = None,
    options: LoadOptions | None = None,
) -> DiffResult:
    """Diff the old side ``a`` against the new side ``b`` (directory, CAR, CID or URI).

    Memories are compared, then timeline entries by count; *added* means only
    in ``b``. Loader warnings are carried into the result, each prefixed with
    its side's label. A bundle side is loaded from ``source`` with ``options`` (``load_bundle``'s).
    """
    old_spec, new_spec = os.fspath(a), os.fspath(b)
    old_label, new_label = side_labels(old_spec, new_spec)
    left = read_side(old_spec, source=source, key=key, options=options)
    right = read_side(new_spec, source=source, key=key, options=options)
    result = diff_memories(left.records, right.records, old_label=old_label, new_label=new_label)
    result.timeline_added = len(right.timeline - left.timeline)
    result.timeline_removed = len(left.timeline - right.timeline)
    result.warnings = [f"{old_label}: {w}" for w in left.warnings] + [f"{new_label}: {w}" for w in right.warnings]
    return result
