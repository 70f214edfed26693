"""The interface reads a bundle's files with a visit budget keyed to each file's size (review of issue 12).

A manifest that is one empty block linked a billion times claims 0 bytes, so
only counting block visits stops it. The walker's default allows a million
visits, seconds of work on every page request for a 138 KB CAR; the interface
reads like ``load`` does (``bundle._bounded.read_bounded``): at most
``1024 + size / 1024`` visits for a file of ``size`` bytes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from bundlekit.bundle._bounded import visit_budget
from bundlekit.car.index import CarIndex
from bundlekit.errors import DAGLimitExceeded
from bundlekit.gateway.server import close_source, make_source
from bundlekit.ui import model


def _hostile_dags() -> ModuleType:
    """``tests/bundle/hostile_dags.py`` (the loader's hostile bundles), loaded by path."""
    spec = importlib.util.spec_from_file_location(
        "ui_hostile_dags", Path(__file__).parent.parent / "bundle" / "hostile_dags.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_manifest_reusing_an_empty_block_stops_at_the_size_keyed_visit_budget(tmp_path: Path) -> None:
    car = _hostile_dags().empty_reused_manifest_car(tmp_path / "bomb.car")  # 10**9 visits, 0 bytes
    with CarIndex(car) as index:
        root = index.roots[0]
    source = make_source(cars=[car])
    try:
        with pytest.raises(DAGLimitExceeded, match=f"more than {visit_budget(model.MAX_SHOWN_FILE)} block visits"):
            model.read_bundle(source.get, root)
    finally:
        close_source(source)
