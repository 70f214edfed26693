"""Recall by meaning, the query: the vectors of one index state, the query's vector, the semantic and hybrid rankings.

What a ``memory recall``, ``context --query`` or MCP ``memory_recall`` runs once the index holds every
vector, without numpy: the columns come from the vector file (``memory/vecfile``) or the index, the query's
vector from its words' cached token ids (``memory/query_tokens``) and rows of the model's table, the cosines
from ``memory/cosines`` (compiled). Computing vectors (``memory/semantic``, numpy) is imported only when a
tree lacks some, or to embed a query the built-in model cannot take word by word. The formula
(specs/memory.md, "Recall by meaning")::

    similarity = cos(query vector, memory vector)        of meaning_words(query) and embedded_text(), unit length
    near       = (similarity + W_HEAD * cos(query vector, head vector)) / (1 + W_HEAD)   hybrid, a row with a head
               = similarity                                                             otherwise
    semantic   = max(near - MIN_SIMILARITY, 0) / (1 - MIN_SIMILARITY)
    lexical    = bm25 / (bm25 + K_LEXICAL)                the term-level BM25 (catalog.search.lexical), 0 when none match
    relevance  = semantic                                 rank "semantic"
               = W_SEMANTIC * semantic + W_LEXICAL * lexical   rank "hybrid"
    score      = relevance * usage factor * (FLOOR + (1 - FLOOR) * salience * recency * decay)

Every memory is a hit (the nearest are returned, never nothing): by score, then similarity (those no nearer
than ``MIN_SIMILARITY`` all score 0 and come after, nearest first), then key; ``min_similarity`` (the CLI's
``--min-similarity``) keeps only those at least that similar. The query is folded as the indexed text is
(``str.casefold``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from bundlekit._terminal import printable
from bundlekit.embed.protocol import MAX_DIMENSION, Embedder, check_model_id
from bundlekit.embed.wordllama import WordLlamaEmbedder
from bundlekit.errors import BundlekitError, EmbedderError
from bundlekit.memory import cosines, vecfile
from bundlekit.memory.catalog import Catalog, CatalogUnusable
from bundlekit.memory.catalog.search import STOP_WORDS
from bundlekit.memory.catalog.usage import factor
from bundlekit.memory.query_tokens import query_vector
from bundlekit.memory.ranking import FLOOR, HALF_LIFE, check_min_similarity
from bundlekit.memory.usage import Boosts

__all__ = [
    "K_LEXICAL",
    "MIN_SIMILARITY",
    "SURROGATE",
    "W_HEAD",
    "W_LEXICAL",
    "W_SEMANTIC",
    "Ask",
    "Scored",
    "VectorCache",
    "meaning_words",
    "model_key",
    "named",
    "rank",
]

# The hybrid ranking's mix, chosen on the training split of the evaluation (bench/recall_eval.py; specs/memory.md)
W_SEMANTIC = 0.95
W_LEXICAL = 0.05
W_HEAD = 0.5  # the hybrid's cosine: (cos(search text) + W_HEAD * cos(name and description)) / (1 + W_HEAD)
K_LEXICAL = 20.0  # a BM25 of K_LEXICAL counts half: lexical = bm25 / (bm25 + K_LEXICAL), the same scale in every tree
MIN_SIMILARITY = 0.05  # at or below it a text is no nearer in meaning than unrelated ones (gibberish scores ~0.02)
_QUERY_TOKEN = re.compile(r"[\w'’]+|[^\w\s]")
# A lone surrogate: a query's undecodable argv bytes (surrogateescape) or an MCP client's "\ud800" escape. No
# tokenizer or JSON endpoint takes it; embedders are given U+FFFD in its place.
SURROGATE = re.compile("[\ud800-\udfff]")
_HALF_LIFE_S = HALF_LIFE.total_seconds()
_VECTOR_BYTES = 2  # float16


def named(embedder: Embedder) -> str:
    """How messages name ``embedder`` (foreign code: its name cut short and made printable)."""
    return f"embedder {printable(str(getattr(embedder, 'name', '?'))[:80])!r}"


def model_key(embedder: Embedder) -> str:
    """The model the vectors are of, as the index keeps it: ``<model id>#<dimension>``; ``EmbedderError`` for a
    dimension that is not a whole number from 1 to ``MAX_DIMENSION`` (an embedder is foreign code)."""
    model_id = check_model_id(embedder.model_id)
    dimension = embedder.dimension
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        raise EmbedderError(
            f"{named(embedder)} says its vectors have {printable(repr(dimension)[:40])} dimensions, "
            f"not a whole number from 1 to {MAX_DIMENSION}"
        )
    return f"{model_id}#{dimension}"


@dataclass
class VectorCache:
    """The columns recall by meaning ranks with (``vecfile.Columns``) for one index state, kept by a ``Memory``
    between recalls (an MCP server ranks 10,000 memories without reading them again), and the state in which
    the index last held every vector (``filled``: a recall on an unchanged index does not look again)."""

    stamp: vecfile.Stamp | None = None
    columns: vecfile.Columns | None = None
    by_key: dict[str, int] | None = None  # key -> row, made when first asked (at_key)
    by_id: dict[int, int] | None = None  # index row id -> row, made when first asked (at_id)
    uses: int = 0  # rankings of this state so far (from the second, a server's: maps of every row pay off)
    filled: vecfile.Stamp | None = None

    def holds_every_vector(self, catalog: Catalog, model: str, dimension: int) -> bool:
        """Whether the index holds a vector of ``model`` for every row: known from an earlier look at this
        state, from the vector file of this state, else asked of the index (answered at the first lacking row)."""
        stamp = catalog.vectors.stamp()
        if self.filled == stamp and stamp[2] == model:
            return True
        if stamp[2] != model:
            return False
        if self.load(catalog, dimension).complete:
            self.filled = stamp
            return True
        return False

    def load(self, catalog: Catalog, dimension: int, *, whole: bool = False) -> vecfile.Columns:
        """The columns of the index's state now (one snapshot): those held, the vector file's (its vectors left
        in the file until ranked, unless ``whole``), or read from the index (and the vector file written from
        them)."""
        with catalog.reading():
            stamp = catalog.vectors.stamp()
            if stamp == self.stamp and self.columns is not None and not (whole and self.columns.stored):
                return self.columns
            path = None if catalog.path is None else catalog.path.parent / vecfile.VECTOR_FILE
            # At most as many rows as the largest row id (one look at the table's end, not a count of every row).
            columns = None if path is None else vecfile.read(path, stamp, dimension, catalog.vectors.last_id(),
                                                             whole=whole)
            if columns is not None and "\0".join(columns.keys) != catalog.vectors.keys_joined():
                columns = None  # keys not the index's (repeated, renamed, reordered): a memory lost or shown twice
            if columns is None:
                columns = _from_index(catalog, dimension)
                columns.complete = self.filled == stamp or not catalog.vectors.lacking(dimension * _VECTOR_BYTES)
                if path is not None and columns.complete:  # else vectors are about to be computed: a new state
                    vecfile.write(path, stamp, dimension, columns)
        if stamp != self.stamp:
            self.by_key, self.by_id, self.uses = None, None, 0
        self.stamp, self.columns = stamp, columns
        return columns

    def cosines(self, catalog: Catalog, dimension: int, q: array[float], hybrid: bool,
                ) -> tuple[vecfile.Columns, array[float], array[float]]:
        """The columns of this state with (similarity, near) of each row (:func:`cosines.similarities`): the
        vectors in memory, or streamed from the vector file once (a process ranking once); from a state's second
        ranking on (a server), read into memory. Inside the snapshot :meth:`load` read them in: a file replaced
        meanwhile (another process wrote this state's file too) has its vectors read from the index."""
        data = self.load(catalog, dimension, whole=bool(self.uses))
        count = len(data.keys)
        sim, near = array("d", bytes(8 * count)), array("d", bytes(8 * count))
        if data.stored is not None:
            try:
                for start, vectors, heads in vecfile.stream(data.stored, count):
                    rows = slice(start, start + len(vectors) // (2 * dimension))
                    cosines.similarities(vectors, heads if hybrid else None, q, W_HEAD,
                                         into=(memoryview(sim)[rows], memoryview(near)[rows]))
                return data, sim, near
            except vecfile.Moved:
                data = _from_index(catalog, dimension)
                data.complete, self.columns = True, data
        cosines.similarities(data.vectors, data.heads if hybrid else None, q, W_HEAD,
                             into=(memoryview(sim), memoryview(near)))
        return data, sim, near

    def at_id(self) -> dict[int, int]:
        """The row of each index row id in the columns."""
        if self.by_id is None:
            self.by_id = {row_id: at for at, row_id in enumerate(self.columns.ids if self.columns is not None else ())}
        return self.by_id

    def at_key(self) -> dict[str, int]:
        """The row of each key in the columns."""
        if self.by_key is None:
            self.by_key = {key: at for at, key in enumerate(self.columns.keys if self.columns is not None else ())}
        return self.by_key


def _from_index(catalog: Catalog, dimension: int) -> vecfile.Columns:
    """The columns as the index holds them (``catalog.vectors.columns``, a chunk of rows at a time, inside the
    caller's snapshot). ``CatalogUnusable`` for a row this program did not write (of another type, or not
    ``vecfile.sound``: the index is rebuilt from the files)."""
    size = dimension * _VECTOR_BYTES
    out = vecfile.Columns([], array("q"), array("d"), array("d"), array("d"), array("q"), b"", b"")
    vectors, heads = bytearray(), bytearray()
    try:
        for rows in catalog.vectors.columns(size):
            row_ids, keys, salience, updated, horizon, pieces, vecs, head_vecs = zip(*rows)  # columns, once
            out.ids.extend(row_ids)
            out.salience.extend(salience)
            out.updated.extend(updated)
            out.horizon.extend(horizon)
            out.pieces.extend(pieces)
            out.keys.extend(map(str, keys))
            vectors += b"".join(vecs)
            heads += b"".join(head_vecs)
    except (TypeError, OverflowError) as exc:  # a value of another type put into a row by hand
        raise CatalogUnusable("the memory index holds a row that this program did not write") from exc
    out.vectors, out.heads = bytes(vectors), bytes(heads)
    if not vecfile.sound(out):  # a NaN or infinite salience or time: put in by hand
        raise CatalogUnusable("the memory index holds a row that this program did not write")
    return out


class Scored(NamedTuple):
    """One hit of a ranking by meaning: its key, score, relevance, cosine similarity and piece length (a tuple:
    a context block ranks every memory, and 10,000 frozen dataclasses took 20 ms to make)."""

    key: str
    score: float
    relevance: float
    similarity: float
    piece: int


@dataclass(frozen=True)
class Ask:
    """How :func:`rank` ranks: ``mode`` "semantic" or "hybrid", the first ``limit`` (all when None), only those
    at least ``min_similarity`` similar (``check_min_similarity``; None: all), with ``usage`` (its boosts and
    the memories named as the query: ``memory/usage``) or without."""

    mode: str
    limit: int | None
    min_similarity: float | None = None
    usage: Boosts | None = None


def rank(catalog: Catalog, cache: VectorCache, embedder: Embedder, query: str, now_s: float, ask: Ask) -> list[Scored]:
    """Memories by meaning (``ask.mode``), best first (``_nearest``), as :class:`Ask` says. ``query`` is already
    folded (``ranking.needle``)."""
    min_similarity = check_min_similarity(ask.min_similarity)
    model = model_key(embedder)
    held = catalog.vectors.model()
    if held != model:  # another process embedded the tree with another model since the vectors were filled
        raise EmbedderError(
            f"the memory index's vectors are now of model {printable(str(held)[:120])}, not {model}: another process "
            "embeds this tree with another embedder; use one embedder per tree (--embedder, $BUNDLEKIT_EMBEDDER)"
        )
    if not cache.load(catalog, embedder.dimension).keys:
        return []
    q = _query_vector(catalog, embedder, meaning_words(query))
    data, similarity, near = cache.cosines(catalog, embedder.dimension, q, ask.mode == "hybrid")
    scale = W_SEMANTIC if ask.mode == "hybrid" else 1.0
    lexical = _lexical(catalog, query, cache) if ask.mode == "hybrid" else None
    factors = None if ask.usage is None or not ask.usage.by_key else _factors(ask.usage.by_key, cache)
    relevance, score = cosines.scores(near, lexical, factors, (data.salience, data.updated, data.horizon), now_s,
                                      (MIN_SIMILARITY, scale / (1.0 - MIN_SIMILARITY), W_LEXICAL, FLOOR, _HALF_LIFE_S))
    first = frozenset() if ask.usage is None else _rows_of(data, ask.usage.named)
    chosen = (range(len(data.keys)) if min_similarity is None
              else [at for at, value in enumerate(similarity) if value >= min_similarity])
    order = _nearest(chosen, score, similarity, data.keys, ask.limit, first)
    cache.uses += 1
    return [Scored(data.keys[at], score[at], relevance[at], similarity[at], data.pieces[at]) for at in order]


def _lexical(catalog: Catalog, query: str, cache: VectorCache) -> array[float] | None:
    """The hybrid's lexical term per row: ``bm25 / (bm25 + K_LEXICAL)`` of the term-level BM25
    (``catalog.search.lexical``), 0 for a memory holding none of the searched words; None when none does."""
    found = catalog.search.lexical(query).scores
    data = cache.columns
    if not found or data is None:
        return None
    lexical = array("d", bytes(8 * len(data.keys)))
    # A fresh process ranks once: a binary search per found row, no map of every row; a server maps them once.
    at_id = cache.at_id() if cache.uses or cache.by_id is not None else None
    for row_id, bm25 in found.items():
        at = at_id.get(row_id) if at_id is not None else _row_of_id(data.ids, row_id)
        if at is not None and bm25 > 0:
            lexical[at] = bm25 / (bm25 + K_LEXICAL)
    return lexical


def _row_of_id(ids: array[int], row_id: int) -> int | None:
    """The row of ``row_id`` in ``ids`` (ascending: the index's row ids), or None."""
    at = bisect.bisect_left(ids, row_id)
    return at if at < len(ids) and ids[at] == row_id else None


def _factors(by_key: Mapping[str, float], cache: VectorCache) -> array[float]:
    """``usage.factor`` of each row's boost (1.0 for a memory without one)."""
    assert cache.columns is not None
    factors = array("d", [1.0]) * len(cache.columns.keys)
    at_key = cache.at_key()
    for key, boost in by_key.items():
        at = at_key.get(key)
        if at is not None:
            factors[at] = factor(boost)
    return factors


def _rows_of(data: vecfile.Columns, row_ids: frozenset[int]) -> frozenset[int]:
    """The rows of the index row ids ``row_ids``."""
    return frozenset(at for at in (_row_of_id(data.ids, row_id) for row_id in row_ids) if at is not None)


def _query_vector(catalog: Catalog, embedder: Embedder, text: str) -> array[float]:
    """The unit vector of the query ``text``: for the built-in embedder from its words' cached token ids
    (``memory/query_tokens``: no tokenizer in a fresh process once its words were seen; the same vector),
    else embedded whole (``semantic.embed_raw``); scaled to unit length here either way (the same floats for
    the same text)."""
    if isinstance(embedder, WordLlamaEmbedder):
        directory = None if catalog.path is None else catalog.path.parent
        try:
            vector = query_vector(embedder, directory, SURROGATE.sub("\ufffd", text))
        except BundlekitError:
            raise
        except Exception as exc:  # as embed_checked: the model's failure, said as such
            raise EmbedderError(f"{named(embedder)} failed ({type(exc).__name__}: {printable(str(exc)[:200])})") from exc
        if vector is not None:
            return _unit(vector)
    from bundlekit.memory.semantic import embed_raw

    return _unit(embed_raw(embedder, [text])[0].tolist())


def _unit(vector: Sequence[float]) -> array[float]:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return array("d", (x / norm for x in vector)) if norm > 0 else array("d", vector)


def meaning_words(query: str) -> str:
    """The text of ``query`` its vector is of: its words and punctuation without ``search.STOP_WORDS`` (the
    query itself when nothing else is left)."""
    kept = [t for t in _QUERY_TOKEN.findall(query) if t.casefold() not in STOP_WORDS]
    return " ".join(kept) if any(t[0].isalnum() for t in kept) else query


def _nearest(
    chosen: Sequence[int], score: array[float], similarity: array[float], keys: Sequence[str],
    limit: int | None, first: frozenset[int] = frozenset(),
) -> list[int]:
    """The rows ``chosen`` best first: those in ``first`` (named as the query) before the others, then score
    descending, then similarity descending (the memories no nearer than ``MIN_SIMILARITY`` all score 0: the
    nearest of them come first), then key; the first ``limit``."""
    if limit == 0 or not len(chosen):
        return []

    def order(at: int) -> tuple[bool, float, float, str]:
        return (at not in first, -score[at], -similarity[at], keys[at])

    rows: Sequence[int] = chosen
    if limit is not None and len(chosen) > limit:
        # The first ``limit`` by (named first, score, similarity) with every tie at the boundary: the few kept
        # are ordered in full below, never every row (itertools: the loops over every row stay in C).
        every = isinstance(chosen, range)
        threshold = heapq.nlargest(limit, score if every else [score[at] for at in chosen])[-1]
        named = [at for at in first if at in (chosen if every else set(chosen))]  # range: `in` is arithmetic
        rows = [*{*itertools.compress(chosen, map(threshold.__le__, score if every else (score[at] for at in chosen))),
                  *named}]
        if len(rows) > 4 * limit:  # many tied at the threshold (all 0: no nearer than MIN_SIMILARITY): similarity decides
            tied = [similarity[at] for at in rows if score[at] == threshold and at not in first]
            cut = heapq.nlargest(limit, tied)[-1] if tied else -math.inf
            rows = [at for at in rows if score[at] > threshold or at in first or similarity[at] >= cut]
    if limit is not None:
        return sorted(rows, key=order)[:limit]
    # Every row: stable sorts from the last criterion to the first, each by a key C reads (no tuple per row).
    ordered = sorted(rows, key=keys.__getitem__)
    ordered.sort(key=similarity.__getitem__, reverse=True)  # reverse keeps equal rows in their order
    ordered.sort(key=score.__getitem__, reverse=True)
    if first:
        ordered.sort(key=first.__contains__, reverse=True)
    return ordered
