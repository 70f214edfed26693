"""Recall by meaning: the index's vectors kept up to date, and the semantic and hybrid rankings.

Imported only when a recall or context block ranks by meaning (numpy and the
embedder registry load with it). The formula (specs/memory.md, "Recall by meaning")::

    similarity = cos(query vector, memory vector)        of meaning_words(query) and embedded_text(), unit length
    semantic   = max(similarity - MIN_SIMILARITY, 0) / (1 - MIN_SIMILARITY)
    lexical    = bm25 / (bm25 + K_LEXICAL)                the term-level BM25 (catalog.search.lexical), 0 when none match
    relevance  = semantic                                 rank "semantic"
               = W_SEMANTIC * semantic + W_LEXICAL * lexical   rank "hybrid"
    score      = relevance * (FLOOR + (1 - FLOOR) * salience * recency * decay)

Every memory is a hit (the nearest are returned, never nothing): by score, then similarity (those no nearer
than ``MIN_SIMILARITY`` all score 0 and come after, nearest first), then key; ``min_similarity`` (the CLI's
``--min-similarity``) keeps only those at least that similar. The query
is folded as the indexed text is (``str.casefold``), and a memory's vector is
that of its search text (name, description, body as the index holds them:
credentials withheld, folded), so a vector never encodes a credential that
output withholds. Vectors are stored float16 at unit length
(:func:`encode`); the model's id and dimension are kept with them
(``catalog.vectors.model``) and vectors of another model are computed again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from bundlekit._terminal import printable
from bundlekit.embed.protocol import MAX_DIMENSION, Embedder, EmbedderSettings, check_model_id
from bundlekit.embed.registry import create_embedder, missing_extra, semantic_installed
from bundlekit.embed.wordllama import WordLlamaEmbedder
from bundlekit.errors import BundlekitError, EmbedderError
from bundlekit.memory.catalog import Catalog
from bundlekit.memory.catalog.search import STOP_WORDS
from bundlekit.memory.catalog.usage import factor
from bundlekit.memory.query_tokens import query_vector
from bundlekit.memory.usage import Boosts
from bundlekit.memory.ranking import FLOOR, HALF_LIFE, MEANING_RANKS, check_min_similarity

__all__ = [
    "Ask",
    "FLOOR",
    "MEANING_RANKS",
    "MIN_SIMILARITY",
    "VECTOR_DTYPE",
    "K_LEXICAL",
    "W_HEAD",
    "W_LEXICAL",
    "W_SEMANTIC",
    "Scored",
    "VectorCache",
    "can_embed",
    "decode",
    "embed_checked",
    "embedded_head",
    "embedded_text",
    "encode",
    "export",
    "fill",
    "meaning_words",
    "model_key",
    "open_embedder",
    "rank",
    "restore",
]

# The hybrid ranking's mix, chosen on the training split of the evaluation (bench/recall_eval.py; specs/memory.md)
W_SEMANTIC = 0.95
W_LEXICAL = 0.05
W_HEAD = 0.5  # the hybrid's cosine: (cos(search text) + W_HEAD * cos(name and description)) / (1 + W_HEAD)
K_LEXICAL = 20.0  # a BM25 of K_LEXICAL counts half: lexical = bm25 / (bm25 + K_LEXICAL), the same scale in every tree
_QUERY_TOKEN = re.compile(r"[\w'’]+|[^\w\s]")
MIN_SIMILARITY = 0.05  # at or below it a text is no nearer in meaning than unrelated ones (gibberish scores ~0.02)
VECTOR_DTYPE = np.dtype("<f2")
_EMBED_CHUNK = 1024
_DOT_ROWS = 2048  # vectors converted to float32 at a time to rank by meaning
# A lone surrogate: a query's undecodable argv bytes (surrogateescape) or an MCP client's "\ud800" escape. No
# tokenizer or JSON endpoint takes it; embedders are given U+FFFD in its place.
_SURROGATE = re.compile("[\ud800-\udfff]")
_HALF_LIFE_S = HALF_LIFE.total_seconds()


def can_embed(spec: Embedder | EmbedderSettings | None) -> bool:
    """Whether vectors can be computed here without asking: an embedder given, one named (numpy installed),
    or the ``semantic`` extra installed for the default."""
    if spec is None or isinstance(spec, EmbedderSettings) and spec.name is None:
        return semantic_installed()
    return True  # a named embedder (this module runs: numpy is there) or an Embedder object


def open_embedder(spec: Embedder | EmbedderSettings | None, what: str) -> Embedder:
    """The embedder ``spec`` gives (built through the registry), or ``UsageError`` naming the extra."""
    if spec is not None and not isinstance(spec, EmbedderSettings):
        return spec
    if not can_embed(spec):
        raise missing_extra(what)
    return create_embedder(spec or EmbedderSettings())


def embedded_text(name: str, description: str, body: str) -> str:
    """What a memory's vector is of: its indexed (withheld, folded) name, description and body."""
    return f"{name}\n{description}\n{body}"


