"""The cosines recall by meaning ranks with: every stored float16 vector against the query's unit vector.

``similarities`` runs the compiled ``_cosine`` (``bundlekit/memory/_cosine.c``, built by ``setup.py`` where a C
compiler is present: a few milliseconds for 10,000 memories, and no numpy import, which alone costs a fresh
``memory recall`` some 55 ms of CPU); where it is not built, the same rules with numpy (imported here, only
then: "Lazy imports" in DEVELOPERS.md). ``tests/memory/test_cosines.py`` compares the two.

The rules: ``vectors`` and ``heads`` hold ``n`` rows of ``d`` little-endian float16 values (as the derived
index and the vector file store them), ``query`` ``d`` float64 values; each row's cosine (its dot product
with the query, clipped to [-1, 1]) goes into ``sim``, and into ``near`` the hybrid's description-weighted
one, ``(sim + w_head * head cosine) / (1 + w_head)``, for a row whose head vector is not all zeros (else
``sim``). A row holding a value that is not finite (put there by hand) counts as a zero vector.
"""

from __future__ import annotations

from array import array
from typing import Any

try:
    from bundlekit.memory import _cosine
except ImportError:  # not built (no C compiler at install): numpy does the same
    _cosine = None  # type: ignore[assignment]

__all__ = ["Constants", "compiled", "scores", "similarities"]

Constants = tuple[float, float, float, float, float]
"""The formula's constants :func:`scores` takes: (min similarity, span, lexical weight, floor, half-life in seconds)."""

_ROWS = 2048  # rows converted to float32 at a time by the numpy path (never a float32 copy of all)


def compiled() -> bool:
    """Whether the compiled cosines are built here."""
    return _cosine is not None


def similarities(
    vectors: bytes | memoryview, heads: bytes | memoryview | None, query: array[float], w_head: float,
    into: tuple[memoryview, memoryview] | None = None,
) -> tuple[array[float] | memoryview, array[float] | memoryview]:
    """(sim, near) of every row, as the module docstring says, as float64 arrays (or written ``into`` those)."""
    count = len(vectors) // (2 * len(query)) if query else 0
    sim, near = into if into is not None else (array("d", bytes(8 * count)), array("d", bytes(8 * count)))
    if count:
        if _cosine is not None:
            _cosine.similarities(vectors, heads, query, w_head, sim, near)
        else:
            _with_numpy(vectors, heads, query, w_head, (sim, near))
    return sim, near


def _with_numpy(
    vectors: bytes | memoryview, heads: bytes | memoryview | None, query: array[float], w_head: float,
    out: tuple[array[float] | memoryview, array[float] | memoryview],
) -> None:
    """:func:`similarities` with numpy (float32 products, ``einsum``'s own loop: BLAS's threads spin against a
    busy machine's other processes), into ``out``."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    sim, near = np.frombuffer(out[0], dtype=np.float64), np.frombuffer(out[1], dtype=np.float64)
    matrix = np.frombuffer(vectors, dtype="<f2").reshape(-1, len(q))
    head = None if heads is None else np.frombuffer(heads, dtype="<f2").reshape(-1, len(q))
    for start in range(0, len(matrix), _ROWS):
        rows = slice(start, start + _ROWS)
        cos, usable, _nonzero = _cosines(matrix[rows], q)
        sim[rows] = near[rows] = np.where(usable, cos, 0.0)
        if head is not None:
            head_cos, head_usable, head_nonzero = _cosines(head[rows], q)
            mixed = (sim[rows] + w_head * head_cos) / (1.0 + w_head)
            near[rows] = np.where(head_usable & head_nonzero, mixed, sim[rows])


def _cosines(rows: Any, q: Any) -> tuple[Any, Any, Any]:
    """The clipped dot products of the float16 ``rows`` with ``q``, which rows are finite (binary16 is not where
    its exponent bits are all set), which are not all zeros."""
    import numpy as np

    bits = rows.view(np.uint16)
    usable = ~((bits & 0x7C00) == 0x7C00).any(axis=1)
    nonzero = ((bits & 0x7FFF) != 0).any(axis=1)
    wide = np.where(usable[:, None], rows.astype(np.float32), np.float32(0.0))
    cos = np.clip(np.einsum("ij,j->i", wide, q).astype(np.float64), -1.0, 1.0)
    return cos, usable, nonzero


def scores(
    near: array[float], lexical: array[float] | None, factors: array[float] | None,
    basis: tuple[array[float], array[float], array[float]], now_s: float, constants: Constants,
) -> tuple[array[float], array[float]]:
    """(relevance, score) of every row from its ``near`` cosine, its ``lexical`` term and usage ``factors``
    (None: zeros, ones) and ``basis`` (salience, updated, horizon or -1.0: none), at ``now_s``::

        relevance = (near - min) * span if near > min else 0, plus w_lexical * lexical, times factors
        age       = max(now_s - updated, 0)
        standing  = salience * 2^(-age / half_life) * (2^(-(age - horizon) / half_life) past a horizon)
        score     = relevance * (floor + (1 - floor) * standing)   (0 when relevance is 0)

    By ``_cosine.scores`` where it is built, else the same loop in Python."""
    count = len(near)
    relevance, score = array("d", bytes(8 * count)), array("d", bytes(8 * count))
    if _cosine is not None:
        _cosine.scores(near, lexical, factors, *basis, now_s, constants, relevance, score)
        return relevance, score
    low, span, w_lexical, floor, half_life = constants
    for at, (value, salience, updated, horizon) in enumerate(zip(near, *basis)):
        rel = (value - low) * span if value > low else 0.0
        rel = (rel + w_lexical * lexical[at] if lexical is not None else rel) * (factors[at] if factors is not None else 1.0)
        relevance[at] = rel
        if rel != 0.0:
            age = max(now_s - updated, 0.0)
            standing = salience * 2.0 ** (-age / half_life)
            if horizon >= 0.0 and age > horizon:
                standing *= 2.0 ** (-(age - horizon) / half_life)
            score[at] = rel * (floor + (1.0 - floor) * standing)
    return relevance, score
