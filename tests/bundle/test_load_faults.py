"""The loader against hostile, dead and incomplete sources on loopback."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.manifest import canonical_json
from bundlekit.bundle.sources import Gateways
from bundlekit.errors import IntegrityError, LoadError, ManifestError, UsageError
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str, parse_cid
from bundlekit.net.http import HttpOptions

from .conftest import CREATED, BlockGateway, car_blocks

NO_SLEEP = HttpOptions(sleep=lambda s: None, jitter=lambda: 0.0)


@pytest.fixture
def bundle(tree: Path, tmp_path: Path) -> BundleResult:
    return build_bundle(tree, tmp_path / "b.car", options=BuildOptions(created=CREATED))


@pytest.fixture
def gw(block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult) -> tuple[BlockGateway, str]:
    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(bundle.car))
    return gateway, url


def _file_cid(bundle: BundleResult, path: str) -> bytes:
    return parse_cid(bundle.manifest["memory"]["files"][path]["cid"])


def _uri(bundle: BundleResult) -> str:
    return f"ipfs://{cid_to_str(bundle.root)}"


def _dir_entry(blocks: dict[bytes, bytes], root: bytes, name: str) -> bytes:
    from bundlekit.unixfs.reader import UnixFSReader

    return dict(UnixFSReader(blocks.__getitem__).list_dir(root))[name]


def test_one_car_request_of_the_root_suffices_for_the_whole_bundle(
    gw: tuple[BlockGateway, str], bundle: BundleResult
) -> None:
    gateway, url = gw
    loaded = load_bundle(_uri(bundle), source=Gateways([url]), options=LoadOptions(http=NO_SLEEP))
    assert gateway.requests == [(f"/ipfs/{cid_to_str(bundle.root)}", "car")]
    assert loaded.warnings == [] and len(loaded.files) == 6


def test_per_block_path_reads_the_manifest_before_the_memory_directory(
    gw: tuple[BlockGateway, str], bundle: BundleResult
) -> None:
    gateway, url = gw
    load_bundle(_uri(bundle), source=Gateways([url]), options=LoadOptions(prefer_car=False, http=NO_SLEEP))
    manifest = _dir_entry(gateway.blocks, bundle.root, "manifest.json")
    memory = _dir_entry(gateway.blocks, bundle.root, "memory")
    assert gateway.requests[:3] == [
        (f"/ipfs/{cid_to_str(bundle.root)}", "raw"),
        (f"/ipfs/{cid_to_str(manifest)}", "raw"),
        (f"/ipfs/{cid_to_str(memory)}", "raw"),
    ]


def test_altered_block_gives_an_integrity_error_naming_the_file(
    gw: tuple[BlockGateway, str], bundle: BundleResult, tmp_path: Path
) -> None:
    gateway, url = gw
    gateway.tamper.add(_file_cid(bundle, "memory/user_role.md"))
    with pytest.raises(IntegrityError, match="memory/user_role.md"):
        load_bundle(_uri(bundle), source=Gateways([url]), out_dir=tmp_path / "out",
                    options=LoadOptions(http=NO_SLEEP))
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_altered_block_is_replaced_from_an_honest_gateway(
    gw: tuple[BlockGateway, str], bundle: BundleResult
) -> None:
    evil, evil_url = gw
    evil.tamper.add(_file_cid(bundle, "memory/user_role.md"))
    with serve_in_thread(cars=[bundle.car]) as honest:
        loaded = load_bundle(_uri(bundle), source=Gateways([evil_url, honest.url]),
                             options=LoadOptions(http=NO_SLEEP))
    assert b"Plays as a winger" in loaded.files["user_role.md"]
    assert any("wrong content" in note for note in loaded.notes)


def test_dead_first_gateway_falls_through_to_the_next(
    block_gateway: tuple[BlockGateway, str, Any], bundle: BundleResult
) -> None:
    dead, dead_url, _server = block_gateway
    dead.dead = True
    with serve_in_thread(cars=[bundle.car]) as server:
        loaded = load_bundle(_uri(bundle), source=Gateways([dead_url, server.url]),
                             options=LoadOptions(http=NO_SLEEP))
    assert loaded.warnings == [] and "user_role.md" in loaded.files
    assert len(dead.requests) == 3  # the CAR request, retried on 503, then given up


def test_unreachable_first_gateway_falls_through(bundle: BundleResult) -> None:
    with serve_in_thread(cars=[bundle.car]) as server:
        loaded = load_bundle(_uri(bundle), source=Gateways(["http://127.0.0.1:9", server.url]),
                             options=LoadOptions(http=NO_SLEEP))
    assert "feedback_tone.md" in loaded.files


def test_missing_block_skips_the_file_with_a_warning(
    gw: tuple[BlockGateway, str], bundle: BundleResult, tmp_path: Path
) -> None:
    gateway, url = gw
    gateway.missing.add(_file_cid(bundle, "memory/reference_reel.md"))
    loaded = load_bundle(_uri(bundle), source=Gateways([url]), out_dir=tmp_path / "out",
                         options=LoadOptions(http=NO_SLEEP))
    assert "reference_reel.md" not in loaded.files
    assert len(loaded.warnings) == 1 and "memory/reference_reel.md" in loaded.warnings[0]
    assert ("raw" in {fmt for _p, fmt in gateway.requests})  # the per-block fallback was tried
    index = (tmp_path / "out" / "MEMORY.md").read_text()
    assert "reference_reel" not in index and "user_role" in index


def test_per_block_path_alone_loads_everything(gw: tuple[BlockGateway, str], bundle: BundleResult) -> None:
    gateway, url = gw
    loaded = load_bundle(_uri(bundle), source=Gateways([url]),
                         options=LoadOptions(prefer_car=False, http=NO_SLEEP))
    assert {fmt for _p, fmt in gateway.requests} == {"raw"}
    assert loaded.warnings == [] and len(loaded.files) == 6


def test_missing_manifest_is_a_load_error(gw: tuple[BlockGateway, str], bundle: BundleResult) -> None:
    gateway, url = gw
    gateway.missing.add(bundle.root)
    with pytest.raises(LoadError, match="manifest.json"):
        load_bundle(_uri(bundle), source=Gateways([url]), options=LoadOptions(http=NO_SLEEP))


def _bundle_like_dag(tmp_path: Path, manifest: bytes | None) -> tuple[Path, bytes]:
    """A CAR laid out like a bundle (memory/ with files) with the given manifest.json, or none; and its root."""
    from bundlekit.car.writer import CarFileWriter
    from bundlekit.unixfs.importer import import_tree
    from bundlekit.unixfs.profiles import get_profile

    files = [("memory/MEMORY.md", b"# index\n"), *[(f"memory/m{i}.md", b"x" * 300) for i in range(20)]]
    if manifest is not None:
        files.append(("manifest.json", manifest))
    with CarFileWriter(tmp_path / "dag.car") as writer:
        result = import_tree(files, writer, get_profile())
        writer.finish(result.root)
    return tmp_path / "dag.car", result.root


@pytest.mark.parametrize(("prefer_car", "fmt"), [(False, "raw"), (True, "car")])
def test_a_dag_without_manifest_fails_before_any_file_block_is_requested(
    block_gateway: tuple[BlockGateway, str, Any], tmp_path: Path, prefer_car: bool, fmt: str
) -> None:
    gateway, url, _server = block_gateway
    car, root = _bundle_like_dag(tmp_path, None)
    gateway.blocks.update(car_blocks(car))
    with pytest.raises(ManifestError, match="not a bundle: no manifest.json"):
        load_bundle(f"ipfs://{cid_to_str(root)}", source=Gateways([url]),
                    options=LoadOptions(prefer_car=prefer_car, http=NO_SLEEP))
    # Per block: the root block, nothing more. With the CAR: that one request, no block asked for alone.
    assert gateway.requests == [(f"/ipfs/{cid_to_str(root)}", fmt)]


def test_an_invalid_manifest_fails_before_any_file_block_is_requested(
    block_gateway: tuple[BlockGateway, str, Any], tmp_path: Path
) -> None:
    gateway, url, _server = block_gateway
    car, root = _bundle_like_dag(tmp_path, b'{"format": "bundlekit/99"}')
    gateway.blocks.update(car_blocks(car))
    with pytest.raises(ManifestError, match="bundlekit/99"):
        load_bundle(f"ipfs://{cid_to_str(root)}", source=Gateways([url]),
                    options=LoadOptions(prefer_car=False, http=NO_SLEEP))
    assert [fmt for _path, fmt in gateway.requests] == ["raw", "raw"]  # root, manifest; no CAR, no file


def test_no_gateway_and_no_store_is_a_usage_error(bundle: BundleResult, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUNDLEKIT_GATEWAYS", raising=False)
    with pytest.raises(UsageError, match="gateway"):
        load_bundle(_uri(bundle), source=Gateways())


def test_ipfs_uri_reads_the_local_store_first(
    bundle: BundleResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bundlekit.blockstore import BlockStore

    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BUNDLEKIT_GATEWAYS", raising=False)
    store = BlockStore()
    with open(bundle.car, "rb") as fh:
        store.import_car(fh)
    loaded = load_bundle(_uri(bundle))
    assert loaded.warnings == [] and "user_role.md" in loaded.files


def test_car_that_is_not_a_bundle_is_a_manifest_error(tmp_path: Path) -> None:
    from bundlekit.car.writer import CarFileWriter
    from bundlekit.unixfs.importer import import_tree
    from bundlekit.unixfs.profiles import get_profile

    with CarFileWriter(tmp_path / "x.car") as writer:
        result = import_tree([("hello.txt", b"hi")], writer, get_profile())
        writer.finish(result.root)
    with pytest.raises(ManifestError, match="not a bundle"):
        load_bundle(str(tmp_path / "x.car"))


# -- the plain https (not content-addressed) manifest -------------------------------------------


@pytest.fixture
def static_site(bundle: BundleResult, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The bundle's files under a plain static web server (what a CDN or S3 site serves)."""
    site = tmp_path / "site" / "agent"
    loaded = load_bundle(str(bundle.car))
    (site / "memory" / "timeline").mkdir(parents=True)
    (site / "manifest.json").write_bytes(canonical_json(loaded.manifest))
    for rel, data in loaded.files.items():
        (site / "memory" / rel).write_bytes(data)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(tmp_path / "site"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield site, f"http://127.0.0.1:{server.server_address[1]}/agent/manifest.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_plain_manifest_url_verifies_files_but_not_the_manifest(static_site: tuple[Path, str]) -> None:
    _site, url = static_site
    loaded = load_bundle(url, options=LoadOptions(http=NO_SLEEP))
    assert loaded.manifest_verified is False and loaded.root is None
    assert loaded.warnings == [] and b"Plays as a winger" in loaded.files["user_role.md"]
    assert loaded.source == url


def test_plain_manifest_url_rejects_an_altered_file(static_site: tuple[Path, str]) -> None:
    site, url = static_site
    target = site / "memory" / "feedback_tone.md"
    target.write_bytes(target.read_bytes().replace(b"direct", b"gentle"))
    with pytest.raises(IntegrityError, match="memory/feedback_tone.md"):
        load_bundle(url, options=LoadOptions(http=NO_SLEEP))


def test_plain_manifest_url_skips_a_missing_file_with_a_warning(static_site: tuple[Path, str]) -> None:
    site, url = static_site
    (site / "memory" / "project_season.md").unlink()
    loaded = load_bundle(url, options=LoadOptions(http=NO_SLEEP))
    assert "project_season.md" not in loaded.files
    assert loaded.warnings and "memory/project_season.md" in loaded.warnings[0]


def test_plain_manifest_url_rejects_a_file_longer_than_listed(static_site: tuple[Path, str]) -> None:
    site, url = static_site
    target = site / "memory" / "user_role.md"
    target.write_bytes(target.read_bytes() + b"\ninjected instructions\n")
    with pytest.raises(IntegrityError, match="memory/user_role.md"):
        load_bundle(url, options=LoadOptions(http=NO_SLEEP))