def embedded_head(name: str, description: str) -> str:
    """What a memory's head vector is of: its indexed name and description (the hybrid ranking weighs it)."""
    return f"{name}\n{description}"


def model_key(embedder: Embedder) -> str:
    """The model the vectors are of, as the index keeps it: ``<model id>#<dimension>``; ``EmbedderError`` for a
    dimension that is not a whole number from 1 to ``MAX_DIMENSION`` (an embedder is foreign code)."""
    model_id = check_model_id(embedder.model_id)
    dimension = embedder.dimension
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 0 < dimension <= MAX_DIMENSION:
        raise EmbedderError(
            f"{_named(embedder)} says its vectors have {printable(repr(dimension)[:40])} dimensions, "
            f"not a whole number from 1 to {MAX_DIMENSION}"
        )
    return f"{model_id}#{dimension}"


def _named(embedder: Embedder) -> str:
    return f"embedder {printable(str(getattr(embedder, 'name', '?'))[:80])!r}"


def embed_checked(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    """``embedder``'s vectors of ``texts`` (lone surrogates given as U+FFFD), one per text in order, checked
    (its dimension, finite values) and scaled to unit length. Every vector bundlekit ranks with or stores comes through here: an embedder is
    foreign code (a third-party entry point), so whatever it raises or returns that is not those vectors is
    an ``EmbedderError`` naming it, never an internal error."""
    what = _named(embedder)
    texts = [_SURROGATE.sub("\ufffd", t) if _SURROGATE.search(t) else t for t in texts]
    try:
        array = np.asarray(embedder.embed(texts), dtype=np.float32)
    except BundlekitError:
        raise
    except Exception as exc:  # foreign code: any failure of it is the embedder's, said as such
        raise EmbedderError(f"{what} failed ({type(exc).__name__}: {printable(str(exc)[:200])})") from exc
    if array.ndim != 2 or array.shape[0] != len(texts):
        raise EmbedderError(f"{what} gave vectors of shape {array.shape[:4]} for {len(texts)} texts")
    return _unit(array, embedder.dimension, what)


def _unit(vectors: NDArray[np.float32], dimension: int, what: str) -> NDArray[np.float32]:
    """``vectors`` checked (shape, finite values) and scaled to unit length (a zero vector stays zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dimension:
        raise EmbedderError(f"{what} gave vectors of shape {array.shape}, not (n, {dimension})")
    if not np.isfinite(array).all():
        raise EmbedderError(f"{what} gave a vector holding NaN or infinity")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: NDArray[np.float32] = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return unit


def encode(vectors: NDArray[np.float32], dimension: int, what: str = "the embedder") -> list[bytes]:
    """Each vector at unit length as little-endian float16 bytes (what the index and a bundle store)."""
    unit = _unit(vectors, dimension, what).astype(VECTOR_DTYPE)
    return [row.tobytes() for row in unit]


def decode(blob: bytes, count: int, dimension: int) -> NDArray[np.float32]:
    """``count`` float16 vectors from ``blob`` as float32 rows; ``ValueError`` when the length is not theirs or a
    value is not finite (a foreign file)."""
    if len(blob) != count * dimension * VECTOR_DTYPE.itemsize:
        raise ValueError(f"{len(blob)} bytes are not {count} vectors of {dimension} float16 values")
    matrix = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32).reshape(count, dimension)
    if not np.isfinite(matrix).all():
        raise ValueError("a vector holds NaN or infinity")
    return matrix


def fill(
    catalog: Catalog, embedder: Embedder, hold: Callable[[], AbstractContextManager[object]],
    cache: VectorCache | None = None,
) -> int:
    """Compute and store the vectors the index lacks (every one when its model is not ``embedder``'s): the
    search text of each row without one and its name and description (the head vector), embedded in chunks, in one transaction under ``hold()`` (the tree
    lock). Returns how many were computed. ``cache`` remembers the index's stamp once it held them all, so
    a recall on an unchanged index does not look again."""
    model = model_key(embedder)
    size = embedder.dimension * VECTOR_DTYPE.itemsize
    if cache is not None and cache.filled == VectorCache.stamp_of(catalog) and cache.filled[2] == model:
        return 0
    if catalog.vectors.model() == model and not catalog.vectors.lacking(size):
        if cache is not None:
            cache.filled = VectorCache.stamp_of(catalog)
        return 0
    with hold(), catalog.writing():
        catalog.vectors.use_model(model)
        missing = catalog.vectors.without(size)
        for start in range(0, len(missing), _EMBED_CHUNK):
            chunk = missing[start : start + _EMBED_CHUNK]
            vectors = embed_checked(embedder, [embedded_text(n, d, b) for _i, n, d, b in chunk])
            blobs = encode(vectors, embedder.dimension, _named(embedder))
            catalog.vectors.put(zip((i for i, *_ in chunk), blobs, strict=True))
            heads = embed_checked(embedder, [embedded_head(n, d) for _i, n, d, _b in chunk])
            catalog.vectors.put_heads(zip((i for i, *_ in chunk), encode(heads, embedder.dimension, _named(embedder)),
                                          strict=True))
    if cache is not None:
        cache.filled = VectorCache.stamp_of(catalog)
    return len(missing)


def _finite(matrix: NDArray[np.float16]) -> NDArray[np.float16]:
    """``matrix`` with each row that is not finite (put there by hand) zeroed: it cannot rank."""
    # float16 is not finite where its five exponent bits are all set (IEEE 754 binary16): checked on the bits,
    # some times faster than np.isfinite on float16
    broken = ((matrix.view(np.uint16) & 0x7C00) == 0x7C00).any(axis=1)
    if broken.any():
        matrix[broken] = 0.0
    return matrix


@dataclass
class VectorCache:
    """The index's vectors and ranking fields as arrays, for one generation of it (kept by a ``Memory``
    between recalls: an MCP server ranks 10,000 memories without reading them again)."""

    stamp: tuple[int, int, str | None] = (-1, -1, None)
    keys: Sequence[str] = ()
    ids: NDArray[np.int64] | None = None
    matrix: NDArray[np.float16] | None = None  # as stored: half the memory of float32
    heads: NDArray[np.float16] | None = None  # the vectors of name and description
    has_head: NDArray[np.bool_] | None = None  # which rows have one (a bundle's restored vectors come without)
    uses: int = 0  # rankings of this generation (wide)
    matrix32: NDArray[np.float32] | None = None  # float32 copies, from the second ranking of a generation on
    heads32: NDArray[np.float32] | None = None
    basis: NDArray[np.float64] | None = None  # (salience, updated, horizon or NaN) per row
    pieces: NDArray[np.int64] | None = None
    by_key: dict[str, int] | None = None  # key -> row of the arrays, made when first asked (at_key)
    filled: tuple[int, int, str | None] | None = None  # the index's stamp when it last held every vector

    @staticmethod
    def stamp_of(catalog: Catalog) -> tuple[int, int, str | None]:
        return (catalog.gen, catalog.vectors.gen(), catalog.vectors.model())

    def load(self, catalog: Catalog, dimension: int) -> VectorCache:
        stamp = self.stamp_of(catalog)
        if stamp == self.stamp and self.matrix is not None:
            return self
        size = dimension * VECTOR_DTYPE.itemsize
        count = catalog.vectors.count()
        matrix, heads = (np.zeros((count, dimension), dtype=VECTOR_DTYPE) for _ in range(2))
        ids, pieces = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
        basis = np.zeros((count, 3), dtype=np.float64)
        keys: list[str] = []
        at = 0
        for rows in catalog.vectors.columns(size):
            rows = rows[: count - at]  # rows written since the count are left out
            end = at + len(rows)
            if not rows:
                break
            row_ids, row_keys, sal, updated, horizon, piece, vecs, head_vecs = zip(*rows)  # columns, once
            for into, blobs in ((matrix, vecs), (heads, head_vecs)):
                into[at:end] = np.frombuffer(b"".join(blobs), dtype=VECTOR_DTYPE).reshape(len(rows), dimension)
            ids[at:end], pieces[at:end] = row_ids, piece
            basis[at:end, 0], basis[at:end, 1], basis[at:end, 2] = sal, updated, horizon
            keys.extend(map(str, row_keys))
            at = end
        basis[:, 2] = np.where(basis[:, 2] < 0, np.nan, basis[:, 2])  # horizon -1.0: none
        self.matrix, self.heads = _finite(matrix[:at]), _finite(heads[:at])
        self.has_head = np.asarray(self.heads.any(axis=1), dtype=bool)
        self.keys, self.ids, self.basis, self.pieces = keys, ids[:at], basis[:at], pieces[:at]
        self.by_key = None
        self.uses, self.matrix32, self.heads32 = 0, None, None
        self.stamp = stamp
        return self

    def wide(self) -> tuple[NDArray[np.float16] | NDArray[np.float32], NDArray[np.float16] | NDArray[np.float32] | None]:
        """The vectors to rank with: as stored for the first ranking of this generation (a fresh process asks
        once: float16, converted a chunk at a time), float32 copies from the second on (a server asks again
        and again: converting float16 took two thirds of a warm recall)."""
        assert self.matrix is not None
        self.uses += 1
        if self.uses < 2:
            return self.matrix, self.heads
        if self.matrix32 is None:
            self.matrix32 = self.matrix.astype(np.float32)
            self.heads32 = None if self.heads is None else self.heads.astype(np.float32)
        return self.matrix32, self.heads32

    def at_key(self) -> dict[str, int]:
        """The row of each key in the arrays."""
        if self.by_key is None:
            self.by_key = {key: at for at, key in enumerate(self.keys)}
        return self.by_key


@dataclass(frozen=True)
class Scored:
    """One hit of a ranking by meaning: its key, score, relevance, cosine similarity and piece length."""

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
    mode, limit, usage = ask.mode, ask.limit, ask.usage
    min_similarity = check_min_similarity(ask.min_similarity)
    model = model_key(embedder)
    held = catalog.vectors.model()
    if held != model:  # another process embedded the tree with another model since fill()
        raise EmbedderError(
            f"the memory index's vectors are now of model {printable(str(held)[:120])}, not {model}: another process "
            "embeds this tree with another embedder; use one embedder per tree (--embedder, $BUNDLEKIT_EMBEDDER)"
        )
    data = cache.load(catalog, embedder.dimension)
    assert data.matrix is not None and data.basis is not None and data.ids is not None and data.pieces is not None
    if not len(data.keys):
        return []
    q = _query_vector(catalog, embedder, meaning_words(query))
    matrix, heads = data.wide()
    similarity = _similarity(matrix, q)
    near = similarity
    if mode == "hybrid" and heads is not None and data.has_head is not None:
        near = np.where(data.has_head, (similarity + W_HEAD * _similarity(heads, q)) / (1.0 + W_HEAD), similarity)
    relevance = np.maximum(near - MIN_SIMILARITY, 0.0) / (1.0 - MIN_SIMILARITY)
    if mode == "hybrid":
        relevance = W_SEMANTIC * relevance + W_LEXICAL * _lexical(catalog, query, data)
    first = None
    if usage is not None:
        relevance = relevance * _factors(usage.by_key, data)
        first = np.isin(data.ids, np.fromiter(usage.named, dtype=np.int64, count=len(usage.named)))
    sal, updated, horizon = data.basis[:, 0], data.basis[:, 1], data.basis[:, 2]
    age = np.maximum(now_s - updated, 0.0)
    past = np.where(np.isnan(horizon), 0.0, age - np.nan_to_num(horizon))
    decay = np.where(past > 0, np.exp2(-np.maximum(past, 0.0) / _HALF_LIFE_S), 1.0)  # 0.5 ** x, 4x faster
    standing = sal * np.exp2(-age / _HALF_LIFE_S) * decay
    score = relevance * (FLOOR + (1.0 - FLOOR) * standing)
    chosen = np.arange(len(data.keys)) if min_similarity is None else np.flatnonzero(similarity >= min_similarity)
    order = _nearest(chosen, score, similarity, data.keys, limit, first)
    return [
        Scored(data.keys[at], float(score[at]), float(relevance[at]), float(similarity[at]), int(data.pieces[at]))
        for at in order
    ]


def _query_vector(catalog: Catalog, embedder: Embedder, text: str) -> NDArray[np.float32]:
    """The unit vector of the query ``text``: for the built-in embedder from its words' cached token ids
    (``memory/query_tokens``: no tokenizer in a fresh process once its words were seen; the same vector),
    else embedded whole."""
    if isinstance(embedder, WordLlamaEmbedder):
        directory = None if catalog.path is None else catalog.path.parent
        try:
            vector = query_vector(embedder, directory, _SURROGATE.sub("\ufffd", text))
        except BundlekitError:
            raise
        except Exception as exc:  # as embed_checked: the model's failure, said as such
            raise EmbedderError(f"{_named(embedder)} failed ({type(exc).__name__}: {printable(str(exc)[:200])})") from exc
        if vector is not None:
            unit: NDArray[np.float32] = _unit(vector, embedder.dimension, _named(embedder))[0]
            return unit
    first: NDArray[np.float32] = embed_checked(embedder, [text])[0]
    return first


def _similarity(matrix: NDArray[np.float16] | NDArray[np.float32], q: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ q`` in float32 within [-1, 1], :data:`_DOT_ROWS` rows converted at a time (never a float32 copy of all), by
    ``einsum``'s own loop: BLAS's threads spin against a busy machine's other processes (a 10,000-row product
    took 15-200 ms through OpenBLAS on a loaded 2-core machine, 5-10 ms this way)."""
    out = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), _DOT_ROWS):
        out[start : start + _DOT_ROWS] = np.einsum("ij,j->i", matrix[start : start + _DOT_ROWS].astype(np.float32,
                                                                                                   copy=False), q)
    # A cosine of unit vectors: a vector put into the index by hand at another length cannot score past a
    # perfect match (nor, past 1.1, outrank the memory named as the query: _nearest).
    return np.clip(out, -1.0, 1.0, out=out)


