"""Recall: the memories matching a query, best first, chosen by the derived index and read from their files.

A plain function over one tree (``TreeAccess``) and its ``Meaning``; ``Memory.recall`` delegates here.
The index picks the candidates (``catalog.search.ranked``, or by meaning ``Meaning.by_meaning``); only
the returned hits are loaded, from their files, as output shows them (specs/memory.md, "Recall").
"""

from __future__ import annotations

import functools
from datetime import datetime

from bundlekit.errors import UsageError
from bundlekit.memory import ranking
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.catalog import Catalog
from bundlekit.memory.meaning import Meaning
from bundlekit.memory.usage import Boosts, boosts, note_returned

__all__ = ["recall"]


def recall(
    tree: TreeAccess,
    meaning: Meaning,
    query: str,
    limit: int = 5,
    *,
    rank: str | None = "salience",
    min_similarity: float | None = None,
    usage: bool = False,
) -> list[ranking.RecallHit]:
    """Memories matching ``query``, best first, ranked by ``rank`` (None: ``Meaning.ranking_for``'s default);
    ``Memory.recall`` says what each ranking means. With ``usage`` the boosts of reads after earlier recalls
    rank too (``memory/usage``), and the hits are noted as returned."""
    hits = _recall(tree, meaning, query, limit, rank, min_similarity, usage)
    if usage:
        note_returned(tree, [hit.key for hit in hits])
    return hits


def _recall(
    tree: TreeAccess, meaning: Meaning, query: str, limit: int, rank: str | None, min_similarity: float | None,
    usage: bool,
) -> list[ranking.RecallHit]:
    mode = meaning.ranking_for(rank)
    needle = ranking.needle(ranking.meaning_query(query) if mode in ranking.MEANING_RANKS else query, limit)
    threshold = ranking.check_min_similarity(min_similarity)
    now = tree.now()
    if threshold is not None and mode not in ("semantic", "hybrid"):
        raise UsageError(f"a minimum similarity applies to recall by meaning (rank semantic or hybrid), "
                         f"not rank {mode}")
    if mode in ("semantic", "hybrid"):
        meaning.embed_tree()
        return tree.read(functools.partial(_by_meaning, tree, meaning, needle, (mode, limit, threshold, usage), now))
    return tree.read(functools.partial(_searched, tree, query, needle, (mode, limit, usage), now))


def _by_meaning(
    tree: TreeAccess, meaning: Meaning, needle: str, ask: tuple[str, int, float | None, bool], now: datetime,
    catalog: Catalog,
) -> list[ranking.RecallHit]:
    """The hits by meaning (semantic or hybrid; ``ask``: mode, limit, threshold, usage), inside a read of
    ``catalog``."""
    mode, limit, threshold, usage = ask
    boosted = boosts(catalog, needle, now.timestamp()) if usage else None
    scored = {s.key: s for s in meaning.by_meaning(catalog, needle, mode, limit, threshold, boosted)}
    records = tree.load(catalog, list(scored))
    return [
        ranking.meaning_hit(r, now, needle, score=scored[r.key].score, relevance=scored[r.key].relevance,
                            similarity=scored[r.key].similarity, ranking=mode)
        for r in records
    ]


def _searched(
    tree: TreeAccess, query: str, needle: str, ask: tuple[str, int, bool], now: datetime, catalog: Catalog
) -> list[ranking.RecallHit]:
    """The hits holding ``needle`` (salience), or a word of ``query`` (relevance), inside a read of ``catalog``
    (``ask``: mode, limit, usage)."""
    mode, limit, usage = ask
    if mode == "relevance":
        boosted = boosts(catalog, needle, now.timestamp()) if usage else Boosts()
        found = {r.key: r for r in catalog.search.by_terms(now.timestamp(), query, limit, boosts=boosted.by_key,
                                                           named=boosted.named)}
        records = tree.load(catalog, list(found))
        return [ranking.scored_hit(r, now, needle, relevance=found[r.key].relevance or 0.0, ranking=mode)
                for r in records]
    best = catalog.search.ranked(now.timestamp(), needle=needle, relevance=mode == "relevance", limit=limit)
    # Matched on the withheld text: a query cannot probe a credential it does not show.
    if best is None:  # a needle the index cannot answer exactly: scan the records
        return ranking.recall(tree.shown(catalog, tree.all_records(catalog)), query, now, limit)
    records = tree.load(catalog, [r.key for r in best])
    return ranking.recall(records, query, now, limit)
