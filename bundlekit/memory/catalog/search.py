"""The derived index's search and ranking: the ``search`` table (name, description and body as recall matches
them: credentials withheld, case-folded; FTS5 with the trigram tokenizer, or a plain table scanned with
``instr``) and the ranking of the ``memory`` rows by ``ranking.score_of``, in SQL where SQLite has ``pow``.
"""

from __future__ import annotations

from typing import NamedTuple

from bundlekit.memory.catalog.database import Database, translated
from bundlekit.memory.ranking import HALF_LIFE, best_first, score_of

__all__ = ["NUL_STAND_IN", "TRIGRAM", "Ranked", "Search"]

TRIGRAM = 3  # FTS5's trigram tokenizer matches substrings of at least 3 characters
HALF_LIFE_S = HALF_LIFE.total_seconds()
NUL_STAND_IN = "\ufffe"  # a Unicode noncharacter
# ranking.score_of in SQL, from a row's salience s, age in seconds and decay horizon h (parameters: 2 half-lives)
_SCORE = (
    "s * pow(0.5, age / ?) * (CASE WHEN h IS NULL OR age - h <= 0 THEN 1.0 ELSE pow(0.5, (age - h) / ?) END)"
)
_TOP = 64  # recall first looks for its hits among this many best memories (see Search._best_of_top)


class Ranked(NamedTuple):
    """One memory in rank order: its key, its context-block piece length, its relevance term (if asked)."""

    key: str
    piece: int
    relevance: float | None


def _fold(text: str) -> str:
    # SQLite's tokenizer stops at NUL: index a stand-in a needle cannot usefully hold (see ranked()).
    return text.casefold().replace("\0", NUL_STAND_IN)


class Search:
    """Recall's candidates and their order, from the ``memory`` and ``search`` tables of a :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def lexical(self, words: list[str]) -> dict[int, float]:
        """BM25 (FTS5's: lower is better) by row id of the rows holding any of ``words`` (folded, each at least
        3 characters: trigrams); empty without FTS5.

        Words in half the rows or more are left out when a rarer word of them matches: FTS5 floors the IDF
        of such a term at 1e-6 (sqlite/sqlite ``ext/fts5/fts5_aux.c``, ``fts5Bm25GetData``: ``if( idf<=0.0 )
        idf = 1e-6;``), so next to a rarer word's match it weighs well under a thousandth of it, while
        scoring its every match costs ~7 ms per 1,000 rows. Whether a word is that common is a count stopped
        at half the rows. When no rarer word matches, the common words are searched."""
        words = [w for w in words if len(w) >= TRIGRAM and NUL_STAND_IN not in w]
        if not self._db.fts or not words:
            return {}
        with translated():
            half = (self._count() + 1) // 2  # FTS5's IDF is <= 0 from nHit >= nRow / 2
            rare: list[str] = []
            common: list[str] = []
            for phrase in ('"' + w.replace('"', '""') + '"' for w in words):
                hits = self._db.conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM search WHERE search MATCH ? LIMIT ?)", (phrase, half)
                ).fetchone()[0]
                (common if hits >= half else rare if hits else []).append(phrase)
            searched = rare or common
            if not searched:
                return {}
            return {int(i): float(b) for i, b in self._db.conn.execute(
                "SELECT rowid, bm25(search) FROM search WHERE search MATCH ?", (" OR ".join(searched),))}
    def _count(self) -> int:
        with translated():
            return int(self._db.conn.execute("SELECT count(*) FROM memory").fetchone()[0])

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
        if needle is not None and not relevance and self._db.math and limit is not None and 0 < limit <= _TOP:
            found = self._best_of_top(now_s, needle, limit)
            if found is not None:
                return found
        source, params = self._candidates(needle, relevance, longest)
        with translated():
            if self._db.math and not relevance:  # the same order without BM25's window over every candidate
                rows = self._db.conn.execute(
                    f"WITH c AS ({source}), a AS (SELECT key, piece, salience AS s, max(? - updated, 0.0) AS age, "
                    f"horizon AS h FROM c) SELECT key, piece, NULL FROM a ORDER BY {_SCORE} DESC, key LIMIT ?",
                    (*params, now_s, HALF_LIFE_S, HALF_LIFE_S, -1 if limit is None else limit),
                ).fetchall()
                return list(map(Ranked._make, rows))
            if self._db.math:
                rows = self._db.conn.execute(
                    f"WITH c AS ({source}), a AS (SELECT key, piece, salience AS s, max(? - updated, 0.0) AS age, "
                    "horizon AS h, bm25, min(bm25) OVER () AS best FROM c), "
                    f"r AS (SELECT key, piece, CASE WHEN best IS NULL OR best = 0 THEN 1.0 ELSE bm25 / best END AS rel, "
                    f"{_SCORE} AS score FROM a) "
                    "SELECT key, piece, rel FROM r ORDER BY (CASE WHEN ? THEN score * rel ELSE score END) DESC, key "
                    "LIMIT ?",
                    (*params, now_s, HALF_LIFE_S, HALF_LIFE_S, int(relevance), -1 if limit is None else limit),
                ).fetchall()
                return [Ranked(key, piece, rel if relevance else None) for key, piece, rel in rows]
            rows = self._db.conn.execute(source, params).fetchall()
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
        with translated():
            rows = self._db.conn.execute(
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
        if self._db.fts and len(needle) >= TRIGRAM:
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
