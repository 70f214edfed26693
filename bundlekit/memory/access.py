"""``TreeAccess``: one memory tree's files and derived index as ``Memory`` and the functions over it reach them.

What every operation shares (``Memory`` is the facade that delegates to it; ``recall``, ``context``,
``meaning`` and ``transaction`` are functions and objects over it): the backend (the directory, or dicts
in memory) and the indexer, the one mutex a ``Memory``'s threads take turns on, the warnings, the clock;
and the reads. A read (:meth:`TreeAccess.read`) runs on the up-to-date index in one snapshot; what it shows
is read from the memory files at that moment (:meth:`TreeAccess.load`, :meth:`TreeAccess.all_records`),
checked against the SHA-256 the index took (a difference is indexed again, :attr:`TreeAccess.stale`) and
passed through the secret guard (:meth:`TreeAccess.shown`). See ``memory/tree`` for the promises.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import bundlekit._secrets as secrets
from bundlekit.errors import FrontmatterError, MemoryFileUnusable, MemoryStoreError
from bundlekit.memory import screen
from bundlekit.memory.backend import Backend, DirectoryBackend, InMemoryBackend
from bundlekit.memory.catalog import Catalog, CatalogUnusable
from bundlekit.memory.filesize import forget_hint, remedy, shown_whole
from bundlekit.memory.indexer import Indexer, decode, parse_files, parse_read
from bundlekit.memory.naming import check_unique, filename_for, key_from_filename, memory_files
from bundlekit.memory.record import MemoryRecord, parse_memory_file
from bundlekit.memory.timefmt import as_utc, parse_timestamp

__all__ = ["Checked", "TreeAccess"]

_T = TypeVar("_T")


class Checked(NamedTuple):
    """What :meth:`TreeAccess.checked` read of a tree: the memory files parsed and checked now (name, bytes,
    record), those skipped as known (name, bytes), every timeline day (name, bytes), and the SHA-256 of each
    file by name (``timeline/<day>`` for a day)."""

    found: list[tuple[str, bytes, MemoryRecord]]
    unchanged: list[tuple[str, bytes]]
    days: list[tuple[str, bytes]]
    digests: dict[str, bytes]


class TreeAccess:
    """The state and reads one :class:`~bundlekit.memory.tree.Memory` delegates to (see the module)."""

    def __init__(
        self,
        root: Path | None,
        *,
        clock: Callable[[], datetime],
        lock_timeout: float,
        on_warning: Callable[[str], None] | None,
    ) -> None:
        self.root = root
        self.backend: Backend
        if root is None:
            self.backend = InMemoryBackend()
        else:
            self.backend = DirectoryBackend(root, lock_timeout=lock_timeout)
        self.clock = clock
        self.warnings: list[str] = []
        self.on_warning = on_warning
        self.index = Indexer(self.backend, warn=self.warn, timeout=lock_timeout)
        self.stale: set[str] = set()  # files output found not to be the bytes the index took (indexed again)
        # Reads that read every file (a bundle, a merge, an export) list the tree whatever the last check says.
        self.whole = 0
        # One index connection per Memory: threads (an MCP server) take turns, before the tree lock.
        self.mutex = threading.RLock()

    def now(self) -> datetime:
        """The clock's time, in UTC (a naive value taken as UTC)."""
        return as_utc(self.clock())

    def warn(self, message: str) -> None:
        """Keep ``message`` in :attr:`warnings` (``Memory.warnings``) and pass it to ``on_warning``."""
        self.warnings.append(message)
        if self.on_warning is not None:
            self.on_warning(message)

    def read(
        self, op: Callable[[Catalog], _T], *, warn_broken: bool = True, whole: bool = False, contents: bool = False
    ) -> _T:
        """Run a read on the up-to-date index (:meth:`_read_fresh`); then, with ``warn_broken``, warn
        naming each memory file that does not parse and was left out of what the read shows.

        ``whole``: the read reads every file (or hands the tree on: a bundle, a merge), so the tree is listed
        and every signature compared; else the last full check may stand (``Indexer.refresh(trusted=True)``),
        and inside :meth:`whole_tree` never. ``contents``: ``op`` reads every file of the listing
        (:meth:`_read_listed`), so a listing the refresh makes reads them as it lists them."""
        with self.mutex:
            result = self._read_fresh(op, trusted=not whole and not self.whole, read=contents)
            if warn_broken:
                for name, problem in sorted(self.index.broken.items()):
                    shows = f"`bundlekit memory show {name[:-3]}` prints the file" if shown_whole(problem) else ""
                    hint = ", ".join(part for part in (shows, forget_hint(name[:-3], problem)) if part)
                    self.warn(f"{problem}; left out" + (f" ({hint})" if hint else ""))
            return result

    def _read_fresh(self, op: Callable[[Catalog], _T], *, trusted: bool, read: bool = False) -> _T:
        """Run a read on the up-to-date index, in one snapshot (what it ranks and chooses is of one
        generation, whatever another process commits meanwhile); an index found broken mid-way is rebuilt
        and the read run again. Files the read found changed behind signatures the index vouched for (an
        edit in place that kept inode, mtime and size) are indexed again and the read run once more, so
        its choice follows what the files hold."""
        with self.mutex:
            for attempt in range(2):
                self.stale = set()
                try:
                    result = self._in_snapshot(op, self.index.refresh(trusted=trusted, read=read))
                except CatalogUnusable as exc:
                    self.index.rebuild(str(exc))
                    result = self._in_snapshot(op, self.index.refresh(trusted=trusted, read=read))
                if not self.stale or attempt:
                    return result
                try:
                    self.index.reindex(self.stale)
                except CatalogUnusable as exc:
                    self.index.rebuild(str(exc))
            return result

    @contextmanager
    def whole_tree(self) -> Iterator[None]:
        """Every read in the ``with`` body lists the tree (a bundle's or a merge's transaction)."""
        with self.mutex:
            self.whole += 1
            try:
                yield
            finally:
                self.whole -= 1

    @staticmethod
    def _in_snapshot(op: Callable[[Catalog], _T], catalog: Catalog) -> _T:
        with catalog.reading():
            return op(catalog)

    def listed(self) -> list[str]:
        """The memory files of the tree's listing (sorted), which the last refresh found the index agrees
        with: the directory's, never the index's rows."""
        listing = self.index.listing
        return listing.names() if listing is not None else sorted(self.backend.scan().memories)

    def listed_of(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` that :meth:`listed` holds, in its order: a merge's few files looked up in the
        listing, not the listing walked for them."""
        listing = self.index.listing
        if listing is not None:
            return listing.holding(names)
        present = self.backend.scan().memories
        return sorted(name for name in set(names) if name in present)

    def all_records(self, catalog: Catalog) -> list[MemoryRecord]:
        """Every memory of the listing, sorted by key, read from its file now (no index row is shown)."""
        found = parse_files(self.backend, self.listed(), self.index.broken)
        return sorted((record for _name, _data, record in found), key=lambda r: r.key)

    def load(self, catalog: Catalog, keys: Sequence[str]) -> list[MemoryRecord]:
        """The memories ``keys`` (chosen by the index) read from their files now, in that order, as output
        shows them (credentials withheld); one gone is left out. A file whose SHA-256 is not the one the
        index took is noted (:attr:`stale`): its row ranked other bytes."""
        found = parse_files(self.backend, memory_files(keys), self.index.broken)
        for name, data, _record in found:
            if hashlib.sha256(data).digest() != catalog.stat.sha256(name):
                self.stale.add(name)
        return self.shown(catalog, [record for _name, _data, record in found])

    def withheld(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` with its credentials withheld (a warning names the file), or itself when it holds none."""
        from bundlekit.memory.withhold import withheld_warning
        from bundlekit.memory.withhold import withhold as withheld_copy

        shown, fields = withheld_copy(record)
        if fields:
            self.warn(withheld_warning(record.filename, fields))
        return shown

    def shown(self, catalog: Catalog | None, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` as output may show them: those holding a credential in a value have it withheld
        (the guard runs here, on what was just read, whatever the index says)."""
        return [r if screen.record_values_clean(r) else self.withheld(r) for r in records]

    def keep_broken(self, names: Iterable[str], action: str) -> None:
        """Refuse (:class:`FrontmatterError`) to replace or delete a memory file of ``names`` (equal ignoring
        case) that does not parse: reads leave it out, so ``action`` would take it for absent and lose its
        text unseen. Called under the lock, after the refresh, before anything is written."""
        broken = {name.lower(): (name, problem) for name, problem in self.index.broken.items()}
        for name in sorted(names):
            found = broken.get(name.lower())
            if found is not None:
                raise FrontmatterError(
                    f"{found[1]}; {action} would replace it: {remedy(found[0][:-3], found[1])}"
                )

    def where(self) -> str:
        """The tree as an error message names it."""
        return f"memory tree {self.root}" if self.root is not None else "the in-memory tree"

    def stored(
        self,
        catalog: Catalog,
        records: Sequence[MemoryRecord],
        previous: Mapping[str, MemoryRecord | None],
        removed: Sequence[str] = (),
    ) -> None:
        """Index files just written (under the lock); a broken index is dropped and rebuilt next time.

        The files are written by now, and they are the memory: the index and ``MEMORY.md`` are derived
        from them and catch up at the next refresh. So a failure to update them (a full disk, an I/O
        error) is a warning, never the error of a change that was made (issue 35: `memory write` exited
        1 on a full disk with the memory written, found by bench/soak.py).
        """
        try:
            try:
                self.index.stored(catalog, list(records), dict(previous), list(removed))
            except CatalogUnusable as exc:
                self.index.rebuild(str(exc))
        except MemoryStoreError as exc:
            self.index.close()
            self.warn(f"{exc} (the change is written; the next command brings the index and MEMORY.md up to date)")

    def read_record(self, key: str) -> MemoryRecord | None:
        """The memory ``key`` parsed from its file now (``None`` when there is none)."""
        filename = filename_for(key)
        data = self.backend.read(filename)
        if data is None:
            return None
        return parse_memory_file(decode(filename, data), key=key, where=filename)

    def snapshot(
        self, *, strict: bool
    ) -> tuple[list[tuple[str, bytes, MemoryRecord]], list[tuple[str, bytes]]]:
        """Every memory file and timeline day, checked. A memory file that does not parse is left out with a
        warning, or with ``strict`` raises :class:`FrontmatterError` (the first by name)."""
        checked = self.checked(strict=strict)
        return checked.found, checked.days

    def checked(self, *, strict: bool, known: Mapping[str, bytes] | None = None) -> Checked:
        """Every memory file and timeline day read now, each checked as :meth:`snapshot` checks it (key rules,
        parsed, the whole secret guard) unless its bytes hash to ``known[name]`` (``timeline/<day>`` for a day):
        the SHA-256 of bytes that passed every check before, under the same rules (a build's cache,
        ``bundle/buildcache``), which the same bytes pass again. Case-uniqueness is checked over every name."""
        from bundlekit.memory.timeline import parse_day

        passed = known or {}
        found, unchanged, digests = self.read(lambda catalog: self._checked_files(catalog, passed),
                                              warn_broken=not strict, whole=True, contents=True)
        if strict and self.index.broken:
            name, problem = min(self.index.broken.items())
            raise FrontmatterError(f"{problem}; {remedy(name[:-3], problem)}")
        for filename, _bytes, record in found:  # the whole guard on every file, as with no index at all
            screen.guard_key(record.key, f"a memory file name in {self.where()}")
            secrets.guard(record.raw, filename, can_allow=False)
            # One scan of every value (the guard then names the place); none needed when the values are
            # stretches of the text just guarded (record.memo["verbatim"], tests/memory/test_quickyaml.py).
            if not record.memo.get("verbatim") and not screen.record_values_clean(record):
                screen.guard_record(record, filename, can_allow=False)
        days: list[tuple[str, bytes]] = []
        for name in self.backend.timeline_files():
            data = self._day(name, strict=strict)
            if data is None:
                continue
            where = f"timeline/{name}"
            digests[where] = hashlib.sha256(data).digest()
            days.append((name, data))
            if passed.get(where) == digests[where]:
                continue
            entries = parse_day(name, data)
            secrets.guard(data.decode("utf-8"), where, can_allow=False)
            for number, entry in enumerate(entries, start=1):
                screen.guard_entry(entry, "", f"{where} entry {number}")
        return Checked(found, unchanged, days, digests)

    def _checked_files(
        self, catalog: Catalog, known: Mapping[str, bytes]
    ) -> tuple[list[tuple[str, bytes, MemoryRecord]], list[tuple[str, bytes]], dict[str, bytes]]:
        """Every memory file of the listing, with its bytes read now and the record they parse to, as with no
        index at all: names checked (key rules, case-uniqueness), every file parsed; but a file whose bytes
        hash to ``known[name]`` is neither parsed nor its name checked again (it comes back in the second list).
        Each file's SHA-256 is checked against the one the index took; one that differs (an edit that kept the
        stat signature) is indexed again after the read. The third value: each file's SHA-256 by name."""
        names, datas = self._read_listed()
        for name in names:
            if name not in known:  # a known name passed the key rules, which read the name alone
                key_from_filename(name)
        check_unique((name[:-3] for name in names), where=self.where())
        digests: dict[str, bytes] = {}
        unchanged: list[tuple[str, bytes]] = []
        fresh: list[tuple[str, bytes | MemoryFileUnusable]] = []
        for name, data in zip(names, datas, strict=True):  # one pass over 10,000 files
            if isinstance(data, bytes):
                digest = digests[name] = hashlib.sha256(data).digest()
                (unchanged if known.get(name) == digest else fresh).append((name, data))
            elif data is not None and known.get(name) is not None:  # one over the bound the cache knew: broken
                fresh.append((name, data))
        found = parse_read([name for name, _d in fresh], [data for _n, data in fresh], self.index.broken)
        indexed = catalog.stat.digests()
        broken = self.index.broken  # never indexed: a file that does not parse is not stale, only left out
        self.stale.update(name for name, digest in digests.items()
                          if digest != indexed.get(name) and name not in broken)
        return found, unchanged, digests

    def _read_listed(self) -> tuple[list[str], list[bytes | MemoryFileUnusable | None]]:
        """The listing's memory files (:meth:`listed`) and each one's bytes read now: those the refresh just read as
        it listed them (``Indexer.refresh(read=True)``; taken, so never handed out twice), the others read here."""
        listing = self.index.listing
        names = self.listed()
        datas = None if listing is None else listing.contents
        if listing is not None:
            listing.contents = None
        if datas is None or len(datas) != len(names):
            return names, self.backend.read_many(names)
        missing = [at for at, data in enumerate(datas) if data is None]  # not read by the listing: read here
        if missing:
            for at, data in zip(missing, self.backend.read_many([names[at] for at in missing]), strict=True):
                datas[at] = data
        return names, datas

    def index_text(self, catalog: Catalog) -> str:
        """``MEMORY.md`` as output shows it (the context block, the MCP ``memory_index`` tool): the stored file
        when it is the one written for the index's generation and every memory it shows is as that generation
        indexed it, else rendered from those memories' files now. After a trusted refresh the shown files'
        signatures are compared (an edit in place keeps the directory as it was); one that moved is indexed
        again after the read (:attr:`stale`), so no line of a memory's former text leaves."""
        text = self.index.current_index_text(catalog)
        if text is not None and self.index.trusting:
            moved = self.index.moved(catalog)
            self.stale.update(moved)
            text = None if moved else text
        # A MEMORY.md written before credentials were withheld from it is rendered again.
        return text if text is not None and not secrets.find_secrets(text) else self.index.render(catalog)

    def append(self, entry: dict[str, Any], *, refreshed: bool = False) -> None:
        """Append ``entry`` to its day file, guarded, under the lock; ``refreshed``: the caller holds the lock
        and refreshed the index under it already (``forget``), so the tree is not listed a second time."""
        from bundlekit.memory.timeline import day_file_for, encode_entry

        line = encode_entry(entry)
        screen.guard_entry(entry, line.decode("utf-8"), f"timeline entry {entry['type']!r}")
        with self.mutex, self.backend.hold():
            if not refreshed:  # the next command after a crash repairs the index, a note too
                self.index.refresh(locked=True, trusted=True)
            self.backend.append_timeline(day_file_for(entry), line)

    def newest_first(self, *, withhold: bool = False) -> Iterator[dict[str, Any]]:
        from bundlekit.memory.timeline import DAY_FILE_RE, parse_day

        for name in reversed(self.backend.timeline_files()):
            if not DAY_FILE_RE.fullmatch(name):
                continue
            data = self._day(name, strict=False)
            if data is None:
                continue
            entries = parse_day(name, data, strict=False)
            entries.sort(key=lambda e: parse_timestamp(e["ts"]))
            for entry in reversed(entries):
                yield self._withheld_entry(name, entry) if withhold else entry

    def _day(self, name: str, *, strict: bool) -> bytes | None:
        """The bytes of the day file ``name`` (``None`` when gone); one over the size bound (never read whole) or
        refused by the OS is left out with a warning naming it (``strict``: raises its :class:`MemoryFileUnusable`)."""
        try:
            return self.backend.read_timeline(name)
        except MemoryFileUnusable as exc:
            if strict:
                raise
            if f"{exc}; left out" not in self.warnings:  # once a command (a build reads the days twice)
                self.warn(f"{exc}; left out")
            return None

    def _withheld_entry(self, day_file: str, entry: dict[str, Any]) -> dict[str, Any]:
        """``entry`` with its credentials withheld (a warning names the day file), or itself when it holds none."""
        from bundlekit.memory.withhold import withheld_warning, withhold_entry

        shown = withhold_entry(entry)
        if shown == entry:
            return entry
        self.warn(withheld_warning(f"timeline/{day_file}", ["an entry"]))
        return shown
