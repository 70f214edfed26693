"""The derived index's stat cache: one row per memory file (signature, SHA-256, ranking and listing fields) and
the sorted signature blob an unchanged tree is checked against in one read (git's index, restic's ``index.go``).

Rows are put and removed only inside a write transaction (:meth:`Catalog.writing`), which tells this cache
when it begins (:meth:`StatCache.begin`) and ends (:meth:`StatCache.finish`): a transaction that changed a
row, or settled the racy ones, rewrites the blob whole and moves ``written_ns`` on (git's racy rule).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from bundlekit.memory.catalog.database import CatalogUnusable, Database, Signature, translated
from bundlekit.memory.catalog.search import _fold

if TYPE_CHECKING:
    from bundlekit.memory.backend import Scan

__all__ = ["RACY_NS", "Row", "StatCache", "pack"]

try:
    from bundlekit.memory._statscan import racy as _racy_rows
except ImportError:  # not built: the racy rows are picked out in Python
    _racy_rows = None  # type: ignore[assignment]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

RACY_NS = 2_000_000_000  # 2 s: coarser than any timestamp tick we expect (ext4 ~4 ms, HFS+ 1 s, FAT 2 s)


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
    # The ``memory list`` line after its key and tab (``index.list_rest``: type, revision, ``updated`` as the
    # frontmatter holds it, name and description with credentials withheld, ``withhold.mask``), and whether the
    # line made from the file shows a credential (output then makes that line from the file, withheld, with the
    # warning naming it).
    listed: tuple[str, bool]


def pack(names: Iterable[str], numbers: Iterable[int]) -> bytes:
    """Signatures as the one blob the index keeps: the length of the names' part (8 bytes, little-endian), the
    file names (UTF-8, NUL between), then each signature's three numbers as native signed 64-bit integers, in
    the names' order. Given sorted by name, it is the sorted listing of the tree (``Scan.packed``) whole."""
    encoded = "\0".join(names).encode("utf-8", "surrogateescape")
    return len(encoded).to_bytes(8, "little") + encoded + array("q", numbers).tobytes()


def _split(blob: object) -> tuple[bytes, bytes] | None:
    """The names' part and the numbers' part of a :func:`pack` blob, or ``None`` when it is not one: a part of
    numbers that is no whole count of signatures, or names (NUL between) that count other rows than the numbers
    (a blob planted or torn: read as one, its walk would pair names with the wrong numbers or end in a
    ValueError; one count of a byte, ~0.2 ms at 100,000 names)."""
    if not isinstance(blob, bytes) or len(blob) < 8:
        return None
    length = int.from_bytes(blob[:8], "little")
    if 8 + length > len(blob) or (len(blob) - 8 - length) % 24:
        return None
    rows = (len(blob) - 8 - length) // 24
    if rows != (blob.count(b"\0", 8, 8 + length) + 1 if length else 0):
        return None
    return blob[8 : 8 + length], blob[8 + length :]


def _joined(parts: tuple[bytes, bytes]) -> bytes:
    """The :func:`pack` blob whose :func:`_split` is ``parts`` (its names' length, then the two parts)."""
    return len(parts[0]).to_bytes(8, "little") + parts[0] + parts[1]


_FEW = 64  # up to this many changes a blob is spliced in place, name by name (a write, a forget)


def _locate(names: bytes, key: bytes) -> tuple[int, int, bool]:
    """Where ``key`` is or would go in ``names`` (sorted bytewise, NUL between): the byte offset of its start,
    of its end (its start when absent), and whether it is there. A binary search over byte offsets, so no
    name is split out of a blob of 100,000."""
    lo, hi = 0, len(names)  # name starts (hi may be the end)
    while lo < hi:
        mid = (lo + hi) // 2
        start = names.rfind(b"\0", 0, mid) + 1
        end = names.find(b"\0", mid)
        end = len(names) if end < 0 else end
        name = names[start:end]
        if name == key:
            return start, end, True
        if name < key:
            lo = end + 1
        else:
            hi = start
    at = min(lo, len(names) + 1)
    return at, at, False


