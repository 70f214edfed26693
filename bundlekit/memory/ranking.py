"""Recall and the context block: salience x recency ranking over memory records.

The formula (specs/memory.md, "Ranking")::

    salience = 1.0                                            if important
             = min(0.5 + TYPE_BONUS[type] + min(0.05 * len(tags), 0.2), 1.0)   otherwise
    age      = max(0, now - updated)                          (a timedelta)
    recency  = 0.5 ** (age / 7 days)
    decay    = 0.5 ** (max(0, age - horizon) / 7 days)        horizon 30 or 90 days for decay 30d / 90d
             = 1.0                                            for decay never, or none
    score    = salience * recency * decay

Ties are broken by key (code-point order), so results are deterministic.
With ``rank="relevance"`` recall multiplies the score by a relevance term from
the derived index's BM25 (``catalog``): each candidate's BM25 divided by the
best candidate's, so the best textual match keeps its score and weaker ones
lose up to all of it. Without a BM25 (a query under 3 characters, an index
without FTS5, a tree in memory) the term is 1.0 and the order is the default.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bundlekit._terminal import printable
from bundlekit.errors import UsageError
from bundlekit.memory.record import MemoryRecord

__all__ = [
    "CHARS_PER_TOKEN",
    "DECAY_HORIZONS",
    "FLOOR",
    "HALF_LIFE",
    "RANKS",
    "TYPE_BONUS",
    "Basis",
    "RecallHit",
    "basis",
    "best_first",
    "check_min_similarity",
    "context_block",
    "context_text",
    "decay_factor",
    "fit_pieces",
    "largest_fitting",
    "meaning_hit",
    "meaning_query",
    "needle",
    "piece_length",
    "ranked_records",
    "recall",
    "recency",
    "salience",
    "score",
    "score_of",
    "scored_hit",
]

TYPE_BONUS = {"feedback": 0.3, "user": 0.2, "project": 0.1, "reference": 0.0}
HALF_LIFE = timedelta(days=7)
FLOOR = 0.5  # in a ranking by relevance or meaning, the share of a hit's score salience x recency x decay cannot take
DECAY_HORIZONS = {"30d": timedelta(days=30), "90d": timedelta(days=90)}
CHARS_PER_TOKEN = 4
MEMORY_HEADING = "\n## Memory files\n"
TIMELINE_HEADING = "\n## Recent timeline\n\n"
# salience: substring hits by salience x recency x decay; relevance: x BM25 term; semantic and hybrid: by meaning
# (memory/semantic: cosine similarity of embeddings, with BM25 for hybrid), any memory, not only substring hits.
RANKS = ("salience", "relevance", "semantic", "hybrid")
MEANING_RANKS = ("semantic", "hybrid")
# What recall by meaning reads of a query: its words, whitespace collapsed, up to the characters an embedder
# takes of a text (embed/wordllama and embed/openai cut there too).
MEANING_QUERY_CHARS = 32_768
_NON_SPACE = re.compile(r"\S+")

Basis = tuple[float, float, "float | None"]
"""What a score needs of a record: (salience, ``updated`` as POSIX seconds, decay horizon in seconds or None)."""


@dataclass(frozen=True)
class RecallHit:
    """One recall result: the record, its score and the parts of the score."""

    record: MemoryRecord
    score: float
    salience: float
    recency: float
    decay: float
    matches: int
    relevance: float | None = None  # set only when ranked with rank="relevance", "semantic" or "hybrid"
    similarity: float | None = None  # the cosine similarity to the query, when ranked by meaning
    ranking: str = "salience"  # the ranking that chose it (RANKS)

    @property
    def key(self) -> str:
        return self.record.key

    def __getitem__(self, name: str) -> Any:
        """Seed 003's hit shape for ported callers: ``hit["file"]``, ``["meta"]``, ``["body"]``, ``["score"]``."""
        seed_shape = {
            "file": self.record.filename,
            "key": self.key,
            "meta": self.record.meta,
            "body": self.record.body,
            "score": self.score,
            "matches": self.matches,
        }
        if name not in seed_shape:
            raise KeyError(name)
        return seed_shape[name]

    def to_dict(self, rank: int | None = None) -> dict[str, Any]:
        """A JSON-ready summary (no body), as ``memory recall --json`` prints it (``relevance`` when ranked by it).

        Scores are exact: a months-old memory scores around 1e-10, which rounding would flatten to 0.0 for
        every hit and lose the order; ``rank`` (1 = best) is the hit's place in the recall, when given.
        """
        summary: dict[str, Any] = {} if rank is None else {"rank": rank}
        summary |= {
            "key": self.key,
            "name": self.record.name,
            "description": self.record.description,
            "type": self.record.type,
            "updated": self.record.meta["updated"],
            "score": self.score,
            "salience": self.salience,
            "recency": self.recency,
            "decay": self.decay,
            "matches": self.matches,
        }
        if self.relevance is not None:
            summary["relevance"] = self.relevance
        if self.similarity is not None:
            summary["similarity"] = self.similarity
        summary["ranking"] = self.ranking
        return summary


