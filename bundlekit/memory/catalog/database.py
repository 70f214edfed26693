"""The derived index's database: the connection, its version, its read and write transactions, its state.

One SQLite file (``<tree>/.bundlekit/index.sqlite``, WAL mode) or, for a tree in
memory, a private in-memory database. ``PRAGMA user_version`` is
:data:`DERIVED_VERSION` and ``application_id`` :data:`APPLICATION_ID`; a file of
another version or program, or one SQLite cannot read, raises
:class:`CatalogUnusable` (the indexer deletes and rebuilds it). The tables are
created here (``_SCHEMA``); the stat cache, search, listing and vectors
(``catalog.stat``, ``catalog.search``, ``catalog.listing``, ``catalog.vectors``)
are small objects on this one connection (the package docstring describes the
tables).
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundlekit._fs import open_regular, read_up_to
from bundlekit.errors import MemoryStoreError

__all__ = [
    "APPLICATION_ID",
    "CATALOG_FILE",
    "DERIVED_VERSION",
    "CatalogUnavailable",
    "CatalogUnusable",
    "Database",
    "Signature",
    "catalog_files",
    "fts5_available",
    "moved",
    "translated",
]

# Bump on any change of what is stored or of a rule it is derived by: the schema below, ranking.TYPE_BONUS,
# HALF_LIFE, DECAY_HORIZONS, piece_length, the folding, the secret rules (secrets._SPECS: the search text is
# withheld by them). tests/memory/test_derived_index.py pins a fingerprint of them to this number.
DERIVED_VERSION = 12
APPLICATION_ID = 0x626B6D69  # "bkmi"
CATALOG_FILE = "index.sqlite"
_SIDE_FILES = ("", "-wal", "-shm", "-journal")
# Errors that say "busy", not "broken": never a reason to rebuild.
_TRANSIENT = {"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "SQLITE_FULL", "SQLITE_IOERR"}
_NOT_HERE = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH"}
# The first 20 bytes of a database file: the magic string, the page size, the write and read format versions
# (sqlite.org/fileformat2.html, "1.3. The Database Header": 1 legacy, 2 WAL; btree.c, lockBtree: a write version
# over 2 opens the file read-only, a read version over 2 not at all).
_MAGIC = b"SQLite format 3\0"
_FORMATS = (1, 2)

Signature = tuple[int, int, int]


class CatalogUnusable(Exception):
    """The index file is corrupt, truncated, or of another version or program: rebuild it."""


class CatalogUnavailable(OSError):
    """The index file cannot be opened or written here (permissions, a read-only tree)."""



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


def _enter_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the file in WAL mode, waiting up to ``timeout`` seconds for other connections to let go.

    The switch needs the file to itself. When two connections contend for it (two agents opening a new
    tree together, each switching), SQLite may answer SQLITE_BUSY at once, without the busy handler, rather
    than risk a deadlock (sqlite.org/c3ref/busy_handler.html). So the switch is retried here, with short
    pauses, as the busy handler would; any other error is raised at once. A file already in WAL mode
    answers at once.
    """
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorname", "") != "SQLITE_BUSY" or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _has_pow(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has the math functions (``pow``) to rank in SQL."""
    try:
        conn.execute("SELECT pow(0.5, 2.0)").fetchone()
    except sqlite3.Error:
        return False
    return True


def _check_formats(path: Path) -> None:
    """Raise :class:`CatalogUnusable` when the file at ``path`` is an SQLite database whose header gives a write
    or read format version other than 1 or 2 (a damaged header). SQLite opens a file of a write version over 2
    read-only and answers ``SQLITE_READONLY`` when it is written, the answer a read-only tree gives: read here,
    before the open, that damage is a reason to rebuild the cache, and ``SQLITE_READONLY`` means the tree's
    permissions. A file absent, shorter than the header (being created) or not SQLite's is left to SQLite."""
    try:
        fd = open_regular(path)  # a link, FIFO or device is never read: the indexer names what is planted there
    except OSError:
        return
    try:
        head = read_up_to(fd, 20)
    except OSError:
        return
    finally:
        os.close(fd)
    if len(head) == 20 and head.startswith(_MAGIC) and not (head[18] in _FORMATS and head[19] in _FORMATS):
        raise CatalogUnusable(f"the file's header gives write format {head[18]} and read format {head[19]}, not 1 or 2")


def catalog_files(directory: Path) -> list[Path]:
    """The database file and its WAL, shared-memory and journal companions in ``directory``."""
    return [directory / (CATALOG_FILE + suffix) for suffix in _SIDE_FILES]


