"""Usage that ranks: which memories a recall returned and the agent then read, kept in the derived index.

The ``usage`` table holds, by key, when a recall or a context block last returned the memory (``returned``)
and a boost that decays (``boost`` as of ``at``). A read of the memory (CLI ``memory show``, MCP
``memory_show`` or the ``memory://`` resource) within :data:`RETURN_WINDOW_S` of its return adds 1 to the
boost (decayed to now first, at most :data:`BOOST_CAP`) and clears ``returned``, so one return counts one
read. Ranking multiplies a memory's relevance by :func:`factor` of its boost (specs/memory.md, "Usage that
ranks"). Derived data: it may rank, never decide what a memory holds; a rebuilt index starts without it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from bundlekit.memory.catalog.database import Database, translated

__all__ = [
    "BOOST_CAP", "BOOST_HALF_LIFE_S", "NOTE_WAIT_MS", "RETURN_WINDOW_S", "USAGE_WEIGHT", "Usage", "decayed", "factor",
    "standing",
]

RETURN_WINDOW_S = 3600.0  # a read counts when a recall returned the memory at most this long before
BOOST_HALF_LIFE_S = 14 * 86400.0  # the boost halves every two weeks without a read
BOOST_CAP = 4.0  # reads past this many (decayed) add nothing
USAGE_WEIGHT = 0.1  # a memory at the cap ranks as if 10% more relevant
NOTE_WAIT_MS = 250  # how long a note waits for another connection's write lock before it is given up


def decayed(boost: float, at: float, now_s: float) -> float:
    """``boost`` as of ``at`` (POSIX seconds), halved every :data:`BOOST_HALF_LIFE_S` until ``now_s``."""
    return float(boost * 0.5 ** (max(now_s - at, 0.0) / BOOST_HALF_LIFE_S))


def factor(boost: float) -> float:
    """What a memory's relevance is multiplied by: ``1 + USAGE_WEIGHT * min(boost, BOOST_CAP) / BOOST_CAP``."""
    return 1.0 + USAGE_WEIGHT * min(max(boost, 0.0), BOOST_CAP) / BOOST_CAP


def _number(value: object) -> float | None:
    """``value`` as a finite float when the row holds a number there, else ``None`` (a hand-edited row: text,
    a blob, NULL or an infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def standing(boost: object, at: object, now_s: float) -> float:
    """A stored boost decayed to ``now_s``, from ``0`` to :data:`BOOST_CAP`: 0 for a row that does not hold two
    finite numbers, or whose ``at`` is more than :data:`RETURN_WINDOW_S` after ``now_s`` (written under a clock
    since set back, or by hand: believed, it would never decay)."""
    b, t = _number(boost), _number(at)
    if b is None or t is None or t - now_s > RETURN_WINDOW_S:
        return 0.0
    return decayed(min(max(b, 0.0), BOOST_CAP), t, now_s)


# standing() of every row in SQL: rows holding two numbers (SQLite keeps text or a blob in a REAL column; it
# stores no NaN), not dated past now + RETURN_WINDOW_S, the boost at most BOOST_CAP and decayed.
_BOOSTS = (
    "SELECT key, b FROM (SELECT key, min(boost, ?) * pow(0.5, max(? - at, 0.0) / ?) AS b FROM usage "
    "WHERE typeof(key) = 'text' AND typeof(boost) IN ('integer', 'real') AND typeof(at) IN ('integer', 'real') "
    "AND boost > 0 AND at - ? <= ?) WHERE b > 0"
)


class Usage:
    """The ``usage`` table of a :class:`Database`. Writes run in their own transaction (:meth:`Database.transaction`),
    not under the tree lock: the table is no part of what the files say."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def returned(self, keys: Iterable[str], now_s: float) -> None:
        """Note that a recall or context block returned ``keys`` at ``now_s``."""
        rows = [(key, now_s, now_s) for key in dict.fromkeys(keys)]
        if not rows:
            return
        with self._db.impatient(NOTE_WAIT_MS), self._db.transaction():
            self._db.conn.executemany(
                "INSERT INTO usage (key, returned, boost, at) VALUES (?, ?, 0.0, ?) "
                "ON CONFLICT (key) DO UPDATE SET returned = excluded.returned", rows)

    def read(self, key: str, now_s: float) -> bool:
        """Note that the agent read ``key`` at ``now_s``: its boost gains 1 when a recall returned it within
        :data:`RETURN_WINDOW_S` before (and that return is used up). Whether it did."""
        with self._db.impatient(NOTE_WAIT_MS), self._db.transaction():
            row = self._db.conn.execute("SELECT returned, boost, at FROM usage WHERE key = ?", (key,)).fetchone()
            returned = None if row is None else _number(row[0])
            if returned is None or not 0.0 <= now_s - returned <= RETURN_WINDOW_S:
                return False
            boost = min(standing(row[1], row[2], now_s) + 1.0, BOOST_CAP)
            self._db.conn.execute("UPDATE usage SET returned = NULL, boost = ?, at = ? WHERE key = ?",
                                  (boost, now_s, key))
        return True

    def boosts(self, now_s: float) -> dict[str, float]:
        """Every memory's boost decayed to ``now_s`` (:func:`standing`), by key (those with none left out): in SQL
        where SQLite has ``pow`` (the same operations: every boosted memory is a row, and a recall reads them
        all), else in Python."""
        with translated():
            if self._db.math:
                return dict(self._db.conn.execute(_BOOSTS, (BOOST_CAP, now_s, BOOST_HALF_LIFE_S, now_s,
                                                            RETURN_WINDOW_S)).fetchall())
            rows = self._db.conn.execute("SELECT key, boost, at FROM usage WHERE boost > 0").fetchall()
        found = {str(key): standing(boost, at, now_s) for key, boost, at in rows if isinstance(key, str)}
        return {key: boost for key, boost in found.items() if boost > 0.0}
