"""``Transaction``: what the bundle and merge code read and write of a tree as one change.

``with memory.transaction() as tx:`` holds the tree's lock (re-entrant for this thread) and gives
:meth:`Transaction.files` (what a bundle carries), :meth:`Transaction.contents` (those and their records),
:meth:`Transaction.days` (the timeline day files), :meth:`Transaction.records` (every memory) and
:meth:`Transaction.apply` (a merge's changes, all or nothing); ``memory.transaction(lock=False)`` gives
the same reads without the lock (a build). The promises are ``memory/tree``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bundlekit.memory import screen
from bundlekit.memory.access import Checked, TreeAccess
from bundlekit.memory.index import render_index
from bundlekit.memory.indexer import parse_files
from bundlekit.memory.naming import INDEX_NAME, key_from_filename
from bundlekit.memory.record import MemoryRecord, parse_memory_file

__all__ = ["Transaction", "checked_changes"]


def checked_changes(
    files: Mapping[str, str | None], days: Mapping[str, bytes | None], *, allow_secrets: bool = False,
    records: Mapping[str, MemoryRecord] | None = None, what: str = "merged",
) -> dict[str, MemoryRecord]:
    """Validate changes a tree is about to take from elsewhere (a merge's, a first follow's) before any is
    written: each memory file's name, frontmatter and the secret guard (``allow_secrets`` as for a write), each
    day file's lines and entries. Returns the memory files' records by file name (``records``: ones the caller
    parsed already, used when their text is exactly the new text). Raises what ``screen`` and the parsers raise,
    naming the file (``what``: how the message calls it)."""
    from bundlekit.memory.timeline import parse_day

    incoming: dict[str, MemoryRecord] = {}
    for name, text in files.items():
        screen.guard_key(name, f"a {what} file name")
        key = key_from_filename(name)
        if text is not None:
            known = (records or {}).get(name)
            record = known if known is not None and known.raw == text and known.key == key else (
                parse_memory_file(text, key=key, where=f"{what} {name}"))
            screen.guard_record(record, f"{what} {name}", allow_secrets=allow_secrets)
            incoming[name] = record
    for name, data in days.items():
        if data is not None:
            for number, entry in enumerate(parse_day(name, data), start=1):
                screen.guard_entry(entry, "", f"{what} timeline/{name} entry {number}")
    return incoming


class Transaction:
    """The reads and the one write a bundle or a merge makes of a tree (``tree``: what its ``Memory`` delegates
    to); made by ``Memory.transaction``."""

    def __init__(self, tree: TreeAccess) -> None:
        self._tree = tree

    def files(self, *, strict: bool = False) -> list[tuple[str, bytes]]:
        """The files a bundle carries, sorted by path: the regenerated ``MEMORY.md``, each ``<key>.md`` as read
        now, each ``timeline/YYYY-MM-DD.jsonl`` as read now. Validates first (see ``Memory.check``), but a
        memory file that does not parse is left out with a warning naming it (``strict``: raises)."""
        return self.contents(strict=strict)[0]

    def contents(
        self, *, strict: bool = False
    ) -> tuple[list[tuple[str, bytes]], list[MemoryRecord]]:
        """:meth:`files` and the records of exactly those memory files, sorted by key: parsed from the
        bytes bundled (one read of the tree: a build's index, checks and dates describe the files it packs)."""
        found, days = self._tree.snapshot(strict=strict)
        records = sorted((record for _name, _data, record in found), key=lambda r: r.key)
        files = [(INDEX_NAME, render_index(records).encode("utf-8"))]
        files += [(name, data) for name, data, _record in found]
        files += [(f"timeline/{name}", data) for name, data in days]
        files.sort(key=lambda item: item[0])
        return files, records

    def checked(self, known: Mapping[str, bytes], *, strict: bool = False) -> Checked:
        """Every memory file and timeline day read now, checked as :meth:`contents` checks them, except those
        whose bytes hash to ``known[name]`` (``timeline/<day>`` for a day): SHA-256s of bytes that passed every
        check before under the same rules (``bundle.buildcache``), neither parsed nor checked again. Nothing is
        rendered: the caller that knows the skipped files' index fields renders ``MEMORY.md``."""
        return self._tree.checked(strict=strict, known=known)

    def days(self) -> dict[str, bytes]:
        """Every timeline day file (``YYYY-MM-DD.jsonl`` -> its bytes), as stored."""
        days: dict[str, bytes] = {}
        for name in self._tree.backend.timeline_files():
            data = self._tree.backend.read_timeline(name)
            if data is not None:
                days[name] = data
        return days

    def records(self) -> list[MemoryRecord]:
        """Every memory, sorted by key, read from its file now (``Memory.list``)."""
        return self._tree.read(self._tree.all_records)

    def names(self) -> list[str]:
        """Every memory file's name (``<key>.md``), sorted, from the tree's listing: nothing is read or parsed."""
        return self._tree.read(lambda _catalog: self._tree.listed())

    def present(self, names: Iterable[str]) -> list[str]:
        """Those of the memory files ``names`` the tree's listing holds, in its order: a few looked up, the
        listing not walked."""
        return self._tree.read(lambda _catalog: self._tree.listed_of(names))

    def records_of(self, names: Iterable[str]) -> list[MemoryRecord]:
        """The memories of the files ``names`` that exist, read and parsed now (each once), sorted by key: what a
        merge by tree difference reads of a tree, the keys the other side changed, not all of them."""
        wanted = set(names)
        return self._tree.read(lambda _catalog: sorted(
            (record for _n, _d, record in parse_files(self._tree.backend, self._tree.listed_of(wanted),
                                                      self._tree.index.broken)), key=lambda r: r.key))

    def digests(self) -> dict[str, bytes]:
        """Each memory file's SHA-256 by name, as the derived index took it at its refresh now (a stat scan reads
        only the files that changed since): what lets a merge compare the tree with a bundle without reading it."""
        return self._tree.read(lambda catalog: catalog.stat.digests())

    def apply(
        self, files: Mapping[str, str | None], days: Mapping[str, bytes | None], *, allow_secrets: bool = False,
        records: Mapping[str, MemoryRecord] | None = None, read: Mapping[str, MemoryRecord] | None = None,
    ) -> None:
        """Write a merge: memory file name -> text (``None`` deletes it), day file name -> bytes (``None`` deletes).

        All or nothing: every file and day is validated first (names, frontmatter, timeline lines, the
        secret guard, ``allow_secrets`` as for a write); then, under the lock, each change is journalled
        (``memory.undo``) so a failing step puts every file back. ``records`` (by file name) are records the
        caller parsed already: one whose text is exactly the file's new text stands for parsing it again;
        ``read`` (by file name) the files' records as this transaction read them under its lock.
        """
        from bundlekit.memory.undo import undo_on_failure

        incoming = checked_changes(files, days, allow_secrets=allow_secrets, records=records)
        with self._tree.mutex, self._tree.backend.hold(), undo_on_failure(self._tree.backend) as undo:
            catalog = self._tree.index.refresh(locked=True)
            self._tree.keep_broken(files, "the merge")
            held = read or {}
            touched = [name for name in self._tree.listed_of(files) if name not in held]  # to replace
            current = {**{n: r for n, r in held.items() if n in files},
                       **{r.filename: r for _n, _d, r in parse_files(self._tree.backend, touched,
                                                                      self._tree.index.broken)}}
            written: list[MemoryRecord] = []
            previous: dict[str, MemoryRecord | None] = {}
            removed: list[str] = []
            for name in sorted(files):
                undo.memory_file(name, self._tree.backend.read(name))
                merged = incoming.get(name)
                if merged is None:
                    self._tree.backend.delete(name)
                    removed.append(name)
                    continue
                self._tree.backend.write(name, merged.raw.encode("utf-8"))
                written.append(merged)
                previous[merged.key] = current.get(name)
            for name in sorted(days):
                data = days[name]
                undo.day_file(name, self._tree.backend.read_timeline(name))
                if data is None:
                    self._tree.backend.delete_timeline(name)
                else:
                    self._tree.backend.write_timeline(name, data)
            self._tree.stored(catalog, written, previous, removed)
