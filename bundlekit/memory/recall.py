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

__all__ = ["recall"]


def recall(
    tree: TreeAccess,
    meaning: Meaning,
    query: str,
    limit: int = 5,
    *,
    rank: str | None = "salience",
    min_similarity: float | None = None,
) -> list[ranking.RecallHit]:
    """Memories matching ``query``, best first, ranked by ``rank`` (None: ``Meaning.ranking_for``'s default);
    ``Memory.recall`` says what each ranking means."""
    mode = meaning.ranking_for(rank)
    needle = ranking.needle(ranking.meaning_query(query) if mode in ranking.MEANING_RANKS else query, limit)
    threshold = ranking.check_min_similarity(min_similarity)
    now = tree.now()
    if threshold is not None and mode not in ("semantic", "hybrid"):
        raise UsageError(f"a minimum similarity applies to recall by meaning (rank semantic or hybrid), "
                         f"not rank {mode}")
    if mode in ("semantic", "hybrid"):
        meaning.embed_tree()
        return tree.read(functools.partial(_by_meaning, tree, meaning, needle, mode, limit, threshold, now))
    return tree.read(functools.partial(_searched, tree, query, needle, mode, limit, now))


def _by_meaning(
    tree: TreeAccess, meaning: Meaning, needle: str, mode: str, limit: int, threshold: float | None, now: datetime,
    catalog: Catalog,
) -> list[ranking.RecallHit]:
    """The hits by meaning (semantic or hybrid), inside a read of ``catalog``."""
    scored = {s.key: s for s in meaning.by_meaning(catalog, needle, mode, limit, threshold)}
    records = tree.load(catalog, list(scored))
    return [
        ranking.meaning_hit(r, now, needle, score=scored[r.key].score, relevance=scored[r.key].relevance,
                            similarity=scored[r.key].similarity, ranking=mode)
        for r in records
    ]


def _searched(
    tree: TreeAccess, query: str, needle: str, mode: str, limit: int, now: datetime, catalog: Catalog
) -> list[ranking.RecallHit]:
    """The hits holding ``needle`` (salience), or a word of ``query`` (relevance), inside a read of ``catalog``."""
    if mode == "relevance":
        found = {r.key: r for r in catalog.search.by_terms(now.timestamp(), query, limit)}
        records = tree.load(catalog, list(found))
        return [ranking.scored_hit(r, now, needle, relevance=found[r.key].relevance or 0.0, ranking=mode)
                for r in records]
    best = catalog.search.ranked(now.timestamp(), needle=needle, relevance=mode == "relevance", limit=limit)
    # Matched on the withheld text: a query cannot probe a credential it does not show.
    if best is None:  # a needle the index cannot answer exactly: scan the records
        return ranking.recall(tree.shown(catalog, tree.all_records(catalog)), query, now, limit)
    records = tree.load(catalog, [r.key for r in best])
    return ranking.recall(records, query, now, limit)