_HALF_LIFE_S = HALF_LIFE.total_seconds()
_HORIZONS_S = {name: value.total_seconds() for name, value in DECAY_HORIZONS.items()}


def salience(record: MemoryRecord) -> float:
    """1.0 when important; else 0.5 + type bonus + 0.05 per tag (at most 0.2), capped at 1.0."""
    meta = record.meta
    if meta.get("important") is True:
        return 1.0
    return min(0.5 + TYPE_BONUS[record.type] + min(0.05 * len(meta.get("tags") or ()), 0.2), 1.0)


def _age(record: MemoryRecord, now: datetime) -> timedelta:
    return max(now - record.updated, timedelta(0))


def recency(record: MemoryRecord, now: datetime) -> float:
    """0.5 ** (age / 7 days); a memory updated in the future counts as age 0."""
    return float(0.5 ** (_age(record, now) / HALF_LIFE))


def decay_factor(record: MemoryRecord, now: datetime) -> float:
    """Extra down-weighting past the decay horizon: the half-life is applied a second time."""
    horizon = DECAY_HORIZONS.get(record.decay or "never")
    if horizon is None:
        return 1.0
    past = _age(record, now) - horizon
    return 1.0 if past <= timedelta(0) else float(0.5 ** (past / HALF_LIFE))


def score(record: MemoryRecord, now: datetime) -> float:
    """salience x recency x decay."""
    return salience(record) * recency(record, now) * decay_factor(record, now)


def basis(record: MemoryRecord) -> Basis:
    """(salience, updated as POSIX seconds, decay horizon in seconds or None), memoised on the record."""
    found: Basis | None = record.memo.get("rank")
    if found is None:
        found = (salience(record), record.updated_epoch, _HORIZONS_S.get(record.meta.get("decay") or "never"))
        record.memo["rank"] = found
    return found


def _parts(rank_basis: Basis, now_s: float) -> tuple[float, float, float]:
    """(salience, recency, decay) on float seconds: the hot path of recall and the context block."""
    sal, updated_s, horizon = rank_basis
    age = now_s - updated_s
    if age < 0:
        age = 0.0
    past = 0.0 if horizon is None else age - horizon
    return sal, 0.5 ** (age / _HALF_LIFE_S), 1.0 if past <= 0 else 0.5 ** (past / _HALF_LIFE_S)


def score_of(rank_basis: Basis, now_s: float) -> float:
    """salience x recency x decay from a :data:`Basis` (what the derived index stores per memory)."""
    s, r, d = _parts(rank_basis, now_s)
    return s * r * d


def _hit(record: MemoryRecord, now: datetime, needle_text: str, relevance: float | None) -> RecallHit:
    s, r, d = _parts(basis(record), now.timestamp())
    total = s * r * d * (1.0 if relevance is None else relevance)
    ranked_by = "salience" if relevance is None else "relevance"
    return RecallHit(record, total, s, r, d, record.folded_text.count(needle_text), relevance, ranking=ranked_by)