def meaning_words(query: str) -> str:
    """The text of ``query`` its vector is of: its words and punctuation without ``search.STOP_WORDS`` (the
    query itself when nothing else is left)."""
    kept = [t for t in _QUERY_TOKEN.findall(query) if t.casefold() not in STOP_WORDS]
    return " ".join(kept) if any(t[0].isalnum() for t in kept) else query


def _factors(by_key: Mapping[str, float], data: VectorCache) -> NDArray[np.float64]:
    """``usage.factor`` of each row's boost (1.0 for a memory without one)."""
    factors = np.ones(len(data.keys), dtype=np.float64)
    at_key = data.at_key()
    for key, boost in by_key.items():
        at = at_key.get(key)
        if at is not None:
            factors[at] = factor(boost)
    return factors


def _lexical(catalog: Catalog, query: str, data: VectorCache) -> NDArray[np.float64]:
    """The hybrid's lexical term per row of ``data``: ``bm25 / (bm25 + K_LEXICAL)`` of the term-level BM25
    (``catalog.search.lexical``), 0 for a memory holding none of the searched words."""
    lexical = np.zeros(len(data.keys), dtype=np.float64)
    found = catalog.search.lexical(query).scores
    if not found or data.ids is None or not len(data.ids):
        return lexical
    row_ids = np.fromiter(found, dtype=np.int64, count=len(found))
    values = np.fromiter(found.values(), dtype=np.float64, count=len(found))
    at = np.minimum(np.searchsorted(data.ids, row_ids), len(data.ids) - 1)  # data.ids ascend (by row id)
    held = (data.ids[at] == row_ids) & (values > 0)
    lexical[at[held]] = values[held] / (values[held] + K_LEXICAL)
    return lexical


