"""The context block: the text injected before an LLM turn, chosen by the derived index, read from the files.

A plain function over one tree (``TreeAccess``) and its ``Meaning``; ``Memory.context_block`` delegates
here. Pieces are chosen from the index's ranking columns (``catalog.search.ranked``); only those that
fit are loaded, and ``ranking.context_block`` lays them out (specs/memory.md, "Context block").
"""

from __future__ import annotations

import functools

from bundlekit.memory import ranking
from bundlekit.memory.access import TreeAccess
from bundlekit.memory.catalog import Catalog
from bundlekit.memory.meaning import Meaning
from bundlekit.memory.usage import Boosts, boosts, note_returned

__all__ = ["context_block"]

_FIRST_RANKED = 64  # the context block first ranks this many memories, then only the pieces that could fit


def context_block(
    tree: TreeAccess, meaning: Meaning, max_tokens: int = 8192, *, query: str | None = None,
    rank: str | None = "salience", usage: bool = False,
) -> str:
    """The context block within ``max_tokens * 4`` characters; with ``query`` the memories go in the order
    recall ranks them (``rank``, as there, with ``usage`` as there: the pieces taken are noted as returned),
    then the rest by salience (``Memory.context_block``)."""
    now_s = tree.now().timestamp()
    mode = None if query is None else meaning.ranking_for(rank)
    needle = None if query is None else ranking.needle(
        ranking.meaning_query(query) if mode in ranking.MEANING_RANKS else query, 0)
    if mode in ("semantic", "hybrid"):
        meaning.embed_tree()
    if needle is not None and mode is not None:
        taken: list[str] = []
        block = tree.read(functools.partial(_queried, tree, meaning, needle, (mode, usage, taken), now_s, max_tokens))
        if usage:
            note_returned(tree, taken)
        return block
    return tree.read(functools.partial(_assembled, tree, now_s, max_tokens))


def _queried(
    tree: TreeAccess, meaning: Meaning, needle: str, ask: tuple[str, bool, list[str]], now_s: float, max_tokens: int,
    catalog: Catalog,
) -> str:
    """The block with a query: the memories in recall's order, then the rest by salience (``ask``: the mode,
    whether usage ranks, and the list the keys of the pieces taken are put in)."""
    mode, usage, taken_keys = ask
    index_text = tree.index_text(catalog)
    boosted = boosts(catalog, needle, now_s) if usage else None
    if mode in ("semantic", "hybrid"):
        first = [(s.key, s.piece) for s in meaning.by_meaning(catalog, needle, mode, None, None, boosted)]
    else:
        plain = boosted or Boosts()
        found = (catalog.search.by_terms(now_s, needle, boosts=plain.by_key, named=plain.named)
                 if mode == "relevance" else catalog.search.ranked(now_s, needle=needle) or [])
        first = [(r.key, r.piece) for r in found]
    seen = {key for key, _piece in first}
    # A ranking by meaning returns every memory (of this snapshot): then no rest is left to rank and read.
    rest = [] if len(seen) >= catalog.listing.count() else catalog.search.ranked(now_s) or []
    order = first + [(r.key, r.piece) for r in rest if r.key not in seen]
    taken = ranking.fit_pieces(index_text, [piece for _key, piece in order], max_tokens)
    taken_keys[:] = [order[i][0] for i in taken]
    pieces = tree.load(catalog, taken_keys)
    return ranking.context_block(index_text, pieces, tree.newest_first(withhold=True), max_tokens)


def _assembled(tree: TreeAccess, now_s: float, max_tokens: int, catalog: Catalog) -> str:
    """The block without a query: the best memories by salience whose pieces fit."""
    index_text = tree.index_text(catalog)
    ranked = catalog.search.ranked(now_s, limit=_FIRST_RANKED) or []
    taken = ranking.fit_pieces(index_text, [r.piece for r in ranked], max_tokens)
    room = ranking.largest_fitting(index_text, [r.piece for r in ranked], taken, max_tokens)
    if len(ranked) == _FIRST_RANKED and room >= 0:
        # Past the best ones only a piece that fits the room left can go in: a longer one is skipped
        # wherever it ranks (the room only shrinks), so only the shorter ones are ranked.
        first = {r.key for r in ranked}
        ranked += [r for r in catalog.search.ranked(now_s, longest=room) or [] if r.key not in first]
        taken = ranking.fit_pieces(index_text, [r.piece for r in ranked], max_tokens)
    # The chosen pieces read from their files now, fitted again by their lengths as read (the same
    # pieces when the index's lengths are theirs; never past the budget when they are not).
    pieces = tree.load(catalog, [ranked[i].key for i in taken])
    return ranking.context_block(index_text, pieces, tree.newest_first(withhold=True), max_tokens)
