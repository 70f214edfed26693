"""The derived index of a memory tree: SQLite tables of each memory file's parsed form and search text.

Stored in ``<tree>/.bundlekit/index.sqlite`` (WAL mode, so ``-wal`` and ``-shm``
sit beside it), in the tree's one hidden folder with the lock; a tree in memory
gets a private in-memory database. It is a cache, never the source of truth:
``indexer`` checks it against the files on every command and this module only
stores and queries (specs/memory.md, "Derived index").

Tables:

* ``memory`` (narrow, read whole by every command): one row per memory file:
  its name, key, frontmatter ``name``, ``description`` and ``type`` (what an
  index line shows) and stat signature (inode, mtime in ns, size), ``racy``
  (modified so recently that a same-size edit within the file system's timestamp
  tick would keep the signature: such rows are compared by content until they
  settle), the ranking basis (salience, ``updated`` in POSIX seconds, decay
  horizon), the context-block piece length and whether a parsed value matches a
  secret rule, and its ``memory list`` line (:func:`list_line`);
* ``content`` (read only for the memories a command returns): the parsed
  frontmatter as JSON when JSON holds it exactly (else ``NULL``: the raw text is
  parsed again on use), the body and the raw text;
* ``search``: name, description and body case-folded (``str.casefold``, as
  recall folds the query), an FTS5 table with the trigram tokenizer
  (``case_sensitive 1``: the folding is ours), or a plain table scanned with
  ``instr`` where this SQLite has no FTS5;
* ``state``: ``gen`` (bumped by every change of ``memory``), the signature
  and generation of the ``MEMORY.md`` last written from it, and a compact copy
  of every row's signature (``sigs``: a base, and ``sigs_delta``: the rows
  changed since, a removed one with size -1) and of the racy rows'
  (``racy``), blobs (:func:`_pack`) with the generation they are of
  (``sigs_gen``), updated in the transaction that changes the rows (the base
  is written again once more than :data:`_DELTA_MAX` rows changed). Checking
  an unchanged tree reads them (one small read) instead of every row; where
  ``sigs_gen`` is not ``gen`` (missing, or rows changed by a program that does
  not keep them), or a blob cannot be decoded, the rows are read instead (and
  the next change writes a new base).

A file of another schema version or application, or one SQLite cannot read,
raises :class:`CatalogUnusable`; the indexer then deletes and rebuilds it.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import sqlite3
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from bundlekit._terminal import printable
from bundlekit.errors import MemoryStoreError
from bundlekit.memory.ranking import HALF_LIFE, best_first, score_of
from bundlekit.memory.record import MEMORY_TYPES, MemoryRecord, parse_memory_file

if TYPE_CHECKING:
    from bundlekit.memory.backend import Scan

__all__ = [
    "APPLICATION_ID",
    "CATALOG_FILE",
    "SCHEMA_VERSION",
    "Catalog",
    "CatalogUnavailable",
    "CatalogUnusable",
    "Ranked",
    "catalog_files",
    "fts5_available",
    "list_line",
]

SCHEMA_VERSION = 5
APPLICATION_ID = 0x626B6D69  # "bkmi"
CATALOG_FILE = "index.sqlite"
_SIDE_FILES = ("", "-wal", "-shm", "-journal")
TRIGRAM = 3  # FTS5's trigram tokenizer matches substrings of at least 3 characters
# Errors that say "busy", not "broken": never a reason to rebuild.
_TRANSIENT = {"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "SQLITE_FULL", "SQLITE_IOERR"}
_NOT_HERE = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH"}

Signature = tuple[int, int, int]
HALF_LIFE_S = HALF_LIFE.total_seconds()
NUL_STAND_IN = "\ufffe"  # a Unicode noncharacter
_RECORD_COLUMNS = "m.key, c.meta, c.body, c.raw, m.salience, m.updated, m.horizon, m.piece"
_RECORDS = "memory m JOIN content c ON c.id = m.id"
# ranking.score_of in SQL, from a row's salience s, age in seconds and decay horizon h (parameters: 2 half-lives)
_SCORE = (
    "s * pow(0.5, age / ?) * (CASE WHEN h IS NULL OR age - h <= 0 THEN 1.0 ELSE pow(0.5, (age - h) / ?) END)"
)
_DELTA_MAX = 512  # changed rows kept beside the compact signature copy before it is written whole again
_GONE: Signature = (0, 0, -1)  # a removed row among those changes (no file has a negative size)
_TOP = 64  # recall first looks for its hits among this many best memories (see Catalog._best_of_top)
# The stored list lines in key order, joined: the aggregate's own ORDER BY where SQLite has it (3.44); before,
# the order of an ORDER BY subquery, which SQLite's aggregate keeps (not flattened into an aggregate query).
_LIST_TEXT = (
    "SELECT group_concat(line, char(10) ORDER BY key) FROM memory"
    if sqlite3.sqlite_version_info >= (3, 44, 0)
    else "SELECT group_concat(line, char(10)) FROM (SELECT line FROM memory ORDER BY key)"
)


class CatalogUnusable(Exception):
    """The index file is corrupt, truncated, or of another version or program: rebuild it."""


class CatalogUnavailable(OSError):
    """The index file cannot be opened or written here (permissions, a read-only tree)."""


class _Tracked:
    """A write transaction's changes to the compact signature copy: the stored changes it adds to
    (``None``: no usable copy, the base is read from the rows at the end), the racy rows, the rows changed.
    (A plain class: a dataclass costs a few hundred microseconds at import, on every command.)"""

    __slots__ = ("changed", "delta", "racy")

    def __init__(self, delta: dict[str, Signature] | None, racy: dict[str, Signature]) -> None:
        self.delta = delta
        self.racy = racy
        self.changed: dict[str, Signature] = {}


class Ranked(NamedTuple):
    """One memory in rank order: its key, its context-block piece length, its relevance term (if asked)."""

    key: str
    piece: int
    relevance: float | None


@functools.cache
def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 with the trigram tokenizer (``case_sensitive`` option)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='trigram case_sensitive 1')")
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return True


def _has_pow(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has the math functions (``pow``) to rank in SQL."""
    try:
        conn.execute("SELECT pow(0.5, 2.0)").fetchone()
    except sqlite3.Error:
        return False
    return True


