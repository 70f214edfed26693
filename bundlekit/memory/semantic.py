"""Recall by meaning, the vectors: computed where the index lacks them, checked, stored, a bundle's exported and restored.

Imported only when vectors are computed or carried (numpy loads with it: "Lazy imports" in DEVELOPERS.md);
a recall of a tree that holds them all ranks without it (``memory/bymeaning``, which has the formula). A
memory's vector is that of its search text (name, description, body as the index holds them: credentials
withheld, folded), so a vector never encodes a credential that output withholds, and a second one of its
name and description (the head vector, which the hybrid ranking weighs). Vectors are stored float16 at unit
length (:func:`encode`); the model's id and dimension are kept with them (``catalog.vectors.model``) and
vectors of another model are computed again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
from numpy.typing import NDArray

from bundlekit._terminal import printable
from bundlekit.embed.protocol import Embedder, EmbedderSettings
from bundlekit.embed.registry import create_embedder, missing_extra, semantic_installed
from bundlekit.errors import BundlekitError, EmbedderError
from bundlekit.memory.bymeaning import SURROGATE, VectorCache, model_key, named
from bundlekit.memory.catalog import Catalog

__all__ = [
    "VECTOR_DTYPE",
    "can_embed",
    "decode",
    "embed_checked",
    "embed_raw",
    "embedded_head",
    "embedded_text",
    "encode",
    "export",
    "fill",
    "open_embedder",
    "restore",
]

VECTOR_DTYPE = np.dtype("<f2")
_EMBED_CHUNK = 1024


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


def embed_checked(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    """``embedder``'s vectors of ``texts`` (lone surrogates given as U+FFFD), one per text in order, checked
    (its dimension, finite values) and scaled to unit length. Every vector bundlekit ranks with or stores comes through here: an embedder is
    foreign code (a third-party entry point), so whatever it raises or returns that is not those vectors is
    an ``EmbedderError`` naming it, never an internal error."""
    return _unit(embed_raw(embedder, texts), embedder.dimension, named(embedder))


def embed_raw(embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
    """:func:`embed_checked`'s vectors as the embedder gave them, checked but not scaled (a query's vector is
    scaled by ``bymeaning``, as the built-in model's is: the same floats whichever way it was made)."""
    what = named(embedder)
    texts = [SURROGATE.sub("\ufffd", t) if SURROGATE.search(t) else t for t in texts]
    try:
        array = np.asarray(embedder.embed(texts), dtype=np.float32)
    except BundlekitError:
        raise
    except Exception as exc:  # foreign code: any failure of it is the embedder's, said as such
        raise EmbedderError(f"{what} failed ({type(exc).__name__}: {printable(str(exc)[:200])})") from exc
    if array.ndim != 2 or array.shape[0] != len(texts):
        raise EmbedderError(f"{what} gave vectors of shape {array.shape[:4]} for {len(texts)} texts")
    if array.shape[1] != embedder.dimension:
        raise EmbedderError(f"{what} gave vectors of shape {array.shape}, not (n, {embedder.dimension})")
    if not np.isfinite(array).all():
        raise EmbedderError(f"{what} gave a vector holding NaN or infinity")
    return array


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
    lock). Returns how many were computed. ``cache`` remembers the index's state once it held them all, so
    a recall on an unchanged index does not look again."""
    model = model_key(embedder)
    size = embedder.dimension * VECTOR_DTYPE.itemsize
    cache = cache if cache is not None else VectorCache()
    if cache.holds_every_vector(catalog, model, embedder.dimension):
        return 0
    with hold(), catalog.writing():
        catalog.vectors.use_model(model)
        missing = catalog.vectors.without(size)
        for start in range(0, len(missing), _EMBED_CHUNK):
            chunk = missing[start : start + _EMBED_CHUNK]
            vectors = embed_checked(embedder, [embedded_text(n, d, b) for _i, n, d, b in chunk])
            blobs = encode(vectors, embedder.dimension, named(embedder))
            catalog.vectors.put(zip((i for i, *_ in chunk), blobs, strict=True))
            heads = embed_checked(embedder, [embedded_head(n, d) for _i, n, d, _b in chunk])
            catalog.vectors.put_heads(zip((i for i, *_ in chunk), encode(heads, embedder.dimension, named(embedder)),
                                          strict=True))
    cache.filled = catalog.vectors.stamp()
    return len(missing)


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
