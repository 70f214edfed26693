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

    def listed(self) -> tuple[str, int, list[str], list[str]]:
        """Every row's file, sorted by file name as :func:`pack` sorts (bytewise UTF-8, which is code-point
        order), as one string with NUL between, and how many rows; each row's ``memory list`` line, formatted
        now from its listing fields (key, type, revision, updated, name — description, tab-separated; the key
        is the file name's), sorted (by key: a key holds no character below the tab); and the files whose line
        made from the file shows a credential (``Row.listed``). The caller shows them only when the files are
        exactly those of the tree's listing (no row without its file). The rows stream from a cursor: at
        100,000 memories no list of them is held (it took 40 MB), only their lines."""
        with translated():
            conn = self._db.conn
            found = conn.execute("SELECT group_concat(file, char(0)), count(*) FROM "
                                 "(SELECT file FROM memory ORDER BY file)").fetchone()
            # Formatted as this program writes them; a field of another type (put there by hand: SQLite keeps
            # whatever it is given) is formatted as Python prints it, then escaped and redacted as any line is.
            lines = [f"{f[:-3]}\t{t}\tr{r}\t{u}\t{n} \u2014 {d}" for f, t, r, u, n, d in conn.execute(
                "SELECT file, type, revision, updated_text, name, description FROM memory")]
            flagged = [str(row[0]) for row in conn.execute("SELECT file FROM memory WHERE withheld ORDER BY file")]
        files = found[0] if isinstance(found[0], str) else "" if found[0] is None else None
        if files is None:  # a file name of another type, put there by hand: no listing agrees with it
            raise CatalogUnusable("the memory index holds a row that this program did not write")
        lines.sort()
        return files, int(found[1]), lines, flagged

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
