"""The derived index's vectors: one float16 embedding per ``memory`` row (``vector`` table) of its search text,
and one of its name and description (``head``), of the model named in ``state`` as ``vec_model``; computed and
read by ``memory/semantic``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bundlekit.memory.catalog.database import Database, translated

__all__ = ["Vectors"]


class Vectors:
    """The ``vector`` table of a :class:`Database`: each memory row's embedding, never text."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def model(self) -> str | None:
        """The model (``<model id>#<dimension>``) the stored vectors are of, or None."""
        with translated():
            row = self._db.conn.execute("SELECT value FROM state WHERE name = 'vec_model'").fetchone()
        return row[0] if row is not None and isinstance(row[0], str) else None

    def stamp(self) -> tuple[int, int, str | None, int]:
        """The state the vectors are read in, in one query: (the index's generation, the vectors' generation,
        their model, ``written_ns``); a copy of them made in this state is of these rows and vectors."""
        with translated():
            rows = dict(self._db.conn.execute(
                "SELECT name, value FROM state WHERE name IN ('gen', 'vec_gen', 'vec_model', 'written_ns')").fetchall())
        whole = [value if isinstance(value, int) else -1 for value in (rows.get(n) for n in ("gen", "vec_gen", "written_ns"))]
        model = rows.get("vec_model")
        return whole[0], whole[1], model if isinstance(model, str) else None, whole[2]

    def gen(self) -> int:
        """Bumped whenever vectors are stored or dropped (with :attr:`Catalog.gen`, what an in-process copy is of)."""
        return self._db.state("vec_gen") or 0

    def use_model(self, model: str) -> None:
        """Keep only vectors of ``model``: those of another are dropped. Inside :meth:`Catalog.writing`."""
        if self.model() != model:
            self._db.conn.execute("DELETE FROM vector")
            self._db.set("vec_model", model)
            self._db.conn.execute("UPDATE state SET value = value + 1 WHERE name = 'vec_gen'")

    def without(self, size: int) -> list[tuple[int, str, str, str]]:
        """(row id, name, description, body) of the search text of every row without a vector of ``size`` bytes
        (none, or one of another length: put there by hand)."""
        with translated():
            rows = self._db.conn.execute(
                "SELECT m.id, s.name, s.description, s.body FROM memory m JOIN search s ON s.rowid = m.id "
                "WHERE NOT EXISTS (SELECT 1 FROM vector v WHERE v.id = m.id AND length(v.vec) = ?)", (size,)
            ).fetchall()
        return [(int(i), str(n), str(d), str(b)) for i, n, d, b in rows]

    def count(self) -> int:
        """How many memories are indexed."""
        with translated():
            return int(self._db.conn.execute("SELECT count(*) FROM memory").fetchone()[0])

    def keys_joined(self) -> str:
        """Every row's key by row id, NUL between (one string from SQL: no 10,000 Python strings), what a vector
        file of this index holds."""
        with translated():
            found = self._db.conn.execute(
                "SELECT group_concat(key, char(0)) FROM (SELECT key FROM memory ORDER BY id)").fetchone()[0]
        return found if isinstance(found, str) else ""

    def last_id(self) -> int:
        """The largest row id (0 for none): at least the number of memories, read from the end of the table."""
        with translated():
            found = self._db.conn.execute("SELECT max(id) FROM memory").fetchone()[0]
        return found if isinstance(found, int) else 0

    def lacking(self, size: int) -> bool:
        """Whether a row has no vector of ``size`` bytes (what :meth:`without` would list), answered at the first."""
        with translated():
            return self._db.conn.execute(
                "SELECT 1 FROM memory m WHERE NOT EXISTS (SELECT 1 FROM vector v WHERE v.id = m.id "
                "AND length(v.vec) = ?) LIMIT 1", (size,)).fetchone() is not None

    def put(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Store vectors by row id (rows gone meanwhile are skipped; a row's head vector is kept). Inside
        :meth:`Catalog.writing`."""
        self._db.conn.executemany(
            "INSERT INTO vector (id, vec) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM memory WHERE id = ?) "
            "ON CONFLICT (id) DO UPDATE SET vec = excluded.vec",
            ((i, blob, i) for i, blob in rows),
        )
        self._db.conn.execute("UPDATE state SET value = value + 1 WHERE name = 'vec_gen'")

    def put_heads(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Store head vectors by row id (of rows holding a vector). Inside :meth:`Catalog.writing`."""
        self._db.conn.executemany("UPDATE vector SET head = ? WHERE id = ?", ((blob, i) for i, blob in rows))
        self._db.conn.execute("UPDATE state SET value = value + 1 WHERE name = 'vec_gen'")

    def rows(self) -> list[tuple[int, str, float, float, float | None, int, bytes | None, bytes | None]]:
        """(row id, key, salience, updated, horizon, piece, vector or None, head vector or None) of every memory,
        by row id."""
        with translated():
            return self._db.conn.execute(
                "SELECT m.id, m.key, m.salience, m.updated, m.horizon, m.piece, v.vec, v.head FROM memory m "
                "LEFT JOIN vector v ON v.id = m.id ORDER BY m.id"
            ).fetchall()

    def columns(self, size: int, chunk: int = 2048) -> Iterator[list[tuple[int, str, float, float, float, int, bytes, bytes]]]:
        """What recall by meaning ranks with, by row id, ``chunk`` rows at a time (a few MB at most held as
        Python objects): row id, key, salience, updated, horizon (-1.0 for none), piece, vector and head
        vector (``size`` zero bytes for none, or one of another length). One read: call inside a snapshot."""
        with translated():
            cursor = self._db.conn.execute(
                "SELECT m.id, m.key, m.salience, m.updated, coalesce(m.horizon, -1.0), m.piece, "
                "CASE WHEN length(v.vec) = ?1 THEN v.vec ELSE zeroblob(?1) END, "
                "CASE WHEN length(v.head) = ?1 THEN v.head ELSE zeroblob(?1) END "
                "FROM memory m LEFT JOIN vector v ON v.id = m.id ORDER BY m.id", (size,)
            )
            while rows := cursor.fetchmany(chunk):
                yield rows

    def ids(self, keys: Iterable[str]) -> dict[str, int]:
        """Row ids of ``keys`` (those indexed)."""
        wanted = list(keys)
        found: dict[str, int] = {}
        with translated():
            for at in range(0, len(wanted), 500):
                chunk = wanted[at : at + 500]
                marks = ",".join("?" * len(chunk))
                found |= {str(k): int(i) for k, i in self._db.conn.execute(
                    f"SELECT key, id FROM memory WHERE key IN ({marks})", chunk)}
        return found
