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
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bundlekit.errors import UsageError
from bundlekit.memory.record import MemoryRecord

__all__ = [
    "CHARS_PER_TOKEN",
    "DECAY_HORIZONS",
    "HALF_LIFE",
    "TYPE_BONUS",
    "RecallHit",
    "context_block",
    "decay_factor",
    "ranked_records",
    "recall",
    "recency",
    "salience",
    "score",
]

TYPE_BONUS = {"feedback": 0.3, "user": 0.2, "project": 0.1, "reference": 0.0}
HALF_LIFE = timedelta(days=7)
DECAY_HORIZONS = {"30d": timedelta(days=30), "90d": timedelta(days=90)}
CHARS_PER_TOKEN = 4
MEMORY_HEADING = "\n## Memory files\n"
TIMELINE_HEADING = "\n## Recent timeline\n\n"


@dataclass(frozen=True)
class RecallHit:
    """One recall result: the record, its score and the parts of the score."""

    record: MemoryRecord
    score: float
    salience: float
    recency: float
    decay: float
    matches: int

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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (no body), as ``memory recall --json`` prints it."""
        return {
            "key": self.key,
            "name": self.record.name,
            "description": self.record.description,
            "type": self.record.type,
            "updated": self.record.meta["updated"],
            "score": round(self.score, 6),
            "salience": round(self.salience, 6),
            "recency": round(self.recency, 6),
            "decay": round(self.decay, 6),
            "matches": self.matches,
        }


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


def _basis(record: MemoryRecord) -> tuple[float, float, float | None]:
    """(salience, updated as POSIX seconds, decay horizon in seconds or None), memoised on the record."""
    basis: tuple[float, float, float | None] | None = record.memo.get("rank")
    if basis is None:
        basis = (salience(record), record.updated_epoch, _HORIZONS_S.get(record.meta.get("decay") or "never"))
        record.memo["rank"] = basis
    return basis


def _parts(record: MemoryRecord, now_s: float) -> tuple[float, float, float]:
    """(salience, recency, decay) on float seconds: the hot path of recall and context_block."""
    sal, updated_s, horizon = _basis(record)
    age = now_s - updated_s
    if age < 0:
        age = 0.0
    past = 0.0 if horizon is None else age - horizon
    return sal, 0.5 ** (age / _HALF_LIFE_S), 1.0 if past <= 0 else 0.5 ** (past / _HALF_LIFE_S)


def _hit(record: MemoryRecord, now: datetime, matches: int) -> RecallHit:
    s, r, d = _parts(record, now.timestamp())
    return RecallHit(record, s * r * d, s, r, d, matches)


def _score(record: MemoryRecord, now_s: float) -> float:
    s, r, d = _parts(record, now_s)
    return s * r * d


def ranked_records(records: Iterable[MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """Every record, best first (score descending, then key), without building hits."""
    now_s = now.timestamp()
    scored = [(-_score(record, now_s), record.key, record) for record in records]
    scored.sort()  # keys are unique, so records themselves are never compared
    return [item[2] for item in scored]


def recall(records: Iterable[MemoryRecord], query: str, now: datetime, limit: int = 5) -> list[RecallHit]:
    """Records whose name, description or body contains ``query`` (case-insensitive), best first.

    ``matches`` counts the occurrences over the three fields; it does not
    change the order. Raises :class:`UsageError` for an empty query or a
    negative limit.
    """
    needle = query.casefold().replace("\0", "") if isinstance(query, str) else ""
    if not needle.strip():
        raise UsageError("recall needs a non-empty query (a phrase to look for)")
    if limit < 0:
        raise UsageError(f"recall limit must be 0 or more, not {limit}")
    now_s = now.timestamp()
    matched = [(-_score(r, now_s), r.key, r) for r in records if needle in r.folded_text]
    # Only the returned hits are built (with their occurrence counts); keys are unique, so
    # the tuples never compare records.
    best = heapq.nsmallest(limit, matched)
    return [_hit(record, now, record.folded_text.count(needle)) for _score_neg, _key, record in best]


def _memory_piece(record: MemoryRecord) -> str:
    heading = f"\n### {record.name} (`{record.key}.md`)\n"
    return f"{heading}\n{record.body}\n" if record.body else heading


def _piece_length(record: MemoryRecord) -> int:
    # len(_memory_piece(record)) without building the string: most pieces are only measured.
    length: int | None = record.memo.get("piece_length")
    if length is None:
        length = len(record.name) + len(record.key) + 14  # "\n### ", " (`", ".md`)", "\n"
        if record.body:
            length += len(record.body) + 2
        record.memo["piece_length"] = length
    return length


def context_block(
    index_text: str,
    ranked: Iterable[MemoryRecord],
    timeline_newest_first: Iterator[dict[str, Any]],
    max_tokens: int,
) -> str:
    """Assemble the context block within ``max_tokens * 4`` characters.

    The index always goes in whole; then memory pieces in rank order, each
    skipped if it does not fit (the next is tried); then timeline entries,
    newest first, until one does not fit; they are printed oldest first.
    A section heading is counted with the first piece under it and left out
    when nothing goes under it.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise UsageError(f"max_tokens must be an integer of 0 or more, not {max_tokens!r}")
    budget = max_tokens * CHARS_PER_TOKEN
    parts = [index_text]
    used = len(index_text)
    heading_done = False
    for record in ranked:
        cost = _piece_length(record) + (0 if heading_done else len(MEMORY_HEADING))
        if used + cost > budget:
            continue
        if not heading_done:
            parts.append(MEMORY_HEADING)
            heading_done = True
        parts.append(_memory_piece(record))
        used += cost
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
