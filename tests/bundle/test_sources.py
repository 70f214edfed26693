"""Where a load's blocks come from (bundle.sources): each source on its own, and one value for several loads."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.ahead import fetch_ahead
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.sources import CarFile, Gateways, LocalStore
from bundlekit.errors import IntegrityError, LoadError, UsageError
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.memory import Memory
from bundlekit.net.fetch import parse_uri
from bundlekit.net.http import HttpOptions

from .conftest import CREATED, BlockGateway, car_blocks, make_tree


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


def _raw_requests(gateway: BlockGateway) -> list[str]:
    return [path.split("/")[2] for path, fmt in gateway.requests if fmt == "raw"]


@pytest.mark.parametrize(("prefer_car", "formats"), [(True, ["car"]), (False, ["raw"])])
def test_a_keeping_gateway_source_keeps_every_block_it_fetched_in_the_store_unpinned(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult, tmp_path: Path, prefer_car: bool,
    formats: list[str],
) -> None:
    gateway, url, _server = block_gateway
    blocks = car_blocks(bundle.car)
    gateway.blocks.update(blocks)
    store = BlockStore(tmp_path / "home")
    loaded = load_bundle(_uri(bundle), source=Gateways([url], store=store, keep=True),
                         options=LoadOptions(prefer_car=prefer_car))
    assert loaded.files == load_bundle(str(bundle.car)).files
    assert sorted({fmt for _path, fmt in gateway.requests}) == formats
    assert all(store.has(cid) for cid in blocks) and store.pins() == {}


def test_a_keeping_gateway_source_asks_the_gateway_only_for_the_blocks_the_store_lacks(
    block_gateway: tuple[BlockGateway, str, Any], tmp_path: Path
) -> None:
    gateway, url, _server = block_gateway
    tree = make_tree(tmp_path / "tree", count=40)
    before = build_bundle(tree, tmp_path / "before.car", options=BuildOptions(created=CREATED))
    store = BlockStore(tmp_path / "home")
    with open(before.car, "rb") as fh:
        store.import_car(fh)
    Memory(tree, clock=lambda: CREATED).write("project_season", name="Season goal", description="changed",
                                              type="project", body="Tournament moved to July.")
    after = build_bundle(tree, tmp_path / "after.car", options=BuildOptions(created=CREATED))
    gateway.blocks.update(car_blocks(after.car))
    new = set(car_blocks(after.car)) - set(car_blocks(before.car))
    loaded = load_bundle(_uri(after), source=Gateways([url], store=store, keep=True),
                         options=LoadOptions(prefer_car=False))
    assert "Tournament moved to July." in loaded.files["project_season.md"].decode()
    assert sorted(_raw_requests(gateway)) == sorted(cid_to_str(c) for c in new)
    assert 0 < len(new) < len(car_blocks(after.car)) // 2


@pytest.mark.parametrize("prefer_car", [True, False])
def test_a_keeping_gateway_source_keeps_no_block_that_failed_its_hash(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult, tmp_path: Path, prefer_car: bool
) -> None:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    gateway.tamper.add(bundle.root)
    store = BlockStore(tmp_path / "home")
    with pytest.raises(IntegrityError):
        load_bundle(_uri(bundle), source=Gateways([url], store=store, keep=True),
                    options=LoadOptions(prefer_car=prefer_car))
    assert not store.has(bundle.root)


def test_a_gateway_source_without_a_store_keeps_nothing_and_streams_the_car(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult
) -> None:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    assert Gateways([url], keep=True).keep is False
    load_bundle(_uri(bundle), source=Gateways([url], keep=True))
    assert [fmt for _path, fmt in gateway.requests] == ["car"]


def test_a_keeping_gateway_source_keeps_no_block_outside_the_dag_a_car_brought_along(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult, tmp_path: Path
) -> None:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    stray = make_cid(1, RAW, b"not part of the bundle " * 100)
    gateway.blocks[stray] = b"not part of the bundle " * 100  # the fixture's CAR sends every block it has
    store = BlockStore(tmp_path / "home")
    load_bundle(_uri(bundle), source=Gateways([url], store=store, keep=True))
    assert [fmt for _path, fmt in gateway.requests] == ["car"]
    assert not store.has(stray) and all(store.has(cid) for cid in car_blocks(bundle.car))


def test_a_car_files_session_is_a_block_getter_with_nothing_to_fetch_ahead(bundle: BundleResult) -> None:
    # The session is the one getter protocol (ipld.getter.BlockGetter); streaming and prefetch are the
    # loader's strategy for sessions over gateways (bundle.ahead), which a CAR file's session has none of.
    absent = make_cid(1, RAW, b"not in the CAR")
    with closing(CarFile(bundle.car).open(parse_uri(str(bundle.car)), HttpOptions())) as session:
        assert session.root == bundle.root and fetch_ahead(session) is None
        assert session.get_many([bundle.root, absent], 8) == {bundle.root: session.get(bundle.root)}


def test_a_store_session_gets_many_blocks_and_streams_nothing_when_the_store_holds_the_root(
    bundle: BundleResult, tmp_path: Path
) -> None:
    store = BlockStore(tmp_path / "home")
    with open(bundle.car, "rb") as fh:
        store.import_car(fh)
    absent = make_cid(1, RAW, b"not in the store")
    with closing(LocalStore(store).open(parse_uri(_uri(bundle)), HttpOptions())) as session:
        ahead = fetch_ahead(session)
        assert ahead is not None and ahead.stream() is False
        assert session.get_many([bundle.root, absent], 8) == {bundle.root: store.get(bundle.root)}
