"""``Memory``: the memory tree API (write, read, forget, timeline, recall, context, export/import).

A tree is a directory (or, with ``Memory(None)``, dicts in memory):
``MEMORY.md`` (regenerated index), one ``<key>.md`` per memory and
``timeline/YYYY-MM-DD.jsonl``, plus one hidden folder of the store's own
(``.bundlekit/``: the derived index and the lock). Every change runs under the
tree lock. Reads and writes go through the derived index (``indexer``,
``catalog``): each command lists the tree once, re-parses only the files whose
stat signature changed, and chooses and ranks from SQLite; reads take no lock
unless the index needs catching up (each file is replaced atomically). What a
command shows or publishes is read from the memory files at that moment (the
index holds no copy of them), checked against the SHA-256 the index took of
the file (a difference is indexed again) and passed through the secret guard;
the one exception is the ``memory list`` lines (``list_lines``/``list_text``),
formatted from the index's listing fields when its rows are exactly the files
of the listing (specs/memory.md, "Derived index").

What shows memories (``list_lines``/``list_text``, ``recall``, ``context_block``,
``index_text``, and ``list``/``read`` with ``withhold=True``) shows a memory
one of whose values (as read from its file now) holds a credential with that
credential withheld, and warns naming the file (``withhold``); so do the
timeline entries of ``context_block`` and ``timeline(withhold=True)``.

A memory file that does not parse never blocks the rest: every read leaves it
out with a warning naming it and what is wrong, ``list_text``/``listing`` list
it as broken, ``stored_text`` shows it, ``forget`` removes it, and nothing
replaces or deletes it unseen (specs/memory.md, "A file that does not parse").
"""

from __future__ import annotations

import builtins
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import bundlekit._secrets as secrets
from bundlekit._terminal import printable
from bundlekit.embed.protocol import EmbedderSettings, check_model_id, semantic_installed
from bundlekit.errors import (
    ConflictError,
    FrontmatterError,
    InvalidKeyError,
    MemoryNotFoundError,
    MemoryStoreError,
    UsageError,
)
from bundlekit.memory import ranking, screen
from bundlekit.memory.backend import Backend, DirectoryBackend, InMemoryBackend
from bundlekit.memory.catalog import Catalog, CatalogUnusable
from bundlekit.memory.index import broken_fields, list_fields, render_index
from bundlekit.memory.indexer import Indexer, decode, parse_files
from bundlekit.memory.links import ensure_real_dir
from bundlekit.memory.lock import DEFAULT_LOCK_TIMEOUT
from bundlekit.memory.naming import (
    INDEX_NAME,
    TIMELINE_DIR,
    check_unique,
    filename_for,
    key_from_filename,
    memory_files,
    validate_key,
)
from bundlekit.memory.record import (
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    MemoryRecord,
    name_as_written,
    parse_memory_file,
    rendered_record,
    validate_meta,
)
from bundlekit.memory.timefmt import as_utc, format_timestamp, parse_timestamp, utc_now

if TYPE_CHECKING:
    from bundlekit.embed.protocol import Embedder
    from bundlekit.memory.semantic import Scored, VectorCache
    from bundlekit.memory.transfer import ImportReport
    from bundlekit.memory.undo import Undo

__all__ = ["Memory"]

_KNOWN = frozenset(REQUIRED_KEYS) | frozenset(OPTIONAL_KEYS)
_FIRST_RANKED = 64  # the context block first ranks this many memories, then only the pieces that could fit
_T = TypeVar("_T")


