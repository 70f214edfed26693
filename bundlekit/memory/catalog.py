"""The derived index of a memory tree: a stat cache and lookup tables, never a copy of a memory.

Stored in ``<tree>/.bundlekit/index.sqlite`` (WAL mode, so ``-wal`` and ``-shm``
sit beside it), in the tree's one hidden folder with the lock; a tree in memory
gets a private in-memory database. It is built like git's index or restic's:
it tells which files changed since they were indexed and chooses and ranks
memories, and it holds nothing that output is made of but the listing fields
of ``memory list`` (as ``git ls-files`` lists from git's index). Whatever else
leaves the process (a shown memory, a recall hit, a context block, an export, a
bundle, ``list --json``) is read from the memory file at that moment
(``tree``), so editing the index can change what is chosen and what a ``memory
list`` line prints, never the bytes shown or published (specs/memory.md,
"Derived index").

Tables:

* ``memory``: one row per memory file: its name and key, its ``type`` (which
  section of ``MEMORY.md`` it goes in), its signature (inode, mtime in ns,
  size, and the SHA-256 of the bytes it was indexed from) and its ranking
  fields (salience, ``updated`` in POSIX seconds, decay horizon, context-block
  piece length); its listing fields (``revision``, ``updated_text`` as the
  frontmatter holds it, ``name`` and ``description`` with credentials withheld,
  and ``withheld``: the line made from the file shows a credential), from which
  a ``memory list`` line is formatted at output time (:meth:`Catalog.listed`),
  only when the rows are exactly the files of the tree's listing;
* ``search``: name, description and body as recall matches them (credentials
  withheld, ``withhold.mask``; case-folded with ``str.casefold``, as recall
  folds the query), an FTS5 table with the trigram tokenizer (``case_sensitive
  1``: the folding is ours), or a plain table scanned with ``instr`` where this
  SQLite has no FTS5;
* ``vector``: one embedding per memory row (``id``), float16, unit length, of
  the model named in ``state`` as ``vec_model`` (its id and dimension): the
  vector of the row's search text (``memory/semantic``), never text. A row put
  or removed drops its vector; a model of another id or dimension drops them
  all. They are computed when a recall by meaning asks for them
  (``Memory.recall``), once per changed file;
* ``state``: ``gen`` (bumped by every change of ``memory``), the signature and
  generation of the ``MEMORY.md`` last written from it, ``written_ns`` (when the
  last transaction that changed ``memory`` began: rows whose file's mtime is
  within :data:`RACY_NS` of it are *racy*, compared by SHA-256, git's rule) and
  ``sigs``: every row's stat signature in one blob sorted by file name
  (:func:`pack`), rewritten whole in each transaction that changes a row, with
  the generation it is of (``sigs_gen``). Checking an unchanged tree compares
  the tree's sorted listing with it byte for byte (one small read); where
  ``sigs_gen`` is not ``gen`` the rows are read instead.

``PRAGMA user_version`` is :data:`DERIVED_VERSION`: it covers everything
stored and every rule it is derived by (the schema, the ranking constants, the
secret rules the search text is withheld by, the folding). A file of another
version or application, or one SQLite cannot read, raises
:class:`CatalogUnusable`; the indexer then deletes and rebuilds it.
"""

from __future__ import annotations

import bisect
import errno
import functools
import os
import sqlite3
import sys
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from bundlekit.errors import MemoryStoreError
from bundlekit.memory.ranking import HALF_LIFE, best_first, score_of
from bundlekit.memory.record import MEMORY_TYPES

if TYPE_CHECKING:
    from bundlekit.memory.backend import Scan

__all__ = [
    "APPLICATION_ID",
    "CATALOG_FILE",
    "DERIVED_VERSION",
    "RACY_NS",
    "Catalog",
    "CatalogUnavailable",
    "CatalogUnusable",
    "Ranked",
    "Row",
    "catalog_files",
    "fts5_available",
    "pack",
]

