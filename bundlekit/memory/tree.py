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
made from the index's listing fields when its rows are exactly the files
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

``Memory`` is a facade (as httpx's ``Client`` is) that delegates: the state and reads every operation
shares live in ``access.TreeAccess``; recall and the context block are plain functions over the index
(``recall``, ``context``); recall by meaning is ``Memory.meaning`` (``meaning.Meaning``: the embedder and the
vectors, a bundle's vectors exported and restored); what the bundle and merge code read and write as one
change is ``with memory.transaction() as tx:`` (``transaction.Transaction``: ``files``, ``contents``,
``days``, ``records``, ``apply``).
"""

from __future__ import annotations

import builtins
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import bundlekit._secrets as secrets
from bundlekit._marks import LINE_SEP, marks_utf8
from bundlekit._redact import shown_as_is
from bundlekit._terminal import printable
from bundlekit.embed.protocol import EmbedderSettings
from bundlekit.errors import (
    ConflictError,
    FrontmatterError,
    InvalidKeyError,
    MemoryFileTooLarge,
    MemoryNotFoundError,
    UsageError,
)
from bundlekit.memory import listfile, ranking, screen
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.backend import Backend, Scan
from bundlekit.memory.catalog import Catalog
from bundlekit.memory.context import context_block
from bundlekit.memory.filesize import check_size, remedy
from bundlekit.memory.index import broken_fields, list_fields, render_index
from bundlekit.memory.indexer import decode, parse_files
from bundlekit.memory.links import ensure_real_dir
from bundlekit.memory.lock import DEFAULT_LOCK_TIMEOUT
from bundlekit.memory.meaning import Meaning
from bundlekit.memory.naming import INDEX_NAME, TIMELINE_DIR, filename_for, validate_key
from bundlekit.memory.record import (
    OPTIONAL_KEYS,
    REQUIRED_KEYS,
    MemoryRecord,
    name_as_written,
    parse_memory_file,
    rendered_record,
    validate_meta,
)
from bundlekit.memory.recall import recall
from bundlekit.memory.timefmt import format_timestamp, utc_now
from bundlekit.memory.transaction import Transaction
from bundlekit.memory.usage import note_read

if TYPE_CHECKING:
    from bundlekit.embed.protocol import Embedder
    from bundlekit.memory.transfer import ImportReport
    from bundlekit.memory.undo import Undo

__all__ = ["Memory"]

_KNOWN = frozenset(REQUIRED_KEYS) | frozenset(OPTIONAL_KEYS)


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
        self._tree = TreeAccess(self.root, clock=clock or utc_now, lock_timeout=lock_timeout, on_warning=on_warning)
        self.namespace = namespace or (self.root.resolve().name if self.root is not None else "default")
        self.warnings: builtins.list[str] = self._tree.warnings
        #: Recall by meaning: the embedder, the vectors it ranks by, the bundle's vectors (``memory/meaning``).
        self.meaning = Meaning(self._tree, embedder)
        # The parts every operation shares, under the names the lock and index tests reach them by.
        self._backend: Backend = self._tree.backend
        self._index = self._tree.index
        self._mutex = self._tree.mutex

    # -- basics ---------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``"dir"`` for a directory tree, ``"none"`` for ``Memory(None)`` (nothing persisted)."""
        return "dir" if self._backend.persistent else "none"

    def __repr__(self) -> str:
        return f"Memory({str(self.root) if self.root is not None else None!r}, namespace={self.namespace!r})"

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

    def _records(self) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key; validates names, case-uniqueness and frontmatter of changed files."""
        return self._tree.read(self._tree.all_records, whole=True)

    # -- memories -------------------------------------------------------------

    def init(self) -> None:
        """Create the tree (directory, ``timeline/``, an index) if it does not exist yet."""
        with self._mutex, self._backend.hold():
            if self.root is not None:
                ensure_real_dir(self.root / TIMELINE_DIR)
            catalog = self._index.refresh(locked=True, trusted=True)
            if self._index.upkeep_index(catalog, self._backend.signature(INDEX_NAME), force=True):
                self._index.recorded_own_writes(catalog)

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
            catalog = self._index.refresh(locked=True, trusted=True)
            try:
                current = _current(catalog, key, self._tree.read_record, self._index.listing)
            except FrontmatterError as exc:  # nothing of a file that does not parse can be carried over
                raise FrontmatterError(
                    f"{exc}; the write would replace it: {remedy(key, str(exc))}"
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
            meta = _new_meta(current, required, given, extra, format_timestamp(self._tree.now()), revision + 1)
            # Step 6: validate, render, guard (text and parsed values); steps 7-8: the file, then the index.
            validate_meta(meta, filename)
            record = rendered_record(key, meta, body, where=filename)
            screen.guard_record(record, f"{filename} (not written)", allow_secrets=allow_secrets, fields_first=True)
            self._backend.write(filename, record.raw.encode("utf-8"))
            self._tree.stored(catalog, [record], {key: current})
            return record

    def read(self, key: str, *, withhold: bool = False, used: bool = False) -> MemoryRecord | None:
        """The memory ``key``, or ``None`` if there is none. Raises :class:`FrontmatterError` for a bad file.

        Read from the file now (the index holds no copy of it).
        ``withhold=True`` gives the memory as output may show it (credentials withheld, see the module).
        ``used=True``: the agent reads it (``memory show``, the MCP ``memory_show`` tool and ``memory://``
        resource): when a recall returned it within the hour before, its usage boost grows (``memory/usage``).
        """
        record = self._tree.read_record(key)
        if record is not None and used:
            note_read(self._tree, key)
        if record is None or not withhold or screen.record_values_clean(record):
            return record
        return self._tree.withheld(record)

    def broken(self) -> dict[str, str]:
        """The tree's memory files that do not parse, by key: what is wrong (naming the file and line, never
        a value). Every read leaves them out with a warning; :meth:`read` raises for one, :meth:`stored_text`
        gives its text, :meth:`forget` removes it."""
        self._tree.read(lambda _catalog: None, warn_broken=False, whole=True)
        return {name[:-3]: problem for name, problem in sorted(self._index.broken.items())}

    def stored_text(self, key: str) -> str | None:
        """The memory file ``key``'s text as stored (``None`` when there is none; bytes that are not UTF-8
        replaced), with what looks like a credential withheld (a warning names the file): how a file that
        does not parse is shown. One over the size bound is never read whole: :class:`MemoryFileTooLarge`."""
        from bundlekit.memory.withhold import mask, withheld_warning

        filename = filename_for(key)
        data = self._backend.read(filename)
        if data is None:
            return None
        text = data.decode("utf-8", errors="replace")
        shown = mask(text)
        if shown != text:
            self._tree.warn(withheld_warning(filename, ["text"]))
        return shown

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
            catalog = self._index.refresh(locked=True, trusted=True)
            found = self._forgotten(key)
            if found is None:
                raise MemoryNotFoundError(
                    f"no memory {filename} in {self._tree.where()}; `bundlekit memory list` shows the keys"
                )
            name, digest, revision = found
            entry = make_entry("forgot", forgot_data(mask(key), mask(name), digest, revision), self._tree.now())
            with undo_on_failure(self._backend) as undo:
                day = day_file_for(entry)
                undo.day_file(day, self._backend.read_timeline(day))
                self._tree.append(entry, refreshed=True)
                self._backend.delete(filename)
            self._tree.stored(catalog, [], {}, [filename])

    def _forgotten(self, key: str) -> tuple[str, str, int | None] | None:
        """What a forget of the memory file ``key`` records (``None`` when there is none): its name, the SHA-256
        of its text (``timeline.version_digest``) and its revision (``_forgotten_text``); for a file over the
        size bound, never read whole, its key and the SHA-256 of its bytes read in pieces."""
        from bundlekit.memory.timeline import version_digest

        filename = filename_for(key)
        try:
            data = self._backend.read(filename)
        except MemoryFileTooLarge:
            digest = self._backend.digest(filename)
            return None if digest is None else (key, digest, None)
        if data is None:
            return None
        name, text, revision = _forgotten_text(key, data)
        return name, version_digest(text), revision

    def check(self) -> None:
        """Validate the whole tree: key names and case-uniqueness, frontmatter, timeline files, secret guard.

        The guard runs on each file's text, on each parsed value (kept by the
        index for unchanged files), on each key and on each timeline entry.
        Raises the first problem found (:class:`InvalidKeyError`,
        :class:`FrontmatterError`, :class:`MemoryStoreError`, :class:`SecretDetectedError`).
        """
        self._tree.snapshot(strict=True)

    def bundle_files(self, *, strict: bool = False) -> builtins.list[tuple[str, bytes]]:
        """The files a bundle carries, sorted by path: the regenerated ``MEMORY.md``, each
        ``<key>.md`` as read now, each ``timeline/YYYY-MM-DD.jsonl`` as read now. Validates first (see :meth:`check`),
        but a memory file that does not parse is left out with a warning naming it (``strict``: raises).
        """
        return Transaction(self._tree).files(strict=strict)

    @contextmanager
    def transaction(self, *, lock: bool = True) -> Iterator[Transaction]:
        """What the bundle and merge code read and write as one change (``memory/transaction``): under the
        tree's lock (re-entrant for this thread), so ``bundle.merge`` reads ours, merges and applies inside it;
        ``lock=False`` for a read that takes no lock (a build reads a tree it may not be able to write)."""
        with self._tree.whole_tree():  # a bundle or a merge reads and hands on the tree: it is listed
            if not lock:
                yield Transaction(self._tree)
                return
            with self._mutex, self._backend.hold(), self._index.held_check():  # the tree listed once, not per read
                yield Transaction(self._tree)

    def index_text(self) -> str:
        """The index (``MEMORY.md``) as it would be regenerated now."""
        return self._tree.read(self._tree.index_text)

    # -- timeline -------------------------------------------------------------

    def note(self, type: str, **data: Any) -> dict[str, Any]:
        """Append ``{"ts", "type", **data}`` to today's timeline file and return it.

        ``ts`` is the clock's time with milliseconds; data cannot override ``ts`` or ``type``.
        Raises :class:`UsageError` (empty type, data not JSON) or :class:`SecretDetectedError`.
        """
        from bundlekit.memory.timeline import make_entry

        entry = make_entry(type, data, self._tree.now())
        self._tree.append(entry)
        return entry

    def timeline(self, limit: int | None = None, *, withhold: bool = False) -> builtins.list[dict[str, Any]]:
        """The most recent ``limit`` entries across days (all when ``None``), oldest first.

        ``withhold=True`` gives them as output may show them (credentials withheld, see the module).
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UsageError(f"timeline limit must be an integer of 0 or more, not {limit!r}")
        newest: builtins.list[dict[str, Any]] = []
        if limit == 0:
            return newest
        for entry in self._tree.newest_first(withhold=withhold):
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
        cutoff = (self._tree.now() - timedelta(days=keep_days - 1)).strftime("%Y-%m-%d")
        removed = 0
        with self._mutex, self._backend.hold():
            for name in self._backend.timeline_files():
                match = DAY_FILE_RE.fullmatch(name)
                if match and (keep_days == 0 or match.group(1) < cutoff):
                    removed += self._backend.delete_timeline(name)
        return removed

    # -- retrieval --------------------------------------------------------------

    def ranking_for(self, rank: str | None = None) -> str:
        """The ranking ``rank`` names, or for None the default (``Meaning.ranking_for``): ``hybrid`` when vectors
        can be computed here (an embedder given or configured, or the ``semantic`` extra installed), else
        ``salience``."""
        return self.meaning.ranking_for(rank)

    def recall(
        self, query: str, limit: int = 5, *, rank: str | None = "salience", min_similarity: float | None = None,
        usage: bool = False,
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
        are loaded, from their files. ``usage`` (what ``memory recall`` and the MCP tool use unless told not
        to): a memory the agent read after an earlier recall returned it ranks a little higher (relevance,
        semantic, hybrid; ``memory/usage``), and these hits are noted as returned.
        """
        return recall(self._tree, self.meaning, query, limit, rank=rank, min_similarity=min_similarity, usage=usage)

    def context_block(
        self, max_tokens: int = 8192, *, query: str | None = None, rank: str | None = "salience", usage: bool = False
    ) -> str:
        """The text injected before an LLM turn, within ``max_tokens * 4`` characters (see specs/memory.md).

        Pieces are chosen from the index's ranking columns; only those that fit are loaded. With ``query``
        the memories go in the order :meth:`recall` ranks them (``rank`` and ``usage``, as there), then the
        rest by salience.
        """
        return context_block(self._tree, self.meaning, max_tokens, query=query, rank=rank, usage=usage)

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
            self._tree.keep_broken((f"{key}.md" for key in plan.records), "the import")
            records = {r.key.lower(): r for r in self._tree.all_records(catalog)}
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
            self._tree.stored(catalog, written, previous, removed)
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
                encoded = b"".join(encode_entry(e) for e in merged)
                check_size(len(encoded), f"timeline/{name}")  # never a day every reader would leave out
                undo.day_file(name, data)
                self._backend.write_timeline(name, encoded)
                added_total += added
        return added_total

    def list(self, *, withhold: bool = False) -> builtins.list[MemoryRecord]:
        """Every memory, sorted by key. Raises on an invalid file name or frontmatter.

        ``withhold=True`` gives the memories as output may show them (credentials withheld, see the module).
        """
        if not withhold:
            return self._records()
        return self._tree.read(lambda catalog: self._tree.shown(catalog, self._tree.all_records(catalog)), whole=True)

    def listing(self) -> tuple[builtins.list[MemoryRecord], dict[str, str]]:
        """What ``memory list --json`` shows: every memory as output may show it (credentials withheld), and
        the files that do not parse by key with what is wrong (:meth:`broken`), with no warning for them."""
        records = self._tree.read(lambda catalog: self._tree.shown(catalog, self._tree.all_records(catalog)),
                                  warn_broken=False, whole=True)
        return records, {name[:-3]: problem for name, problem in sorted(self._index.broken.items())}

    def list_lines(self) -> builtins.list[str]:
        """Every memory's ``memory list`` line (key, type, revision, updated, name — description; tab-separated),
        sorted by key: the key from the file name and the index row's ``line``, shown only when the rows
        are exactly the files of the tree's listing (else made from the files); a line that shows a credential
        is made from its file with it withheld; terminal control characters escaped as
        ``bundlekit._terminal.printable`` escapes them. Raises as :meth:`list`."""
        text = self.list_text()
        return text.split("\n") if text else []

    @overload
    def list_text(self, *, printed: Literal[False] = False) -> str: ...

    @overload
    def list_text(self, *, printed: bool) -> str | bytes: ...

    def list_text(self, *, printed: bool = False) -> str | bytes:
        """:meth:`list_lines` joined by newlines (no newline after the last; ``""`` for an empty tree): the
        listing as ``memory list`` prints it, read as one string (a line holds no newline: it is escaped).
        ``printed``: as a front end prints it, the UTF-8 bytes of a kept listing when every output check
        would leave them as they are (``_redact.shown_as_is``: printed without decoding 15 MB at 100,000
        memories and encoding it again), else the text."""
        listing = self._tree.read(self._list_text, warn_broken=False)
        return listing.decode("utf-8") if isinstance(listing, bytes) and not printed else listing

    def _list_text(self, catalog: Catalog) -> str | bytes:
        """The listing from the index's listing fields when its rows are exactly the files of the tree's
        listing (which the refresh found the index fresh against), as an earlier list of this index state kept
        them or as SQLite joins them (:meth:`_joined_lines`), else from the files. A line that shows a credential
        (flagged when its file was indexed, or found now) is made from its file, withheld. Kept lines no check
        changes (none flagged, :func:`shown_as_is`) are given as their bytes. Lines holding U+2028 or U+2029 are
        not shown: the listing is made from the files (:data:`LINE_SEP`: a line made from a file never holds one,
        ``validate_meta``, so the lines are kept or joined lines changed by hand, whose next "row" to a reader
        splitting lines as ``str.splitlines`` does could show a key that is not a file's)."""
        joined = self._joined_lines(catalog)
        scanned = None if joined is None else marks_utf8(joined[0])  # (remembered: the lines were checked so)
        if joined is None or scanned is None or scanned[0] & LINE_SEP:
            return self._list_text_of_files(catalog)
        body, flagged = joined
        if not flagged and shown_as_is(body):
            return body  # the text printable and the secret scan would give back unchanged, as its bytes
        text = body.decode("utf-8")
        wanted = set(flagged)
        if secrets.find_secrets(text):
            wanted.update(line.split("\t", 1)[0] + ".md" for line in text.split("\n") if secrets.find_secrets(line))
        if wanted:
            lines = text.split("\n")
            found = {name: (data, record) for name, data, record in parse_files(self._backend, sorted(wanted))}
            made: builtins.list[str] = []
            for line in lines:
                file = line.split("\t", 1)[0] + ".md"
                if file not in wanted:
                    made.append(line)
                elif file in found:  # else gone since the listing
                    data, record = found[file]
                    if hashlib.sha256(data).digest() != catalog.stat.sha256(file):
                        self._tree.stale.add(file)
                    made.append(list_fields(self._tree.withheld(record)))
            text = "\n".join(made)
        # Escaped once: the fields are single lines, so the listing escaped is its lines escaped (list_line).
        return printable(text)

    def _joined_lines(self, catalog: Catalog) -> tuple[bytes, builtins.list[str]] | None:
        """The listing's lines (their UTF-8) and the files flagged as showing a credential: kept from an earlier
        ``memory list`` of this index state (``listfile``: only when its lines are exactly the listing's files,
        key for key), else joined by SQLite from the rows (and kept), when the rows are exactly the files of the
        tree's listing, one UTF-8 line each; None when they are not (the caller makes the listing from the
        files)."""
        listing = self._index.listing
        scan = listing if listing is not None else self._backend.scan()
        packed = scan.packed()
        gen, written_ns = catalog.db.state("gen"), catalog.db.state("written_ns")
        # Where the lines of this index state are kept, the state and the files they list; None: none kept.
        keep = (None if catalog.path is None or packed is None or gen is None or written_ns is None
                else (catalog.path.parent / listfile.LISTING_FILE, (gen, written_ns), packed[0]))
        if keep is not None:
            found = listfile.read(*keep)
            if found is not None:
                return found
        files, count, body, flagged = catalog.listing.listed()
        if not _same_files(scan, files, count):
            return None  # a row without its file, or a file without its row
        if body is None:
            return None  # a row with no line, or a key not its file's: put there by hand
        scanned = marks_utf8(body)
        if scanned is None or (scanned[1] != count - 1 and count):  # bytes not UTF-8, or a line break (the
            return None  # files' never have one: validate_meta): put there by hand
        if keep is not None:
            path, stamp, names = keep
            listfile.write(path, stamp, body, flagged, names)
        return body, flagged

    def _list_text_of_files(self, catalog: Catalog) -> str:
        records = self._tree.all_records(catalog)
        lines = [list_fields(r) for r in records]
        text = "\n".join(lines)
        if secrets.find_secrets(text):  # the lines showing a credential, made again from the memory withheld
            lines = [
                list_fields(self._tree.withheld(r)) if secrets.find_secrets(line) else line
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
            self.meaning.close()


def _same_files(listing: Scan, files: bytes, count: int) -> bool:
    """Whether ``files`` (``count`` names sorted as ``Scan.names`` sorts, UTF-8, NUL between) are exactly the files
    of ``listing``: compared as the one packed string, not 100,000 decoded names. (Equal counts and equal joins:
    no name holds a NUL.)"""
    if count != len(listing):
        return False
    packed = listing.packed()
    if packed is None:
        return "\0".join(listing.names()).encode("utf-8", "surrogateescape") == files
    return files == packed[0]


def _forgotten_text(key: str, data: bytes) -> tuple[str, str, int | None]:
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
    catalog: Catalog, key: str, read: Callable[[str], MemoryRecord | None], listing: Scan | None = None
) -> MemoryRecord | None:
    """Step 3: the stored memory ``key`` read from its file, if any; a key equal to it ignoring case is refused
    (looked up in ``listing``, the tree's listing the refresh just checked the index against, when given)."""
    if listing is not None:
        found = listing.other_case(filename_for(key))
        other = None if found is None else found[:-3]
    else:
        other = catalog.listing.same_key_other_case(key)
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
