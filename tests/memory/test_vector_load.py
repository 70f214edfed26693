"""The vectors recall by meaning ranks with, as ``semantic.VectorCache.load`` reads them from the index."""

from __future__ import annotations

import numpy as np

from bundlekit.memory.semantic import _finite


def test_exactly_the_rows_holding_a_value_that_is_not_finite_are_zeroed_for_every_float16() -> None:
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(-1, 1)  # each float16 bit pattern once
    expected = np.where(np.isfinite(every), every, np.float16(0.0))
    assert np.array_equal(_finite(every.copy()).view(np.uint16), expected.view(np.uint16))