# Bump on any change of what is stored or of a rule it is derived by: the schema below, ranking.TYPE_BONUS,
# HALF_LIFE, DECAY_HORIZONS, piece_length, the folding, the secret rules (secrets._SPECS: the search text is
# withheld by them). tests/memory/test_derived_index.py pins a fingerprint of them to this number.
DERIVED_VERSION = 10
APPLICATION_ID = 0x626B6D69  # "bkmi"
CATALOG_FILE = "index.sqlite"
RACY_NS = 2_000_000_000  # 2 s: coarser than any timestamp tick we expect (ext4 ~4 ms, HFS+ 1 s, FAT 2 s)
_SIDE_FILES = ("", "-wal", "-shm", "-journal")
TRIGRAM = 3  # FTS5's trigram tokenizer matches substrings of at least 3 characters
# Errors that say "busy", not "broken": never a reason to rebuild.
_TRANSIENT = {"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "SQLITE_FULL", "SQLITE_IOERR"}
_NOT_HERE = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH"}

Signature = tuple[int, int, int]
HALF_LIFE_S = HALF_LIFE.total_seconds()
NUL_STAND_IN = "\ufffe"  # a Unicode noncharacter
# ranking.score_of in SQL, from a row's salience s, age in seconds and decay horizon h (parameters: 2 half-lives)
_SCORE = (
    "s * pow(0.5, age / ?) * (CASE WHEN h IS NULL OR age - h <= 0 THEN 1.0 ELSE pow(0.5, (age - h) / ?) END)"
)
_TOP = 64  # recall first looks for its hits among this many best memories (see Catalog._best_of_top)


class CatalogUnusable(Exception):
    """The index file is corrupt, truncated, or of another version or program: rebuild it."""


class CatalogUnavailable(OSError):
    """The index file cannot be opened or written here (permissions, a read-only tree)."""


class Ranked(NamedTuple):
    """One memory in rank order: its key, its context-block piece length, its relevance term (if asked)."""

    key: str
    piece: int
    relevance: float | None


class Row(NamedTuple):
    """What the index keeps of one memory file (no body or frontmatter of it): its type, signature, SHA-256
    of its bytes, ranking basis (salience, ``updated`` in POSIX seconds, decay horizon), context-block piece
    length, search text (name, description, body: credentials withheld) and listing fields."""

    key: str
    type: str
    signature: Signature
    sha256: bytes
    basis: tuple[float, float, float | None]
    piece: int
    search: tuple[str, str, str]
    # The ``memory list`` line's fields: revision, ``updated`` as the frontmatter holds it, name and description
    # (credentials withheld, ``withhold.mask``), and whether the line made from the file shows a credential
    # (output then makes that line from the file, withheld, with the warning naming it).
    listed: tuple[int, str, str, str, bool]


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
    except UnicodeDecodeError as exc:  # text SQLite hands over that is not UTF-8 (a damaged schema or error text)
        raise CatalogUnusable(f"{type(exc).__name__}: {exc}") from exc


def pack(names: Iterable[str], numbers: Iterable[int]) -> bytes:
    """Signatures as the one blob the index keeps: the length of the names' part (8 bytes, little-endian), the
    file names (UTF-8, NUL between), then each signature's three numbers as native signed 64-bit integers, in
    the names' order. Given sorted by name, it is the sorted listing of the tree (``Scan.packed``) whole."""
    encoded = "\0".join(names).encode("utf-8", "surrogateescape")
    return len(encoded).to_bytes(8, "little") + encoded + array("q", numbers).tobytes()


def _split(blob: object) -> tuple[bytes, bytes] | None:
    """The names' part and the numbers' part of a :func:`pack` blob, or ``None`` when it is not one."""
    if not isinstance(blob, bytes) or len(blob) < 8:
        return None
    length = int.from_bytes(blob[:8], "little")
    if 8 + length > len(blob) or (len(blob) - 8 - length) % 24:
        return None
    return blob[8 : 8 + length], blob[8 + length :]


def _spliced(blob: bytes, changes: dict[str, Signature | None]) -> bytes | None:
    """The sorted signature blob ``blob`` with ``changes`` made (a signature set, or None: removed), or
    ``None`` when ``blob`` is not one (the caller packs the rows then)."""
    parts = _split(blob)
    if parts is None:
        return None
    names = parts[0].decode("utf-8", "surrogateescape").split("\0") if parts[0] else []
    numbers = array("q", parts[1])
    if len(numbers) != 3 * len(names):
        return None
    keys = [name.encode("utf-8", "surrogateescape") for name in names] if any(not n.isascii() for n in names) else names
    for name, signature in sorted(changes.items()):
        key: str | bytes = name.encode("utf-8", "surrogateescape") if keys is not names else name
        at = bisect.bisect_left(keys, key)  # type: ignore[arg-type]
        present = at < len(names) and names[at] == name
        if signature is None:
            if present:
                del names[at]
                if keys is not names:
                    del keys[at]
                del numbers[3 * at : 3 * at + 3]
        elif present:
            numbers[3 * at : 3 * at + 3] = array("q", signature)
        else:
            names.insert(at, name)
            if keys is not names:
                keys.insert(at, key)  # type: ignore[arg-type]
            numbers[3 * at : 3 * at] = array("q", signature)
    return pack(names, numbers)


def _fold(text: str) -> str:
    # SQLite's tokenizer stops at NUL: index a stand-in a needle cannot usefully hold (see ranked()).
    return text.casefold().replace("\0", NUL_STAND_IN)


_SCHEMA = """
CREATE TABLE memory (
    id INTEGER PRIMARY KEY,
    file TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    ino INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    salience REAL NOT NULL, updated REAL NOT NULL, horizon REAL,
    piece INTEGER NOT NULL,
    revision INTEGER NOT NULL, updated_text TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
    withheld INTEGER NOT NULL
);
CREATE INDEX memory_by_type ON memory (type, key);
CREATE TABLE vector (id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE state (name TEXT PRIMARY KEY, value);
INSERT INTO state VALUES ('gen', 0), ('index_gen', -1), ('index_ino', NULL), ('index_mtime', NULL),
    ('index_size', NULL), ('fts', {fts}), ('sigs', NULL), ('sigs_gen', -1), ('written_ns', 0),
    ('vec_model', NULL), ('vec_gen', 0);
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
        self._rewrite = False  # the open write transaction changed a row or settled the racy ones
        # The rows it changed (a removed one: None), and the blob it starts from when of the current generation.
        self._changes: dict[str, Signature | None] = {}
        self._start: bytes | None = None
        try:
            with _translated():
                conn.execute("PRAGMA trusted_schema = OFF")
                self._check_or_create(fts)
                if path is not None:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a power cut may lose the last change
                else:
                    # The index of a tree held in memory (an encrypted bundle served read-only): a large sort
                    # or temp index would spill to a temp file under TMPDIR, plaintext bytes touching disk.
                    conn.execute("PRAGMA temp_store = MEMORY")
                self.fts = bool(self._state("fts"))
                self._math = _has_pow(conn)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def _check_or_create(self, fts: bool | None) -> None:
        """Check the version, or create the tables in an empty file: with an FTS5 search table when ``fts`` is
        not False and this SQLite has FTS5 (probed only here: an existing index says which it has)."""
        conn = self._conn
        app, version = self._header()
        if (app, version) == (APPLICATION_ID, DERIVED_VERSION):
            return
        if (app, version) != (0, 0):
            raise CatalogUnusable(f"application id {app:#x}, derived version {version}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            app, version = self._header()  # another process may have created it meanwhile
            if (app, version) == (0, 0):
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise CatalogUnusable("tables without our version")
                fts = fts5_available() if fts is None else fts and fts5_available()
                for statement in _SCHEMA.format(fts=int(fts)).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(_FTS if fts else _PLAIN)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")
            elif (app, version) != (APPLICATION_ID, DERIVED_VERSION):
                raise CatalogUnusable(f"application id {app:#x}, derived version {version}")
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
    def writing(self, now_ns: int | None = None) -> Iterator[Catalog]:
        """One transaction (all or nothing) for the changes in the ``with`` body.

        ``now_ns``: the time the caller took before reading the files it indexes (and before comparing the racy
        rows' bytes): when the transaction changes a row, or when :meth:`settle` is called, it becomes
        ``written_ns`` and the signature blob is rewritten whole."""
        with _translated():
            self._conn.execute("BEGIN IMMEDIATE")
            self._rewrite = False
            self._changes = {}
            self._start = None
            try:
                yield self
                if self._rewrite:
                    if now_ns is None:
                        raise ValueError("a transaction that changes rows needs the time it began")
                    self._store_signatures(now_ns)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            finally:
                self._rewrite = False
                self._changes = {}
                self._start = None
            self._conn.execute("COMMIT")

    # -- state ------------------------------------------------------------------

    def _state(self, name: str) -> int | None:
        with _translated():
            row = self._conn.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None or not isinstance(row[0], int) else int(row[0])

    def _set(self, name: str, value: object) -> None:
        self._conn.execute("INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)", (name, value))

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
        sig = (rows.get("index_ino"), rows.get("index_mtime"), rows.get("index_size"))
        known = None if not all(isinstance(n, int) for n in sig) else (int(sig[0]), int(sig[1]), int(sig[2]))  # type: ignore[arg-type]
        gen = rows.get("index_gen")
        return known, gen if isinstance(gen, int) else -1

    def set_index_state(self, signature: Signature | None, gen: int) -> None:
        ino, mtime, size = signature if signature is not None else (None, None, None)
        for name, value in (("index_ino", ino), ("index_mtime", mtime), ("index_size", size), ("index_gen", gen)):
            self._set(name, value)

    # -- files --------------------------------------------------------------------

    def signatures(self) -> dict[str, Signature]:
        """Every indexed file's signature by name (one SELECT)."""
        with _translated():
            found = self._conn.execute("SELECT file, ino, mtime_ns, size FROM memory").fetchall()
        if not all(type(f) is str and type(i) is int and type(m) is int and type(s) is int for f, i, m, s in found):
            # Only this program writes the rows; one of another type was put there by hand (SQLite keeps
            # whatever type a row is given): the index is rebuilt, as for any file not of ours.
            raise CatalogUnusable("the memory index holds a row that this program did not write")
        return {file: (ino, mtime, size) for file, ino, mtime, size in found}

    def compare(self, scan: Scan) -> tuple[bool, dict[str, int]]:
        """Whether the listing ``scan`` holds exactly the indexed files with their signatures, and the racy
        rows (git's rule: the file's mtime within :data:`RACY_NS` of ``written_ns``, the time the last change of
        the rows began; a same-size edit in the same timestamp tick keeps the signature, so they are compared
        by SHA-256). From the sorted signature blob when it is of the current generation (the sorted listing
        against it, as bytes), else from the rows. The racy rows come as their files' mtimes by name."""
        with _translated():
            rows = dict(
                self._conn.execute(
                    "SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'sigs', 'written_ns')"
                ).fetchall()
            )
        written = rows.get("written_ns")
        written = written if isinstance(written, int) else 0
        parts = _split(rows.get("sigs")) if rows.get("sigs_gen") == rows.get("gen") else None
        if parts is None:
            known = self.signatures()
            racy = {name: sig[1] for name, sig in known.items() if sig[1] + RACY_NS > written}
            return known == scan.memories, racy
        names, numbers = parts
        listed = scan.packed()
        same = listed is not None and listed[0] == names and listed[1] == numbers
        stored = array("q", numbers)
        mtimes = stored[1::3]
        if not mtimes or max(mtimes) + RACY_NS <= written:
            return same, {}
        split = names.decode("utf-8", "surrogateescape").split("\0")
        return same, {name: mtime for name, mtime in zip(split, mtimes, strict=True) if mtime + RACY_NS > written}

    def sha256(self, file: str) -> bytes | None:
        """The SHA-256 of the bytes ``file`` was indexed from (``None`` when it is not indexed)."""
        with _translated():
            row = self._conn.execute("SELECT sha256 FROM memory WHERE file = ?", (file,)).fetchone()
        return None if row is None or not isinstance(row[0], bytes) else bytes(row[0])

    def digests(self) -> dict[str, bytes]:
        """Every indexed file's SHA-256 by name."""
        with _translated():
            return {str(f): bytes(d) for f, d in self._conn.execute("SELECT file, sha256 FROM memory") if isinstance(d, bytes)}

    def put(self, file: str, row: Row) -> None:
        """Index one file (replacing what was there). Inside :meth:`writing`."""
        self.remove(file)
        self._changes[file] = row.signature
        sal, updated, horizon = row.basis
        revision, updated_text, name, description, withheld = row.listed
        cursor = self._conn.execute(
            "INSERT INTO memory (file, key, type, ino, mtime_ns, size, sha256, salience, updated, horizon, piece, "
            "revision, updated_text, name, description, withheld) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file, row.key, row.type, *row.signature, row.sha256, sal, updated, horizon, row.piece,
             revision, updated_text, name, description, int(withheld)),
        )
        self._conn.execute(
            "INSERT INTO search (rowid, name, description, body) VALUES (?, ?, ?, ?)",
            (cursor.lastrowid, *map(_fold, row.search)),
        )
        self._changed()

    def remove(self, file: str) -> None:
        """Forget one file (nothing when it is not indexed). Inside :meth:`writing`."""
        row = self._conn.execute("SELECT id FROM memory WHERE file = ?", (file,)).fetchone()
        if row is not None:
            self._changes[file] = None
            self._conn.execute("DELETE FROM vector WHERE id = ?", (row[0],))
            self._conn.execute("DELETE FROM search WHERE rowid = ?", (row[0],))
            self._conn.execute("DELETE FROM memory WHERE id = ?", (row[0],))
            self._changed()

    def settle(self) -> None:
        """Move ``written_ns`` on (the racy rows' bytes were compared and are unchanged). Inside :meth:`writing`."""
        self._rewrite = True

    def _changed(self) -> None:
        if not self._rewrite and self._start is None:  # before the first change: the blob it starts from
            rows = dict(
                self._conn.execute("SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'sigs')").fetchall()
            )
            blob = rows.get("sigs")
            if rows.get("sigs_gen") == rows.get("gen") and isinstance(blob, bytes):
                self._start = blob
        self._rewrite = True
        self._conn.execute("UPDATE state SET value = value + 1 WHERE name = 'gen'")

    def _store_signatures(self, now_ns: int) -> None:
        """The sorted signature blob of the generation the transaction ends at, written whole: the blob it
        started from with its changes made (a few rows changed among thousands: no row is read), or the rows
        read in file order."""
        blob = _spliced(self._start, self._changes) if self._start is not None else None
        if blob is None:
            rows = self._conn.execute("SELECT file, ino, mtime_ns, size FROM memory ORDER BY file").fetchall()
            blob = pack([row[0] for row in rows], [n for row in rows for n in row[1:]])
        self._set("sigs", blob)
        self._set("written_ns", now_ns)
        self._conn.execute(
            "INSERT OR REPLACE INTO state (name, value) VALUES ('sigs_gen', (SELECT value FROM state WHERE name = 'gen'))"
        )

    # -- vectors ------------------------------------------------------------------

    def vector_model(self) -> str | None:
        """The model (``<model id>#<dimension>``) the stored vectors are of, or None."""
        with _translated():
            row = self._conn.execute("SELECT value FROM state WHERE name = 'vec_model'").fetchone()
        return row[0] if row is not None and isinstance(row[0], str) else None

    def vector_gen(self) -> int:
        """Bumped whenever vectors are stored or dropped (with :attr:`gen`, what an in-process copy is of)."""
        return self._state("vec_gen") or 0

    def use_vector_model(self, model: str) -> None:
        """Keep only vectors of ``model``: those of another are dropped. Inside :meth:`writing`."""
        if self.vector_model() != model:
            self._conn.execute("DELETE FROM vector")
            self._set("vec_model", model)
            self._conn.execute("UPDATE state SET value = value + 1 WHERE name = 'vec_gen'")

    def without_vectors(self, size: int) -> list[tuple[int, str, str, str]]:
        """(row id, name, description, body) of the search text of every row without a vector of ``size`` bytes
        (none, or one of another length: put there by hand)."""
        with _translated():
            rows = self._conn.execute(
                "SELECT m.id, s.name, s.description, s.body FROM memory m JOIN search s ON s.rowid = m.id "
                "WHERE NOT EXISTS (SELECT 1 FROM vector v WHERE v.id = m.id AND length(v.vec) = ?)", (size,)
            ).fetchall()
        return [(int(i), str(n), str(d), str(b)) for i, n, d, b in rows]

    def put_vectors(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Store vectors by row id (rows gone meanwhile are skipped). Inside :meth:`writing`."""
        self._conn.executemany(
            "INSERT OR REPLACE INTO vector (id, vec) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM memory WHERE id = ?)",
            ((i, blob, i) for i, blob in rows),
        )
        self._conn.execute("UPDATE state SET value = value + 1 WHERE name = 'vec_gen'")

    def vector_rows(self) -> list[tuple[int, str, float, float, float | None, int, bytes | None]]:
        """(row id, key, salience, updated, horizon, piece, vector or None) of every memory, by row id."""
        with _translated():
            return self._conn.execute(
                "SELECT m.id, m.key, m.salience, m.updated, m.horizon, m.piece, v.vec FROM memory m "
                "LEFT JOIN vector v ON v.id = m.id ORDER BY m.id"
            ).fetchall()

    def vector_ids(self, keys: Iterable[str]) -> dict[str, int]:
        """Row ids of ``keys`` (those indexed)."""
        wanted = list(keys)
        found: dict[str, int] = {}
        with _translated():
            for at in range(0, len(wanted), 500):
                chunk = wanted[at : at + 500]
                marks = ",".join("?" * len(chunk))
                found |= {str(k): int(i) for k, i in self._conn.execute(
                    f"SELECT key, id FROM memory WHERE key IN ({marks})", chunk)}
        return found

    def lexical(self, words: list[str]) -> dict[int, float]:
        """BM25 (FTS5's: lower is better) by row id of the rows holding any of ``words`` (folded, each at least
        3 characters: trigrams); empty without FTS5.

        Words in half the rows or more are left out when a rarer word of them matches: FTS5 floors the IDF
        of such a term at 1e-6 (sqlite/sqlite ``ext/fts5/fts5_aux.c``, ``fts5Bm25GetData``: ``if( idf<=0.0 )
        idf = 1e-6;``), so next to a rarer word's match it weighs well under a thousandth of it, while
        scoring its every match costs ~7 ms per 1,000 rows. Whether a word is that common is a count stopped
        at half the rows. When no rarer word matches, the common words are searched."""
        words = [w for w in words if len(w) >= TRIGRAM and NUL_STAND_IN not in w]
        if not self.fts or not words:
            return {}
        with _translated():
            half = (self.count() + 1) // 2  # FTS5's IDF is <= 0 from nHit >= nRow / 2
            rare: list[str] = []
            common: list[str] = []
            for phrase in ('"' + w.replace('"', '""') + '"' for w in words):
                hits = self._conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM search WHERE search MATCH ? LIMIT ?)", (phrase, half)
                ).fetchone()[0]
                (common if hits >= half else rare if hits else []).append(phrase)
            searched = rare or common
            if not searched:
                return {}
            return {int(i): float(b) for i, b in self._conn.execute(
                "SELECT rowid, bm25(search) FROM search WHERE search MATCH ?", (" OR ".join(searched),))}

    # -- queries ----------------------------------------------------------------

    def count(self) -> int:
        with _translated():
            return int(self._conn.execute("SELECT count(*) FROM memory").fetchone()[0])

    def index_keys(self, lines: int) -> list[str]:
        """The keys of the memories an index of ``lines`` lines can show: by type in the index's order, then by
        key, ``lines`` in all. ``MEMORY.md`` is rendered from their files, without reading every memory."""
        keys: list[str] = []
        with _translated():
            for kind in MEMORY_TYPES:
                if len(keys) >= lines:
                    break
                keys += [
                    str(r[0])
                    for r in self._conn.execute(
                        "SELECT key FROM memory WHERE type = ? ORDER BY key LIMIT ?", (kind, lines - len(keys))
                    )
                ]
        return keys

    def listed(self) -> tuple[list[str], list[str], list[str]]:
        """Every row's file, sorted by file name as :func:`pack` sorts (bytewise UTF-8, which is code-point
        order); its ``memory list`` line, formatted now from its listing fields (key, type, revision,
        updated, name — description, tab-separated; the key is the file name's), sorted (by key: a key holds
        no character below the tab); and the files whose line made from the file shows a credential
        (``Row.listed``). The caller shows them only when the files are exactly those of the tree's listing
        (no row without its file)."""
        with _translated():
            rows = self._conn.execute(
                "SELECT file, type, revision, updated_text, name, description, withheld FROM memory"
            ).fetchall()
        # In table order, which is mostly file order: sorted here (the file names are unique, so only they are
        # compared) at less cost than SQLite's walk of the file index; code-point order is bytewise UTF-8 order.
        try:
            rows.sort()
        except TypeError:  # a file name of another type, put there by hand (SQLite keeps whatever it is given)
            raise CatalogUnusable("the memory index holds a row that this program did not write") from None
        # Formatted as this program writes them; a field of another type (put there by hand: SQLite keeps
        # whatever it is given) is formatted as Python prints it, then escaped and redacted as any line is.
        lines = [f"{f[:-3]}\t{t}\tr{r}\t{u}\t{n} \u2014 {d}" for f, t, r, u, n, d, _w in rows]
        lines.sort()
        return [row[0] for row in rows], lines, [row[0] for row in rows if row[6]]

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