class Memory:
    """A memory tree at ``root`` (a directory, created on first write) or in memory (``root=None``).

    ``clock`` returns the current time (a naive value is taken as UTC); inject
    one for deterministic output. ``lock_timeout`` bounds the wait for the
    cross-process lock (:class:`LockTimeoutError`). Warnings (a broken index
    rebuilt) are kept in :attr:`warnings` and passed to ``on_warning``.
    ``embedder`` ranks by meaning (an ``Embedder``, or ``EmbedderSettings``
    naming one; default: ``EmbedderSettings.from_env()``, the ``wordllama``
    model when the ``semantic`` extra is installed); it is loaded on the first
    recall by meaning and kept until :meth:`close`.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        *,
        namespace: str | None = None,
        clock: Callable[[], datetime] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_warning: Callable[[str], None] | None = None,
        embedder: Embedder | EmbedderSettings | None = None,
    ) -> None:
        self.root: Path | None = Path(root) if root is not None else None
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self._vectors: VectorCache | None = None
        self._backend: Backend
        if self.root is None:
            self._backend = InMemoryBackend()
        else:
            self._backend = DirectoryBackend(self.root, lock_timeout=lock_timeout)
        self.namespace = namespace or (self.root.resolve().name if self.root is not None else "default")
        self._clock = clock or utc_now
        self.warnings: builtins.list[str] = []
        self._on_warning = on_warning
        self._index = Indexer(self._backend, warn=self._warn, timeout=lock_timeout)
        self._stale: set[str] = set()  # files output found not to be the bytes the index took (indexed again)
        # One index connection per Memory: threads (an MCP server) take turns, before the tree lock.
        self._mutex = threading.RLock()

    # -- basics ---------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``"dir"`` for a directory tree, ``"none"`` for ``Memory(None)`` (nothing persisted)."""
        return "dir" if self._backend.persistent else "none"

    def __repr__(self) -> str:
        return f"Memory({str(self.root) if self.root is not None else None!r}, namespace={self.namespace!r})"

    def _now(self) -> datetime:
        return as_utc(self._clock())

    def exists(self) -> bool:
        """Whether the tree is there to read: a directory holding ``MEMORY.md`` (``init`` writes it) or a
        memory file (a tree written by hand or by another tool); always true in memory.

        An empty or unrelated folder is no tree: a read of it is refused as one of a missing folder is,
        not answered with an empty listing (``build`` refuses it the same way).
        """
        if self.root is None:
            return True
        if (self.root / INDEX_NAME).is_file():
            return True
        try:
            with os.scandir(self.root) as entries:
                return any(
                    entry.name.endswith(".md") and not entry.name.startswith(".") and entry.is_file()
                    for entry in entries
                )
        except OSError:
            return False

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        if self._on_warning is not None:
            self._on_warning(message)

    def _read(self, op: Callable[[Catalog], _T], *, warn_broken: bool = True) -> _T:
        """Run a read on the up-to-date index (:meth:`_read_fresh`); then, with ``warn_broken``, warn
        naming each memory file that does not parse and was left out of what the read shows."""
        with self._mutex:
            result = self._read_fresh(op)
            if warn_broken:
                for name, problem in sorted(self._index.broken.items()):
                    self._warn(
                        f"{problem}; left out (`bundlekit memory show {name[:-3]}` prints the file, "
                        f"`bundlekit memory forget {name[:-3]}` removes it)"
                    )
            return result

    def _read_fresh(self, op: Callable[[Catalog], _T]) -> _T:
        """Run a read on the up-to-date index, in one snapshot (what it ranks and chooses is of one
        generation, whatever another process commits meanwhile); an index found broken mid-way is rebuilt
        and the read run again. Files the read found changed behind signatures the index vouched for (an
        edit in place that kept inode, mtime and size) are indexed again and the read run once more, so
        its choice follows what the files hold."""
        with self._mutex:
            for attempt in range(2):
                self._stale = set()
                try:
                    result = self._in_snapshot(op, self._index.refresh())
                except CatalogUnusable as exc:
                    self._index.rebuild(str(exc))
                    result = self._in_snapshot(op, self._index.refresh())
                if not self._stale or attempt:
                    return result
                try:
                    self._index.reindex(self._stale)
                except CatalogUnusable as exc:
                    self._index.rebuild(str(exc))
            return result

    @staticmethod
    def _in_snapshot(op: Callable[[Catalog], _T], catalog: Catalog) -> _T:
        with catalog.reading():
            return op(catalog)

    def _listed(self) -> builtins.list[str]:
        """The memory files of the tree's listing (sorted), which the last refresh found the index agrees
        with: the directory's, never the index's rows."""
        listing = self._index.listing
        return listing.names() if listing is not None else sorted(self._backend.scan().memories)

    def _all(self, catalog: Catalog) -> builtins.list[MemoryRecord]:
        """Every memory of the listing, sorted by key, read from its file now (no index row is shown)."""
        found = parse_files(self._backend, self._listed(), self._index.broken)
        return sorted((record for _name, _data, record in found), key=lambda r: r.key)

    def _load(self, catalog: Catalog, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        """The memories ``keys`` (chosen by the index) read from their files now, in that order, as output
        shows them (credentials withheld); one gone is left out. A file whose SHA-256 is not the one the
        index took is noted (:attr:`_stale`): its row ranked other bytes."""
        found = parse_files(self._backend, memory_files(keys), self._index.broken)
        for name, data, _record in found:
            if hashlib.sha256(data).digest() != catalog.sha256(name):
                self._stale.add(name)
        return self._shown(catalog, [record for _name, _data, record in found])

    def _records(self) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key; validates names, case-uniqueness and frontmatter of changed files."""
        return self._read(self._all)

    def _withheld(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` with its credentials withheld (a warning names the file), or itself when it holds none."""
        from bundlekit.memory.withhold import withheld_warning
        from bundlekit.memory.withhold import withhold as withheld_copy

        shown, fields = withheld_copy(record)
        if fields:
            self._warn(withheld_warning(record.filename, fields))
        return shown

    def _shown(self, catalog: Catalog | None, records: Sequence[MemoryRecord]) -> builtins.list[MemoryRecord]:
        """``records`` as output may show them: those holding a credential in a value have it withheld
        (the guard runs here, on what was just read, whatever the index says)."""
        return [r if screen.record_values_clean(r) else self._withheld(r) for r in records]

    def _keep_broken(self, names: Iterable[str], action: str) -> None:
        """Refuse (:class:`FrontmatterError`) to replace or delete a memory file of ``names`` (equal ignoring
        case) that does not parse: reads leave it out, so ``action`` would take it for absent and lose its
        text unseen. Called under the lock, after the refresh, before anything is written."""
        broken = {name.lower(): (name, problem) for name, problem in self._index.broken.items()}
        for name in sorted(names):
            found = broken.get(name.lower())
            if found is not None:
                raise FrontmatterError(
                    f"{found[1]}; {action} would replace it: fix the file, or `bundlekit memory forget "
                    f"{found[0][:-3]}` removes it"
                )

    def _where(self) -> str:
        return f"memory tree {self.root}" if self.root is not None else "the in-memory tree"

    def _stored(
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
                self._index.stored(catalog, builtins.list(records), dict(previous), builtins.list(removed))
            except CatalogUnusable as exc:
                self._index.rebuild(str(exc))
        except MemoryStoreError as exc:
            self._index.close()
            self._warn(f"{exc} (the change is written; the next command brings the index and MEMORY.md up to date)")

    # -- memories -------------------------------------------------------------

    def init(self) -> None:
        """Create the tree (directory, ``timeline/``, an index) if it does not exist yet."""
        with self._mutex, self._backend.hold():
            if self.root is not None:
                ensure_real_dir(self.root / TIMELINE_DIR)
            catalog = self._index.refresh(locked=True)
            self._index.upkeep_index(catalog, self._backend.signature(INDEX_NAME), force=True)

    def write(
        self,
        key: str,
        *,
        name: str,
        description: str,
        type: str,
        body: str,
        source: str | None = None,
        decay: str | None = None,
        tags: Sequence[str] | None = None,
        important: bool | None = None,
        expected_revision: int | None = None,
        allow_secrets: bool = False,
        extra: Mapping[str, object] | None = None,
    ) -> MemoryRecord:
        """Create or update the memory ``key``; return the record as written.

        On update ``created`` is kept and ``updated``/``revision`` move on;
        optional fields left as ``None`` keep their current value, and unknown
        frontmatter keys are carried over. ``extra`` sets unknown keys (a
        ``None`` value removes one). With ``expected_revision`` (0 means "must
        not exist yet") a stale write raises :class:`ConflictError`.

        Raises :class:`InvalidKeyError`, :class:`FrontmatterError`,
        :class:`SecretDetectedError` (the key, the text, or a parsed value),
        :class:`ConflictError`, :class:`LockTimeoutError`, :class:`UsageError`;
        on any of them nothing changes.
        """
        # Step 1: the arguments; steps 2-3: the lock and the tree.
        if isinstance(key, str):
            screen.guard_key(key)  # before any message could echo it
        filename = _check_write_args(key, body, expected_revision, extra)
        with self._mutex, self._backend.hold():
            catalog = self._index.refresh(locked=True)
            try:
                current = _current(catalog, key, self._read_record)
            except FrontmatterError as exc:  # nothing of a file that does not parse can be carried over
                raise FrontmatterError(
                    f"{exc}; the write would replace it: fix the file, or `bundlekit memory forget {key}` removes it"
                ) from exc
            # Step 4: the revision; step 5: the frontmatter.
            revision = _check_revision(current, expected_revision, filename)
            given: dict[str, Any] = {
                "source": source,
                "decay": decay,
                "tags": None if tags is None else builtins.list(tags),
                "important": important,
            }
            required = {"name": name, "description": description, "type": type}
            meta = _new_meta(current, required, given, extra, format_timestamp(self._now()), revision + 1)
            # Step 6: validate, render, guard (text and parsed values); steps 7-8: the file, then the index.
            validate_meta(meta, filename)
            record = rendered_record(key, meta, body, where=filename)
            screen.guard_record(record, f"{filename} (not written)", allow_secrets=allow_secrets, fields_first=True)
            self._backend.write(filename, record.raw.encode("utf-8"))
            self._stored(catalog, [record], {key: current})
            return record

    def read(self, key: str, *, withhold: bool = False) -> MemoryRecord | None:
        """The memory ``key``, or ``None`` if there is none. Raises :class:`FrontmatterError` for a bad file.

        Read from the file now (the index holds no copy of it).
        ``withhold=True`` gives the memory as output may show it (credentials withheld, see the module).
        """
        record = self._read_record(key)
        if record is None or not withhold or screen.record_values_clean(record):
            return record
        return self._withheld(record)

    def broken(self) -> dict[str, str]:
        """The tree's memory files that do not parse, by key: what is wrong (naming the file and line, never
        a value). Every read leaves them out with a warning; :meth:`read` raises for one, :meth:`stored_text`
        gives its text, :meth:`forget` removes it."""
        self._read(lambda _catalog: None, warn_broken=False)
        return {name[:-3]: problem for name, problem in sorted(self._index.broken.items())}

    def stored_text(self, key: str) -> str | None:
        """The memory file ``key``'s text as stored (``None`` when there is none; bytes that are not UTF-8
        replaced), with what looks like a credential withheld (a warning names the file): how a file that
        does not parse is shown."""
        from bundlekit.memory.withhold import mask, withheld_warning

        filename = filename_for(key)
        data = self._backend.read(filename)
        if data is None:
            return None
        text = data.decode("utf-8", errors="replace")
        shown = mask(text)
        if shown != text:
            self._warn(withheld_warning(filename, ["text"]))
        return shown

    def _read_record(self, key: str) -> MemoryRecord | None:
        """The memory ``key`` parsed from its file now (``None`` when there is none)."""
        filename = filename_for(key)
        data = self._backend.read(filename)
        if data is None:
            return None
        return parse_memory_file(decode(filename, data), key=key, where=filename)

    def forget(self, key: str) -> None:
        """Note ``{"type": "forgot", "key", "name", "revision", "sha256"}`` (never the body), then delete the memory and rebuild the index.

        The audit entry comes first and is guarded before anything is
        deleted: a credential in the key or name is withheld in it
        (``withhold.mask``; a file that does not parse is forgotten too, under the name its frontmatter
        still holds, else its key), and an entry the guard still refuses, or a
        timeline that cannot be appended to, refuses the forget with the
        memory in place. A delete that fails takes its entry back out of
        the timeline, so either both happen or neither (``specs/memory.md``,
        "Forget"). Raises :class:`MemoryNotFoundError` when there is no such memory.
        """
        from bundlekit.memory.timeline import day_file_for, forgot_data, make_entry
        from bundlekit.memory.undo import undo_on_failure
        from bundlekit.memory.withhold import mask

        filename = filename_for(key)
        with self._mutex, self._backend.hold():
            catalog = self._index.refresh(locked=True)
            data = self._backend.read(filename)
            if data is None:
                raise MemoryNotFoundError(
                    f"no memory {filename} in {self._where()}; `bundlekit memory list` shows the keys"
                )
            name, text, revision = _forgotten(key, data)
            entry = make_entry("forgot", forgot_data(mask(key), mask(name), text, revision), self._now())
            with undo_on_failure(self._backend) as undo:
                day = day_file_for(entry)
                undo.day_file(day, self._backend.read_timeline(day))
                self._append(entry)
                self._backend.delete(filename)
            self._stored(catalog, [], {}, [filename])

    def check(self) -> None:
        """Validate the whole tree: key names and case-uniqueness, frontmatter, timeline files, secret guard.

        The guard runs on each file's text, on each parsed value (kept by the
        index for unchanged files), on each key and on each timeline entry.
        Raises the first problem found (:class:`InvalidKeyError`,
        :class:`FrontmatterError`, :class:`MemoryStoreError`, :class:`SecretDetectedError`).
        """
        self._snapshot(strict=True)

    def _snapshot(
        self, *, strict: bool
    ) -> tuple[builtins.list[tuple[str, bytes, MemoryRecord]], builtins.list[tuple[str, bytes]]]:
        """Every memory file and timeline day, checked. A memory file that does not parse is left out with a
        warning, or with ``strict`` raises :class:`FrontmatterError` (the first by name)."""
        from bundlekit.memory.timeline import parse_day

        found = self._read(self._checked_files, warn_broken=not strict)
        if strict and self._index.broken:
            name, problem = min(self._index.broken.items())
            raise FrontmatterError(
                f"{problem}; fix the file, or `bundlekit memory forget {name[:-3]}` removes it"
            )
        for filename, _bytes, record in found:  # the whole guard on every file, as with no index at all
            screen.guard_key(record.key, f"a memory file name in {self._where()}")
            secrets.guard(record.raw, filename, can_allow=False)
            # One scan of every value (the guard then names the place); none needed when the values are
            # stretches of the text just guarded (record.memo["verbatim"], tests/memory/test_quickyaml.py).
            if not record.memo.get("verbatim") and not screen.record_values_clean(record):
                screen.guard_record(record, filename, can_allow=False)
        days: builtins.list[tuple[str, bytes]] = []
        for name in self._backend.timeline_files():
            data = self._backend.read_timeline(name)
            if data is None:
                continue
            where = f"timeline/{name}"
            entries = parse_day(name, data)
            secrets.guard(data.decode("utf-8"), where, can_allow=False)
            for number, entry in enumerate(entries, start=1):
                screen.guard_entry(entry, "", f"{where} entry {number}")
            days.append((name, data))
        return found, days

    def _checked_files(self, catalog: Catalog) -> builtins.list[tuple[str, bytes, MemoryRecord]]:
        """Every memory file of the listing, with its bytes read now and the record they parse to, as with no
        index at all: names checked (key rules, case-uniqueness), every file parsed. Each file's SHA-256 is
        checked against the one the index took; one that differs (an edit that kept the stat signature) is
        indexed again after the read."""
        names = self._listed()
        for name in names:
            key_from_filename(name)
        check_unique((name[:-3] for name in names), where=self._where())
        found = parse_files(self._backend, names, self._index.broken)
        digests = catalog.digests()
        self._stale.update(name for name, data, _r in found if hashlib.sha256(data).digest() != digests.get(name))
        return found

    def bundle_files(self, *, strict: bool = False) -> builtins.list[tuple[str, bytes]]:
        """The files a bundle carries, sorted by path: the regenerated ``MEMORY.md``, each
        ``<key>.md`` as read now, each ``timeline/YYYY-MM-DD.jsonl`` as read now. Validates first (see :meth:`check`),
        but a memory file that does not parse is left out with a warning naming it (``strict``: raises).
        """
        return self.bundle_contents(strict=strict)[0]

    def bundle_contents(
        self, *, strict: bool = False
    ) -> tuple[builtins.list[tuple[str, bytes]], builtins.list[MemoryRecord]]:
        """:meth:`bundle_files` and the records of exactly those memory files, sorted by key: parsed from the
        bytes bundled (one read of the tree: a build's index, checks and dates describe the files it packs)."""
        found, days = self._snapshot(strict=strict)
        records = sorted((record for _name, _data, record in found), key=lambda r: r.key)
        files = [(INDEX_NAME, render_index(records).encode("utf-8"))]
        files += [(name, data) for name, data, _record in found]
        files += [(f"timeline/{name}", data) for name, data in days]
        files.sort(key=lambda item: item[0])
        return files, records

    def index_text(self) -> str:
        """The index (``MEMORY.md``) as it would be regenerated now."""
        return self._read(self._index_text)

    def _index_text(self, catalog: Catalog) -> str:
        text = self._index.current_index_text(catalog)
        # A MEMORY.md written before credentials were withheld from it is rendered again.
        return text if text is not None and not secrets.find_secrets(text) else self._index.render(catalog)

    # -- timeline -------------------------------------------------------------

    def _append(self, entry: dict[str, Any]) -> None:
        from bundlekit.memory.timeline import day_file_for, encode_entry

        line = encode_entry(entry)
        screen.guard_entry(entry, line.decode("utf-8"), f"timeline entry {entry['type']!r}")
        with self._mutex, self._backend.hold():
            self._index.refresh(locked=True)  # the next command after a crash repairs the index, a note too
            self._backend.append_timeline(day_file_for(entry), line)

    def note(self, type: str, **data: Any) -> dict[str, Any]:
        """Append ``{"ts", "type", **data}`` to today's timeline file and return it.

        ``ts`` is the clock's time with milliseconds; data cannot override ``ts`` or ``type``.
        Raises :class:`UsageError` (empty type, data not JSON) or :class:`SecretDetectedError`.
        """
        from bundlekit.memory.timeline import make_entry

        entry = make_entry(type, data, self._now())
        self._append(entry)
        return entry

    def _timeline_newest_first(self, *, withhold: bool = False) -> Iterator[dict[str, Any]]:
        from bundlekit.memory.timeline import DAY_FILE_RE, parse_day

        for name in reversed(self._backend.timeline_files()):
            if not DAY_FILE_RE.fullmatch(name):
                continue
            data = self._backend.read_timeline(name)
            if data is None:
                continue
            entries = parse_day(name, data, strict=False)
            entries.sort(key=lambda e: parse_timestamp(e["ts"]))
            for entry in reversed(entries):
                yield self._withheld_entry(name, entry) if withhold else entry

    def _withheld_entry(self, day_file: str, entry: dict[str, Any]) -> dict[str, Any]:
        """``entry`` with its credentials withheld (a warning names the day file), or itself when it holds none."""
        from bundlekit.memory.withhold import withheld_warning, withhold_entry

        shown = withhold_entry(entry)
        if shown == entry:
            return entry
        self._warn(withheld_warning(f"timeline/{day_file}", ["an entry"]))
        return shown

    def timeline(self, limit: int | None = None, *, withhold: bool = False) -> builtins.list[dict[str, Any]]:
        """The most recent ``limit`` entries across days (all when ``None``), oldest first.

        ``withhold=True`` gives them as output may show them (credentials withheld, see the module).
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UsageError(f"timeline limit must be an integer of 0 or more, not {limit!r}")
        newest: builtins.list[dict[str, Any]] = []
        if limit == 0:
            return newest
        for entry in self._timeline_newest_first(withhold=withhold):
            newest.append(entry)
            if limit is not None and len(newest) >= limit:
                break
        newest.reverse()
        return newest

    def prune_timeline(self, keep_days: int) -> int:
        """Remove day files older than the last ``keep_days`` UTC days (today counts as one).

        ``keep_days=0`` removes every day. Returns the number of day files removed.
        """
        from bundlekit.memory.timeline import DAY_FILE_RE

        if isinstance(keep_days, bool) or not isinstance(keep_days, int) or keep_days < 0:
            raise UsageError(f"keep_days must be an integer of 0 or more, not {keep_days!r}")
        cutoff = (self._now() - timedelta(days=keep_days - 1)).strftime("%Y-%m-%d")
        removed = 0
        with self._mutex, self._backend.hold():
            for name in self._backend.timeline_files():
                match = DAY_FILE_RE.fullmatch(name)
                if match and (keep_days == 0 or match.group(1) < cutoff):
                    removed += self._backend.delete_timeline(name)
        return removed

    # -- retrieval --------------------------------------------------------------

    def ranking_for(self, rank: str | None = None) -> str:
        """The ranking ``rank`` names, or for None the default: ``hybrid`` when vectors can be computed here
        (an embedder given or configured, or the ``semantic`` extra installed), else ``salience``."""
        if rank is not None:
            if rank not in ranking.RANKS:
                raise UsageError(f"rank must be one of {', '.join(ranking.RANKS)}, not {rank!r}")
            return rank
        spec = self._embedder_spec if self._embedder_spec is not None else EmbedderSettings.from_env()
        if isinstance(spec, EmbedderSettings) and spec.name is None:
            return "hybrid" if semantic_installed() else "salience"
        return "hybrid"

    def embedder(self) -> Embedder:
        """The embedder this tree ranks by meaning with, loaded once (``UsageError`` naming the ``semantic``
        extra when there is none)."""
        from bundlekit.memory.semantic import open_embedder

        with self._mutex:
            if self._embedder is None:
                spec = self._embedder_spec if self._embedder_spec is not None else EmbedderSettings.from_env()
                self._embedder = open_embedder(spec, "recall by meaning (--rank semantic or hybrid)")
            return self._embedder

    def embed_tree(self) -> int:
        """Compute the vectors the index lacks (all of them for a new model); how many were computed."""
        from bundlekit.memory.semantic import VectorCache, fill

        embedder = self.embedder()
        with self._mutex:
            if self._vectors is None:
                self._vectors = VectorCache()
            catalog = self._index.refresh()
            hold = (lambda: nullcontext()) if self._index.private else self._backend.hold
            try:
                return fill(catalog, embedder, hold, self._vectors)
            except CatalogUnusable as exc:
                self._index.rebuild(str(exc))
                return fill(self._index.refresh(), embedder, hold, self._vectors)

    def export_vectors(self, files: Sequence[tuple[str, bytes]]) -> tuple[str, int, builtins.list[str], bytes]:
        """The vectors of the memory files among ``files`` (tree path, bytes: what a bundle packs), computed
        where the index lacks them: (model id, dimension, their keys in file order, the float16 vectors
        concatenated). ``EmbedderError`` when a file changed since its bytes were taken."""
        from bundlekit.memory.semantic import export, model_key

        self.embed_tree()
        embedder = self.embedder()
        digests = {name: hashlib.sha256(data).digest() for name, data in files
                   if "/" not in name and name != INDEX_NAME and name.endswith(".md")}
        keys, blob = self._read(lambda catalog: export(catalog, model_key(embedder), digests))
        return embedder.model_id, embedder.dimension, keys, blob

    def import_vectors(self, model_id: str, dimension: int, keys: Sequence[str], blob: bytes) -> int:
        """Keep ``blob`` (float16 vectors of the model ``model_id``, one per key of ``keys``) as the index's
        vectors of those memories (a bundle's, just loaded): a recall by meaning with that model then computes
        none. How many memories got one. ``ValueError`` for vectors that are not ``len(keys)`` finite ones."""
        from bundlekit.memory.semantic import restore

        model = f"{check_model_id(model_id)}#{dimension}"
        with self._mutex:
            catalog = self._index.refresh()
            with nullcontext() if self._index.private else self._backend.hold(), catalog.writing():
                count = restore(catalog, model, dimension, keys, blob)
            self._vectors = None
            return count

    def _by_meaning(
        self, catalog: Catalog, needle: str, mode: str, limit: int | None, min_similarity: float | None = None
    ) -> builtins.list[Scored]:
        from bundlekit.memory.semantic import VectorCache, rank

        if self._vectors is None:
            self._vectors = VectorCache()
        return rank(catalog, self._vectors, self.embedder(), needle, self._now().timestamp(), mode=mode, limit=limit,
                    min_similarity=min_similarity)

    def recall(
        self, query: str, limit: int = 5, *, rank: str | None = "salience", min_similarity: float | None = None
    ) -> builtins.list[ranking.RecallHit]:
        """Memories matching ``query``, best first, ranked by ``rank`` (None: :meth:`ranking_for`'s default,
        what ``memory recall`` and the MCP ``memory_recall`` tool use; the library's own default stays
        ``salience``, the same answer whatever is installed).

        ``salience``: memories containing ``query`` (case-insensitive, name/description/body), by salience x
        recency x decay (specs/memory.md); ``relevance`` multiplies that by the BM25 relevance term;
        ``semantic`` and ``hybrid`` rank every memory by meaning (``memory/semantic``: cosine similarity of
        embeddings, with BM25 for hybrid), computing the vectors the index lacks first: the nearest ``limit``,
        whatever their similarity, or with ``min_similarity`` (-1 to 1; ``UsageError`` with another ranking)
        only those at least that similar. Ties by key. The index picks the candidates; only the returned hits
        are loaded, from their files.
        """
        mode = self.ranking_for(rank)
        needle = ranking.needle(ranking.meaning_query(query) if mode in ranking.MEANING_RANKS else query, limit)
        threshold = ranking.check_min_similarity(min_similarity)
        now = self._now()
        if threshold is not None and mode not in ("semantic", "hybrid"):
            raise UsageError(f"a minimum similarity applies to recall by meaning (rank semantic or hybrid), "
                             f"not rank {mode}")
        if mode in ("semantic", "hybrid"):
            self.embed_tree()

            def by_meaning(catalog: Catalog) -> builtins.list[ranking.RecallHit]:
                scored = {s.key: s for s in self._by_meaning(catalog, needle, mode, limit, threshold)}
                records = self._load(catalog, builtins.list(scored))
                return [
                    ranking.meaning_hit(r, now, needle, score=scored[r.key].score, relevance=scored[r.key].relevance,
                                        similarity=scored[r.key].similarity, ranking=mode)
                    for r in records
                ]

            return self._read(by_meaning)

        def search(catalog: Catalog) -> builtins.list[ranking.RecallHit]:
            best = catalog.ranked(now.timestamp(), needle=needle, relevance=mode == "relevance", limit=limit)
            # Matched on the withheld text: a query cannot probe a credential it does not show.
            if best is None:  # a needle the index cannot answer exactly: scan the records
                return ranking.recall(self._shown(catalog, self._all(catalog)), query, now, limit)
            relevance = {r.key: r.relevance for r in best if r.relevance is not None} if mode == "relevance" else None
            records = self._load(catalog, [r.key for r in best])
            return ranking.recall(records, query, now, limit, relevance=relevance)

        return self._read(search)

    def context_block(self, max_tokens: int = 8192, *, query: str | None = None, rank: str | None = "salience") -> str:
        """The text injected before an LLM turn, within ``max_tokens * 4`` characters (see specs/memory.md).

        Pieces are chosen from the index's ranking columns; only those that fit are loaded. With ``query``
        the memories go in the order :meth:`recall` ranks them (``rank``, as there), then the rest by salience.
        """
        now_s = self._now().timestamp()
        mode = None if query is None else self.ranking_for(rank)
        needle = None if query is None else ranking.needle(
            ranking.meaning_query(query) if mode in ranking.MEANING_RANKS else query, 0)
        if mode in ("semantic", "hybrid"):
            self.embed_tree()

        def queried(catalog: Catalog) -> builtins.list[tuple[str, int]]:
            assert needle is not None and mode is not None
            if mode in ("semantic", "hybrid"):
                first = [(s.key, s.piece) for s in self._by_meaning(catalog, needle, mode, None)]
            else:
                found = catalog.ranked(now_s, needle=needle, relevance=mode == "relevance") or []
                first = [(r.key, r.piece) for r in found]
            seen = {key for key, _piece in first}
            return first + [(r.key, r.piece) for r in catalog.ranked(now_s) or [] if r.key not in seen]

        def assemble(catalog: Catalog) -> str:
            index_text = self._index_text(catalog)
            if needle is not None:
                order = queried(catalog)
                taken = ranking.fit_pieces(index_text, [piece for _key, piece in order], max_tokens)
                pieces = self._load(catalog, [order[i][0] for i in taken])
                return ranking.context_block(index_text, pieces, self._timeline_newest_first(withhold=True), max_tokens)
            ranked = catalog.ranked(now_s, limit=_FIRST_RANKED) or []
            taken = ranking.fit_pieces(index_text, [r.piece for r in ranked], max_tokens)
            room = ranking.largest_fitting(index_text, [r.piece for r in ranked], taken, max_tokens)
            if len(ranked) == _FIRST_RANKED and room >= 0:
                # Past the best ones only a piece that fits the room left can go in: a longer one is skipped
                # wherever it ranks (the room only shrinks), so only the shorter ones are ranked.
                first = {r.key for r in ranked}
                ranked += [r for r in catalog.ranked(now_s, longest=room) or [] if r.key not in first]
                taken = ranking.fit_pieces(index_text, [r.piece for r in ranked], max_tokens)
            # The chosen pieces read from their files now, fitted again by their lengths as read (the same
            # pieces when the index's lengths are theirs; never past the budget when they are not).
            pieces = self._load(catalog, [ranked[i].key for i in taken])
            return ranking.context_block(index_text, pieces, self._timeline_newest_first(withhold=True), max_tokens)

        return self._read(assemble)

    # -- export / import ------------------------------------------------------

    def export(self) -> dict[str, Any]:
        """The export blob: version, namespace, index, files (raw text by file name), full timeline."""
        from bundlekit.memory.transfer import build_export

        records = self._records()
        timeline = self.timeline()
        return build_export(
            self.namespace, render_index(records), {r.filename: r.raw for r in records}, timeline
        )

    def import_(
        self, blob: Mapping[str, Any], strategy: str = "merge", *, allow_secrets: bool = False
    ) -> ImportReport:
        """Import an export blob: all or nothing.

        Everything is validated first (names, frontmatter, timeline entries,
        secret guard); then, under the lock, incoming files are written:
        ``merge`` keeps the local file on conflict (same key ignoring case),
        ``replace`` takes the incoming one. Timelines are merged by timestamp
        without duplicates. A write that fails part-way puts back every file
        already changed (``memory.undo``): a case-variant key's old file, deleted
        before the new one is written, is never lost. Returns an :class:`ImportReport`.
        """
        from bundlekit.memory.transfer import STRATEGIES, ImportReport, validate_blob
        from bundlekit.memory.undo import undo_on_failure

        if strategy not in STRATEGIES:
            raise UsageError(f"import strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
        plan = validate_blob(blob, allow_secrets=allow_secrets)
        report = ImportReport()
        with self._mutex, self._backend.hold(), undo_on_failure(self._backend) as undo:
            catalog = self._index.refresh(locked=True)
            self._keep_broken((f"{key}.md" for key in plan.records), "the import")
            records = {r.key.lower(): r for r in self._all(catalog)}
            written: builtins.list[MemoryRecord] = []
            previous: dict[str, MemoryRecord | None] = {}
            removed: builtins.list[str] = []
            for key in sorted(plan.records):
                incoming = plan.records[key]
                local = records.get(key.lower())
                if local is None:
                    report.added.append(key)
                elif strategy == "merge" or (local.raw == incoming.raw and local.key == key):
                    report.kept.append(key)
                    continue
                else:
                    report.replaced.append(key)
                    if local.key != key:
                        undo.memory_file(local.filename, self._backend.read(local.filename))
                        self._backend.delete(local.filename)
                        removed.append(local.filename)
                undo.memory_file(incoming.filename, self._backend.read(incoming.filename))
                self._backend.write(incoming.filename, incoming.raw.encode("utf-8"))
                previous[key] = local if local is not None and local.key == key else None
                written.append(incoming)
                records[key.lower()] = incoming
            report.timeline_added = self._merge_timeline(plan.timeline, undo)
            self._stored(catalog, written, previous, removed)
        return report

    def _merge_timeline(self, incoming: Sequence[dict[str, Any]], undo: Undo) -> int:
        from bundlekit.memory.timeline import day_file_for, encode_entry, merge_entries, parse_day

        by_day: dict[str, builtins.list[dict[str, Any]]] = {}
        for entry in incoming:
            by_day.setdefault(day_file_for(entry), []).append(entry)
        added_total = 0
        for name in sorted(by_day):
            data = self._backend.read_timeline(name)
            existing = parse_day(name, data) if data is not None else []
            merged, added = merge_entries(existing, by_day[name])
            if added:
                undo.day_file(name, data)
                self._backend.write_timeline(name, b"".join(encode_entry(e) for e in merged))
                added_total += added
        return added_total

    # -- merging ----------------------------------------------------------------

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Hold the tree's lock (re-entrant for this thread): read, decide and write as one change
        (``bundle.merge`` reads ours, merges and calls :meth:`apply_merge` inside it)."""
        with self._mutex, self._backend.hold():
            yield

    def timeline_days(self) -> dict[str, bytes]:
        """Every timeline day file (``YYYY-MM-DD.jsonl`` -> its bytes), as stored."""
        days: dict[str, bytes] = {}
        for name in self._backend.timeline_files():
            data = self._backend.read_timeline(name)
            if data is not None:
                days[name] = data
        return days

    def apply_merge(
        self, files: Mapping[str, str | None], days: Mapping[str, bytes | None], *, allow_secrets: bool = False
    ) -> None:
        """Write a merge: memory file name -> text (``None`` deletes it), day file name -> bytes (``None`` deletes).

        All or nothing: every file and day is validated first (names, frontmatter, timeline lines, the
        secret guard, ``allow_secrets`` as for a write); then, under the lock, each change is journalled
        (``memory.undo``) so a failing step puts every file back.
        """
        from bundlekit.memory.timeline import parse_day
        from bundlekit.memory.undo import undo_on_failure

        incoming: dict[str, MemoryRecord] = {}
        for name, text in files.items():
            screen.guard_key(name, "a merged file name")
            key = key_from_filename(name)
            if text is not None:
                record = parse_memory_file(text, key=key, where=f"merged {name}")
                screen.guard_record(record, f"merged {name}", allow_secrets=allow_secrets)
                incoming[name] = record
        for name, data in days.items():
            if data is not None:
                for number, entry in enumerate(parse_day(name, data), start=1):
                    screen.guard_entry(entry, "", f"merged timeline/{name} entry {number}")
        with self._mutex, self._backend.hold(), undo_on_failure(self._backend) as undo:
            catalog = self._index.refresh(locked=True)
            self._keep_broken(files, "the merge")
            current = {r.filename: r for r in self._all(catalog)}
            written: builtins.list[MemoryRecord] = []
            previous: dict[str, MemoryRecord | None] = {}
            removed: builtins.list[str] = []
            for name in sorted(files):
                undo.memory_file(name, self._backend.read(name))
                merged = incoming.get(name)
                if merged is None:
                    self._backend.delete(name)
                    removed.append(name)
                    continue
                self._backend.write(name, merged.raw.encode("utf-8"))
                written.append(merged)
                previous[merged.key] = current.get(name)
            for name in sorted(days):
                data = days[name]
                undo.day_file(name, self._backend.read_timeline(name))
                if data is None:
                    self._backend.delete_timeline(name)
                else:
                    self._backend.write_timeline(name, data)
            self._stored(catalog, written, previous, removed)

    def list(self, *, withhold: bool = False) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key. Raises on an invalid file name or frontmatter.

        ``withhold=True`` gives the memories as output may show them (credentials withheld, see the module).
        """
        if not withhold:
            return self._records()
        return self._read(lambda catalog: self._shown(catalog, self._all(catalog)))

    def listing(self) -> tuple[builtins.list[MemoryRecord], dict[str, str]]:
        """What ``memory list --json`` shows: every memory as output may show it (credentials withheld), and
        the files that do not parse by key with what is wrong (:meth:`broken`), with no warning for them."""
        records = self._read(lambda catalog: self._shown(catalog, self._all(catalog)), warn_broken=False)
        return records, {name[:-3]: problem for name, problem in sorted(self._index.broken.items())}

    def list_lines(self) -> builtins.list[str]:
        """Every memory's ``memory list`` line (key, type, revision, updated, name — description; tab-separated),
        sorted by key: formatted now from the listing fields of the index's rows, shown only when the rows
        are exactly the files of the tree's listing (else made from the files); a line that shows a credential
        is made from its file with it withheld; terminal control characters escaped as
        ``bundlekit._terminal.printable`` escapes them. Raises as :meth:`list`."""
        text = self.list_text()
        return text.split("\n") if text else []

    def list_text(self) -> str:
        """:meth:`list_lines` joined by newlines (no newline after the last; ``""`` for an empty tree): the
        listing as ``memory list`` prints it, read as one string (a line holds no newline: it is escaped)."""
        return self._read(self._list_text, warn_broken=False)

    def _list_text(self, catalog: Catalog) -> str:
        """The listing from the index's listing fields when its rows are exactly the files of the tree's
        listing (which the refresh found the index fresh against), else from the files. A line that shows a
        credential (flagged when its file was indexed, or found now) is made from its file, withheld."""
        listing = self._index.listing
        names = (listing if listing is not None else self._backend.scan()).names()
        files, lines, flagged = catalog.listed()
        if files != names:
            return self._list_text_of_files(catalog)  # a row without its file, or a file without its row
        text = "\n".join(lines)
        if text.count("\n") != len(files) - 1 and files:  # a field with a line break (the files' never have one:
            return self._list_text_of_files(catalog)  # validate_meta), put there by hand to forge a row
        wanted = set(flagged)
        if secrets.find_secrets(text):
            wanted.update(line.split("\t", 1)[0] + ".md" for line in lines if secrets.find_secrets(line))
        if wanted:
            found = {name: (data, record) for name, data, record in parse_files(self._backend, sorted(wanted))}
            made: builtins.list[str] = []
            for line in lines:
                file = line.split("\t", 1)[0] + ".md"
                if file not in wanted:
                    made.append(line)
                elif file in found:  # else gone since the listing
                    data, record = found[file]
                    if hashlib.sha256(data).digest() != catalog.sha256(file):
                        self._stale.add(file)
                    made.append(list_fields(self._withheld(record)))
            text = "\n".join(made)
        # Escaped once: the fields are single lines, so the listing escaped is its lines escaped (list_line).
        return printable(text)

    def _list_text_of_files(self, catalog: Catalog) -> str:
        records = self._all(catalog)
        lines = [list_fields(r) for r in records]
        text = "\n".join(lines)
        if secrets.find_secrets(text):  # the lines showing a credential, made again from the memory withheld
            lines = [
                list_fields(self._withheld(r)) if secrets.find_secrets(line) else line
                for r, line in zip(records, lines, strict=True)
            ]
        if self._index.broken:  # a file that does not parse is listed as broken, with what is wrong, in key order
            lines += [broken_fields(name[:-3], problem) for name, problem in self._index.broken.items()]
            lines.sort(key=lambda line: line.split("\t", 1)[0])
        text = "\n".join(lines)
        # Escaped once: the fields are single lines, so the listing escaped is its lines escaped (list_line).
        return printable(text)

    def close(self) -> None:
        """Close the index database (a later call opens it again) and let the embedder go."""
        with self._mutex:
            self._index.close()
            self._vectors = None
            if self._embedder is not None and self._embedder is not self._embedder_spec:
                self._embedder.close()
            self._embedder = None


def _forgotten(key: str, data: bytes) -> tuple[str, str, int | None]:
    """What a forget of the memory file ``key`` holding ``data`` records: its name, text and revision; for a
    file that does not parse, the name its frontmatter still holds (else the key), its text, no revision."""
    filename = filename_for(key)
    try:
        record = parse_memory_file(decode(filename, data), key=key, where=filename)
    except FrontmatterError:
        text = data.decode("utf-8", errors="replace")
        return name_as_written(text) or key, text, None
    return record.name, record.raw, record.revision


def _check_write_args(
    key: str, body: object, expected_revision: int | None, extra: Mapping[str, object] | None
) -> str:
    """Step 1 of a write: the key, ``expected_revision``, the body, ``extra``; returns the file name."""
    validate_key(key)
    filename = filename_for(key)
    if expected_revision is not None and (
        isinstance(expected_revision, bool) or not isinstance(expected_revision, int) or expected_revision < 0
    ):
        raise UsageError(f"expected_revision must be an integer of 0 or more, not {expected_revision!r}")
    if not isinstance(body, str):
        raise UsageError(f"the body of {filename} must be a string")
    if extra:
        clash = sorted(k for k in extra if k in _KNOWN)
        if clash:
            raise UsageError(f"extra cannot set the known key(s) {', '.join(clash)}; pass them as arguments")
    return filename


def _current(
    catalog: Catalog, key: str, read: Callable[[str], MemoryRecord | None]
) -> MemoryRecord | None:
    """Step 3: the stored memory ``key`` read from its file, if any; a key equal to it ignoring case is refused."""
    other = catalog.same_key_other_case(key)
    if other is not None:
        raise InvalidKeyError(
            f"memory key {key!r} differs only in case from the existing {other!r}; use that key or another name"
        )
    return read(key)


def _check_revision(current: MemoryRecord | None, expected: int | None, filename: str) -> int:
    """Step 4: the current revision (0 when new), which ``expected`` must match when given."""
    revision = current.revision if current is not None else 0
    if expected is not None and expected != revision:
        state = f"is at revision {revision}" if current is not None else "does not exist"
        raise ConflictError(
            f"{filename} {state}, not revision {expected}: someone else changed it; read it again and retry"
        )
    return revision


def _new_meta(
    current: MemoryRecord | None,
    required: Mapping[str, object],
    given: Mapping[str, object],
    extra: Mapping[str, object] | None,
    now: str,
    revision: int,
) -> dict[str, Any]:
    """Step 5: the frontmatter.

    ``required`` (name, description, type) from the arguments; ``created``
    kept, else now; ``updated`` now; ``revision``; each ``given`` optional field replaces
    the stored value, or keeps it when ``None``; unknown stored keys carried
    over in order; ``extra`` last (``None`` removes a key).
    """
    meta: dict[str, Any] = dict(required)
    meta["created"] = current.meta["created"] if current is not None else now
    meta["updated"] = now
    meta["revision"] = revision
    for field_name, value in given.items():
        if value is not None:
            meta[field_name] = value
        elif current is not None and field_name in current.meta:
            meta[field_name] = current.meta[field_name]
    if current is not None:
        meta.update((k, v) for k, v in current.meta.items() if k not in _KNOWN)
    for field_name, extra_value in (extra or {}).items():
        if extra_value is None:
            meta.pop(field_name, None)
        else:
            meta[field_name] = extra_value
    return meta
