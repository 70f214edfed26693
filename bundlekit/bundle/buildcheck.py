"""What a tree's last build found of each file, so the next build checks and parses only the files that changed.

A build checks every file it packs (key rules, frontmatter, the whole secret guard, the device rule) and
needs of every memory its index fields (key, type, name, description: ``MEMORY.md`` lists them) and its
``updated`` time (the bundle's default ``created``). Parsing and guarding 10,000 files costs most of a
build; git's answer is its index, which remembers each file's object by stat signature. Here the key is
stronger than a stat signature: the SHA-256 of the bytes read now. Every file is still read at every build
(the bundle carries the files' bytes as read, never a cached copy), and a file whose bytes hash to the
digest remembered for its name was checked at that digest: the same bytes pass the same checks and parse
to the same fields, so it is neither parsed nor checked again. An edit in place that keeps size, mtime and
inode changes the bytes, so the digest: nothing like git's racy-entry rule is needed.

The verdicts hold under the rules that made them: each row is kept with a fingerprint of the checking code
(:func:`rules_fingerprint`: the source of the modules that parse and guard). Another fingerprint (an upgrade, a new secret rule) drops every row: the next build checks every
file again. Only a build that succeeded saves (a file refused never gets a row), and only memories that are
not device-bound (those refuse the build).

Table ``checked`` in ``<tree>/.bundlekit/build-cache.sqlite`` (beside ``bundle.buildcache``'s tables): one row
per memory file (``<key>.md``) or timeline day (``timeline/<day>``): ``sha256``, and for a memory ``type``,
``name``, ``description`` and ``updated_us`` (``updated`` in microseconds since the epoch, exact). A build
writes only the rows that changed and removes those of files gone, in one transaction. The file is local to
this copy of the tree. A tree may come from elsewhere with its ``.bundlekit/`` (copied, unpacked): rows
planted there could name the digest of a file the planter wrote with other index fields, or a secret it holds
as checked. So the rows are sealed: table ``seal`` holds the HMAC-SHA-256, under this user's key
(:func:`seal_key`, in their bundlekit data directory, outside every tree), of every row as SQL literals in path
order, rewritten with the rows in the same transaction; rows whose seal does not verify are all ignored.
``quote()`` ends a text at its first NUL, so a row holding a NUL in a text is ignored too: a forged tail after
one would quote as the sealed text did. Lost, damaged, unsealed or of another shape it costs a full check, never
a wrong byte: a row that is not exactly of its shape is ignored too. A ``checked`` or ``seal`` that is not a plain
table (a view, a virtual table, a generated column: an expression run on every read, endless or huge) is
not read at all, and replaced at the next save.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from bundlekit._fs import atomic_write_bytes, open_regular, read_up_to
from bundlekit.blockstore import default_store_root
from bundlekit.bundle.buildcache import CACHE_NAME, drop_planted, plain_files, plain_tables, write_cache
from bundlekit.crypto._hmac import hmac_sha256
from bundlekit.errors import BundleError, BundlekitError
from bundlekit.memory.naming import TIMELINE_DIR

if TYPE_CHECKING:
    from bundlekit.memory import MemoryRecord

__all__ = ["KEY_FILE", "CheckCache", "Passed", "rules_fingerprint", "seal_key", "sources_digest"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US: Final = timedelta(microseconds=1)
#: The modules whose code decides whether a file passes a build's checks and what its index fields are.
_RULES: Final = ("_secrets", "memory/screen", "memory/record", "memory/quickyaml", "memory/frontmatter",
                 "memory/naming", "memory/timeline", "memory/device", "memory/timefmt", "memory/access",
                 "bundle/buildcheck")  # memory/access: TreeAccess.checked, which calls the guards
_TIMELINE_PREFIX: Final = f"{TIMELINE_DIR}/"
_CHECKS_VERSION: Final = b"bundlekit build checks 1"  # bump to drop every verdict whatever the sources say
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS checked (path TEXT PRIMARY KEY, sha256 BLOB NOT NULL, rules TEXT NOT NULL, "
    "type TEXT, name TEXT, description TEXT, updated_us INTEGER)"
)
_SEAL_SCHEMA: Final = "CREATE TABLE IF NOT EXISTS seal (tag BLOB NOT NULL)"
#: One row as SQL literals (``quote``: text quoted, blobs in hex, NULL): a line of what the seal covers.
_LINE: Final = ("quote(path) || ',' || quote(sha256) || ',' || quote(rules) || ',' || quote(type) || ',' || quote(name) "
                "|| ',' || quote(description) || ',' || quote(updated_us)")
#: Every row's line, in path order, one per line: what the seal covers.
_SEALED: Final = f"SELECT group_concat(line, char(10)) FROM (SELECT {_LINE} AS line FROM checked ORDER BY path)"
#: Every row and its line, in path order: a load reads the rows and checks their seal in one pass.
_ROWS: Final = f"SELECT path, sha256, rules, type, name, description, updated_us, {_LINE} FROM checked ORDER BY path"
#: Every row, in path order: a load makes their lines itself (:func:`_scan`), else reads :data:`_ROWS`.
_PLAIN_ROWS: Final = "SELECT path, sha256, rules, type, name, description, updated_us FROM checked ORDER BY path"
#: The tables of ``checked`` and its seal: a cache where one is not plain is neither read nor kept (``plain_tables``).
_TABLES: Final = ("checked", "seal")
#: Past this many rows written, a save seals by reading every row again (:func:`_tag`), not from the lines loaded.
_MAX_RESEAL: Final = 500
#: This user's sealing key, in their bundlekit data directory (``default_store_root``).
KEY_FILE: Final = "build-check.key"
_KEY_BYTES: Final = 32
_fingerprint: str | None = None


class Passed(NamedTuple):
    """A memory file that passed a build's checks at the digest remembered for it: its index fields and
    ``updated`` (what ``render_index`` and the bundle's ``created`` read of a ``MemoryRecord``)."""

    key: str
    type: str
    name: str
    description: str
    updated: datetime


def rules_fingerprint() -> str:
    """The SHA-256 (hex) of the source of every module in :data:`_RULES`: a verdict made under other code is
    not taken (computed once per process)."""
    global _fingerprint
    if _fingerprint is None:
        _fingerprint = sources_digest(_CHECKS_VERSION, _RULES).hex()
    return _fingerprint


def sources_digest(version: bytes, modules: Sequence[str]) -> bytes:
    """The SHA-256 of ``version`` and the source of each of ``modules`` (paths under ``bundlekit/``, without
    ``.py``): what a cached verdict was made under, so code that changed takes none of it."""
    digest = hashlib.sha256(version)
    package = Path(__file__).resolve().parents[1]
    for module in modules:
        try:
            digest.update((package / f"{module}.py").read_bytes())
        except OSError:  # an install without sources: a salt no install with them shares
            digest.update(f"no source for {module}".encode())
    return digest.digest()


#: A ``Passed`` made from its fields as a tuple is (a NamedTuple's own ``__new__`` is a Python function: ~0.2 us a
#: row of a 10,000-row load).
_new_passed: Final = tuple.__new__


class _Scanned(NamedTuple):
    """The rows of a load, read in one pass (:func:`_scan`): each row's line (what the seal covers, in row order),
    the digests and index fields of the rows a build may take, and every row's line by path for a save's reseal
    (None when a row is of other rules or its path is no text)."""

    lines: list[str]
    known: dict[str, bytes]
    fields: dict[str, Passed]
    by_path: dict[str, str] | None


def seal_key() -> bytes | None:
    """This user's key for sealing a tree's verdicts: 32 random bytes in ``<data dir>/build-check.key``
    (``blockstore.default_store_root``: ``$BUNDLEKIT_HOME``, else the XDG data directory), made on first use
    (mode 0600; a file there that is not this user's alone, :func:`_read_key`, is replaced). None when it can
    be neither read nor made (nothing is then taken from or saved into a cache).
    Two processes making it at once may each seal with their own: the loser's rows cost a check, never a byte."""
    path = default_store_root() / KEY_FILE
    for _attempt in range(2):
        data = _read_key(path)
        if data is not None:
            return data
        try:
            atomic_write_bytes(path, os.urandom(_KEY_BYTES), error=BundleError, mode=0o600, parents=True)
        except BundlekitError:
            return None
    return None


def _read_key(path: Path) -> bytes | None:
    """The key at ``path`` when it is this user's alone: a regular file (opened without following a link or
    waiting on a FIFO), owned by this user, neither group- nor world-accessible, exactly 32 bytes. Anything
    else (a key another user owns or could read, a link, a FIFO, a short file) is no key: it is made again."""
    with suppress(OSError):
        fd = open_regular(path)
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid() or info.st_mode & 0o077:
                return None
            data = read_up_to(fd, _KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) == _KEY_BYTES:
            return data
    return None


def _tag(db: sqlite3.Connection, key: bytes) -> bytes:
    """The HMAC-SHA-256 under ``key`` of every row of ``checked`` (:data:`_SEALED`)."""
    found = db.execute(_SEALED).fetchone()
    text = found[0] if found is not None and isinstance(found[0], str) else ""
    return _seal(text, key)


def _quoted(value: object) -> str | None:
    """``value`` as SQLite's ``quote()`` writes it (func.c, ``quoteFunc``): a text in single quotes, each quote
    doubled, ended at its first NUL; a blob as ``X'...'`` in upper-case hex; an integer in decimal; ``NULL``. None
    for a REAL, whose form (``%!.15g`` and a round trip) is left to SQLite."""
    if type(value) is str:
        return _text(value)
    if type(value) is bytes:
        return "X'" + value.hex().upper() + "'"
    if type(value) is int:
        return str(value)
    return "NULL" if value is None else None


def _text(value: str) -> str:
    """A text as ``quote()`` writes it (:func:`_quoted`)."""
    if "'" in value or "\0" in value:
        return "'" + value.split("\0", 1)[0].replace("'", "''") + "'"
    return "'" + value + "'"


def _line(row: tuple[object, ...]) -> str | None:
    """A row's line as :data:`_LINE` makes it, for a row of any values (:func:`_quoted`; None for a REAL)."""
    quoted = [_quoted(value) for value in row]
    return None if None in quoted else ",".join(quoted)  # type: ignore[arg-type]


def _scan(rows: list[tuple[object, ...]], rules: str, given: list[str] | None = None) -> _Scanned | None:
    """The rows of ``checked`` (:data:`_PLAIN_ROWS`'s seven columns) in one pass (issue 37: 10,000 rows):

    * each row's line as :data:`_LINE` makes it, made here (~10 ms against SQLite's ~24 ms for ``quote()`` and
      ``||``), or taken from ``given`` (SQLite's lines, :data:`_ROWS`); None when a value is of a type only SQLite
      writes (:func:`_quoted`: a REAL). The seal is checked over the same text either way: a line that differed
      would only fail it (a full check);
    * the rows a build may take, by path: one of ``rules``, a path that is text and a 32-byte digest, and no NUL
      in a text (the seal's ``quote()`` ends a text at its first NUL, so a sealed field extended by a NUL and more
      would keep the seal valid; a NUL-free text is quoted whole, so a row without one is the row sealed): a
      timeline day (``timeline/<day>``) by its digest, a memory file (``<key>.md``) also with its index fields
      (``type``, ``name`` and ``description`` texts, ``updated_us`` an integer in a ``datetime``'s range). Any
      other row is not taken: it costs a check, never a byte. Types are tested exactly (``str``, ``bytes``,
      ``int``: sqlite3 makes no subclass), the cheap way;
    * every row's line by path, for a save's reseal, unless a row is of other rules or its path no text.

    Nothing here is trusted before the caller verifies the seal over the lines."""
    quoted_rules = _text(rules)
    lines: list[str] = []
    known: dict[str, bytes] = {}
    fields: dict[str, Passed] = {}
    by_path: dict[str, str] | None = {}
    for at, row in enumerate(rows):
        path, digest, made, kind, name, description, updated = row
        line: str | None
        if type(path) is str and made == rules and type(digest) is bytes:
            whole = len(digest) == 32 and "\0" not in path
            if whole and path.startswith(_TIMELINE_PREFIX):
                known[path] = digest
                whole = False  # a day's row: its digest is all a build takes of it
            if type(kind) is str and type(name) is str and type(description) is str and type(updated) is int:
                line = (f"{_text(path)},X'{digest.hex().upper()}',{quoted_rules},{_text(kind)},{_text(name)},"
                        f"{_text(description)},{updated}")  # a memory's row
                if (whole and path.endswith(".md") and "\0" not in kind and "\0" not in name
                        and "\0" not in description):
                    try:
                        when = _EPOCH + updated * _US
                    except OverflowError:
                        pass
                    else:
                        known[path] = digest
                        fields[path] = _new_passed(Passed, (path[:-3], kind, name, description, when))
            elif kind is None and name is None and description is None and updated is None:  # a timeline day's
                line = f"{_text(path)},X'{digest.hex().upper()}',{quoted_rules},NULL,NULL,NULL,NULL"
            else:
                line = _line(row)
        else:
            line = _line(row)
        if given is not None:
            line = given[at]
        if line is None:
            return None
        lines.append(line)
        if by_path is not None:
            if type(path) is str and made == rules:
                by_path[path] = line
            else:
                by_path = None
    return _Scanned(lines, known, fields, by_path)


def _seal(text: str, key: bytes) -> bytes:
    """The HMAC-SHA-256 under ``key`` of the rows' lines ``text`` (:data:`_SEALED`'s form)."""
    return hmac_sha256(key, text.encode("utf-8", "surrogatepass"))


def _updated_us(record: MemoryRecord) -> int:
    return (record.updated - _EPOCH) // _US


class CheckCache:
    """The verdicts of ``tree``'s last build (None: a tree held in memory, nothing kept): :attr:`known` (path
    -> SHA-256) for ``Transaction.checked``, :meth:`passed` for the memories it skipped, :meth:`save` after a
    build that succeeded."""

    def __init__(self, tree: Path | None) -> None:
        self.path = None if tree is None else tree / CACHE_NAME
        self.known: dict[str, bytes] = {}
        self._fields: dict[str, Passed] = {}
        # The seal the load verified and every row's line by path (None: no seal verified, or a row of other
        # rules or with a path that is no text): a save that changes a few rows seals from them (:meth:`_resealed`).
        self._sealed: tuple[bytes, dict[str, str]] | None = None
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists() or not plain_files(self.path):
            return
        key = seal_key()
        if key is None:
            return
        rules = rules_fingerprint()
        with suppress(sqlite3.Error), closing(sqlite3.connect(self.path)) as db:
            if not plain_tables(db, _TABLES):
                return
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checked'").fetchone() is None:
                return
            found_tag = db.execute("SELECT tag FROM seal").fetchone()
            if found_tag is None:
                return
            scanned = _scan(db.execute(_PLAIN_ROWS).fetchall(), rules)
            if scanned is None:  # a value quote() writes in another form (a REAL put there by hand): SQLite's lines
                rows = db.execute(_ROWS).fetchall()  # the rows and the lines the seal covers, in one pass
                scanned = _scan([found[:7] for found in rows], rules, [found[7] for found in rows])
            tag = found_tag[0]
            if (scanned is None or type(tag) is not bytes  # a seal of another type (a text planted there) seals nothing
                    or not hmac.compare_digest(_seal("\n".join(scanned.lines), key), tag)):
                return  # not sealed by this user's key (a tree copied from elsewhere, a planted or edited row)
            self.known, self._fields = scanned.known, scanned.fields
            if scanned.by_path is not None:
                self._sealed = tag, scanned.by_path

    def passed(self, names: Iterable[str]) -> list[Passed]:
        """The index fields of the memory files ``names`` (skipped as known by ``Transaction.checked``)."""
        return [self._fields[name] for name in names]

    def save(self, digests: Mapping[str, bytes], records: Sequence[MemoryRecord]) -> None:
        """Keep this build's verdicts in place of the last: ``digests`` (path -> SHA-256) of every file it
        packed, ``records`` the memories it parsed and checked now (the others kept their rows). Only the rows
        that changed are written, those of files gone removed; one transaction. A cache: a tree it cannot be
        written in still builds."""
        key = None if self.path is None else seal_key()  # a tree held in memory makes no key
        if self.path is None or key is None:
            return
        rules = rules_fingerprint()
        rows: list[tuple[str, bytes, str, str | None, str | None, str | None, int | None]]
        rows = [(record.filename, digests[record.filename], rules, record.type, record.name, record.description,
                 _updated_us(record)) for record in records if record.filename in digests]
        rows += [(path, digest, rules, None, None, None, None) for path, digest in digests.items()
                 if path.startswith(f"{TIMELINE_DIR}/") and self.known.get(path) != digest]
        written = {row[0] for row in rows}
        # a file gone, or changed and not checked now (it did not parse): its row goes
        gone = [(path,) for path, digest in self.known.items() if digests.get(path) != digest and path not in written]
        if not rows and not gone:
            return

        def write(db: sqlite3.Connection) -> None:
            drop_planted(db, _TABLES)  # replaced by this build's rows alone (none was taken from it)
            db.execute(_SCHEMA)
            db.execute("DELETE FROM checked WHERE rules != ?", (rules,))
            db.executemany("DELETE FROM checked WHERE path = ?", gone)
            db.executemany("INSERT OR REPLACE INTO checked VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            db.execute(_SEAL_SCHEMA)
            tag = self._resealed(db, key, [row[0] for row in rows], [path for path, in gone])
            db.execute("DELETE FROM seal")
            db.execute("INSERT INTO seal VALUES (?)", (tag,))

        write_cache(self.path, write)

    def _resealed(self, db: sqlite3.Connection, key: bytes, written: list[str], gone: list[str]) -> bytes:
        """The seal of the rows as ``save`` leaves them (inside its transaction, before the seal is replaced):
        from the lines the load verified, with the ``written`` rows' lines read back and the ``gone`` ones
        dropped, when the table is still the one loaded (its seal unchanged: every writer replaces rows and seal
        in one transaction) and few rows were written; else every row read again (:func:`_tag`). The same text
        either way: SQLite orders text paths by their UTF-8 bytes, as Python orders them by code point."""
        found = db.execute("SELECT tag FROM seal").fetchone()
        if (self._sealed is None or found is None or not isinstance(found[0], bytes) or found[0] != self._sealed[0]
                or len(written) > _MAX_RESEAL):
            return _tag(db, key)
        lines = dict(self._sealed[1])
        for path in gone:
            lines.pop(path, None)
        if written:
            marks = ", ".join("?" * len(written))
            lines.update(db.execute(f"SELECT path, {_LINE} FROM checked WHERE path IN ({marks})", written).fetchall())
        return _seal("\n".join(lines[path] for path in sorted(lines)), key)
