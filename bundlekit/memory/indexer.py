"""Keeping the derived index (``catalog``) in step with the files, and ``MEMORY.md`` with the index.

Every command calls :meth:`Indexer.refresh` first. It lists the tree once
(``scandir``, stat signatures, sorted by name) and compares with the index's
sorted signature blob: files added or whose signature changed are parsed again,
files gone are dropped, and racy rows (git's rule: the file's mtime within
:data:`RACY_NS` of the time the index was last written, where a same-size edit
in the same timestamp tick would keep the signature) are compared by SHA-256. When
nothing differs and ``MEMORY.md`` is the one last written from this generation
of the index, nothing is locked or written: readers run beside writers. Any
difference is applied under the tree lock (listing again under it), so a
process killed at any point leaves files the next command reconciles.

The index file is opened lazily; one that is corrupt, truncated or of another
version is deleted and rebuilt, with a warning. Where it cannot be created (a
read-only tree) or is not wanted yet (a directory with no memories and no
index), a private in-memory index serves the command and nothing is written.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path

from bundlekit.errors import FrontmatterError, MemoryFileUnusable, MemoryStoreError
from bundlekit.memory.backend import Backend, DirectoryBackend, Scan, Signature
from bundlekit.memory.catalog import RACY_NS, Catalog, CatalogUnavailable, CatalogUnusable, Row, catalog_files, moved
from bundlekit.memory.index import MAX_INDEX_LINES, index_line, list_fields, list_rest, render_index
from bundlekit.memory.links import refuse_link, refuse_special
from bundlekit.memory.naming import HIDDEN_DIR, INDEX_NAME, check_unique, key_from_filename, memory_files
from bundlekit.memory.ranking import basis, piece_length
from bundlekit.memory.record import MemoryRecord, parse_memory_file

__all__ = ["RACY_COMPARED", "RACY_NS", "Indexer", "decode", "parse_files", "parse_read"]

PARSED_AT_ONCE = 2_000  # files a refresh reads and parses before it indexes them (a first index is not held whole)
RACY_COMPARED = 32  # past this many racy rows a lock-free check settles the old ones under the lock instead
REUSE_S = 1.0  # how long one Memory trusts its last full check while neither the directory nor the index moved
# A held check is not reused when the directory changed this close before it began (or after: a clock set back):
# a file system stamps a change with a coarse clock (a kernel tick; 1 s on ext3 and HFS+, 2 s on FAT), so a
# second change within the same tick, after the listing, leaves the directory's stamp as the check saw it.
RACY_NS = 2_000_000_000
# A trusted refresh (specs/memory.md, "Freshness"): a full check (a listing and an lstat per file, ~2.7 us a
# file) is trusted while the tree directory's (inode, mtime, ctime) and the index stay as it left them, for 100 us
# per file listed and at least 2 s (2 s at 10,000 memories, 10 s at 100,000): the full checks then cost a busy agent
# a few percent of its time at most, and an edit in place is seen within that. Below TRUST_MIN_ROWS files every
# command checks fully.
TRUST_NS_PER_ROW = 100_000
TRUST_MIN_NS = 2_000_000_000
TRUST_MIN_ROWS = 2_000
RECORD_WAIT_MS = 50  # a lock-free check records what it found only when the index is free that soon


def decode(name: str, data: bytes) -> str:
    """A memory file's bytes as text; :class:`FrontmatterError` naming it when they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(f"{name} is not UTF-8 text; re-save it as UTF-8") from exc


def parse_files(
    backend: Backend, names: list[str], broken: dict[str, str] | None = None
) -> list[tuple[str, bytes, MemoryRecord]]:
    """Each of the memory files ``names`` read now and parsed, with its bytes (a file gone since is left out).

    A file that does not parse raises :class:`FrontmatterError` (naming the file and line); with ``broken``
    it is left out instead and ``broken[name]`` set to that message (one malformed file never blocks the rest).
    """
    return parse_read(names, backend.read_many(names), broken)


def parse_read(
    names: list[str], datas: Sequence[bytes | MemoryFileUnusable | None], broken: dict[str, str] | None = None
) -> list[tuple[str, bytes, MemoryRecord]]:
    """:func:`parse_files` of bytes read already (``datas[i]`` the bytes of ``names[i]``, ``None`` for a file gone,
    the :class:`MemoryFileUnusable` of one over the size bound or refused by the OS: broken, as a file that does
    not parse)."""
    found = []
    for name, data in zip(names, datas, strict=True):
        if data is None:
            continue
        try:
            if isinstance(data, MemoryFileUnusable):
                raise data
            record = parse_memory_file(decode(name, data), key=name[:-3], where=name)
        except FrontmatterError as exc:
            if broken is None:
                raise
            broken[name] = str(exc)
            continue
        if broken is not None:
            broken.pop(name, None)
        found.append((name, data, record))
    return found