def moved(exc: BaseException) -> bool:
    """Whether ``exc`` (a :class:`CatalogUnavailable`) came from SQLite finding its file deleted or replaced
    under it (``SQLITE_READONLY_DBMOVED``: another process's rebuild), not from the tree's permissions."""
    return getattr(exc.__cause__, "sqlite_errorname", "") == "SQLITE_READONLY_DBMOVED"


@contextmanager
def translated() -> Iterator[None]:
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
    line TEXT NOT NULL, withheld INTEGER NOT NULL
);
CREATE INDEX memory_by_type ON memory (type, key);
CREATE TABLE vector (id INTEGER PRIMARY KEY, vec BLOB NOT NULL, head BLOB);
CREATE TABLE usage (key TEXT PRIMARY KEY, returned REAL, boost REAL NOT NULL, at REAL NOT NULL);
CREATE TABLE state (name TEXT PRIMARY KEY, value);
INSERT INTO state VALUES ('gen', 0), ('index_gen', -1), ('index_ino', NULL), ('index_mtime', NULL),
    ('index_size', NULL), ('fts', {fts}), ('sigs', NULL), ('sigs_gen', -1), ('written_ns', 0),
    ('vec_model', NULL), ('vec_gen', 0);
"""
_FTS = "CREATE VIRTUAL TABLE search USING fts5(name, description, body, tokenize='trigram case_sensitive 1')"
# Recall's term-level BM25 (catalog.search.lexical): the search text again, as English words stemmed (SQLite's
# porter over unicode61), its text read from ``search`` (external content: no second copy), and the number of
# memories each stem is in (fts5vocab), read before a term reaches a MATCH.
_TERMS = (
    "CREATE VIRTUAL TABLE terms USING fts5(name, description, body, content='search', content_rowid='rowid', "
    "tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE terms_df USING fts5vocab(terms, 'row')",
)
# How many bytes of new terms an FTS5 table holds in memory before it writes them out as a segment (SQLite's
# default is 1 MiB). A first index of 10,000 memories writes ~80 MB of trigram index: with 1 MiB it flushed and
# merged ~80 small segments, with 8 MiB a tenth of them (the trigram inserts 1.8 -> 1.4 s, CPU; 16, 32 and 64 MiB
# gained nothing more): at most 16 MiB more held by a large transaction (two tables). Kept in the table's own
# configuration; a transaction of a few memories never comes near it.
FTS_HASH_SIZE = 8 * 1024 * 1024


def _set_hash_size(conn: sqlite3.Connection) -> None:
    """Give the FTS5 tables :data:`FTS_HASH_SIZE` (nothing where this SQLite has no ``hashsize`` option: a
    speed setting, not a meaning)."""
    for table in ("search", "terms"):
        try:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('hashsize', ?)", (FTS_HASH_SIZE,))
        except sqlite3.OperationalError:
            return


_PLAIN = "CREATE TABLE search (rowid INTEGER PRIMARY KEY, name TEXT, description TEXT, body TEXT)"


_PIECE = 4096  # how much of a bytes value :meth:`Database.set_bytes` compares and writes at a time


class Database:
    """One open index database (one per :class:`Memory`, which serializes the threads that use it): the
    connection, checked or created at :data:`DERIVED_VERSION`, with the ``state`` table's values.

    Reads run in :meth:`reading` (one snapshot), changes in :meth:`transaction`
    (one transaction, taken only under the tree lock).
    """

    def __init__(self, path: Path | None, *, fts: bool | None = None, timeout: float = 30.0) -> None:
        self.path = path
        if path is not None:
            _check_formats(path)
        with translated():
            conn = sqlite3.connect(
                ":memory:" if path is None else os.fspath(path),
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,  # a Memory serializes its own use (tree.Memory._mutex)
            )
        self.conn = conn
        try:
            with translated():
                conn.execute("PRAGMA trusted_schema = OFF")
                self._check_or_create(fts)
                if path is not None:
                    _enter_wal(conn, timeout)
                    conn.execute("PRAGMA synchronous = NORMAL")  # a cache: a power cut may lose the last change
                else:
                    # The index of a tree held in memory (an encrypted bundle served read-only): a large sort
                    # or temp index would spill to a temp file under TMPDIR, plaintext bytes touching disk.
                    conn.execute("PRAGMA temp_store = MEMORY")
                self.fts = bool(self.state("fts"))
                self.math = _has_pow(conn)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    def _check_or_create(self, fts: bool | None) -> None:
        """Check the version, or create the tables in an empty file: with an FTS5 search table when ``fts`` is
        not False and this SQLite has FTS5 (probed only here: an existing index says which it has)."""
        conn = self.conn
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
                for statement in (_FTS, *_TERMS) if fts else (_PLAIN,):
                    conn.execute(statement)
                if fts:
                    _set_hash_size(conn)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {DERIVED_VERSION}")
            elif (app, version) != (APPLICATION_ID, DERIVED_VERSION):
                raise CatalogUnusable(f"application id {app:#x}, derived version {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _header(self) -> tuple[int, int]:
        """The file's application id and derived version, read in one statement (one snapshot): read apart,
        a creator's commit between them gave another process (0, version), a "foreign" file to rebuild."""
        app, version = self.conn.execute(
            "SELECT a.application_id, v.user_version FROM pragma_application_id() AS a, pragma_user_version() AS v"
        ).fetchone()
        return int(app), int(version)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One consistent snapshot for the queries in the ``with`` body (inside another, that one's)."""
        if self.conn.in_transaction:
            yield
            return
        with translated():
            self.conn.execute("BEGIN")
            try:
                yield
            finally:
                self.conn.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (all or nothing) for the changes in the ``with`` body."""
        with translated():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    @contextmanager
    def impatient(self, wait_ms: int) -> Iterator[None]:
        """Wait at most ``wait_ms`` for another connection's lock in the ``with`` body (``PRAGMA busy_timeout``;
        then SQLite says busy), not the connection's usual timeout: for a write that may be given up (a usage
        note) rather than hold up the command's answer."""
        with translated():
            usual = int(self.conn.execute("PRAGMA busy_timeout").fetchone()[0])
            self.conn.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
        try:
            yield
        finally:
            with translated():
                self.conn.execute(f"PRAGMA busy_timeout = {usual}")

    # -- state ------------------------------------------------------------------

    def state(self, name: str) -> int | None:
        """The ``state`` table's whole-number value ``name`` (``None`` when absent or not a whole number)."""
        with translated():
            row = self.conn.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None or not isinstance(row[0], int) else int(row[0])

    def state_blob(self, name: str) -> bytes | None:
        """The ``state`` table's bytes value ``name`` (``None`` when absent or not bytes)."""
        with translated():
            row = self.conn.execute("SELECT value FROM state WHERE name = ?", (name,)).fetchone()
        return None if row is None or not isinstance(row[0], bytes) else bytes(row[0])

    def set(self, name: str, value: object) -> None:
        """Set the ``state`` value ``name``. Inside :meth:`transaction`."""
        self.conn.execute("INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)", (name, value))

    def set_bytes(self, name: str, value: bytes, *, old: bytes | None = None) -> None:
        """Set the ``state`` bytes value ``name`` to ``value``; when it holds as many bytes already, only the
        pieces that differ are written, in place (SQLite's incremental blob I/O): a round that changed 10
        signatures of 100,000 writes a few pages of the 6 MB signature blob, not all of it (then once more at the
        checkpoint). The same value either way. Inside :meth:`transaction`. ``old``: the value stored under
        ``name``, as the caller read it in this transaction or since the last commit of any connection (it is then
        not read again: 1,500 pages at 100,000 memories); its length is still checked against the stored one."""
        if old is None:
            row = self.conn.execute("SELECT rowid, value FROM state WHERE name = ?", (name,)).fetchone()
            stored = None if row is None or not isinstance(row[1], bytes) else row[1]
        else:
            row = self.conn.execute("SELECT rowid, typeof(value), length(value) FROM state WHERE name = ?",
                                    (name,)).fetchone()
            stored = old if row is not None and row[1] == "blob" and row[2] == len(old) else None
        if stored is None or len(stored) != len(value) or len(value) < _PIECE:
            self.set(name, value)
            return
        old = stored
        with self.conn.blobopen("state", "value", row[0]) as blob:
            for at in range(0, len(value), _PIECE):
                piece = value[at : at + _PIECE]
                if piece != old[at : at + _PIECE]:
                    blob.seek(at)
                    blob.write(piece)

    def data_version(self) -> int:
        """SQLite's ``data_version``: it moves when another connection commits a change."""
        with translated():
            return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    @property
    def gen(self) -> int:
        """The generation: bumped by every change to the indexed memories."""
        return self.state("gen") or 0
