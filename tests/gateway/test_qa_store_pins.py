"""QA regression: a pin file of absurdly deep JSON is reported as unreadable, not a RecursionError."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.errors import BundlekitError


def test_deeply_nested_pin_file_is_unreadable(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "s")
    store._pins_path().write_text("[" * 5_000 + "]" * 5_000)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # deeper than the default limit, shallow enough for the C stack
    try:
        with pytest.raises(BundlekitError, match="the pin file .* is unreadable"):
            store.pins()
    finally:
        sys.setrecursionlimit(old)