def _nearest(
    chosen: NDArray[np.int64], score: NDArray[np.float64], similarity: NDArray[np.float32], keys: Sequence[str],
    limit: int | None, first: NDArray[np.bool_] | None = None,
) -> list[int]:
    """The rows ``chosen`` best first: those ``first`` marks (named as the query) before the others, then score
    descending, then similarity descending (the memories no nearer than ``MIN_SIMILARITY`` all score 0: the
    nearest of them come first), then key; the first ``limit``."""
    if limit == 0 or not len(chosen):
        return []
    ahead = np.zeros(len(score), dtype=bool) if first is None else first
    rows = chosen.tolist()
    if limit is not None and len(chosen) > limit:
        # The first ``limit`` by (named first, score) with every tie at the boundary: a partition, not a sort
        # of every row; the few kept are ordered in full below.
        primary = np.where(ahead[chosen], np.inf, score[chosen])  # the named ones are kept whatever the scores
        kth = np.partition(-primary, limit - 1)[limit - 1]
        kept = chosen[-primary <= kth]
        if len(kept) > 4 * limit:  # many tied on score (all 0: no nearer than MIN_SIMILARITY): similarity decides
            ranked = kept[np.lexsort((-similarity[kept], -score[kept], ~ahead[kept]))]
            last = ranked[limit - 1]
            boundary = (score[ranked] == score[last]) & (similarity[ranked] == similarity[last])
            kept = np.concatenate((ranked[:limit], ranked[boundary]))  # every tie at the boundary: by key below
        rows = sorted(set(kept.tolist()))
    order = sorted(rows, key=lambda at: (not ahead[at], -float(score[at]), -float(similarity[at]), keys[at]))
    return order if limit is None else order[:limit]