def _spliced_few(names: bytes, numbers: array[int], changes: dict[str, Signature | None]) -> bytes:
    # The changes in name order, so each one's ordinal counts the NULs on from the last one's (the names before a
    # change's start stay as they were): one pass over the blob in all, not one from its start per change.
    counted, nuls = 0, 0  # names[:counted] holds nuls NULs, and no change has touched it
    for name, signature in sorted(changes.items()):
        key = name.encode("utf-8", "surrogateescape")
        start, end, present = _locate(names, key)
        ordinal = nuls + names.count(b"\0", counted, start) if start <= len(names) else len(numbers) // 3
        counted, nuls = (start - 1, ordinal - 1) if 0 < start <= len(names) else (0, 0)
        if present and signature is None:
            names = names[: max(start - 1, 0)] + names[end:] if end == len(names) else names[:start] + names[end + 1 :]
            del numbers[3 * ordinal : 3 * ordinal + 3]
        elif present and signature is not None:
            numbers[3 * ordinal : 3 * ordinal + 3] = array("q", signature)
        elif signature is not None:
            if not names:
                names = key
            elif start > len(names) or start == len(names):
                names = names + b"\0" + key
            else:
                names = names[:start] + key + b"\0" + names[start:]
            numbers[3 * ordinal : 3 * ordinal] = array("q", signature)
    return len(names).to_bytes(8, "little") + names + numbers.tobytes()


def _spliced(blob: bytes | tuple[bytes, bytes] | None, changes: dict[str, Signature | None]) -> bytes | None:
    """The sorted signature blob ``blob`` (or its :func:`_split` parts) with ``changes`` made (a signature set,
    or None: removed), or ``None`` when ``blob`` is not one (the caller packs the rows then). The names stay
    bytes (their bytewise order is the blob's order); a few changes are found by binary search, so a write at
    100,000 memories copies the blob a few times and splits out no name."""
    parts = blob if isinstance(blob, tuple) else _split(blob)
    if parts is None:
        return None
    numbers = array("q", parts[1])
    if len(changes) <= _FEW:
        return _spliced_few(parts[0], numbers, changes)
    names = parts[0].split(b"\0") if parts[0] else []
    for name, signature in sorted(changes.items()):
        key = name.encode("utf-8", "surrogateescape")
        at = bisect.bisect_left(names, key)
        present = at < len(names) and names[at] == key
        if signature is None:
            if present:
                del names[at]
                del numbers[3 * at : 3 * at + 3]
        elif present:
            numbers[3 * at : 3 * at + 3] = array("q", signature)
        else:
            names.insert(at, key)
            numbers[3 * at : 3 * at] = array("q", signature)
    encoded = b"\0".join(names)
    return len(encoded).to_bytes(8, "little") + encoded + numbers.tobytes()


