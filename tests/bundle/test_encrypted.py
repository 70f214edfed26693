"""Encrypted bundles: plaintext manifest and index only, round trip, wrong key, tampering, canaries."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bundlekit.bundle.buildcache import CACHE_NAME
from bundlekit.bundle.build import BuildOptions, BundleResult, build_bundle
from bundlekit.bundle.load import LoadOptions, load_bundle
from bundlekit.bundle.sources import Gateways
from bundlekit.crypto._keys import RawKeyFile
from bundlekit.errors import IntegrityError, KeySourceError, UsageError, WrongKeyError
from bundlekit.ipld.cid import cid_to_str
from bundlekit.memory import Memory
from bundlekit.net.http import HttpOptions
from bundlekit.unixfs.reader import UnixFSReader

from .conftest import BODY_CANARY, CREATED, TIMELINE_CANARY, BlockGateway, car_blocks

KEY = RawKeyFile(bytes(range(32)))
OTHER = RawKeyFile(bytes(range(1, 33)))


def _rng() -> Callable[[int], bytes]:
    """A deterministic stand-in for os.urandom."""
    counter = iter(range(10**6))
    return lambda n: bytes(next(counter) % 256 for _ in range(n))


@pytest.fixture
def enc(tree: Path, tmp_path: Path) -> BundleResult:
    return build_bundle(tree, tmp_path / "enc.car", key=KEY, options=BuildOptions(created=CREATED))


def _stored(bundle: BundleResult, path: str) -> bytes:
    blocks = car_blocks(bundle.car)
    reader = UnixFSReader(blocks.__getitem__)
    return b"".join(reader.iter_file(reader.resolve(bundle.root, path)))


def test_encrypted_layout_has_enc_files_and_a_plaintext_index(enc: BundleResult) -> None:
    assert enc.paths == sorted(["memory/MEMORY.md", "memory/feedback_tone.md.enc", "memory/project_season.md.enc",
                                "memory/reference_reel.md.enc", "memory/user_role.md.enc",
                                "memory/timeline/2026-04-14.jsonl.enc"])
    assert enc.manifest["encryption"]["key_source"]
    assert enc.manifest["memory"]["timeline"] == ["memory/timeline/2026-04-14.jsonl.enc"]


def test_encrypted_index_links_each_file_by_cid(enc: BundleResult) -> None:
    index = _stored(enc, "memory/MEMORY.md").decode()
    cid = enc.manifest["memory"]["files"]["memory/user_role.md.enc"]["cid"]
    assert f"- [user_role.md](ipfs://{cid}) \u2014 Argentina fan" in index
    assert index.startswith("# Memory\n\n## User\n")


def test_redacted_index_leaves_descriptions_out(tree: Path, tmp_path: Path) -> None:
    result = build_bundle(tree, tmp_path / "r.car", key=KEY,
                          options=BuildOptions(created=CREATED, redact_index=True))
    index = _stored(result, "memory/MEMORY.md").decode()
    assert "Argentina" not in index and "- [user_role.md](ipfs://" in index
    assert "Argentina" not in result.car.read_bytes().decode("latin-1")


def test_redact_index_without_a_key_is_refused(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="redact"):
        build_bundle(tree, tmp_path / "r.car", options=BuildOptions(created=CREATED, redact_index=True))


def test_no_body_or_timeline_plaintext_anywhere_in_the_car(enc: BundleResult) -> None:
    raw = enc.car.read_bytes()
    for canary in (BODY_CANARY, TIMELINE_CANARY, "Plays as a winger", "Three drills per session", "drills"):
        assert canary.encode() not in raw


def test_plaintext_build_does_contain_the_canaries(tree: Path, tmp_path: Path) -> None:
    raw = build_bundle(tree, tmp_path / "p.car", options=BuildOptions(created=CREATED)).car.read_bytes()
    assert BODY_CANARY.encode() in raw and TIMELINE_CANARY.encode() in raw  # the canary test can fail


def test_encrypted_round_trip_gives_the_plaintext_tree(enc: BundleResult, tree: Path, tmp_path: Path) -> None:
    loaded = load_bundle(str(enc.car), key=KEY, out_dir=tmp_path / "out")
    expected = dict(Memory(tree).bundle_files())
    assert loaded.files.keys() == expected.keys()
    for rel, data in expected.items():
        if rel != "MEMORY.md":
            assert (tmp_path / "out" / rel).read_bytes() == data
    assert (tmp_path / "out" / "MEMORY.md").read_bytes() == expected["MEMORY.md"]  # regenerated, no CID links


def test_a_decrypted_tree_is_private(enc: BundleResult, tmp_path: Path) -> None:
    load_bundle(str(enc.car), key=KEY, out_dir=tmp_path / "out")
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o700


def test_encrypted_bundle_without_a_key_is_refused(enc: BundleResult) -> None:
    with pytest.raises(KeySourceError, match="encrypted"):
        load_bundle(str(enc.car))


def test_wrong_key_fails_before_any_file_is_decrypted(enc: BundleResult, monkeypatch: pytest.MonkeyPatch) -> None:
    import bundlekit.crypto

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("decrypt_stream must not run with a wrong key")

    monkeypatch.setattr(bundlekit.crypto, "decrypt_stream", boom)
    with pytest.raises(WrongKeyError):
        load_bundle(str(enc.car), key=OTHER)


def test_tampered_encrypted_block_is_an_integrity_error_naming_the_file(
    enc: BundleResult, block_gateway: tuple[BlockGateway, str, object], tmp_path: Path
) -> None:
    from bundlekit.ipld.cid import parse_cid

    gateway, url, _server = block_gateway
    gateway.blocks.update(car_blocks(enc.car))
    gateway.tamper.add(parse_cid(enc.manifest["memory"]["files"]["memory/feedback_tone.md.enc"]["cid"]))
    with pytest.raises(IntegrityError, match="memory/feedback_tone.md.enc"):
        load_bundle(f"ipfs://{cid_to_str(enc.root)}", source=Gateways([url]), key=KEY,
                    out_dir=tmp_path / "out", options=LoadOptions(http=HttpOptions(sleep=lambda s: None)))
    assert not (tmp_path / "out").exists()


def test_ciphertext_moved_to_another_path_fails_decryption_as_integrity_error(
    enc: BundleResult, tmp_path: Path
) -> None:
    """A manifest that is not content-addressed can swap two files consistently; the path binding catches it."""
    site = tmp_path / "site"
    (site / "memory" / "timeline").mkdir(parents=True)
    manifest = json.loads(json.dumps(enc.manifest))
    files = manifest["memory"]["files"]
    a, b = "memory/feedback_tone.md.enc", "memory/user_role.md.enc"
    files[a], files[b] = files[b], files[a]
    (site / "manifest.json").write_text(json.dumps(manifest))
    for path in enc.paths:
        (site / path).write_bytes(_stored(enc, path))
    (site / a).write_bytes(_stored(enc, b))
    (site / b).write_bytes(_stored(enc, a))

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with pytest.raises(IntegrityError, match=r"memory/(feedback_tone|user_role)\.md\.enc"):
            load_bundle(f"http://127.0.0.1:{server.server_address[1]}/manifest.json", key=KEY)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_injected_randomness_makes_encrypted_builds_reproducible(tree: Path, tmp_path: Path) -> None:
    a = build_bundle(tree, tmp_path / "a.car", key=KEY, options=BuildOptions(created=CREATED, rng=_rng()))
    b = build_bundle(tree, tmp_path / "b.car", key=KEY, options=BuildOptions(created=CREATED, rng=_rng()))
    assert a.root == b.root


def test_default_randomness_makes_encrypted_builds_differ_without_the_trees_build_cache(
    tree: Path, tmp_path: Path
) -> None:
    a = build_bundle(tree, tmp_path / "a.car", key=KEY, options=BuildOptions(created=CREATED))
    (tree / CACHE_NAME).unlink()  # the cache keeps an unchanged tree's CIDs (tests/bundle/test_incremental.py)
    b = build_bundle(tree, tmp_path / "b.car", key=KEY, options=BuildOptions(created=CREATED))
    assert a.root != b.root


def test_an_encrypted_load_into_a_folder_leaves_no_database_open(enc: BundleResult, tmp_path: Path) -> None:
    load_bundle(str(enc.car), out_dir=tmp_path / "d1", key=KEY)
    left = sorted(p.name for p in (tmp_path / "d1").rglob("*") if p.name.endswith(("-wal", "-shm", "-journal")))
    assert left == []  # the index regenerated for MEMORY.md was closed, so SQLite removed its side files
