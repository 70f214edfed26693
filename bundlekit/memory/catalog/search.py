"""The derived index's search and ranking: the ``search`` table (name, description and body as recall matches
them: credentials withheld, case-folded; FTS5 with the trigram tokenizer, or a plain table scanned with
``instr``) and the ranking of the ``memory`` rows by ``ranking.score_of``, in SQL where SQLite has ``pow``.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from bundlekit.memory.catalog.database import Database, translated
from bundlekit.memory.catalog.usage import factor
from bundlekit.memory.ranking import FLOOR, HALF_LIFE, Basis, best_first, score_of

__all__ = [
    "FIELD_WEIGHTS", "MAX_TERMS", "NUL_STAND_IN", "STOP_WORDS", "TRIGRAM", "Lexical", "Ranked", "Search",
    "query_words", "stems",
]

TRIGRAM = 3  # FTS5's trigram tokenizer matches substrings of at least 3 characters
HALF_LIFE_S = HALF_LIFE.total_seconds()
NUL_STAND_IN = "\ufffe"  # a Unicode noncharacter
# ranking.score_of in SQL, from a row's salience s, age in seconds and decay horizon h (parameters: 2 half-lives)
_SCORE = (
    "s * pow(0.5, age / ?) * (CASE WHEN h IS NULL OR age - h <= 0 THEN 1.0 ELSE pow(0.5, (age - h) / ?) END)"
)
# BM25 column weights of name, description and body (chosen on the evaluation's training split: bench/recall_eval.py)
FIELD_WEIGHTS = (3.0, 2.0, 1.0)
MAX_TERMS = 16  # the query's words BM25 looks for (each at most MAX_TERM characters, in its first MAX_QUERY)
MAX_TERM = 64
MAX_QUERY = 4096
# Words that say what kind of question it is, not what it is about (English question words, pronouns and
# glue): left out of the words BM25 looks for and of the text a query's vector is of (memory/semantic).
STOP_WORDS = frozenset(
    """a about after all am an and any anyone are as at be before but by can could did do does for from get gets
    getting go going good had has have he her hers him his how i if in into is it its i'm it's me my next not of
    on onto or our out she should so some something that the their them there they this to up us was way we were
    what what's when where where's which while who whom why will with would you your""".split()
)
_WORD = re.compile(r"[^\W_]+")  # a token of FTS5's unicode61: letters and digits
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone surrogate: in no UTF-8 file, and SQLite cannot take one
_TOP = 64  # recall first looks for its hits among this many best memories (see Search._best_of_top)


class Ranked(NamedTuple):
    """One memory in rank order: its key, its context-block piece length, its relevance term (if asked)."""

    key: str
    piece: int
    relevance: float | None


class Lexical(NamedTuple):
    """A term-level BM25 (:meth:`Search.lexical`): scores by row id (higher better), how many rows FTS5 scored,
    the words searched and those left out as in more than half the memories."""

    scores: dict[int, float]
    scored: int
    searched: tuple[str, ...]
    skipped: tuple[str, ...]


def query_words(query: str) -> list[str]:
    """The words of ``query`` BM25 looks for: unicode61's tokens (letters and digits) of its first
    ``MAX_QUERY`` characters, folded, each once, stop words and words over ``MAX_TERM`` characters left out, at
    most ``MAX_TERMS``."""
    found = dict.fromkeys(_WORD.findall(query[:MAX_QUERY].casefold()))
    return [w for w in found if w not in STOP_WORDS and len(w) <= MAX_TERM][:MAX_TERMS]


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


_STEMMER: list[sqlite3.Connection] = []
_STEMMER_LOCK = threading.Lock()


def stems(words: Sequence[str]) -> list[str]:
    """Each word's stem as the ``terms`` table indexes it: SQLite's own porter tokenizer run over the words
    (an in-memory FTS5 table of one row per word, read back through fts5vocab), so a query's stems and the
    index's are made by the same code. A word the tokenizer makes no token of stems to itself."""
    with _STEMMER_LOCK:
        if not _STEMMER:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute("CREATE VIRTUAL TABLE q USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
            conn.execute("CREATE VIRTUAL TABLE qv USING fts5vocab(q, 'instance')")
            _STEMMER.append(conn)
        conn = _STEMMER[0]
        conn.executemany("INSERT INTO q (rowid, x) VALUES (?, ?)", enumerate(words))
        try:
            found = {int(doc): str(term) for term, doc in conn.execute("SELECT term, doc FROM qv WHERE offset = 0")}
        finally:
            conn.execute("DELETE FROM q")
    return [found.get(at, word) for at, word in enumerate(words)]


def _fold(text: str) -> str:
    # SQLite's tokenizer stops at NUL: index a stand-in a needle cannot usefully hold (see ranked()).
    return text.casefold().replace("\0", NUL_STAND_IN)


class Search:
    """Recall's candidates and their order, from the ``memory`` and ``search`` tables of a :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def lexical(self, query: str) -> Lexical:
        """Term-level BM25 of ``query`` (folded) by row id, higher better (:class:`Lexical`); empty without FTS5.

        The query's words (:func:`query_words`) are stemmed as the ``terms`` table stems them (SQLite's
        porter over unicode61, :func:`stems`), and a word whose stem is in more than half the memories is left
        out before the MATCH, from the document counts the index keeps (``terms_df``): FTS5 floors the IDF
        of such a term at 1e-6 (sqlite/sqlite ``ext/fts5/fts5_aux.c``, ``fts5Bm25GetData``: ``if( idf<=0.0 )
        idf = 1e-6;``), so it cannot change an order, while scoring its every match costs ~7 ms per 1,000
        rows. The words left are ORed, with the whole query as one phrase besides when it has two words or
        more (a memory holding the phrase scores it too; every row it matches holds a searched word, so it
        adds no row to score). Columns are weighted ``FIELD_WEIGHTS`` (name, description, body). A stem
        ``terms_df`` counts in more memories than the index holds (terms rows of no memory: tampering) is
        searched, not skipped: a count that cannot be true never keeps a word out."""
        words = query_words(query)
        if not self._db.fts or not words:
            return Lexical({}, 0, (), ())
        stemmed = stems(words)
        with translated():
            total = self._count()
            marks = ",".join("?" * len(set(stemmed)))
            docs = dict(self._db.conn.execute(f"SELECT term, doc FROM terms_df WHERE term IN ({marks})",
                                              tuple(set(stemmed))).fetchall())
            common = {stem for stem, doc in docs.items() if total / 2 < doc <= total}
            searched = tuple(w for w, stem in zip(words, stemmed, strict=True) if docs.get(stem) and stem not in common)
            skipped = tuple(w for w, stem in zip(words, stemmed, strict=True) if stem in common)
            if not searched:
                return Lexical({}, 0, searched, skipped)
            phrases = [_quoted(w) for w in searched]
            if len(words) > 1:
                phrases.append(_quoted(" ".join(words)))
            rows = self._db.conn.execute(
                f"SELECT rowid, bm25(terms, {', '.join(map(repr, FIELD_WEIGHTS))}) FROM terms WHERE terms MATCH ?",
                (" OR ".join(phrases),),
            ).fetchall()
        return Lexical({int(i): -float(b) for i, b in rows}, len(rows), searched, skipped)

    def named(self, needle: str) -> set[int]:
        """Row ids of the memories whose folded name is ``needle`` (runs of whitespace as one space)."""
        text = " ".join(needle.split())
        if not text or NUL_STAND_IN in text or not text.isprintable() and _SURROGATE.search(text):
            return set()  # a lone surrogate (undecodable argv bytes) is in no name: UTF-8 files hold none
        with translated():
            if self._db.fts and len(text) >= TRIGRAM:
                rows = self._db.conn.execute("SELECT rowid, name FROM search WHERE search MATCH ?",
                                             ("name : " + _quoted(text),)).fetchall()
            else:
                rows = self._db.conn.execute("SELECT rowid, name FROM search WHERE name = ?", (text,)).fetchall()
        return {int(i) for i, name in rows if " ".join(str(name).split()) == text}

    def standing(self, ids: Iterable[int]) -> dict[int, tuple[str, int, Basis]]:
        """(key, piece length, ranking basis) of the rows ``ids`` (those still indexed)."""
        wanted = list(ids)
        found: dict[int, tuple[str, int, Basis]] = {}
        with translated():
            for at in range(0, len(wanted), 500):
                chunk = wanted[at : at + 500]
                marks = ",".join("?" * len(chunk))
                for i, key, piece, sal, updated, horizon in self._db.conn.execute(
                    f"SELECT id, key, piece, salience, updated, horizon FROM memory WHERE id IN ({marks})", chunk
                ):
                    found[int(i)] = (str(key), int(piece), (float(sal), float(updated), horizon))
        return found

    def by_terms(
        self, now_s: float, query: str, limit: int | None = None, *, boosts: Mapping[str, float] | None = None,
        named: Collection[int] = (),
    ) -> list[Ranked]:
        """The memories holding a searched word of ``query`` (:meth:`lexical`), best first by
        ``relevance x (FLOOR + (1 - FLOOR) x salience x recency x decay)`` where relevance is the BM25 over the
        best one's (times ``usage.factor`` of the memory's boost in ``boosts``), then key: what
        ``rank="relevance"`` returns. The rows ``named`` (whose name is the query) come first."""
        scores = self.lexical(query).scores
        rows = self.standing(scores)
        found = {i: score for i, score in scores.items() if i in rows}  # a terms row of no memory ranks nothing
        if not found:
            return []
        best = max(found.values())
        boosts = boosts or {}
        relevance = {i: (found[i] / best if best > 0 else 1.0) * factor(boosts.get(rows[i][0], 0.0)) for i in rows}
        scored = ((relevance[i] * (FLOOR + (1.0 - FLOOR) * score_of(basis, now_s)), key)
                  for i, (key, _piece, basis) in rows.items())
        by_key = {key: (piece, relevance[i]) for i, (key, piece, _basis) in rows.items()}
        order = best_first(scored, limit if not named else None)
        if named:
            first = {rows[i][0] for i in named if i in rows}
            order = [key for key in order if key in first] + [key for key in order if key not in first]
            order = order if limit is None else order[:limit]
        return [Ranked(key, by_key[key][0], by_key[key][1]) for key in order]

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
        cannot answer exactly (holding the NUL stand-in): the caller scans the records. None match a needle
        holding a lone surrogate (SQLite cannot take one; no memory file, being UTF-8, holds one).
        """
        if needle is not None and NUL_STAND_IN in needle:
            return None
        if needle is not None and _SURROGATE.search(needle):
            return []  # a lone surrogate (undecodable argv bytes, an MCP "\ud800" escape): no UTF-8 file holds one
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