def _differing(ours: bytes, theirs: bytes, width: int) -> list[int]:
    """The indexes, in order, of the ``width``-byte records at which ``ours`` and ``theirs`` (of one length) differ:
    each half compared as bytes (C's memcmp), only an unequal one halved again, so a few changes among 10,000
    records cost some dozens of comparisons, not 10,000."""
    found: list[int] = []
    stack = [(0, len(ours) // width)]
    while stack:
        lo, hi = stack.pop()
        if ours[lo * width : hi * width] == theirs[lo * width : hi * width]:
            continue
        if hi - lo == 1:
            found.append(lo)
            continue
        mid = (lo + hi) // 2
        stack.append((mid, hi))
        stack.append((lo, mid))
    return found


def racy_rows(names: bytes, numbers: bytes, written: int) -> dict[str, int]:
    """The racy rows of a signature blob's ``names`` and ``numbers`` (:func:`pack`): each file whose mtime is
    within :data:`RACY_NS` of ``written`` (``written_ns``) or after it, its mtime by name. Picked out by one pass
    of C where ``_statscan`` is built (a round's own writes, a few among 100,000, without an object per row: ~45
    ms at 100,000 memories), else in Python; the same rows either way."""
    if _racy_rows is not None:
        floor = written - RACY_NS + 1  # mtime + RACY_NS > written
        found = _racy_rows(names, numbers, max(floor, _INT64_MIN)) if floor <= _INT64_MAX else []
        if found is not None:  # None: names and numbers count different rows (the walk below raises)
            return {name.decode("utf-8", "surrogateescape"): mtime for name, mtime in found}
    mtimes = array("q", numbers)[1::3]
    if not mtimes or max(mtimes) + RACY_NS <= written:
        return {}
    split = names.decode("utf-8", "surrogateescape").split("\0")
    return {name: mtime for name, mtime in zip(split, mtimes, strict=True) if mtime + RACY_NS > written}


class StatCache:
    """The ``memory`` rows on a :class:`Database`: each file's stat signature and SHA-256, compared with the tree's
    listing; the signature of the ``MEMORY.md`` last written from them."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._rewrite = False  # the open write transaction changed a row or settled the racy ones
        # The rows it changed (a removed one: None), and the blob it starts from when of the current generation
        # (its :func:`_split` parts; None: not one).
        self._changes: dict[str, Signature | None] = {}
        self._start: tuple[bytes, bytes] | None = None
        # The blob last read (:meth:`_blob_of`), split, with the generation it is of and the connection's
        # ``data_version`` then: a check, a second check and the write after them at that generation read 6 MB
        # once at 100,000 memories, not three times.
        self._read: tuple[int, int, tuple[bytes, bytes] | None] | None = None
        # The blob the open transaction wrote, as the read above would hold it, kept once it commits (:meth:`committed`).
        self._written: tuple[int, int, tuple[bytes, bytes] | None] | None = None

    def begin(self) -> None:
        """A write transaction begins (or ended): nothing changed yet."""
        self._rewrite = False
        self._changes = {}
        self._start = None

    def finish(self, now_ns: int | None) -> None:
        """A write transaction is about to commit: when it changed a row or :meth:`settle` was called, ``now_ns``
        (the time the caller took before reading the files) becomes ``written_ns`` and the blob is rewritten."""
        self._written = None
        if self._rewrite:
            if now_ns is None:
                raise ValueError("a transaction that changes rows needs the time it began")
            self._store_signatures(now_ns)

    def committed(self) -> None:
        """The write transaction :meth:`finish` ended has committed: the blob it wrote is held as read at its
        generation (the ``data_version`` taken inside it: another connection's commit since reads it again), so
        the checks and counts after a round's write read no 6 MB of it back."""
        if self._written is not None:
            self._read, self._written = self._written, None

    def refused(self) -> bool:
        """Whether the signature blob of the current generation was read by this connection, since any other's
        commit, and found not to be the rows' one (torn or planted: :meth:`_blob_of`, :meth:`_distrust`): the
        rows were compared instead, and the next write (one is due though no file changed) packs it from them."""
        with translated():
            gen, read = self._blob_gen(), self._read
            return (gen is not None and read is not None and read[2] is None and read[1] == gen
                    and read[0] == self._db.data_version())

    def rows_held(self) -> int | None:
        """How many rows the index holds, when the signature blob of the current generation is held (read, or
        written by this connection): its signatures counted, not 100,000 rows scanned (``count(*)``, ~11 ms);
        else ``None``."""
        with translated():
            gen = self._blob_gen()
            read = self._read
            if gen is None or read is None or read[1] != gen or read[2] is None or read[0] != self._db.data_version():
                return None
        return len(read[2][1]) // 24

    def index_state(self) -> tuple[Signature | None, int]:
        """The signature of the ``MEMORY.md`` last written from this index, and the generation it shows."""
        with translated():
            rows = dict(self._db.conn.execute("SELECT name, value FROM state WHERE name LIKE 'index_%'").fetchall())
        sig = (rows.get("index_ino"), rows.get("index_mtime"), rows.get("index_size"))
        known = None if not all(isinstance(n, int) for n in sig) else (int(sig[0]), int(sig[1]), int(sig[2]))  # type: ignore[arg-type]
        gen = rows.get("index_gen")
        return known, gen if isinstance(gen, int) else -1

    def trust_state(self) -> tuple[tuple[int, int, int], int, int, int] | None:
        """What the last full check of the tree recorded (``Indexer``'s trusted refresh): the tree directory's
        ``(inode, mtime_ns, ctime_ns)`` then (a record without its ctime, as made before it was kept, is none), the generation the index was at, when that check began (``time_ns``) and how
        many files it listed; ``None`` when nothing is recorded, or the generation moved since (or the signature
        blob is not of the current generation: the trusted refresh lists from it)."""
        with translated():
            rows = dict(self._db.conn.execute(
                "SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'dir_ino', 'dir_mtime', 'dir_ctime', "
                "'dir_gen', 'dir_checked_ns', 'dir_rows')").fetchall())
        values = [rows.get(name) for name in ("gen", "sigs_gen", "dir_ino", "dir_mtime", "dir_ctime", "dir_gen",
                                              "dir_checked_ns", "dir_rows")]
        numbers = [value for value in values if type(value) is int]
        if len(numbers) != len(values):
            return None
        gen, sigs_gen, ino, mtime, ctime, dir_gen, checked_ns, count = numbers
        if not gen == sigs_gen == dir_gen:
            return None
        return (ino, mtime, ctime), gen, checked_ns, count

    def set_trust_state(self, stamp: tuple[int, int, int], gen: int, checked_ns: int, count: int) -> None:
        """Record :meth:`trust_state`. Inside :meth:`Catalog.writing`."""
        for name, value in (("dir_ino", stamp[0]), ("dir_mtime", stamp[1]), ("dir_ctime", stamp[2]), ("dir_gen", gen),
                            ("dir_checked_ns", checked_ns), ("dir_rows", count)):
            self._db.set(name, value)

    def signature_blob(self) -> tuple[bytes, bytes] | None:
        """The sorted signature blob's names and numbers when it is of the current generation, else ``None``:
        the tree's listing as the index last recorded it (``Scan.from_packed``)."""
        with translated():
            gen = self._blob_gen()
        return None if gen is None else self._blob_of(gen)

    def _blob_of(self, gen: int) -> tuple[bytes, bytes] | None:
        """The names and numbers (:func:`_split`) of the signature blob, which the caller found of generation
        ``gen``, or ``None`` when the value stored is not one or no longer of ``gen`` (read with its generation
        in one statement). Read once for a generation while no other connection commits (SQLite's
        ``data_version`` stands: a blob changes only with its generation, or by another connection's commit, a
        planted one included). A transaction that changed a row keeps no read of its own uncommitted blob:
        rolled back, its generation could come again with another blob."""
        version = self._db.data_version()
        read = self._read
        if read is not None and read[0] == version and read[1] == gen:
            return read[2]
        with translated():
            rows = dict(self._db.conn.execute(
                "SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'sigs')").fetchall())
        if rows.get("gen") != gen or rows.get("sigs_gen") != gen:
            return None
        parts = _split(rows.get("sigs"))
        if not self._rewrite:
            self._read = (version, gen, parts)
        return parts

    def set_index_state(self, signature: Signature | None, gen: int) -> None:
        ino, mtime, size = signature if signature is not None else (None, None, None)
        for name, value in (("index_ino", ino), ("index_mtime", mtime), ("index_size", size), ("index_gen", gen)):
            self._db.set(name, value)

    # -- files --------------------------------------------------------------------

    def signatures(self) -> dict[str, Signature]:
        """Every indexed file's signature by name (one SELECT); a signature blob of the current generation naming
        other files than these rows is no longer held as one (:meth:`_distrust`)."""
        with translated():
            found = self._db.conn.execute("SELECT file, ino, mtime_ns, size FROM memory").fetchall()
        if not all(type(f) is str and type(i) is int and type(m) is int and type(s) is int for f, i, m, s in found):
            # Only this program writes the rows; one of another type was put there by hand (SQLite keeps
            # whatever type a row is given): the index is rebuilt, as for any file not of ours.
            raise CatalogUnusable("the memory index holds a row that this program did not write")
        self._distrust([row[0] for row in found])
        return {file: (ino, mtime, size) for file, ino, mtime, size in found}

    def _distrust(self, files: list[str]) -> None:
        """Every row was read (``files``, any order): when the blob of the current generation names other files (a
        blob planted with a name too many or too few, its own count of rows consistent), it is held as no blob at
        this generation, so the next write packs the blob from the rows instead of splicing its changes into the
        planted one (which would keep the planted names for good) and :meth:`rows_held` counts nothing from it
        (``MEMORY.md``'s count of the memories it cannot show is bundled). Outside a transaction that changed a
        row (its blob is of an older generation then: nothing to compare). The names sorted here, not by SQL
        (``ORDER BY file`` walks the file index, a lookup a row: twice the scan's time at 100,000 rows); code
        point order is UTF-8's byte order, the blob's."""
        with translated():
            gen = None if self._rewrite else self._blob_gen()
            parts = None if gen is None else self._blob_of(gen)
            if gen is None or parts is None or parts[0] == "\0".join(sorted(files)).encode("utf-8", "surrogateescape"):
                return
            self._read = (self._db.data_version(), gen, None)

    def compare(self, scan: Scan) -> tuple[bool, dict[str, int]]:
        """Whether the listing ``scan`` holds exactly the indexed files with their signatures, and the racy
        rows (git's rule: the file's mtime within :data:`RACY_NS` of ``written_ns``, the time the last change of
        the rows began; a same-size edit in the same timestamp tick keeps the signature, so they are compared
        by SHA-256). From the sorted signature blob when it is of the current generation (the sorted listing
        against it, as bytes), else from the rows. The racy rows come as their files' mtimes by name."""
        with translated():
            rows = dict(self._db.conn.execute(
                "SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen', 'written_ns')").fetchall())
            written, gen = rows.get("written_ns"), rows.get("gen")
            written = written if isinstance(written, int) else 0
            parts = self._blob_of(gen) if type(gen) is int and rows.get("sigs_gen") == gen else None
        if parts is None:
            known = self.signatures()
            racy = {name: sig[1] for name, sig in known.items() if sig[1] + RACY_NS > written}
            return known == scan.memories, racy
        names, numbers = parts
        listed = scan.packed()
        same = listed is not None and listed[0] == names and listed[1] == numbers
        return same, racy_rows(names, numbers, written)

    def moved_in_place(self, scan: Scan) -> list[str] | None:
        """When the sorted signature blob is of the current generation and names exactly the files the listing
        ``scan`` names (files edited in place, as between two sync rounds): the files whose signature the listing
        changed, sorted, found by comparing the two packed numbers' parts as bytes (no row read, no dict of every
        file: 10,000 rows cost ~9 ms); else ``None`` (a file added or removed: the rows are compared)."""
        parts = self.signature_blob()
        listed = scan.packed()
        if parts is None or listed is None or parts[0] != listed[0] or len(parts[1]) != len(listed[1]):
            return None
        moved = _differing(parts[1], listed[1], 24)
        names = listed[0].decode("utf-8", "surrogateescape").split("\0") if moved else []
        return [names[at] for at in moved]

    def signatures_of(self, files: list[str]) -> dict[str, Signature]:
        """The signatures of those of ``files`` that are indexed, by name (one SELECT; a few hundred names)."""
        with translated():
            found = self._db.conn.execute(
                f"SELECT file, ino, mtime_ns, size FROM memory WHERE file IN ({', '.join('?' * len(files))})", files
            ).fetchall()
        return {str(file): (int(ino), int(mtime), int(size)) for file, ino, mtime, size in found}

    def sha256(self, file: str) -> bytes | None:
        """The SHA-256 of the bytes ``file`` was indexed from (``None`` when it is not indexed)."""
        with translated():
            row = self._db.conn.execute("SELECT sha256 FROM memory WHERE file = ?", (file,)).fetchone()
        return None if row is None or not isinstance(row[0], bytes) else bytes(row[0])

    def digests(self) -> dict[str, bytes]:
        """Every indexed file's SHA-256 by name (a row whose value is not one is left out, SQLite choosing: the rows
        as they come, not each converted in Python, ~8 -> ~6 ms at 10,000 memories)."""
        with translated():
            return dict(self._db.conn.execute(
                "SELECT file, sha256 FROM memory WHERE typeof(file) = 'text' AND typeof(sha256) = 'blob'").fetchall())

    def put(self, file: str, row: Row) -> None:
        """Index one file (replacing what was there). Inside :meth:`writing`."""
        self.remove(file)
        self._changes[file] = row.signature
        sal, updated, horizon = row.basis
        line, withheld = row.listed
        cursor = self._db.conn.execute(
            "INSERT INTO memory (file, key, type, ino, mtime_ns, size, sha256, salience, updated, horizon, piece, "
            "line, withheld) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file, row.key, row.type, *row.signature, row.sha256, sal, updated, horizon, row.piece,
             line, int(withheld)),
        )
        searched = (cursor.lastrowid, *map(_fold, row.search))
        self._db.conn.execute("INSERT INTO search (rowid, name, description, body) VALUES (?, ?, ?, ?)", searched)
        if self._db.fts:  # the same values, not read back: a read of an FTS5 table flushes its pending terms
            self._db.conn.execute("INSERT INTO terms (rowid, name, description, body) VALUES (?, ?, ?, ?)", searched)
        self._changed()

    def remove(self, file: str) -> None:
        """Forget one file (nothing when it is not indexed). Inside :meth:`writing`."""
        row = self._db.conn.execute("SELECT id FROM memory WHERE file = ?", (file,)).fetchone()
        if row is not None:
            self._changes[file] = None
            self._db.conn.execute("DELETE FROM vector WHERE id = ?", (row[0],))
            if self._db.fts:  # an external-content index forgets a row by its old text
                self._db.conn.execute("INSERT INTO terms (terms, rowid, name, description, body) SELECT 'delete', "
                                      "rowid, name, description, body FROM search WHERE rowid = ?", (row[0],))
            self._db.conn.execute("DELETE FROM search WHERE rowid = ?", (row[0],))
            self._db.conn.execute("DELETE FROM memory WHERE id = ?", (row[0],))
            self._changed()

    def settle(self) -> None:
        """Move ``written_ns`` on (the racy rows' bytes were compared and are unchanged). Inside :meth:`writing`."""
        self._rewrite = True

    def _changed(self) -> None:
        if not self._rewrite and self._start is None:  # before the first change: the blob it starts from
            gen = self._blob_gen()
            if gen is not None:  # the blob is rewritten only with its generation moved on: one read of it stands
                self._start = self._blob_of(gen)
        self._rewrite = True
        self._db.conn.execute("UPDATE state SET value = value + 1 WHERE name = 'gen'")

    def _blob_gen(self) -> int | None:
        """The current generation when the signature blob is of it (``sigs_gen`` = ``gen``), else ``None``."""
        rows = dict(self._db.conn.execute("SELECT name, value FROM state WHERE name IN ('gen', 'sigs_gen')").fetchall())
        gen = rows.get("gen")
        return gen if type(gen) is int and rows.get("sigs_gen") == gen else None

    def _store_signatures(self, now_ns: int) -> None:
        """The sorted signature blob of the generation the transaction ends at, written whole: the blob it
        started from with its changes made (a few rows changed among thousands: no row is read), or the rows
        read in file order. A transaction that only settled the racy rows (no row changed, so the generation did
        not move: only :meth:`_changed` moves it) keeps the blob of this generation as it is, read or not: it is
        the rows' still (a follower's round at 100,000 memories read every row again to write the same 6 MB)."""
        if not self._changes and self._blob_gen() is not None and not self.refused():
            self._db.set("written_ns", now_ns)
            return
        blob = _spliced(self._start, self._changes) if self._start is not None else None
        if blob is None:
            rows = self._db.conn.execute("SELECT file, ino, mtime_ns, size FROM memory ORDER BY file").fetchall()
            blob = pack([row[0] for row in rows], [n for row in rows for n in row[1:]])
        start = self._start  # the stored blob, split (read at this generation): not read again to diff
        self._db.set_bytes("sigs", blob, old=None if start is None else _joined(start))
        self._db.set("written_ns", now_ns)
        self._db.conn.execute(
            "INSERT OR REPLACE INTO state (name, value) VALUES ('sigs_gen', (SELECT value FROM state WHERE name = 'gen'))"
        )
        gen, length = self._db.state("gen"), int.from_bytes(blob[:8], "little")
        if gen is not None:  # held only once committed (:meth:`committed`); a version taken now, before any later commit
            self._written = (self._db.data_version(), gen, (blob[8 : 8 + length], blob[8 + length :]))

