"""The derived index's listing: the keys by type (what ``MEMORY.md`` shows), the ``memory list`` lines from
the rows' listing fields, the case-insensitive key lookup a write checks.
"""

from __future__ import annotations

from bundlekit.memory.catalog.database import CatalogUnusable, Database, translated
from bundlekit.memory.record import MEMORY_TYPES

__all__ = ["Listing"]


class Listing:
    """Queries of the ``memory`` rows of a :class:`Database` that list memories (none ranks them)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def types_of(self, files: list[str]) -> dict[str, str]:
        """The type of each of ``files`` that is indexed, by file name."""
        with translated():
            return {str(f): str(t) for start in range(0, len(files), 500) for f, t in self._db.conn.execute(
                f"SELECT file, type FROM memory WHERE file IN ({', '.join('?' * len(files[start:start + 500]))})",
                files[start : start + 500])}

    def count(self) -> int:
        with translated():
            return int(self._db.conn.execute("SELECT count(*) FROM memory").fetchone()[0])

    def index_keys(self, lines: int) -> list[str]:
        """The keys of the memories an index of ``lines`` lines can show: by type in the index's order, then by
        key, ``lines`` in all. ``MEMORY.md`` is rendered from their files, without reading every memory."""
        keys: list[str] = []
        with translated():
            for kind in MEMORY_TYPES:
                if len(keys) >= lines:
                    break
                keys += [
                    str(r[0])
                    for r in self._db.conn.execute(
                        "SELECT key FROM memory WHERE type = ? ORDER BY key LIMIT ?", (kind, lines - len(keys))
                    )
                ]
        return keys

    def listed(self) -> tuple[bytes, int, bytes | None, list[str]]:
        """Every row's file, sorted by file name as :func:`pack` sorts (bytewise UTF-8, which is code-point
        order), as one UTF-8 string with NUL between, and how many rows; every row's ``memory list`` line as one
        UTF-8 string, newline between: the key (the file name's) and a tab before the row's ``line``
        (``Row.listed``: type, revision, updated, name — description), sorted by key (bytewise, as Python sorts a
        key's ASCII), ``None`` when a row gave no line (a ``line`` of NULL) or its key is not its file's (both put
        there by hand); and the files whose line made from the file shows a credential. The caller shows the
        lines only when the files are exactly those of the tree's listing (no row without its file), there is one
        line a row, and they are UTF-8 (a row put there by hand may hold any bytes). Both strings are made by
        SQLite and handed over as its bytes (``CAST ... AS BLOB``): at 100,000 memories, fetching the listing
        fields row by row took 120 ms of a 600 ms ``memory list``, and decoding the 15 MB of lines into a
        ``str`` that is then encoded again to be kept and printed ~40 ms more."""
        with translated():
            conn = self._db.conn
            found = conn.execute("SELECT CAST(group_concat(file, char(0)) AS BLOB), count(*) FROM "
                                 "(SELECT file FROM memory ORDER BY file)").fetchone()
            # One pass in the order of the key's index (a sort of the lines took 70 ms more at 100,000): it is the
            # order of the file names' keys when every row's key is its file's (counted, else no lines). A line of
            # another type (put there by hand: SQLite keeps whatever it is given) is as SQLite turns it into text,
            # then checked, escaped and redacted as any line is.
            # The key a line shows is the row's key, counted as its file's (the file is the key and ".md": every
            # file is a memory file of the listing, which the caller compares): one concatenation a row, not the
            # file name cut twice (30 ms of 145 at 100,000 memories).
            made = conn.execute(
                "SELECT CAST(group_concat(key || char(9) || line, char(10)) AS BLOB), count(line), "
                "sum(file = key || '.md'), group_concat(CASE WHEN withheld THEN file END, char(0)) FROM "
                "(SELECT key, line, file, withheld FROM memory ORDER BY key)"
            ).fetchone()
        files = found[0] if isinstance(found[0], bytes) else b"" if found[0] is None else None
        if files is None or not isinstance(made[0], (bytes, type(None))) or not isinstance(made[3], (str, type(None))):
            raise CatalogUnusable("the memory index holds a row that this program did not write")  # by hand
        count = int(found[1])
        whole = made[1] == count and (made[2] or 0) == count
        return files, count, (made[0] or b"") if whole else None, made[3].split("\0") if made[3] else []

    def same_key_other_case(self, key: str) -> str | None:
        """An indexed key equal to ``key`` ignoring (ASCII) case but not equal to it."""
        with translated():
            row = self._db.conn.execute(
                "SELECT key FROM memory WHERE lower(key) = lower(?) AND key != ? LIMIT 1", (key, key)
            ).fetchone()
        return None if row is None else str(row[0])

    def keys(self) -> list[str]:
        with translated():
            return [str(r[0]) for r in self._db.conn.execute("SELECT key FROM memory ORDER BY key")]
