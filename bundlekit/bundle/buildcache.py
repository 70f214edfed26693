"""A tree's build cache: the ciphertexts of its last encrypted build, so a re-build of an unchanged file keeps its CID.

``bundlekit-enc/1`` draws a fresh salt and nonce prefix for every file it encrypts, so an
unchanged memory encrypted again is new bytes under a new CID: every encrypted build re-uploaded
the whole tree. The cache keeps, per bundle path, what the last build stored: the SHA-256 of the
plaintext, the ciphertext, and a tag (``BundleKey.reuse_tag``: an HMAC under a key derived from the
bundle key over the path, the plaintext's digest and the ciphertext's digest), with the last
build's ``encryption`` parameters. A build with the same key re-opens that bundle key (its salt;
``KeySpec.open_bundle_key`` checks the commitment) and stores the cached ciphertext of a file only
when the plaintext it holds now hashes to the cached digest and the tag verifies under that key:
the very bytes this key made from this plaintext at this path, never a stale or planted entry
(``specs/encryption.md``, "Re-builds"). Anything else is encrypted afresh. The cache holds no
plaintext; lost or damaged it costs a re-encryption, never a wrong byte.

``<tree>/.bundlekit/build-cache.sqlite``, local to this copy of the tree like the derived index;
each build leaves in it exactly the files it stored (writing only the rows that changed), one version per path.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Mapping
from contextlib import closing, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bundlekit.crypto import _encrypt_bytes, encrypted_size
from bundlekit.errors import BundlekitError
from bundlekit.memory.links import ensure_real_dir
from bundlekit.memory.naming import HIDDEN_DIR

if TYPE_CHECKING:
    from bundlekit.crypto._keys import BundleKey, KeySpec

__all__ = ["CACHE_NAME", "EncryptionCache", "drop_planted", "drop_tables", "plain_files", "plain_tables", "write_cache"]

CACHE_NAME: Final = f"{HIDDEN_DIR}/build-cache.sqlite"
_DIGEST: Final = 32  # a SHA-256 digest and an HMAC-SHA-256 tag
_SIDE_FILES: Final = ("", "-journal", "-wal", "-shm")  # what SQLite opens beside the database
_TABLES: Final = ("params", "files")  # an encrypted build's: read only when plain (``plain_tables``)


def plain_files(path: Path) -> bool:
    """Whether the cache and the files SQLite keeps beside it are each absent or a regular file: SQLite follows
    links, so a link (to another tree's cache, or to a file outside the tree) or a FIFO is never opened."""
    for suffix in _SIDE_FILES:
        try:
            mode = os.lstat(f"{path}{suffix}").st_mode
        except FileNotFoundError:
            continue
        except OSError:
            return False
        if not stat.S_ISREG(mode):
            return False
    return True


def plain_tables(db: sqlite3.Connection, names: tuple[str, ...]) -> bool:
    """Whether each of ``names`` in the cache ``db`` is a plain table or absent, asked of its schema before any
    row is read. A view, a virtual table or a generated (hidden) column is an expression SQLite runs on every
    read of a file planted in the tree: an endless recursive CTE there is a read inside SQLite no signal ends, a
    ``zeroblob()`` one that fills the memory; a read of a plain table is bounded by the file."""
    marks = ", ".join("?" * len(names))
    found = db.execute(
        f"SELECT (SELECT count(*) FROM sqlite_master WHERE name COLLATE NOCASE IN ({marks}) "
        "AND (type != 'table' OR sql LIKE 'CREATE VIRTUAL%')) "
        "+ (SELECT count(*) FROM sqlite_master AS t, pragma_table_xinfo(t.name) AS c "
        f"WHERE t.type = 'table' AND t.name COLLATE NOCASE IN ({marks}) AND c.hidden != 0)", names + names).fetchone()
    return found is not None and found[0] == 0


def drop_planted(db: sqlite3.Connection, names: tuple[str, ...]) -> None:
    """In a save's transaction: ``names`` dropped when one of them is not a plain table (:func:`plain_tables`),
    so the save writes them anew."""
    if not plain_tables(db, names):
        drop_tables(db, names)


def drop_tables(db: sqlite3.Connection, names: tuple[str, ...]) -> None:
    """In a write transaction: each of ``names`` (any case) dropped, whatever it is (a table, a view), unread."""
    for name in names:
        kind = db.execute("SELECT type FROM sqlite_master WHERE name = ? COLLATE NOCASE", (name,)).fetchone()
        if kind is not None:
            db.execute(f"DROP {'VIEW' if kind[0] == 'view' else 'TABLE'} {name}")


def write_cache(path: Path, write: Callable[[sqlite3.Connection], None]) -> None:
    """Run ``write`` in one write transaction (``BEGIN IMMEDIATE``: what it finds and what it writes) on the cache
    at ``path``: the build caches' one way in. A cache: a tree it cannot be written in still builds (SQLite and
    OS errors are dropped), and nothing is written through a link or a FIFO in its place."""
    with suppress(sqlite3.Error, OSError, BundlekitError):
        ensure_real_dir(path.parent)
        if not plain_files(path):
            return
        with closing(sqlite3.connect(path)) as db, db:
            db.execute("BEGIN IMMEDIATE")
            write(db)


def _row(path: object, plain: object, cipher: object, tag: object) -> tuple[str, tuple[bytes, bytes, bytes]] | None:
    """A cache row as typed, or None for one edited into another shape (a text digest, a short tag)."""
    if not (isinstance(path, str) and isinstance(plain, bytes) and isinstance(cipher, bytes)
            and isinstance(tag, bytes) and len(plain) == _DIGEST and len(tag) == _DIGEST):
        return None
    return path, (plain, cipher, tag)


_PARAMS: Final = "SELECT namespace, params FROM params ORDER BY namespace"
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS params (namespace TEXT PRIMARY KEY, params TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, plain BLOB NOT NULL, cipher BLOB NOT NULL, "
    "tag BLOB NOT NULL)",
)


class EncryptionCache:
    """The encrypted files of one build of ``tree`` (None: a tree held in memory, nothing cached).

    ``bundle_key`` first, then ``encrypt`` per file, then ``save``. ``encrypted`` counts the files
    encrypted afresh and ``reused`` the ones taken from the cache (tests count them). ``partial``: the build
    stores part of the tree (a shared bundle), so the rows of the files it leaves out are kept for the next
    whole build, not removed as gone."""

    def __init__(self, tree: Path | None, *, partial: bool = False) -> None:
        self.path = None if tree is None else tree / CACHE_NAME
        self._partial = partial
        self._rows: dict[str, tuple[bytes, bytes, bytes]] = {}
        self._seen: list[Any] | None = None  # the params table as read: a save finding it changed rewrites all
        self._next: dict[str, tuple[bytes, bytes, bytes]] = {}
        self._key: BundleKey | None = None
        self.encrypted = 0
        self.reused = 0

    def _read(self, namespace: str, sizes: Mapping[str, int]) -> dict[str, Any] | None:
        """The last build's parameters for ``namespace`` (None when unknown) and, into ``_rows``, its rows for
        the paths in ``sizes`` (bundle path -> plaintext size) whose ciphertext has exactly the size that
        plaintext encrypts to: what is read is bounded by what this build stores, whatever the file holds."""
        if self.path is None or not self.path.exists() or not plain_files(self.path):
            return None
        try:
            with closing(sqlite3.connect(self.path)) as db:
                if not plain_tables(db, _TABLES):
                    return None
                found = db.execute("SELECT params FROM params WHERE namespace = ?", (namespace,)).fetchone()
                if found is None:
                    return None
                seen = db.execute(_PARAMS).fetchall()
                db.execute("CREATE TEMP TABLE wanted (path TEXT PRIMARY KEY, size INTEGER NOT NULL)")
                db.executemany("INSERT INTO temp.wanted VALUES (?, ?)",
                               [(path, encrypted_size(size)) for path, size in sizes.items()])
                rows = (_row(*found_row) for found_row in db.execute(
                    "SELECT f.path, f.plain, f.cipher, f.tag FROM files AS f JOIN temp.wanted AS w "
                    "ON f.path = w.path AND typeof(f.cipher) = 'blob' AND length(f.cipher) = w.size"))
                self._rows = dict(row for row in rows if row is not None)
            self._seen = seen
            params = json.loads(found[0])
            return params if isinstance(params, dict) else None
        except (sqlite3.Error, ValueError):
            self._rows = {}
            return None

    def bundle_key(
        self, key: KeySpec, namespace: str, rng: Callable[[int], bytes], sizes: Mapping[str, int]
    ) -> tuple[BundleKey, dict[str, Any]]:
        """The last build's bundle key when ``key`` opens it (same salt, so cached files stay valid), else a
        fresh one; with its ``manifest["encryption"]`` parameters. ``sizes``: the plaintext size of each file
        the build will encrypt, by bundle path (only their rows are read). A key that draws a fresh bundle key
        every time (``KeySpec.fresh_per_bundle``: recipients, an identity re-encrypting) reuses nothing."""
        if key.fresh_per_bundle:  # nothing read, and nothing saved: the cache of the tree's other builds stays
            self.path = None
        previous = None if self.path is None else self._read(namespace, sizes)
        if previous is not None:
            with suppress(BundlekitError):  # another key, or damaged parameters: a fresh bundle key
                self._key = key.open_bundle_key(previous, namespace)
                return self._key, previous
        self._rows = {}
        self._key, params = key.new_bundle_key(namespace, rng)
        return self._key, params

    def encrypt(self, data: bytes, path: str, rng: Callable[[int], bytes]) -> bytes:
        """``data`` encrypted for bundle path ``path``: the cached ciphertext when it provably holds exactly
        ``data`` under this build's key, else a fresh encryption."""
        assert self._key is not None, "bundle_key() comes first"
        plain = hashlib.sha256(data).digest()
        path_b = path.encode("utf-8")
        row = self._rows.get(path)
        if row is not None and hmac.compare_digest(row[0], plain):
            cipher = row[1]
            if hmac.compare_digest(row[2], self._key.reuse_tag(path_b, plain, hashlib.sha256(cipher).digest())):
                self._next[path] = row
                self.reused += 1
                return cipher
        cipher = _encrypt_bytes(data, self._key, path, rng)
        self.encrypted += 1
        self._next[path] = (plain, cipher, self._key.reuse_tag(path_b, plain, hashlib.sha256(cipher).digest()))
        return cipher

    def save(self, namespace: str, params: dict[str, Any]) -> None:
        """Keep this build's files and parameters in place of the last: only the rows that changed are written,
        the paths it no longer has removed (a partial build's left-out paths kept) (one transaction; a cache: a
        tree it cannot be written in still builds)."""
        if self.path is not None:
            write_cache(self.path, lambda db: self._write(db, namespace, params))

    def _write(self, db: sqlite3.Connection, namespace: str, params: dict[str, Any]) -> None:
        drop_planted(db, _TABLES)
        for statement in _SCHEMA:
            db.execute(statement)
        # another key or namespace, a first build, or another build saved since this one read (its rows
        # may be under another key): the rows start again
        base = self._rows if db.execute(_PARAMS).fetchall() == self._seen else {}
        db.execute("DELETE FROM params")
        db.execute("INSERT INTO params VALUES (?, ?)", (namespace, json.dumps(params, sort_keys=True)))
        if not base:
            db.execute("DELETE FROM files")
        if not self._partial:  # the paths this build no longer has are gone
            db.execute("CREATE TEMP TABLE kept (path TEXT PRIMARY KEY)")
            db.executemany("INSERT INTO temp.kept VALUES (?)", [(p,) for p in self._next])
            db.execute("DELETE FROM files WHERE path NOT IN (SELECT path FROM temp.kept)")
        db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
                       [(p, *row) for p, row in sorted(self._next.items()) if base.get(p) != row])
