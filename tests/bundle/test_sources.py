"""Where a load's blocks come from (bundle.sources): each source on its own, and one value for several loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.sources import CarFile, Gateways, LocalStore
from bundlekit.errors import LoadError, UsageError
from bundlekit.ipld.cid import cid_to_str

from .conftest import CREATED, BlockGateway, car_blocks


@pytest.fixture
def bundle(tree: Path, tmp_path: Path) -> BundleResult:
    return build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))


def _uri(bundle: BundleResult) -> str:
    return f"ipfs://{cid_to_str(bundle.root)}"


def test_a_car_file_supplies_the_blocks_of_an_ipfs_uri(bundle: BundleResult) -> None:
    from_car = load_bundle(_uri(bundle), source=CarFile(bundle.car))
    assert from_car.files == load_bundle(str(bundle.car)).files and from_car.root == bundle.root


def test_the_local_store_alone_asks_no_gateway(
    bundle: BundleResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BUNDLEKIT_GATEWAYS", "http://127.0.0.1:9")  # asked, it would fail and be noted
    store = BlockStore(tmp_path / "home")
    with open(bundle.car, "rb") as fh:
        store.import_car(fh)
    loaded = load_bundle(_uri(bundle), source=LocalStore(store))
    assert loaded.warnings == [] and loaded.notes == [] and "user_role.md" in loaded.files


def test_the_local_store_alone_fails_for_a_root_it_lacks(bundle: BundleResult, tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="the local store"):
        load_bundle(_uri(bundle), source=LocalStore(BlockStore(tmp_path / "empty")))


def test_one_gateway_value_serves_several_loads(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult
) -> None:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    source = Gateways([url])
    first, second = (load_bundle(_uri(bundle), source=source) for _ in range(2))
    assert first.files == second.files == load_bundle(str(bundle.car)).files
    assert len(gateway.requests) == 2  # one CAR request per load


def test_a_gateway_value_that_is_no_url_is_a_usage_error_when_a_load_starts(bundle: BundleResult) -> None:
    source = Gateways(["gw.example"])  # a value: nothing is parsed yet
    with pytest.raises(UsageError, match="http:// or https://"):
        load_bundle(str(bundle.car), source=source)


@pytest.mark.parametrize(("field", "value"), [("concurrency", 0), ("deadline", 0.0)])
def test_load_options_refuse_values_no_load_can_run_with(field: str, value: float) -> None:
    with pytest.raises(UsageError):
        LoadOptions(**{field: value})
