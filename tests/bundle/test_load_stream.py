"""The streaming CAR load and the concurrent per-block path give exactly the files of a local CAR (issue 16)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.errors import LoadError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str
from bundlekit.net.http import HttpOptions
from tests.net.loopback import redirect_to, serve

from .conftest import CREATED, BlockGateway, car_blocks, make_tree

NO_SLEEP = HttpOptions(sleep=lambda s: None, jitter=lambda: 0.0)


@pytest.fixture
def big_bundle(tmp_path: Path) -> BundleResult:
    """A bundle of 40 memories and a timeline: enough files for order and concurrency to matter."""
    return build_bundle(make_tree(tmp_path / "tree", count=40), tmp_path / "b.car",
                        options=BuildOptions(created=CREATED))


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_streamed_car_load_gives_the_files_of_the_local_car(big_bundle: BundleResult, tmp_path: Path) -> None:
    local = load_bundle(str(big_bundle.car), out_dir=tmp_path / "local")
    with serve_in_thread(cars=[big_bundle.car]) as server:
        streamed = load_bundle(f"ipfs://{cid_to_str(big_bundle.root)}", source=Gateways([server.url]),
                               out_dir=tmp_path / "streamed", options=LoadOptions(http=NO_SLEEP))
    assert streamed.files == local.files and len(streamed.files) == big_bundle.files
    assert _tree_bytes(tmp_path / "streamed") == _tree_bytes(tmp_path / "local")


def test_the_per_block_path_gives_the_files_of_the_local_car(big_bundle: BundleResult, tmp_path: Path) -> None:
    local = load_bundle(str(big_bundle.car))
    with serve_in_thread(cars=[big_bundle.car]) as server:
        blocks = load_bundle(f"ipfs://{cid_to_str(big_bundle.root)}", source=Gateways([server.url]),
                             options=LoadOptions(prefer_car=False, http=NO_SLEEP))
    assert blocks.files == local.files


def test_the_per_block_path_keeps_to_its_concurrency_and_asks_for_each_block_once(
    block_gateway: tuple[BlockGateway, str, Any], big_bundle: BundleResult
) -> None:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(big_bundle.car))
    loaded = load_bundle(f"ipfs://{cid_to_str(big_bundle.root)}", source=Gateways([url]),
                         options=LoadOptions(prefer_car=False, concurrency=3, http=NO_SLEEP))
    assert loaded.warnings == [] and len(loaded.files) == big_bundle.files
    assert gateway.max_in_flight <= 3
    paths = [path for path, _fmt in gateway.requests]
    assert len(paths) == len(set(paths)) == len(gateway.blocks)


def test_a_car_sent_in_any_order_still_loads_every_file(
    block_gateway: tuple[BlockGateway, str, Any], big_bundle: BundleResult
) -> None:
    gateway, url, _server = block_gateway
    blocks = car_blocks(big_bundle.car)
    gateway.blocks.update(dict(reversed(list(blocks.items()))))  # leaves first, the root last
    loaded = load_bundle(f"ipfs://{cid_to_str(big_bundle.root)}", source=Gateways([url]),
                         options=LoadOptions(http=NO_SLEEP))
    assert loaded.warnings == [] and len(loaded.files) == big_bundle.files
    assert [fmt for _path, fmt in gateway.requests] == ["car"]


def test_a_gateway_redirecting_elsewhere_is_refused_unless_follow_redirects(big_bundle: BundleResult) -> None:
    uri = f"ipfs://{cid_to_str(big_bundle.root)}"
    with serve_in_thread(cars=[big_bundle.car]) as honest, serve(redirect_to(lambda p: honest.url + p)) as gateway:
        with pytest.raises(LoadError, match="another origin"):
            load_bundle(uri, source=Gateways([gateway]), options=LoadOptions(http=NO_SLEEP))
        loaded = load_bundle(uri, source=Gateways([gateway]),
                             options=LoadOptions(http=replace(NO_SLEEP, follow_redirects=True)))
    assert len(loaded.files) == big_bundle.files
