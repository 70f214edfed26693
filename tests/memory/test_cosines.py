"""The cosines recall by meaning ranks with (``memory/cosines``): the compiled ``_cosine`` and the numpy path
where it is not built decide the same, for every float16 value and for rows put into the index by hand."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlekit.memory import cosines

pytestmark = pytest.mark.skipif(not cosines.compiled(), reason="the compiled cosines are not built here")


def _both(vectors: bytes, heads: bytes | None, query: list[float], w_head: float = 0.5) -> list[tuple[array[float], array[float]]]:
    compiled = cosines.similarities(vectors, heads, array("d", query), w_head)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cosines, "_cosine", None)
        fallback = cosines.similarities(vectors, heads, array("d", query), w_head)
    return [compiled, fallback]


def test_every_float16_value_is_read_as_numpy_reads_it_and_a_value_that_is_not_finite_counts_as_zero() -> None:
    every = np.arange(1 << 16, dtype=np.uint16).view("<f2").reshape(-1, 1)  # each float16 bit pattern once
    expected = np.clip(np.where(np.isfinite(every), every, 0).astype(np.float64)[:, 0], -1.0, 1.0)
    for sim, near in _both(every.tobytes(), None, [1.0]):
        assert np.array_equal(np.asarray(sim), expected) and np.array_equal(np.asarray(near), expected)


def test_the_compiled_and_the_numpy_cosines_agree_on_random_rows_with_planted_ones() -> None:
    rng = np.random.default_rng(38)
    rows, dimension = 3000, 256
    vectors = rng.standard_normal((rows, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    heads = rng.standard_normal((rows, dimension)).astype(np.float32)
    heads /= np.linalg.norm(heads, axis=1, keepdims=True)
    stored, stored_heads = vectors.astype("<f2"), heads.astype("<f2")
    stored[1, 7], stored_heads[2, 9] = np.inf, np.nan  # hand-planted: the row counts as zero, the head as none
    stored_heads[3] = 0.0  # no head vector (a bundle's restored vectors come without)
    stored[4] *= np.float16(50.0)  # a long vector: its cosine is clipped to [-1, 1]
    query = rng.standard_normal(dimension)
    query /= np.linalg.norm(query)
    (sim, near), (sim_np, near_np) = _both(stored.tobytes(), stored_heads.tobytes(), query.tolist())
    assert np.allclose(sim, sim_np, atol=1e-6) and np.allclose(near, near_np, atol=1e-6)
    assert sim[1] == 0.0 and near[2] == sim[2] and near[3] == sim[3] and -1.0 <= sim[4] <= 1.0
    wide = np.clip(stored.astype(np.float64) @ query, -1, 1)
    assert abs(sim[0] - wide[0]) < 1e-5 and abs(near[0] - (wide[0] + 0.5 * np.clip(stored_heads[0].astype(np.float64) @ query, -1, 1)) / 1.5) < 1e-5


def test_sizes_that_do_not_agree_are_a_value_error() -> None:
    from bundlekit.memory import _cosine

    sim, near = array("d", [0.0] * 2), array("d", [0.0] * 2)
    with pytest.raises(ValueError):
        _cosine.similarities(b"\0" * 6, None, array("d", [1.0, 0.0]), 0.5, sim, near)
    with pytest.raises(ValueError):
        _cosine.similarities(b"\0" * 8, b"\0" * 4, array("d", [1.0, 0.0]), 0.5, sim, near)


def test_the_f16c_loop_gives_the_portable_loop_s_cosines_to_the_bit() -> None:
    from bundlekit.memory import _cosine

    rng = np.random.default_rng(7)
    for dimension in (256, 13, 8, 1):  # whole lanes, and a tail
        rows = rng.standard_normal((500, dimension)).astype("<f2")
        rows[3, 0], rows[4] = np.inf, 0.0
        heads = rng.standard_normal((500, dimension)).astype("<f2")
        heads[5, -1] = np.nan
        query = array("d", rng.standard_normal(dimension).tolist())
        outputs = []
        for portable in (False, True):
            sim, near = array("d", bytes(8 * 500)), array("d", bytes(8 * 500))
            _cosine.similarities(rows.tobytes(), heads.tobytes(), query, 0.5, sim, near, portable)
            outputs.append((sim.tobytes(), near.tobytes()))
        assert outputs[0] == outputs[1]


def test_the_compiled_and_the_python_scores_agree() -> None:
    rng = np.random.default_rng(9)
    count = 2000
    near = array("d", rng.uniform(-0.2, 0.9, count).tolist())
    lexical = array("d", np.where(rng.random(count) < 0.1, rng.random(count), 0.0).tolist())
    factors = array("d", rng.uniform(1.0, 1.1, count).tolist())
    basis = (array("d", rng.random(count).tolist()), array("d", (1.7e9 - rng.uniform(-1e5, 1e7, count)).tolist()),
             array("d", np.where(rng.random(count) < 0.3, rng.uniform(0, 5e6, count), -1.0).tolist()))
    constants = (0.05, 0.95 / 0.95, 0.05, 0.5, 7 * 86400.0)
    for lex, fac in ((lexical, factors), (None, None)):
        compiled = cosines.scores(near, lex, fac, basis, 1.7e9, constants)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cosines, "_cosine", None)
            python = cosines.scores(near, lex, fac, basis, 1.7e9, constants)
        assert compiled[0] == python[0] and np.allclose(compiled[1], python[1], rtol=1e-12, atol=0)


def _at(offset: int, data: bytes) -> memoryview:
    """``data`` as a buffer starting ``offset`` bytes into a bytearray (of any alignment: a valid buffer)."""
    return memoryview(bytearray(offset) + data)[offset:]


@pytest.mark.parametrize("offset", range(1, 8))
def test_buffers_of_any_alignment_give_the_aligned_cosines_and_scores_to_the_bit(offset: int) -> None:
    # The float64 buffers were read and written as double *: undefined behaviour off an 8-byte boundary
    # (UBSan: "load of misaligned address"), which vectorized code may turn into a crash.
    from bundlekit.memory import _cosine

    rng = np.random.default_rng(offset)
    rows, dimension = 40, 13
    vectors = rng.standard_normal((rows, dimension)).astype("<f2").tobytes()
    heads = rng.standard_normal((rows, dimension)).astype("<f2").tobytes()
    query = array("d", rng.standard_normal(dimension).tolist())
    for portable in (False, True):
        aligned = array("d", bytes(8 * rows)), array("d", bytes(8 * rows))
        _cosine.similarities(vectors, heads, query, 0.5, *aligned, portable)
        moved = _at(offset, bytes(8 * rows)), _at(offset, bytes(8 * rows))
        _cosine.similarities(_at(offset, vectors), _at(offset, heads), _at(offset, query.tobytes()), 0.5, *moved, portable)
        assert [bytes(m) for m in moved] == [a.tobytes() for a in aligned]
    columns = [array("d", rng.uniform(0.0, 1.0, rows).tolist()) for _ in range(6)]
    constants = (0.05, 1.0, 0.05, 0.5, 604800.0)
    aligned_out = array("d", bytes(8 * rows)), array("d", bytes(8 * rows))
    _cosine.scores(*columns, 1.0, constants, *aligned_out)
    moved_out = _at(offset, bytes(8 * rows)), _at(offset, bytes(8 * rows))
    _cosine.scores(*(_at(offset, c.tobytes()) for c in columns), 1.0, constants, *moved_out)
    assert [bytes(m) for m in moved_out] == [a.tobytes() for a in aligned_out]


@st.composite
def _cosine_cases(draw: st.DrawFn) -> tuple[int, int, list[int], list[float]]:
    """A dimension, a row count, the float16 bits of that many stored and head rows, a query of that dimension:
    only what the test reads is drawn (a fixed 960 bits and 40 floats per example made hypothesis's drawing most of
    the test's time, for values it then cut off)."""
    dimension, rows = draw(st.integers(1, 40)), draw(st.integers(0, 12))
    size = 2 * rows * dimension
    bits = draw(st.lists(st.integers(0, 0xFFFF), min_size=size, max_size=size))
    query = draw(st.lists(st.floats(-1.0, 1.0, width=32), min_size=dimension, max_size=dimension))
    return dimension, rows, bits, query


@given(_cosine_cases())
def test_the_compiled_and_the_numpy_cosines_agree_within_float32_rounding(
    case: tuple[int, int, list[int], list[float]],
) -> None:
    dimension, rows, bits, query = case
    # Any float16 bits (NaN, infinity, subnormals, 65504), any dimension (not a multiple of 8: the F16C loop's
    # tail), no rows. Both sum float32 products in their own order: each is within (d - 1) * 2^-24 of the sum of
    # the products' magnitudes of the exact sum (Higham, Accuracy and Stability of Numerical Algorithms, 4.2), so
    # they are within twice that, d * 2^-23; clipping to [-1, 1] only narrows the gap.
    size = rows * dimension
    stored = np.array(bits[:size], dtype=np.uint16).view("<f2").reshape(rows, dimension)
    head = np.array(bits[size : 2 * size], dtype=np.uint16).view("<f2").reshape(rows, dimension)
    q = query[:dimension]
    (sim, near), (sim_np, near_np) = _both(stored.tobytes(), head.tobytes(), q)
    assert len(sim) == len(sim_np) == rows

    def bound(matrix: np.ndarray) -> np.ndarray:
        wide = np.where(np.isfinite(matrix).all(axis=1)[:, None], matrix.astype(np.float64), 0.0)
        return np.abs(wide * np.asarray(q, dtype=np.float32).astype(np.float64)).sum(axis=1) * dimension * 2.0**-23 + 1e-12

    assert np.all(np.abs(np.asarray(sim) - np.asarray(sim_np)) <= bound(stored))
    assert np.all(np.abs(np.asarray(near) - np.asarray(near_np)) <= bound(stored) + 0.5 * bound(head))