def catalog_files(directory: Path) -> list[Path]:
    """The database file and its WAL, shared-memory and journal companions in ``directory``."""
    return [directory / (CATALOG_FILE + suffix) for suffix in _SIDE_FILES]


@contextmanager
def _translated() -> Iterator[None]:
    """SQLite errors that mean a broken or foreign file become :class:`CatalogUnusable`; those that mean
    "not here" :class:`CatalogUnavailable`; transient ones (busy, disk full, I/O) pass through."""
    try:
        yield
    except sqlite3.Error as exc:
        primary = "_".join(str(getattr(exc, "sqlite_errorname", "")).split("_")[:2])  # SQLITE_IOERR_READ -> SQLITE_IOERR
        if primary in _NOT_HERE:
            raise CatalogUnavailable(errno.EACCES, str(exc)) from exc
        if primary in _TRANSIENT:
            raise MemoryStoreError(
                f"the memory index could not be used ({exc}); retry, and check free disk space"
            ) from exc
        raise CatalogUnusable(f"{type(exc).__name__}: {exc}") from exc


def _exact_json(meta: dict[str, Any]) -> str | None:
    """``meta`` as JSON when it reads back exactly (types included), else ``None`` (parse the raw text)."""
    try:
        text = json.dumps(meta, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if _same(json.loads(text), meta) else None


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _pack(signatures: dict[str, Signature]) -> bytes:
    """``signatures`` as one blob: the length of the names' part (8 bytes), the names (UTF-8, NUL between),
    then each signature's three numbers as little-endian signed 64-bit integers, in the names' order."""
    names = "\0".join(signatures).encode("utf-8")
    numbers = array("q", chain.from_iterable(signatures.values()))
    if sys.byteorder != "little":
        numbers.byteswap()
    return len(names).to_bytes(8, "little") + names + numbers.tobytes()


class _Unpacked:
    """A blob :func:`_pack` wrote (the compact copy's base, its changes, the racy rows), decoded: its names'
    part as stored, how many names, their numbers; the names themselves are split only when asked for
    (:meth:`names`: a base, when a listing that differs is compared name by name)."""

    __slots__ = ("_names", "blob", "count", "names_part", "numbers", "text")

    def __init__(self, blob: bytes, names_part: bytes, text: str, count: int, numbers: array[int]) -> None:
        self.blob = blob
        self.names_part = names_part
        self.text = text
        self.count = count
        self.numbers = numbers
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            self._names = self.text.split("\0") if self.count else []
        return self._names


def _unpack_lists(blob: object) -> _Unpacked | None:
    """The names (checked as UTF-8 and counted, not split) and the numbers (three per name) :func:`_pack`
    wrote, or ``None`` when ``blob`` is not such a blob."""
    if not isinstance(blob, bytes) or len(blob) < 8:
        return None
    length = int.from_bytes(blob[:8], "little")
    if 8 + length > len(blob):
        return None
    names_part = blob[8 : 8 + length]
    numbers = array("q")
    try:
        text = names_part.decode("utf-8")
        numbers.frombytes(blob[8 + length :])
    except (UnicodeDecodeError, ValueError):
        return None
    count = text.count("\0") + 1 if length else 0
    if len(numbers) != 3 * count:
        return None
    if sys.byteorder != "little":
        numbers.byteswap()
    return _Unpacked(blob, names_part, text, count, numbers)


def _unpack(blob: object) -> dict[str, Signature] | None:
    """The signatures :func:`_pack` wrote, or ``None`` when ``blob`` is not such a blob."""
    unpacked = _unpack_lists(blob)
    if unpacked is None:
        return None
    each = iter(unpacked.numbers)
    return dict(zip(unpacked.names(), zip(each, each, each, strict=True), strict=True))


def _packed_matches(
    names: bytes, numbers: bytes, base_names: bytes, base_numbers: bytes, delta: dict[str, Signature]
) -> bool | None:
    """Whether a listing (``names`` NUL-joined, ``numbers`` three native int64 per name) is exactly the base
    with the changes ``delta`` applied, decided from the bytes; ``None`` when it cannot be decided so.

    Each changed name is looked up in both name parts (a byte search: names hold no NUL): one removed must
    be absent from the listing, one changed or added present there with its signature. Without the changed
    names, the listing must then be the base byte for byte: the files nobody changed, listed in the order the
    base was, as a directory lists files it kept. Any other difference (an order the directory changed, a
    file added by hand) is ``None``: :func:`_listing_matches` compares name by name.
    """
    listed, stored = _wrapped(names), _wrapped(base_names)
    cut: list[tuple[int, int, int]] = []
    base_cut: list[tuple[int, int, int]] = []
    for name, signature in delta.items():
        key = b"\0" + name.encode("utf-8", "surrogateescape") + b"\0"
        at = listed.find(key)
        if signature[2] < 0:
            if at >= 0:
                return False  # removed, yet listed
        else:
            if at < 0:
                return False  # changed or added, yet not listed
            index = listed.count(b"\0", 0, at)  # the names before it, each followed by its NUL
            if numbers[24 * index : 24 * index + 24] != array("q", signature).tobytes():
                return False
            cut.append((at, len(key) - 1, index))
        at = stored.find(key)
        if at >= 0:
            base_cut.append((at, len(key) - 1, stored.count(b"\0", 0, at)))
    return True if _without(listed, numbers, cut) == _without(stored, base_numbers, base_cut) else None


def _wrapped(names: bytes) -> bytes:
    """NUL-joined names with a NUL before the first and after the last, so each is found as NUL name NUL
    (no name: one NUL, what cutting every name out of a list leaves)."""
    return b"\0" + names + b"\0" if names else b"\0"


def _without(wrapped: bytes, numbers: bytes, spans: list[tuple[int, int, int]]) -> tuple[bytes, bytes]:
    """Names (NUL-joined, a NUL before the first and after the last) and their numbers (24 bytes each) without
    the names at ``spans``: (offset of the NUL before the name, 1 + its length, its index). Cutting a name with
    the NUL before it leaves the others joined as they were."""
    name_parts: list[bytes] = []
    number_parts: list[bytes] = []
    offset = index = 0
    for at, length, at_index in sorted(spans):
        name_parts.append(wrapped[offset:at])
        number_parts.append(numbers[24 * index : 24 * at_index])
        offset, index = at + length, at_index + 1
    name_parts.append(wrapped[offset:])
    number_parts.append(numbers[24 * index :])
    return b"".join(name_parts), b"".join(number_parts)


def _listing_matches(
    listing: dict[str, Signature], names: list[str], numbers: array[int], delta: dict[str, Signature]
) -> bool:
    """Whether ``listing`` is exactly the base (``names``, ``numbers``) with the changes ``delta`` applied.

    The listing's numbers are laid out in the base's order and compared as bytes; only the changed
    names are looked at one by one.
    """
    expected = numbers
    kept = names
    added = 0
    if delta:
        position = dict(zip(names, range(len(names)), strict=True))
        expected = array("q", numbers)
        gone: set[int] = set()
        for name, signature in delta.items():
            at = position.get(name)
            if signature[2] < 0:
                if at is not None:
                    gone.add(at)
                continue
            if at is None:
                added += 1
                if listing.get(name) != signature:
                    return False
            else:
                expected[3 * at : 3 * at + 3] = array("q", signature)
        if gone:
            kept = [name for at, name in enumerate(names) if at not in gone]
            expected = array("q", (n for at, n in enumerate(expected) if at // 3 not in gone))
    if len(listing) != len(kept) + added:
        return False
    try:
        # Through a list: array() takes a list at C speed, an iterator one item at a time.
        found = array("q", list(chain.from_iterable(map(listing.__getitem__, kept))))
    except (KeyError, OverflowError):
        return False
    return found.tobytes() == expected.tobytes()


def _fold(text: str) -> str:
    # SQLite's tokenizer stops at NUL: index a stand-in a needle cannot usefully hold (see search()).
    return text.casefold().replace("\0", NUL_STAND_IN)


def list_line(record: MemoryRecord) -> str:
    """The memory's line in ``bundlekit memory list``: key, type, revision, updated, name — description
    (tab-separated), terminal-safe (:func:`bundlekit._terminal.printable`: the fields are single lines, so a
    listing of these lines is the listing escaped). Stored per row so a listing reads one column instead of
    every record, and prints it without searching it for control characters."""
    return printable(
        f"{record.key}\t{record.type}\tr{record.revision}\t{record.meta['updated']}\t{record.name} — {record.description}"
    )


@functools.cache
def _line_format() -> str:
    """:func:`list_line` of a fixed record: stored lines written by a program with another format (and the
    same schema version) are not used (:class:`CatalogUnusable`, then rebuilt). Its name holds a control
    character, so lines stored before they were escaped are another format."""
    meta = {"name": "N\x1b", "description": "D", "type": "user", "updated": "U", "revision": 2}
    return list_line(MemoryRecord(key="k", meta=meta, body="", raw=""))


def _record(row: Sequence[Any]) -> MemoryRecord:
    key, meta, body, raw, sal, updated, horizon, piece = row
    if meta is None:
        record = parse_memory_file(raw, key=key, where=f"{key}.md")
    else:
        record = MemoryRecord(key=key, meta=json.loads(meta), body=body, raw=raw)
    record.memo["rank"] = (sal, updated, horizon)
    record.memo["piece_length"] = piece
    return record


# memory_lines: the listing in key order read from one index (no row lookups); memory_secrets: the few
# memories flagged as holding a credential, found without reading every row.
_SCHEMA = """
CREATE TABLE memory (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL, description TEXT NOT NULL, type TEXT NOT NULL,
    ino INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    racy INTEGER NOT NULL,
    salience REAL NOT NULL, updated REAL NOT NULL, horizon REAL,
    piece INTEGER NOT NULL,
    secret INTEGER NOT NULL,
    line TEXT NOT NULL
);
CREATE INDEX memory_lines ON memory (key, line);
CREATE INDEX memory_secrets ON memory (key) WHERE secret;
CREATE TABLE content (id INTEGER PRIMARY KEY, meta TEXT, body TEXT NOT NULL, raw TEXT NOT NULL);
CREATE TABLE state (name TEXT PRIMARY KEY, value INTEGER);
INSERT INTO state VALUES ('gen', 0), ('index_gen', -1), ('index_ino', NULL), ('index_mtime', NULL),
    ('index_size', NULL), ('fts', {fts});
"""
_FTS = "CREATE VIRTUAL TABLE search USING fts5(name, description, body, tokenize='trigram case_sensitive 1')"
_PLAIN = "CREATE TABLE search (rowid INTEGER PRIMARY KEY, name TEXT, description TEXT, body TEXT)"


class Catalog:
    """One open index database, one per :class:`Memory`, which serializes the threads that use it.

    Reads run in :meth:`reading` (one snapshot), changes in :meth:`writing`
    (one transaction, taken only under the tree lock).
    """

    def __init__(self, path: Path | None, *, fts: bool | None = None, timeout: float = 30.0) -> None:
        self.path = path
        with _translated():
            conn = sqlite3.connect(
                ":memory:" if path is None else os.fspath(path),
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,  # a Memory serializes its own use (tree.Memory._mutex)
            )
        self._conn = conn
        self._tracked: _Tracked | None = None  # what the open write transaction changed; stored at its end
        # The files in listed order, for a base written (listed_order): asked for only when one is.
        self._order: Callable[[], Iterable[str]] | None = None
        # The compact copy's base last decoded (see _copy).
        self._base: _Unpacked | None = None
        try:
            with _translated():
                conn.execute("PRAGMA trusted_schema = OFF")
                self._check_or_create(fts)
                if path is not None:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a power cut may lose the last change
                self.fts = bool(self._state("fts"))
                self._math = _has_pow(conn)
                stored = conn.execute("SELECT value FROM state WHERE name = 'line_format'").fetchone()
                if stored is None or stored[0] != _line_format():
                    raise CatalogUnusable("stored list lines of another format")
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def _check_or_create(self, fts: bool | None) -> None:
        """Check the schema version, or create the tables in an empty file: with an FTS5 search table when
        ``fts`` is not False and this SQLite has FTS5 (probed only here: an existing index says which it has)."""
        conn = self._conn
        app, version = self._header()
        if (app, version) == (APPLICATION_ID, SCHEMA_VERSION):
            return
        if (app, version) != (0, 0):
            raise CatalogUnusable(f"application id {app:#x}, schema version {version}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            app, version = self._header()  # another process may have created it meanwhile
            if (app, version) == (0, 0):
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise CatalogUnusable("tables without our schema version")
                fts = fts5_available() if fts is None else fts and fts5_available()
                for statement in _SCHEMA.format(fts=int(fts)).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(_FTS if fts else _PLAIN)
                conn.execute("INSERT INTO state VALUES ('line_format', ?)", (_line_format(),))
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif (app, version) != (APPLICATION_ID, SCHEMA_VERSION):
                raise CatalogUnusable(f"application id {app:#x}, schema version {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _header(self) -> tuple[int, int]:
        app = self._conn.execute("PRAGMA application_id").fetchone()[0]
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        return int(app), int(version)

    # -- transactions -----------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[Catalog]:
        """One consistent snapshot for the queries in the ``with`` body (inside another, that one's)."""
        if self._conn.in_transaction:
            yield self
            return
        with _translated():
            self._conn.execute("BEGIN")
            try:
                yield self
            finally:
                self._conn.execute("COMMIT")

    @contextmanager
    def writing(self) -> Iterator[Catalog]:
        """One transaction (all or nothing) for the changes in the ``with`` body."""
        with _translated():
            self._conn.execute("BEGIN IMMEDIATE")
            self._tracked = None
            self._order = None
            try:
                yield self
                if self._tracked is not None:
                    self._store_signatures(self._tracked)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._tracked = None
                self._order = None
            self._conn.execute("COMMIT")

    # -- state ------------------------------------------------------------------

    def _state(self, name: str) -> int | None:
        with _translated():
            row = self._conn.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _set(self, name: str, value: int | None) -> None:
        self._conn.execute("UPDATE state SET value = ? WHERE name = ?", (value, name))

    def data_version(self) -> int:
        """SQLite's ``data_version``: it moves when another connection commits a change."""
        with _translated():
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    @property
    def gen(self) -> int:
        """The generation: bumped by every change to the indexed memories."""
        return self._state("gen") or 0

    def index_state(self) -> tuple[Signature | None, int]:
        """The signature of the ``MEMORY.md`` last written from this index, and the generation it shows."""
        with _translated():
            rows = dict(self._conn.execute("SELECT name, value FROM state WHERE name LIKE 'index_%'").fetchall())
        sig = (rows["index_ino"], rows["index_mtime"], rows["index_size"])
        known = None if None in sig else (int(sig[0]), int(sig[1]), int(sig[2]))
        return known, int(rows["index_gen"])

    def set_index_state(self, signature: Signature | None, gen: int) -> None:
        ino, mtime, size = signature if signature is not None else (None, None, None)
        for name, value in (("index_ino", ino), ("index_mtime", mtime), ("index_size", size), ("index_gen", gen)):
            self._set(name, value)

    # -- files --------------------------------------------------------------------

    def signatures(self) -> tuple[dict[str, Signature], dict[str, Signature]]:
        """Every indexed file's signature by name, and those of the racy rows (one SELECT each)."""
        with _translated():
            found = self._conn.execute("SELECT file, ino, mtime_ns, size FROM memory").fetchall()
            racy = self._conn.execute("SELECT file, ino, mtime_ns, size FROM memory WHERE racy").fetchall()
        return {file: (ino, mtime, size) for file, ino, mtime, size in found}, {
            file: (ino, mtime, size) for file, ino, mtime, size in racy
        }

    def compare(self, scan: Scan) -> tuple[bool, dict[str, Signature]]:
        """Whether the listing ``scan`` holds exactly the indexed files with their signatures, and the racy
        rows' signatures. From the compact copy when it is of the current generation (the listing's packed
        names and numbers against the copy's, as bytes: no stored signature is turned into Python objects),
        else from :meth:`signatures`."""
        copy = self._copy()
        if copy is None:
            known, racy = self.signatures()
            return known == scan.memories, racy
        base, delta, racy = copy
        packed = scan.packed()
        if packed is None:
            return False, racy
        if not delta and len(scan) == base.count:
            # The base is written in the order its directory lists the files, and a directory that has not
            # changed lists them in the same order: its names and numbers, straight.
            if packed[0] == base.names_part:
                return packed[1] == base.numbers.tobytes(), racy
        elif delta:  # after a change: the changed files looked up, the others compared as bytes
            decided = _packed_matches(packed[0], packed[1], base.names_part, base.numbers.tobytes(), delta)
            if decided is not None:
                return decided, racy
        return _listing_matches(scan.memories, base.names(), base.numbers, delta), racy

    def listed_order(self, names: Callable[[], Iterable[str]]) -> None:
        """How to get the order a listing gave the files in: a base the open write transaction writes follows
        it (asked for only then: a listing's names are not made into objects for a transaction that writes
        no base)."""
        self._order = names

    def _copy(
        self,
    ) -> tuple[_Unpacked, dict[str, Signature], dict[str, Signature]] | None:
        """The compact copy (the base, decoded once per base; the changes since; the racy rows) when it is of
        the current generation and readable, else ``None``."""
        with _translated():
            rows = dict(
                self._conn.execute(
                    "SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'sigs', 'sigs_delta', 'racy')"
                ).fetchall()
            )
        if rows.get("sigs_gen") is None or rows.get("sigs_gen") != rows.get("gen"):
            return None
        blob = rows.get("sigs")
        if self._base is None or self._base.blob != blob:  # decoded once per base
            self._base = _unpack_lists(blob)
        delta, racy = _unpack(rows.get("sigs_delta")), _unpack(rows.get("racy"))
        if self._base is None or delta is None or racy is None:
            return None
        return self._base, delta, racy

    def _track(self) -> _Tracked:
        """What the open write transaction changes, read before its first change."""
        if self._tracked is None:
            copy = self._copy()
            if copy is None:
                self._tracked = _Tracked(None, self.signatures()[1])
            else:
                self._tracked = _Tracked(copy[1], copy[2])
        return self._tracked

    def _store_signatures(self, tracked: _Tracked) -> None:
        """Keep the compact copy of the signatures, of the generation the transaction ends at: the changed
        rows added to the stored changes, or (past :data:`_DELTA_MAX` of them, or with no usable copy) a new
        base read from the rows, with no changes."""
        delta = tracked.delta
        if delta is not None and len(delta.keys() | tracked.changed.keys()) <= _DELTA_MAX:
            delta.update(tracked.changed)
            update = {"sigs_delta": _pack(delta), "racy": _pack(tracked.racy)}
        else:
            known, racy = self.signatures()
            if self._order is not None:  # listed order first (see compare); rows the listing lacked after
                known = {**{name: known[name] for name in self._order() if name in known}, **known}
            update = {"sigs": _pack(known), "sigs_delta": _pack({}), "racy": _pack(racy)}
        self._conn.executemany("INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)", list(update.items()))
        self._conn.execute(
            "INSERT OR REPLACE INTO state (name, value) VALUES ('sigs_gen', (SELECT value FROM state WHERE name = 'gen'))"
        )

    def raw(self, file: str) -> str | None:
        row = self._conn.execute(f"SELECT c.raw FROM {_RECORDS} WHERE m.file = ?", (file,)).fetchone()
        return None if row is None else str(row[0])

    def put(
        self,
        file: str,
        signature: Signature,
        racy: bool,
        record: MemoryRecord,
        basis: tuple[float, float, float | None],
        piece: int,
        secret: bool,
    ) -> None:
        """Index one parsed file (replacing what was there). Inside :meth:`writing`."""
        tracked = self._track()
        self.remove(file)
        tracked.changed[file] = signature
        if racy:
            tracked.racy[file] = signature
        sal, updated, horizon = basis
        cursor = self._conn.execute(
            "INSERT INTO memory (file, key, name, description, type, ino, mtime_ns, size, racy, salience, updated, "
            "horizon, piece, secret, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file, record.key, record.name, record.description, record.type, *signature, int(racy), sal, updated,
             horizon, piece, int(secret), list_line(record)),
        )
        self._conn.execute(
            "INSERT INTO content (id, meta, body, raw) VALUES (?, ?, ?, ?)",
            (cursor.lastrowid, _exact_json(record.meta), record.body, record.raw),
        )
        self._conn.execute(
            "INSERT INTO search (rowid, name, description, body) VALUES (?, ?, ?, ?)",
            (cursor.lastrowid, _fold(record.name), _fold(record.description), _fold(record.body)),
        )
        self._bump()

    def remove(self, file: str) -> None:
        """Forget one file (nothing when it is not indexed). Inside :meth:`writing`."""
        tracked = self._track()
        row = self._conn.execute("SELECT id FROM memory WHERE file = ?", (file,)).fetchone()
        if row is not None:
            tracked.changed[file] = _GONE
            tracked.racy.pop(file, None)
            self._conn.execute("DELETE FROM search WHERE rowid = ?", (row[0],))
            self._conn.execute("DELETE FROM content WHERE id = ?", (row[0],))
            self._conn.execute("DELETE FROM memory WHERE id = ?", (row[0],))
            self._bump()

    def settle(self, files: Iterable[str]) -> None:
        """Mark files no longer racy (their content was compared and is unchanged). Inside :meth:`writing`."""
        files = list(files)
        if not files:
            return
        racy = self._track().racy
        for file in files:
            racy.pop(file, None)
        self._conn.executemany("UPDATE memory SET racy = 0 WHERE file = ?", [(f,) for f in files])

    def _bump(self) -> None:
        self._conn.execute("UPDATE state SET value = value + 1 WHERE name = 'gen'")

    # -- queries ----------------------------------------------------------------

    def count(self) -> int:
        with _translated():
            return int(self._conn.execute("SELECT count(*) FROM memory").fetchone()[0])

    def records(self, keys: Iterable[str] | None = None) -> list[MemoryRecord]:
        """Records sorted by key: all of them, or those of ``keys``."""
        with _translated():
            if keys is None:
                rows = self._conn.execute(f"SELECT {_RECORD_COLUMNS} FROM {_RECORDS} ORDER BY m.key").fetchall()
            else:
                wanted = list(keys)
                rows = self._conn.execute(
                    f"SELECT {_RECORD_COLUMNS} FROM {_RECORDS} WHERE m.key IN (SELECT value FROM json_each(?)) "
                    "ORDER BY m.key",
                    (json.dumps(wanted),),
                ).fetchall()
        return [_record(row) for row in rows]

    def summaries(self, lines: int) -> list[MemoryRecord]:
        """The memories an index of ``lines`` lines can show (by type in the index's order, then by key,
        ``lines`` in all) as summary records: frontmatter ``name``, ``description`` and ``type`` only, no
        body or text. Enough to render ``MEMORY.md`` (one line per memory from these fields) without
        loading every memory; never handed out beyond that."""
        rows: list[Any] = []
        with _translated():
            for kind in MEMORY_TYPES:
                if len(rows) >= lines:
                    break
                rows += self._conn.execute(
                    "SELECT key, name, description, type FROM memory WHERE type = ? ORDER BY key LIMIT ?",
                    (kind, lines - len(rows)),
                ).fetchall()
        return [
            MemoryRecord(key=key, meta={"name": name, "description": description, "type": kind}, body="", raw="")
            for key, name, description, kind in rows
        ]

    def list_text(self) -> str:
        """Every memory's :func:`list_line`, sorted by key, a newline between (none after the last; ``""`` for
        no memory): one column read, joined by SQLite, so no record and no per-line object is made."""
        with _translated():
            row = self._conn.execute(_LIST_TEXT).fetchone()
        return "" if row is None or row[0] is None else str(row[0])

    def record(self, key: str) -> MemoryRecord | None:
        with _translated():
            row = self._conn.execute(f"SELECT {_RECORD_COLUMNS} FROM {_RECORDS} WHERE m.key = ?", (key,)).fetchone()
        return None if row is None else _record(row)

    def fresh_record(self, file: str, signature: Signature) -> MemoryRecord | None:
        """The indexed record of ``file`` if its row has ``signature`` and is not racy, else ``None``."""
        with _translated():
            row = self._conn.execute(
                f"SELECT {_RECORD_COLUMNS} FROM {_RECORDS} WHERE m.file = ? AND m.ino = ? AND m.mtime_ns = ? "
                "AND m.size = ? AND NOT m.racy",
                (file, *signature),
            ).fetchone()
        return None if row is None else _record(row)

    def same_key_other_case(self, key: str) -> str | None:
        """An indexed key equal to ``key`` ignoring (ASCII) case but not equal to it."""
        with _translated():
            row = self._conn.execute(
                "SELECT key FROM memory WHERE lower(key) = lower(?) AND key != ? LIMIT 1", (key, key)
            ).fetchone()
        return None if row is None else str(row[0])

    def keys(self) -> list[str]:
        with _translated():
            return [str(r[0]) for r in self._conn.execute("SELECT key FROM memory ORDER BY key")]

    def with_secrets(self) -> list[str]:
        """Keys of memories one of whose parsed values matches a secret rule."""
        with _translated():
            return [str(r[0]) for r in self._conn.execute("SELECT key FROM memory WHERE secret ORDER BY key")]

    def ranked(
        self,
        now_s: float,
        *,
        needle: str | None = None,
        relevance: bool = False,
        limit: int | None = None,
        longest: int | None = None,
    ) -> list[Ranked] | None:
        """Memories best first (score descending, then key), the first ``limit``; with ``needle`` only those
        whose folded name, description or body contains it (``needle`` already case-folded); with ``longest``
        (no ``needle``) only those whose context-block piece is at most that long.

        The score is ``ranking.score_of`` (times the relevance term with
        ``relevance``), computed by SQLite where it has ``pow`` (the same IEEE
        operations in the same order, so the same order as the pure path) and in
        Python otherwise. A needle of 3 characters or more is an FTS5 trigram
        match (BM25 when ``relevance``); a shorter one, or any without FTS5, a scan
        of the indexed text (relevance 1.0). ``None`` for the one needle the index
        cannot answer exactly (holding the NUL stand-in): the caller scans the records.
        """
        if needle is not None and NUL_STAND_IN in needle:
            return None
        if needle is not None and not relevance and self._math and limit is not None and 0 < limit <= _TOP:
            found = self._best_of_top(now_s, needle, limit)
            if found is not None:
                return found
        source, params = self._candidates(needle, relevance, longest)
        with _translated():
            if self._math and not relevance:  # the same order without BM25's window over every candidate
                rows = self._conn.execute(
                    f"WITH c AS ({source}), a AS (SELECT key, piece, salience AS s, max(? - updated, 0.0) AS age, "
                    f"horizon AS h FROM c) SELECT key, piece, NULL FROM a ORDER BY {_SCORE} DESC, key LIMIT ?",
                    (*params, now_s, HALF_LIFE_S, HALF_LIFE_S, -1 if limit is None else limit),
                ).fetchall()
                return list(map(Ranked._make, rows))
            if self._math:
                rows = self._conn.execute(
                    f"WITH c AS ({source}), a AS (SELECT key, piece, salience AS s, max(? - updated, 0.0) AS age, "
                    "horizon AS h, bm25, min(bm25) OVER () AS best FROM c), "
                    f"r AS (SELECT key, piece, CASE WHEN best IS NULL OR best = 0 THEN 1.0 ELSE bm25 / best END AS rel, "
                    f"{_SCORE} AS score FROM a) "
                    "SELECT key, piece, rel FROM r ORDER BY (CASE WHEN ? THEN score * rel ELSE score END) DESC, key "
                    "LIMIT ?",
                    (*params, now_s, HALF_LIFE_S, HALF_LIFE_S, int(relevance), -1 if limit is None else limit),
                ).fetchall()
                return [Ranked(key, piece, rel if relevance else None) for key, piece, rel in rows]
            rows = self._conn.execute(source, params).fetchall()
        best = min((row[5] for row in rows if row[5] is not None), default=None)
        rel = {row[0]: (row[5] / best if best and row[5] is not None else 1.0) for row in rows}
        scored = ((score_of((row[1], row[2], row[3]), now_s) * (rel[row[0]] if relevance else 1.0), row[0]) for row in rows)
        pieces = {row[0]: row[4] for row in rows}
        return [Ranked(key, pieces[key], rel[key] if relevance else None) for key in best_first(scored, limit)]

    def _best_of_top(self, now_s: float, needle: str, limit: int) -> list[Ranked] | None:
        """The first ``limit`` memories holding ``needle`` when that many are among the :data:`_TOP` best of
        all (a common phrase: no full-text search over every match), else ``None``.

        Exact: the order is the full one (score, then key), and a memory below
        the first :data:`_TOP` ranks below every one of them. ``instr`` on the
        folded text is the substring test the trigram match and the scan make.
        """
        with _translated():
            rows = self._conn.execute(
                "WITH a AS (SELECT id, key, piece, salience AS s, max(? - updated, 0.0) AS age, horizon AS h "
                f"FROM memory), r AS (SELECT id, key, piece, {_SCORE} AS score FROM a), "
                "t AS (SELECT id, key, piece, score FROM r ORDER BY score DESC, key LIMIT ?) "
                "SELECT t.key, t.piece FROM t CROSS JOIN search ON search.rowid = t.id "  # t first: 64 rowid lookups
                "WHERE instr(search.name, ?) > 0 OR instr(search.description, ?) > 0 OR instr(search.body, ?) > 0 "
                "ORDER BY t.score DESC, t.key LIMIT ?",
                (now_s, HALF_LIFE_S, HALF_LIFE_S, _TOP, needle, needle, needle, limit),
            ).fetchall()
        return [Ranked(key, piece, None) for key, piece in rows] if len(rows) == limit else None

    def _candidates(
        self, needle: str | None, relevance: bool, longest: int | None = None
    ) -> tuple[str, tuple[object, ...]]:
        """SQL selecting (key, salience, updated, horizon, piece, bm25) of the candidates, and its parameters."""
        columns = "m.key AS key, m.salience AS salience, m.updated AS updated, m.horizon AS horizon, m.piece AS piece"
        if needle is None and longest is not None:
            return f"SELECT {columns}, NULL AS bm25 FROM memory m WHERE m.piece <= ?", (longest,)
        if needle is None:
            return f"SELECT {columns}, NULL AS bm25 FROM memory m", ()
        if self.fts and len(needle) >= TRIGRAM:
            bm25 = "bm25(search)" if relevance else "NULL"
            phrase = '"' + needle.replace('"', '""') + '"'
            return (
                f"SELECT {columns}, {bm25} AS bm25 FROM search JOIN memory m ON m.id = search.rowid WHERE search MATCH ?",
                (phrase,),
            )
        scan = (
            f"SELECT {columns}, NULL AS bm25 FROM search JOIN memory m ON m.id = search.rowid "
            "WHERE instr(search.name, ?) > 0 OR instr(search.description, ?) > 0 OR instr(search.body, ?) > 0"
        )
        return scan, (needle, needle, needle)