def export(catalog: Catalog, model: str, digests: dict[str, bytes]) -> tuple[list[str], bytes]:
    """The index's vectors (of ``model``, ``model_key``) of the memory files ``digests`` names (file name ->
    SHA-256 of the bytes a bundle holds), as keys in file order and their float16 vectors concatenated.
    ``EmbedderError`` when a file's vector is not of those bytes (the file changed meanwhile)."""
    if catalog.vectors.model() != model:
        raise EmbedderError("the memory index's vectors are of another model; embed the tree again")
    names = sorted(digests)
    keys = [name[:-3] for name in names]
    ids = catalog.vectors.ids(keys)
    rows = {row[0]: row[6] for row in catalog.vectors.rows()}
    parts: list[bytes] = []
    for name, key in zip(names, keys, strict=True):
        blob = rows.get(ids.get(key, -1))
        if catalog.stat.sha256(name) != digests[name] or not isinstance(blob, bytes):
            raise EmbedderError(f"{name} changed while its vector was taken; build again")
        parts.append(blob)
    return keys, b"".join(parts)


def restore(catalog: Catalog, model: str, dimension: int, keys: Sequence[str], blob: bytes) -> int:
    """Store ``blob`` (``len(keys)`` float16 vectors of ``dimension``, of the model ``model``: ``model_key``)
    as the vectors of the memories ``keys`` that the index holds, scaled to unit length. Inside
    :meth:`Catalog.writing`. ``ValueError`` for a blob of the wrong length or holding NaN or infinity."""
    matrix = decode(blob, len(keys), dimension)
    ids = catalog.vectors.ids(keys)
    found = [(at, ids[key]) for at, key in enumerate(keys) if key in ids]
    blobs = encode(matrix[[at for at, _id in found]], dimension, "the bundle's embeddings") if found else []
    catalog.vectors.use_model(model)
    catalog.vectors.put(zip((row_id for _at, row_id in found), blobs, strict=True))
    return len(found)