class Indexer:
    """The derived index of one tree (``backend``), opened on first use."""

    def __init__(self, backend: Backend, *, warn: Callable[[str], None], timeout: float) -> None:
        self._backend = backend
        self._warn = warn
        self._timeout = timeout
        self._catalog: Catalog | None = None
        self._checked: tuple[object, int, float] | None = None  # (directory stamp, data_version, monotonic time)
        self._listing: Scan | None = None  # the tree's listing the index was last found to agree with
        # After a trusted refresh: MEMORY.md's signature, the listing being the index's record, read when asked for.
        self._recorded: tuple[Signature | None] | None = None
        # Under the tree lock, after a refresh that found the index agreeing with the directory: when the full
        # check it trusts began and how many files it listed (so a write records the directory it leaves).
        self._held: tuple[int, int] | None = None
        # The listing's files that do not parse (file name -> why), found by the last full check: never indexed,
        # so while one is there every check finds the index short of it and parses it again.
        self.broken: dict[str, str] = {}
        self.private = True  # an in-memory index nothing else sees (no lock, no MEMORY.md upkeep)
        # The last refresh took the last full check's word (:meth:`_trusted`): the rows were not compared with
        # the files, so what shows bytes the rows vouch for checks those files first (:meth:`moved`).
        self.trusting = False
        # Inside :meth:`held_check` (one hold of the tree lock): how deep, and the full check made under it.
        self._holding = 0
        self._held_check: tuple[object, int, float] | None = None
        root = backend.root if isinstance(backend, DirectoryBackend) else None
        self._dir = None if root is None else root / HIDDEN_DIR

    # -- opening ------------------------------------------------------------------

    def _open(self, scan: Scan | None, *, for_write: bool) -> Catalog:
        if self._catalog is not None and not (self.private and for_write and self._dir is not None):
            return self._catalog
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        if self._dir is not None and (for_write or self._wanted(scan)):
            refuse_link(self._dir)  # a planted link is an error, not a reason to fall back
            for path in catalog_files(self._dir):
                refuse_special(path)  # and so is a pipe or a folder where the index lives
            try:
                self._catalog = self._open_file(self._dir)
                self.private = False
                return self._catalog
            except OSError as exc:  # a read-only tree: reads are served from memory
                if for_write:
                    raise MemoryStoreError(
                        f"cannot open the memory index in {self._dir}: {exc.strerror or exc}; "
                        "fix the tree's permissions"
                    ) from exc
        self._catalog = Catalog(None, timeout=self._timeout)
        self.private = True
        return self._catalog

    def _wanted(self, scan: Scan | None) -> bool:
        assert self._dir is not None
        return refuse_link(self._dir) or bool(scan is not None and (len(scan) or scan.index))

    def _open_file(self, directory: Path) -> Catalog:
        """The index file opened (created when absent); a broken one deleted and built again, under the lock.

        Opening takes no lock, so it can meet another process's rebuild (:meth:`_reset`, under the lock)
        deleting the files it is opening: SQLite then answers a transient "disk I/O error" or "attempt to
        write a readonly database" (``SQLITE_READONLY_DBMOVED``). Neither is the user's to retry: the open
        is tried once more holding the lock, where no rebuild can be under way; a failure then is real.
        """
        directory.mkdir(parents=True, exist_ok=True)
        path = catalog_files(directory)[0]
        try:
            return Catalog(path, timeout=self._timeout)
        except CatalogUnusable as exc:
            with self._backend.hold():
                self._reset(directory, str(exc))
            return Catalog(path, timeout=self._timeout)
        except (MemoryStoreError, CatalogUnavailable) as exc:
            if isinstance(exc, CatalogUnavailable) and not moved(exc):
                raise  # a read-only tree: the caller serves reads from memory
        with self._backend.hold():
            return Catalog(path, timeout=self._timeout)

    def _reset(self, directory: Path, reason: str) -> None:
        """Delete the index files (under the lock) so they are built again."""
        for path in catalog_files(directory):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise MemoryStoreError(f"cannot remove the broken index {path}: {exc.strerror}; remove it by hand") from exc
        self._warn(
            f"the memory index {directory / catalog_files(directory)[0].name} could not be used ({reason[:120]}); "
            "rebuilt it from the memory files"
        )

    def rebuild(self, reason: str) -> None:
        """Drop the index after it failed mid-command; the next :meth:`refresh` builds it again."""
        self._checked = None
        self._held_check = None
        self._held = None
        self.listing = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        if self._dir is not None and not self.private:
            with self._backend.hold():
                self._reset(self._dir, reason)

    def close(self) -> None:
        self._checked = None
        self._held_check = None
        self._held = None
        self.listing = None
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    # -- refresh ------------------------------------------------------------------

    def refresh(self, *, locked: bool = False, trusted: bool = False, read: bool = False) -> Catalog:
        """The index, agreeing with the files (and ``MEMORY.md`` repaired). ``locked``: the caller holds the lock.

        ``trusted``: a command that reads no more than the index's choice (recall, context, ``list``'s lines,
        write, forget, note, init) may take the last full check's word while the tree directory and the index
        are as it left them (:meth:`_trusted`; specs/memory.md, "Freshness"); else the tree is listed and
        every file's signature compared.

        ``read``: a whole-tree read follows; a listing this refresh makes reads the files as it lists them
        (``DirectoryBackend.scan(read=True)``: :attr:`listing`'s ``contents``, until a later refresh drops them).

        A file that does not parse is left out of the index and named in :attr:`broken`. Raises what
        checking the names raises (:class:`InvalidKeyError`, ...); nothing of that refresh is stored then.
        """
        try:
            return self._refresh(locked, trusted, read)
        except CatalogUnusable as exc:
            self.rebuild(str(exc))
            return self._refresh(locked, trusted, read)

    @contextmanager
    def held_check(self) -> Iterator[None]:
        """The body runs under one hold of the tree lock (a merge's transaction: ``Memory.transaction``): every
        refresh in it is a locked one, and after the first has listed the tree, a later one takes its word while
        the directory and the index are as it left them, within :data:`REUSE_S` (:meth:`_recently_checked`):
        no other writer can change the tree while the lock is held, an atomic replace by anything moves the
        directory, another connection's index change moves ``data_version``, and this index's own writes
        (:meth:`stored`) end the reuse. A merge's reads and its write list the tree once, not three times."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
            if not self._holding:
                self._held_check = None

    def _refresh(self, locked: bool, trusted: bool, read: bool) -> Catalog:
        if self._listing is not None:
            self._listing.contents = None  # bytes read by an earlier refresh are never handed on by this one
        locked = locked or self._holding > 0
        if locked and self._catalog is not None and self._recently_checked(self._catalog, self._held_check):
            return self._catalog  # the full check made under this hold stands (:meth:`held_check`)
        self._held = None
        self._own_from(None)
        if not locked and self._catalog is not None and self._recently_checked(self._catalog, self._checked):
            return self._catalog
        began = time.time_ns()  # before the directory is looked at: the check's time, if it is recorded
        stamp = self._backend.stamp()
        self.trusting = trusted and self._trusted(stamp, began, locked)
        if self.trusting:
            assert self._catalog is not None
            return self._catalog
        if not locked and read and self._racy(stamp, began) and self._lockable():
            held = self._refresh_held(trusted)  # a build's read of a tree changed this tick: listed once, locked
            if held is not None:
                return held
        scan = self._backend.scan(read=read)
        self.broken = {}
        catalog = self._open(scan, for_write=locked)
        gen = catalog.gen  # before the comparison: a check that finds nothing records it unless the index moved
        version = catalog.data_version()
        if locked:
            self._sync_and_record(catalog, scan, stamp, began)
        elif not self._work(catalog, scan):
            if not scan.temps:
                self._record(catalog, stamp, gen, (began, len(scan)), locked=False)
        elif self.private:
            self._apply(catalog, scan)
        else:
            with self._backend.hold():
                if not self._unmoved(catalog, (stamp, version), began):
                    began = time.time_ns()
                    stamp = self._backend.stamp()
                    scan = self._backend.scan(read=read)
                self._sync_and_record(catalog, scan, stamp, began)
            self._held = None
        self.listing = scan
        self._checked = (stamp, catalog.data_version(), time.monotonic())
        if self._holding and not self._racy(stamp, began):
            self._held_check = self._checked
        return catalog

    def _unmoved(self, catalog: Catalog, seen: tuple[object, int], began: int) -> bool:
        """Under the lock just taken: whether the listing made before it (the directory's stamp and the index's
        ``data_version`` ``seen`` with it, taken at ``began``) still stands, so the tree is not listed a second
        time (a sync's build listed 10,000 files twice). Every writer that takes the lock moves one of them (a
        memory file is replaced atomically, which moves the directory; the index is written by another
        connection, which moves ``data_version``), unless the stamp is racy (:meth:`_racy`); an edit in place
        takes no lock, so a second listing would only narrow its window, and a whole read compares every
        file's SHA-256 with the index's (``TreeAccess._checked_files``: one that differs is indexed again)."""
        return (seen[0] == self._backend.stamp() and seen[1] == catalog.data_version()
                and not self._racy(seen[0], began))

    def _lockable(self) -> bool:
        """Whether this tree's index folder is there and writable, so its lock can be taken without refusing a
        read of a read-only tree. A read of every file (a build: :meth:`refresh`'s ``read``) of a directory whose
        stamp is racy (:meth:`_racy`: changed within :data:`RACY_NS`, as a sync's tree is right after its edits)
        takes the lock before it lists: the listing made without it would be made again under it
        (:meth:`_unmoved` cannot take a racy stamp's word), so a writer's round listed 10,000 files twice. Other
        reads (``memory list``, recall) still list without the lock, beside a writer; so does a build's when the
        lock is not free at once (:meth:`_refresh_held`)."""
        return self._dir is not None and refuse_link(self._dir) and os.access(self._dir, os.W_OK)

    def _refresh_held(self, trusted: bool) -> Catalog | None:
        """A build's read's refresh (:meth:`_lockable`) under the lock when it is free now, else ``None``: a writer
        holding it (a sync round publishing) or a lock that cannot be opened (a folder planted there, a file of
        another user) leaves the read to the lock-free check, which locks only when the index must change; the
        lock taken first saves a listing, it never makes a read wait or fail."""
        assert isinstance(self._backend, DirectoryBackend)  # _lockable: a tree with an index folder
        with ExitStack() as stack:
            try:
                stack.enter_context(self._backend.hold(wait=False))
            except MemoryStoreError:  # LockTimeoutError included: held elsewhere
                return None
            catalog = self._refresh(True, trusted, True)
        self._held = None
        return catalog

    def _racy(self, stamp: object, began: int) -> bool:
        """Whether the directory's stamp ``stamp`` (taken at ``began``) could hide a later change in the same
        timestamp tick (:data:`RACY_NS`; git's "racily clean" index entries): then no refresh takes its word."""
        if not isinstance(self._backend, DirectoryBackend) or not isinstance(stamp, tuple):
            return False
        changed: int = max(stamp[1], stamp[2])  # DirectoryBackend.stamp: (inode, mtime_ns, ctime_ns)
        return changed >= began - RACY_NS

    @property
    def listing(self) -> Scan | None:
        """The tree's listing the index was last found to agree with: the one the full check made, or after a
        trusted refresh the index's record of it (its signature blob, read on first use: recall, context, note
        and init never need it); ``None`` when there is none (the caller lists the tree)."""
        if self._listing is None and self._recorded is not None and self._catalog is not None:
            index, self._recorded = self._recorded[0], None
            blob = self._catalog.stat.signature_blob()  # None for one made by hand (its counts differ)
            if blob is not None:
                self._listing = Scan.from_packed(blob[0], blob[1], len(blob[1]) // 24, index)
        return self._listing

    @listing.setter
    def listing(self, scan: Scan | None) -> None:
        self._listing = scan
        self._recorded = None

    def _sync_and_record(self, catalog: Catalog, scan: Scan, stamp: object, began: int) -> None:
        """Under the lock: bring the index and ``MEMORY.md`` in step with ``scan`` (listed after the directory's
        ``stamp`` was taken, at ``began``), and record that check when the index now holds exactly the listing
        (no file that does not parse), ``MEMORY.md`` was left as it was (a rewrite moved the directory) and the
        root holds no writer's temp (a trusted refresh does not list the root, so never sweeps a dead one)."""
        wrote = self._sync(catalog, scan)
        if self.private or wrote or self.broken or scan.temps or not catalog.stat.compare(scan)[0]:
            return
        self._held = (began, len(scan))
        self._own_from(stamp)
        self._record(catalog, stamp, catalog.gen, self._held, locked=True)

    def _trusted(self, stamp: object, now: int, locked: bool) -> bool:
        """Whether the last full check can stand for this one (then :attr:`listing` is the index's record of
        the directory): it was recorded for the directory as it is (its ``(inode, mtime, ctime)``: a file added,
        removed, renamed or replaced moves it) and the index as it is (no change since), of at least
        :data:`TRUST_MIN_ROWS` files, less than :data:`TRUST_NS_PER_ROW` per file (and at least
        :data:`TRUST_MIN_NS`) ago. An edit in place keeps the directory as it was: it is seen when that time
        is up, or by a command that reads the file.
        Under the lock ``MEMORY.md`` is rewritten if it is not the one of this generation; without it, such a
        ``MEMORY.md`` sends the command to the full check, which repairs it."""
        if not isinstance(stamp, tuple) or self._dir is None:
            return False
        if self._catalog is None and not refuse_link(self._dir):
            return False  # no index yet: the full check's listing decides whether one is made
        catalog = self._open(None, for_write=locked)
        if self.private:
            return False
        with catalog.reading():
            state = catalog.stat.trust_state()
            if state is None:
                return False
            recorded, gen, checked_ns, count = state
            window = max(count * TRUST_NS_PER_ROW, TRUST_MIN_NS)
            if recorded != stamp or count < TRUST_MIN_ROWS or not 0 <= now - checked_ns < window:
                return False
            index = self._backend.signature(INDEX_NAME)
            if not locked and self._index_stale(catalog, index, force=False):
                return False
        self.broken = {}
        self.listing = None
        self._recorded = (index,)
        if locked:
            assert isinstance(self._backend, DirectoryBackend)
            self._backend.defer_root_sweep()
            self._held = (checked_ns, count)
            self._own_from(stamp)
            if self.upkeep_index(catalog, index):
                self.recorded_own_writes(catalog)
        self._checked = (stamp, catalog.data_version(), time.monotonic())
        return True

    def moved(self, catalog: Catalog) -> list[str]:
        """The files of the memories ``MEMORY.md`` shows (:data:`MAX_INDEX_LINES`, as :meth:`render` chooses
        them) whose stat signature now is not their row's, after a trusted refresh (an edit in place keeps the
        directory as it was, so the refresh did not see it); none after a full check, which compared them all.
        One ``lstat`` a file."""
        if not self.trusting:
            return []
        with catalog.reading():
            files = memory_files(catalog.listing.index_keys(MAX_INDEX_LINES))
            known = catalog.stat.signatures_of(files) if files else {}
        return [name for name in files if self._backend.signature(name) != known.get(name)]

    def _record(self, catalog: Catalog, stamp: object, gen: int, check: tuple[int, int], *, locked: bool) -> None:
        """Record a full check (``check``: when it began, how many files it listed) that found the index of
        generation ``gen`` agreeing with the directory as of ``stamp``, unless the index has moved on since.
        Best effort: without the lock it waits :data:`RECORD_WAIT_MS` at most, and a tree that cannot be written
        (or a busy index) only means the next command checks fully again."""
        if not isinstance(stamp, tuple) or self.private or check[1] < TRUST_MIN_ROWS:
            return
        try:
            with nullcontext() if locked else catalog.db.impatient(RECORD_WAIT_MS), catalog.writing():
                if catalog.gen == gen:
                    catalog.stat.set_trust_state(stamp, gen, *check)
        except (MemoryStoreError, OSError):
            return

    def recorded_own_writes(self, catalog: Catalog) -> None:
        """Under the lock, after this command's own writes (a memory file, ``MEMORY.md``): when its refresh
        trusted or made a full check, record the directory as those writes left it, so the next command need
        not list the tree again; only when the directory moved by those writes alone (a stat before and after
        each: another program's change to the root since the check, between them, is seen by the next
        command's full check, not hidden by this record)."""
        if self._held is not None:
            stamp = self._backend.stamp()
            if isinstance(self._backend, DirectoryBackend) and self._backend.own_stamp != stamp:
                return  # the directory moved by more than this command's writes: the next command checks fully
            self._record(catalog, stamp, catalog.gen, self._held, locked=True)

    def _own_from(self, stamp: object) -> None:
        """This command's check (as of ``stamp``) may be recorded after its own writes: follow the directory
        from it (``DirectoryBackend.own_stamp``)."""
        if isinstance(self._backend, DirectoryBackend):
            self._backend.own_stamp = stamp

    def _recently_checked(self, catalog: Catalog, checked: tuple[object, int, float] | None) -> bool:
        """Within :data:`REUSE_S` of the full check ``checked`` (its directory stamp, the index's
        ``data_version``, when), with the directory and the index as they were then.

        Every write here or by another process moves one of them (an atomic
        replace changes the directory; another process's index update changes
        SQLite's ``data_version``). An edit in place that keeps the directory
        as it was is seen at the next full check, at most :data:`REUSE_S` later.
        """
        return (
            checked is not None
            and time.monotonic() - checked[2] < REUSE_S
            and checked[0] == self._backend.stamp()
            and checked[1] == catalog.data_version()
        )

    def _sync(self, catalog: Catalog, scan: Scan) -> bool:
        """Apply ``scan`` and keep ``MEMORY.md``; whether ``MEMORY.md`` was rewritten."""
        self._apply(catalog, scan)
        return self.upkeep_index(catalog, scan.index)

    def _work(self, catalog: Catalog, scan: Scan) -> bool:
        """Whether anything differs: signatures, racy rows, or ``MEMORY.md`` (a lock-free check)."""
        with catalog.reading():
            same, racy = catalog.stat.compare(scan)
            if not same:
                return True
            now = time.time_ns()
            if len(racy) > RACY_COMPARED and any(now - mtime >= RACY_NS for mtime in racy.values()):
                return True  # many rows compared on every command: settle them under the lock instead
            for name in racy:
                if self._racy_changed(catalog, name):
                    return True
            return catalog.stat.refused() or self._index_stale(catalog, scan.index, force=False)

    def _index_stale(self, catalog: Catalog, current: Signature | None, *, force: bool) -> bool:
        """``MEMORY.md`` is not the one written for this generation (and one is wanted)."""
        if self.private or (current is None and not force and catalog.listing.count() == 0):
            return False
        index_sig, index_gen = catalog.stat.index_state()
        return current is None or index_sig != current or index_gen != catalog.gen

    def _racy_changed(self, catalog: Catalog, name: str) -> bool:
        """A racy row's file differs from the bytes it was indexed from (by SHA-256). (One old enough to be
        trusted by its signature is settled by the next refresh under the lock; until then comparing it is
        only redundant.)"""
        try:
            data = self._backend.read(name)
        except MemoryFileUnusable:  # grown past the bound, or unreadable, since the listing: changed (refresh names it)
            return True
        return data is None or hashlib.sha256(data).digest() != catalog.stat.sha256(name)

    def _apply(self, catalog: Catalog, scan: Scan) -> None:
        """Parse what changed, check names, and store it all in one transaction."""
        now = time.time_ns()  # before any file is read: it becomes the index's write time (git's racy rule)
        same, racy = catalog.stat.compare(scan)
        if same and not racy and not catalog.stat.refused():  # the usual case: nothing moved
            return
        changed: list[str] = []
        settled = False
        if not same:  # only the listing's files are read: a name from the index never reaches a path unchecked
            listed = scan.signatures_of(list(racy)) if racy else {}
            racy = {name: mtime for name, mtime in racy.items() if name in listed}
        for name, mtime in sorted(racy.items()):
            if self._racy_changed(catalog, name):
                changed.append(name)
            elif now - mtime >= RACY_NS:
                settled = True
        removed: list[str] = []
        if not same:
            changed, removed = self._moved(catalog, scan, changed)
        if not (changed or removed or settled or catalog.stat.refused()):  # a refused blob is written again
            return
        shown = None if removed else self._shown_before(catalog, scan, changed)
        with catalog.writing(now):
            for name in removed:
                catalog.stat.remove(name)
            for start in range(0, len(changed), PARSED_AT_ONCE):
                self._index_some(catalog, scan, changed[start : start + PARSED_AT_ONCE])
            catalog.stat.settle()
            if shown is not None and self._shown_kept(catalog, changed, shown):
                catalog.stat.set_index_state(scan.index, catalog.gen)  # MEMORY.md renders to the same bytes

    def _shown_before(self, catalog: Catalog, scan: Scan, changed: list[str]) -> list[str] | None:
        """Before a refresh indexes ``changed`` again (none removed): the keys ``MEMORY.md`` shows (by type, then key,
        :data:`MAX_INDEX_LINES` in all), when it is the one written for this generation (``scan.index`` its
        signature), every file of ``changed`` is indexed already and none of them is shown; else ``None``.
        ``MEMORY.md`` is rendered from the files of the keys shown and the number of memories alone, so when
        after the change (:meth:`_shown_kept`) the same keys are shown, none of their files changed and the
        number stands, it renders to the same bytes: it is marked the new generation's without being rendered (a
        writer's round at 10,000 memories read and parsed ~200 files to find that), as :meth:`_same_index`
        decides for a write."""
        if self.private or not changed or scan.index is None:
            return None
        with catalog.reading():
            index_sig, index_gen = catalog.stat.index_state()
            if index_sig != scan.index or index_gen != catalog.gen:
                return None
            if len(catalog.listing.types_of(changed)) != len(changed):
                return None  # a file new to the index: the count moves
            shown = catalog.listing.index_keys(MAX_INDEX_LINES)
        keys = set(shown)
        return None if any(name[:-3] in keys for name in changed) else shown

    @staticmethod
    def _shown_kept(catalog: Catalog, changed: list[str], shown: list[str]) -> bool:
        """Inside the refresh's transaction, after ``changed`` were indexed again: each is still indexed (none left
        out as broken: the count stands) and ``MEMORY.md`` shows the keys ``shown`` it showed before."""
        return (len(catalog.listing.types_of(changed)) == len(changed)
                and catalog.listing.index_keys(MAX_INDEX_LINES) == shown)

    def _index_some(self, catalog: Catalog, scan: Scan, names: list[str]) -> None:
        """Index ``names`` from their bytes now, inside the refresh's transaction: each parsed, and the row of one
        removed since the listing or no longer parsing forgotten (a row of its former bytes would rank what is not
        there). A first index of 100,000 files is read :data:`PARSED_AT_ONCE` at a time, not held whole."""
        parsed = parse_files(self._backend, names, self.broken)
        found = {name for name, _data, _record in parsed}
        for name in names:
            if name not in found:
                catalog.stat.remove(name)
        signatures = scan.signatures_of(sorted(found)) if parsed else {}
        for name, data, record in parsed:
            catalog.stat.put(name, row_of(record, signatures[name], data))

    def _moved(self, catalog: Catalog, scan: Scan, changed: list[str]) -> tuple[list[str], list[str]]:
        """The files to index again (``changed``, racy ones found changed, and each whose listed signature is not
        its row's), sorted, and the rows of files no longer listed; the listed names checked (the key rules for a
        new one, case-uniqueness for all). When the listing names exactly the indexed files (edits in place, as
        between two sync rounds) the signatures are compared as the packed bytes
        (:meth:`StatCache.moved_in_place`), else row by row."""
        where = f"memory tree {self._where()}"
        moved = catalog.stat.moved_in_place(scan)
        if moved is not None:  # none added, none removed
            check_unique((name[:-3] for name in scan.names()), where=where)
            return sorted(set(changed).union(moved)), []
        known = catalog.stat.signatures()
        listed = scan.memories
        changed = sorted(set(changed) | {name for name, sig in listed.items() if known.get(name) != sig})
        for name in changed:
            if name not in known:
                key_from_filename(name)
        check_unique((name[:-3] for name in listed), where=where)
        return changed, [name for name in known if name not in listed]

    def reindex(self, names: Iterable[str]) -> None:
        """Index ``names`` again from their bytes now, under the lock (output found their SHA-256 not the
        indexed one: an edit in place that kept the stat signature). Best effort: a file that no longer
        parses is left for the next refresh to report."""
        names = sorted(set(names))
        if not names or self._catalog is None:
            return
        catalog = self._catalog
        with nullcontext() if self.private else self._backend.hold():
            now = time.time_ns()
            parsed = parse_files(self._backend, names, self.broken)
            found = {name for name, _data, _record in parsed}
            with catalog.writing(now):
                for name in names:
                    if name not in found:
                        catalog.stat.remove(name)
                for name, data, record in parsed:
                    sig = self._backend.signature(name)
                    if sig is not None:
                        catalog.stat.put(name, row_of(record, sig, data))
        self._checked = None
        self._held_check = None

    def _where(self) -> str:
        return str(self._backend.root) if isinstance(self._backend, DirectoryBackend) else "in memory"

    # -- changes made by the tree (under the lock) -----------------------------

    def peek(self) -> Catalog:
        """The index as it is, without checking it against the files (for a one-file lookup)."""
        return self._open(None, for_write=False)

    def stored(
        self,
        catalog: Catalog,
        records: list[MemoryRecord],
        previous: dict[str, MemoryRecord | None],
        removed: list[str],
    ) -> None:
        """Index the files just written (``records``; ``previous`` their former records by key) or
        deleted (``removed``), under the lock, and update ``MEMORY.md``.

        ``MEMORY.md`` is rendered again only when an index line could have changed.
        """
        self._held_check = None  # this index's own writes: data_version does not show them
        now = time.time_ns()
        index_sig, index_gen = catalog.stat.index_state()
        was_fresh = not self.private and index_gen == catalog.gen and index_sig == self._backend.signature(INDEX_NAME)
        with catalog.writing(now):
            for name in removed:
                catalog.stat.remove(name)
            for record in records:
                sig = self._backend.signature(record.filename)
                if sig is None:
                    raise MemoryStoreError(f"{record.filename} vanished right after it was written; retry")
                catalog.stat.put(record.filename, row_of(record, sig, record.raw.encode("utf-8")))
            if was_fresh and not removed and self._same_index(catalog, records, previous):
                catalog.stat.set_index_state(index_sig, catalog.gen)
        self.upkeep_index(catalog, None if self.private else self._backend.signature(INDEX_NAME))
        self.recorded_own_writes(catalog)

    @staticmethod
    def _same_index(catalog: Catalog, records: list[MemoryRecord], previous: dict[str, MemoryRecord | None]) -> bool:
        """Whether ``MEMORY.md`` renders to the same bytes after ``records`` replaced ``previous`` (none added or
        removed): each kept its type (so the keys shown, chosen by type then key, and the count stay) and either
        its line or its place outside the lines shown. A follower's round at 10,000 memories rewrote 10 memories
        of which ~2 are shown: the other rounds no longer read and render 200 files to write the same bytes."""
        shown: set[str] | None = None
        for record in records:
            old = previous.get(record.key)
            if old is None or old.type != record.type:
                return False
            if index_line(old) != index_line(record):
                if shown is None:
                    shown = set(catalog.listing.index_keys(MAX_INDEX_LINES))
                if record.key in shown:
                    return False
        return True

    def current_index_text(self, catalog: Catalog) -> str | None:
        """``MEMORY.md`` as stored when it is the one written for the index's generation, else ``None``."""
        if self.private:
            return None
        index_sig, index_gen = catalog.stat.index_state()
        if index_sig is None or index_gen != catalog.gen or index_sig != self._backend.signature(INDEX_NAME):
            return None
        data = self._read_index()
        return None if data is None else data.decode("utf-8", errors="replace")

    def render(self, catalog: Catalog) -> str:
        """``MEMORY.md`` rendered from the files of the memories it can show (chosen by the index: by type, then
        key, :data:`MAX_INDEX_LINES` in all), read now; the others counted."""
        with catalog.reading():
            held = catalog.stat.rows_held()  # the held signature blob's count: no scan of every row
            keys, total = catalog.listing.index_keys(MAX_INDEX_LINES), catalog.listing.count() if held is None else held
        records = [record for _name, _data, record in parse_files(self._backend, memory_files(keys), self.broken)]
        return render_index(records, total=total - len(keys) + len(records))

    def _read_index(self) -> bytes | None:
        """``MEMORY.md``'s bytes; ``None`` when gone, over the size bound or unreadable (never ours then: written
        again)."""
        try:
            return self._backend.read(INDEX_NAME)
        except MemoryFileUnusable:
            return None

    def upkeep_index(self, catalog: Catalog, current: Signature | None, *, force: bool = False) -> bool:
        """Rewrite ``MEMORY.md`` from the index unless it is the one written for this generation; whether it
        was rewritten (which moves the tree directory).

        ``current`` is its signature now. A directory with neither memories nor
        ``MEMORY.md`` gets none, unless ``force`` (``init``).
        """
        if not self._index_stale(catalog, current, force=force):
            return False
        gen = catalog.gen
        data = self.render(catalog).encode("utf-8")
        # Only rewritten when it differs (a body edit leaves it alone).
        wrote = self._read_index() != data
        if wrote:
            self._backend.write(INDEX_NAME, data)
        with catalog.writing():
            catalog.stat.set_index_state(self._backend.signature(INDEX_NAME), gen)
        return wrote


def row_of(record: MemoryRecord, signature: Signature, data: bytes) -> Row:
    """What the index keeps of a memory file whose bytes ``data`` parsed to ``record``: no text of it but
    the search text, which is withheld as output withholds it (so a query cannot probe a credential)."""
    # Imported here: the secret rules are needed only when a changed file is indexed.
    from bundlekit.memory.secrets import find_secrets
    from bundlekit.memory.withhold import mask

    name, description = mask(record.name), mask(record.description)
    return Row(
        record.key,
        record.type,
        signature,
        hashlib.sha256(data).digest(),
        basis(record),
        piece_length(record.name, record.key, record.body),
        (name, description, mask(record.body)),
        (
            list_rest(record, name, description),
            # The line made from the file shows a credential: output makes it from the file, withheld and warned.
            name != record.name or description != record.description or bool(find_secrets(list_fields(record))),
        ),
    )
