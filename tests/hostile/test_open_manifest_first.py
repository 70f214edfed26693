"""Issue 24, item 5: ``bundlekit open`` reads the manifest first and refuses a non-bundle before fetching it.

Before, ``open`` walked and stored the whole DAG (a gateway's CAR read to its end
into a temporary CAR, or a local CAR indexed and hashed whole) and only the page
found there was no bundle: a 300 MB non-bundle was fetched and served. Each child
runs capped in memory and time (``conftest.bounded``): a fetch without end fails.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO, cast

import pytest

from bundlekit.bundle.build import build_bundle
from bundlekit.car.extract import unpack_car
from bundlekit.car.index import CarIndex
from bundlekit.car.writer import CarFileWriter, CarWriter
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.memory import Memory
from bundlekit.unixfs.importer import ListSink, import_path, import_tree
from bundlekit.unixfs.profiles import get_profile

from .conftest import TIMEOUT, bounded, child_env

BLOCK = 256 * 1024


def _open(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(child_env(), CI="true", BUNDLEKIT_HOME=str(cwd / "home"))
    return subprocess.run(bounded("open", *args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


def test_a_local_car_that_is_no_bundle_is_refused_before_its_other_blocks_are_hashed(tmp_path: Path) -> None:
    """A leaf block is corrupted: hashing the whole CAR first said "does not match" (exit 3); now the
    missing manifest is found first (exit 1), having hashed the root block only."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "big.bin").write_bytes(os.urandom(4 * BLOCK))
    car = tmp_path / "data.car"
    with CarFileWriter(car) as writer:
        root = import_path(folder, writer, get_profile()).root
        writer.finish(root)
    with CarIndex(car) as index:
        offset, length = min(where for cid, where in index.index.items() if cid != root)
    with open(car, "r+b") as fh:  # flip the last byte of a leaf block
        fh.seek(offset + length - 1)
        last = fh.read(1)
        fh.seek(offset + length - 1)
        fh.write(bytes([last[0] ^ 0xFF]))
    done = _open(str(car), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"{cid_to_str(root)} is not a bundle: no manifest.json at its root" in done.stderr


class _EndlessCar(BaseHTTPRequestHandler):
    """A gateway whose CAR of the root is a directory block, then random raw blocks without end."""

    root = b""
    root_block = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if "format=car" not in self.path:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.ipld.car; version=1")
        self.end_headers()
        writer = CarWriter(cast(BinaryIO, self.wfile), [self.root])
        try:
            writer.put(self.root, self.root_block)
            while True:
                data = os.urandom(BLOCK)
                writer.put(make_cid(1, RAW, data), data)
        except OSError:  # the client went away
            return

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endless_gateway() -> Iterator[tuple[str, bytes]]:
    sink = ListSink()
    result = import_tree([("junk.bin", b"x" * 10)], sink, get_profile())
    handler = type("Handler", (_EndlessCar,), {"root": result.root, "root_block": dict(sink.blocks)[result.root]})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", result.root
    finally:
        server.shutdown()
        server.server_close()


def test_a_gateway_streaming_a_non_bundle_without_end_is_refused_after_its_root_block(
    tmp_path: Path, endless_gateway: tuple[str, bytes]
) -> None:
    url, root = endless_gateway
    done = _open(f"{url}/ipfs/{cid_to_str(root)}", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"{cid_to_str(root)} is not a bundle: no manifest.json at its root (it holds junk.bin)" in done.stderr


def test_a_bundle_root_linking_a_large_foreign_file_is_not_fetched_past_its_manifest(tmp_path: Path) -> None:
    """A real manifest and memory/ beside 24 MiB the manifest does not list: the walk stops (exit 3)."""
    memory = Memory(tmp_path / "tree")
    memory.write("note", name="Note", description="a note", type="user", body="small")
    build_bundle(tmp_path / "tree", tmp_path / "real.car")
    unpack_car(tmp_path / "real.car", tmp_path / "bundle")
    (tmp_path / "bundle" / "zz-foreign.bin").write_bytes(os.urandom(96 * BLOCK))
    car = tmp_path / "padded.car"
    with CarFileWriter(car) as writer:
        root = import_path(tmp_path / "bundle", writer, get_profile()).root
        writer.finish(root)
    with serve_in_thread(cars=[car]) as server:
        done = _open(f"{server.url}/ipfs/{cid_to_str(root)}", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "bytes its manifest accounts for; refusing to fetch the rest" in done.stderr


def test_a_fetched_bundle_claiming_more_than_max_bytes_is_refused_before_its_files(tmp_path: Path) -> None:
    """A fetched bundle is held in memory: its manifest's claims are checked against --max-bytes first."""
    memory = Memory(tmp_path / "tree")
    memory.write("note", name="Note", description="a note", type="user", body="x" * 4096)
    root = build_bundle(tmp_path / "tree", tmp_path / "b.car").root_cid
    with serve_in_thread(cars=[tmp_path / "b.car"]) as server:
        done = _open(f"{server.url}/ipfs/{root}", "--max-bytes", "1024", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "over the 1024-byte load limit" in done.stderr


def test_the_cli_default_of_max_bytes_is_the_fetched_limit() -> None:
    from bundlekit.cli.serve import open_cmd
    from bundlekit.ui.open import FETCHED_MAX_BYTES

    assert next(p for p in open_cmd.params if p.name == "max_bytes").default == FETCHED_MAX_BYTES