def scored_hit(
    record: MemoryRecord, now: datetime, needle_text: str, *, relevance: float, ranking: str,
    similarity: float | None = None,
) -> RecallHit:
    """A hit ranked by relevance or meaning: ``relevance x (FLOOR + (1 - FLOOR) x salience x recency x decay)``
    (the score ``catalog.search.by_terms`` and ``memory/semantic`` order by), with its parts."""
    s, r, d = _parts(basis(record), now.timestamp())
    total = relevance * (FLOOR + (1.0 - FLOOR) * s * r * d)
    return RecallHit(record, total, s, r, d, record.folded_text.count(needle_text), relevance, similarity, ranking)


def meaning_hit(
    record: MemoryRecord, now: datetime, needle_text: str, *, score: float, relevance: float, similarity: float,
    ranking: str,
) -> RecallHit:
    """A hit ranked by meaning (``memory/semantic``): its score as that ranking made it, with its parts."""
    s, r, d = _parts(basis(record), now.timestamp())
    return RecallHit(record, score, s, r, d, record.folded_text.count(needle_text), relevance, similarity, ranking)


def check_min_similarity(value: object) -> float | None:
    """``value`` as a cosine similarity threshold: None (no threshold), or a finite number from -1 to 1
    (``UsageError`` otherwise, naming the option)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= float(value) <= 1.0:
        shown = printable(repr(value)[:40])
        raise UsageError(f"the minimum similarity (--min-similarity) must be a number from -1 to 1 (a cosine "
                         f"similarity), not {shown}")
    return float(value)


def best_first(scored: Iterable[tuple[float, str]], limit: int | None = None) -> list[str]:
    """Keys ordered by score descending, then key; the first ``limit`` (all when None)."""
    order = [(-value, key) for value, key in scored]
    chosen = sorted(order) if limit is None else heapq.nsmallest(limit, order)
    return [key for _value, key in chosen]


def ranked_records(records: Iterable[MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """Every record, best first (score descending, then key), without building hits."""
    now_s = now.timestamp()
    by_key = {record.key: record for record in records}
    return [by_key[key] for key in best_first((score_of(basis(r), now_s), r.key) for r in by_key.values())]


def meaning_query(query: object) -> object:
    """The part of ``query`` recall by meaning uses: its words joined by single spaces, up to
    ``MEANING_QUERY_CHARS``, found lazily, so a question padded to megabytes (runs of spaces, repeated words)
    costs memory for what is used, never a folded copy of the whole. Padding no longer outweighs the
    question either: a mean of token vectors counted every space token. Anything not a string is returned
    as it is (``needle`` refuses it)."""
    if not isinstance(query, str):
        return query
    words: list[str] = []
    used = 0
    for match in _NON_SPACE.finditer(query):
        start = match.start()
        word = query[start : min(match.end(), start + MEANING_QUERY_CHARS - used)]  # never a copy of a huge word
        words.append(word)
        used += len(word) + 1
        if used >= MEANING_QUERY_CHARS:
            break
    return " ".join(words)


def needle(query: object, limit: int) -> str:
    """The text recall looks for: ``query`` case-folded, NUL removed.

    Raises :class:`UsageError` for an empty query or a negative limit.
    """
    text = query.casefold().replace("\0", "") if isinstance(query, str) else ""
    if not text.strip():
        raise UsageError("recall needs a non-empty query (a phrase to look for)")
    if limit < 0:
        raise UsageError(f"recall limit must be 0 or more, not {limit}")
    return text


def recall(
    records: Iterable[MemoryRecord],
    query: str,
    now: datetime,
    limit: int = 5,
    *,
    relevance: dict[str, float] | None = None,
) -> list[RecallHit]:
    """Records whose name, description or body contains ``query`` (case-insensitive), best first.

    ``matches`` counts the occurrences over the three fields; it does not
    change the order. ``relevance`` (by key, from the derived index's BM25)
    multiplies each score when given. Raises :class:`UsageError` for an empty
    query or a negative limit.
    """
    text = needle(query, limit)
    now_s = now.timestamp()
    matched = {r.key: r for r in records if text in r.folded_text}
    scored = (
        (score_of(basis(r), now_s) * (1.0 if relevance is None else relevance.get(key, 1.0)), key)
        for key, r in matched.items()
    )
    # Only the returned hits are built (with their occurrence counts).
    return [
        _hit(matched[key], now, text, None if relevance is None else relevance.get(key, 1.0))
        for key in best_first(scored, limit)
    ]


def _memory_piece(record: MemoryRecord) -> str:
    heading = f"\n### {record.name} (`{record.key}.md`)\n"
    return f"{heading}\n{record.body}\n" if record.body else heading


def piece_length(name: str, key: str, body: str) -> int:
    """The length of a memory's piece in the context block (``_memory_piece``) without building it."""
    length = len(name) + len(key) + 14  # "\n### ", " (`", ".md`)", "\n"
    return length + len(body) + 2 if body else length


def _piece_length(record: MemoryRecord) -> int:
    length: int | None = record.memo.get("piece_length")
    if length is None:
        length = piece_length(record.name, record.key, record.body)
        record.memo["piece_length"] = length
    return length


def _check_tokens(max_tokens: object) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise UsageError(f"max_tokens must be an integer of 0 or more, not {max_tokens!r}")
    return max_tokens * CHARS_PER_TOKEN


def fit_pieces(index_text: str, lengths: Iterable[int], max_tokens: int) -> list[int]:
    """Positions (in rank order) of the memory pieces that go into the context block.

    The index always goes in whole; then each piece in rank order is taken if it
    still fits (else skipped and the next tried). The section heading is counted
    with the first piece taken. Raises :class:`UsageError` for a bad ``max_tokens``.
    """
    budget = _check_tokens(max_tokens)
    used = len(index_text)
    chosen: list[int] = []
    for position, length in enumerate(lengths):
        cost = length + (0 if chosen else len(MEMORY_HEADING))
        if used + cost <= budget:
            chosen.append(position)
            used += cost
    return chosen


def largest_fitting(index_text: str, lengths: Sequence[int], chosen: Sequence[int], max_tokens: int) -> int:
    """The longest piece that could still go in after :func:`fit_pieces` took ``chosen`` of ``lengths``
    (negative when none can): a piece ranked later and longer than this is skipped."""
    used = len(index_text) + sum(lengths[i] for i in chosen) + len(MEMORY_HEADING)
    return _check_tokens(max_tokens) - used


def context_text(
    index_text: str,
    pieces: Iterable[MemoryRecord],
    timeline_newest_first: Iterator[dict[str, Any]],
    max_tokens: int,
) -> str:
    """Assemble the block from the index, the chosen pieces (:func:`fit_pieces`, in rank order) and the
    timeline: entries newest first until one does not fit, printed oldest first.
    A section heading is left out when nothing goes under it.
    """
    budget = _check_tokens(max_tokens)
    parts = [index_text]
    used = len(index_text)
    for record in pieces:
        if len(parts) == 1:
            parts.append(MEMORY_HEADING)
            used += len(MEMORY_HEADING)
        parts.append(_memory_piece(record))
        used += _piece_length(record)
    lines: list[str] = []
    for entry in timeline_newest_first:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        cost = len(line) + (0 if lines else len(TIMELINE_HEADING))
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    if lines:
        parts.append(TIMELINE_HEADING)
        parts.extend(reversed(lines))
    return "".join(parts)


def context_block(
    index_text: str,
    ranked: Iterable[MemoryRecord],
    timeline_newest_first: Iterator[dict[str, Any]],
    max_tokens: int,
) -> str:
    """Assemble the context block within ``max_tokens * 4`` characters (:func:`fit_pieces`, :func:`context_text`)."""
    records = list(ranked)
    chosen = fit_pieces(index_text, [_piece_length(r) for r in records], max_tokens)
    return context_text(index_text, [records[i] for i in chosen], timeline_newest_first, max_tokens)
