"""The one way a converter reads a foreign SQLite database: read-only, from tables only, bounded.

A foreign ``.db`` is hostile input. Its schema can make a plain ``SELECT``
run for ever and fill the disk: a ``memories`` that is a VIEW over an
infinite recursive CTE, sorted, grows SQLite's temp file by gigabytes while
``mode=ro`` looks on. :class:`ForeignDatabase` makes that impossible for every
converter at once:

* only real tables are read (``sqlite_schema.type = 'table'``, not a virtual
  table, without generated columns): a view, a virtual table or a generated
  column (an expression run on every read) is refused before any row is
  read; a trigger never fires on a read, and reading is all this module does;
* a scan of a table needs no temporary storage, and what would (a view, a
  sort, a generated column) is refused; what is left is capped all the same:
  temporary storage stays in memory (``PRAGMA temp_store = MEMORY``) and the
  connection's temp database may grow to :data:`TEMP_BYTES` at most
  (``PRAGMA temp.max_page_count``), so no temp file grows. (SQLite's
  ``hard_heap_limit`` is not used: it is process-wide and a pragma can never
  raise it again.)
* a progress handler aborts any statement past a deadline;
* one value may hold at most ``max_value`` bytes (``SQLITE_LIMIT_LENGTH``), a
  table at most ``max_rows`` rows, and all rows read together at most
  ``max_bytes`` bytes of text and blobs.

Every way out of those bounds is a :class:`~bundlekit.errors.ConvertError`
naming the file and the bound.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from bundlekit.errors import ConvertError

__all__ = [
    "DEADLINE_SECONDS",
    "TEMP_BYTES",
    "MAX_BYTES",
    "MAX_ROWS",
    "MAX_VALUE",
    "ForeignDatabase",
]

#: Seconds every statement together may run.
DEADLINE_SECONDS = 30.0
#: Rows one table may hold.
MAX_ROWS = 200_000
#: Bytes of text and blobs all rows read may hold together.
MAX_BYTES = 64 * 1024 * 1024
#: Bytes one value (a text or blob) may hold.
MAX_VALUE = 16 * 1024 * 1024
#: Bytes the connection's temporary database may hold.
TEMP_BYTES = 64 * 1024 * 1024
#: Virtual machine steps between two looks at the clock.
_PROGRESS_STEPS = 10_000


class ForeignDatabase:
    """A foreign SQLite file opened read-only for bounded reads of its tables (a context manager).

    ``what`` names the format in messages ("Magic Context database").
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        what: str = "SQLite database",
        deadline: float = DEADLINE_SECONDS,
        max_rows: int = MAX_ROWS,
        max_bytes: int = MAX_BYTES,
        max_value: int = MAX_VALUE,
    ) -> None:
        self.path = Path(path)
        self.what = what
        self._deadline_after = deadline
        self._max_rows = max_rows
        self._max_bytes = max_bytes
        self._max_value = max_value
        self._read = 0
        self._conn: sqlite3.Connection | None = None
        self._ends = 0.0

    def __enter__(self) -> ForeignDatabase:
        try:
            self._open()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()

    def _open(self) -> None:
        try:
            # mode=ro: an import must never write to (or create) the user's database.
            conn = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise ConvertError(f"cannot open {self.path} read-only as SQLite: {exc}") from exc
        self._conn = conn
        self._ends = time.monotonic() + self._deadline_after
        conn.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self._max_value)
        try:
            conn.execute("PRAGMA temp_store = MEMORY")
            page = int(conn.execute("PRAGMA temp.page_size").fetchone()[0]) or 4096
            conn.execute(f"PRAGMA temp.max_page_count = {max(1, TEMP_BYTES // page):d}")
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._ends else 0

    def _error(self, exc: sqlite3.Error) -> ConvertError:
        """``exc`` in words: which bound the file broke, or that it is not a usable database."""
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and "interrupted" in text:
            return ConvertError(
                f"reading {self.path} took longer than {self._deadline_after:g} s; "
                f"is this a {self.what}? (refused: foreign databases are read within a deadline)"
            )
        if "too big" in text:
            return ConvertError(
                f"{self.path} holds a value over {self._max_value} bytes; is this a {self.what}? "
                "(refused: no memory field is that large)"
            )
        if "full" in text or "out of memory" in text:
            return ConvertError(
                f"reading {self.path} needs more than {TEMP_BYTES // (1024 * 1024)} MiB of temporary storage "
                f"or memory; is this a {self.what}? (refused)"
            )
        return ConvertError(f"{self.path} is not a usable {self.what}: {text}")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("ForeignDatabase used outside its with block")
        return self._conn

    def kind(self, name: str) -> str | None:
        """What ``name`` is in the schema (``table``, ``view``, ``virtual table``), or ``None``."""
        try:
            row = self._connection().execute(
                "SELECT type, sql FROM sqlite_master WHERE name = ? COLLATE NOCASE "
                "AND type IN ('table', 'view') LIMIT 1",
                (name,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        if row is None:
            return None
        if row[0] == "table" and str(row[1] or "").lstrip().upper().startswith("CREATE VIRTUAL"):
            return "virtual table"
        return str(row[0])

    def rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of the real table ``table`` as a dict, in storage order, within the bounds.

        A view, a virtual table, a table with generated columns or a missing
        table is refused before any row is read; a bound passed raises
        ``ConvertError``. Rows come in storage order with no SQL sort (a sort
        would need temporary storage): callers sort what they read.
        """
        kind = self.kind(table)
        if kind is None:
            raise ConvertError(f"{self.path} is not a {self.what}: it has no table {table!r}")
        if kind != "table":
            raise ConvertError(
                f"{self.path}: {table!r} is a {kind}, not a table; a {self.what} keeps it as a table "
                "(views and virtual tables of a foreign file are never read: they can run without end)"
            )
        if not (table.replace("_", "").isalnum() and table.isascii()):
            raise ValueError(f"not a plain table name: {table!r}")
        self._refuse_generated(table)
        query = f'SELECT * FROM "{table}" LIMIT {self._max_rows + 1:d}'
        out: list[dict[str, Any]] = []
        try:
            cur = self._connection().execute(query)
            names = [d[0] for d in cur.description]
            for values in cur:
                if len(out) == self._max_rows:
                    raise ConvertError(
                        f"{self.path}: table {table!r} has more than {self._max_rows} rows; "
                        f"is this a {self.what}? (refused: foreign tables are read up to that bound)"
                    )
                self._count(values)
                out.append(dict(zip(names, values)))
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return out

    def _refuse_generated(self, table: str) -> None:
        """Refuse a table with generated columns: their expressions run on every read (one step: seconds)."""
        try:
            columns = self._connection().execute(f'PRAGMA table_xinfo("{table}")').fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        # table_xinfo's "hidden": 2 = a virtual generated column, 3 = a stored one.
        generated = sorted(str(c[1]) for c in columns if c[6] in (2, 3))
        if generated:
            raise ConvertError(
                f"{self.path}: table {table!r} has generated columns ({', '.join(generated)}); "
                f"a {self.what} has none (refused: their expressions would run while reading)"
            )

    def _count(self, values: tuple[Any, ...]) -> None:
        self._read += sum(len(v) for v in values if isinstance(v, (str, bytes)))
        if self._read > self._max_bytes:
            raise ConvertError(
                f"{self.path}: the rows read hold more than {self._max_bytes} bytes of text and blobs; "
                f"is this a {self.what}? (refused: foreign databases are read up to that bound)"
            )
