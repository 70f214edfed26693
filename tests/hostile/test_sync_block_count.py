"""Issue 35, item 10: `sync` bounded the bytes a hostile name could make it fetch, not the number of blocks.

The payload: a name whose bundle holds files of 4-byte blocks. Every file claims a few hundred bytes (far
inside the load's byte bound) and needs about a hundred block visits (inside each file's visit budget), yet
together they are thousands of blocks, each of which a keeping sync writes to the store as a file of its
own. The bound (``syncer.DEFAULT_MAX_BLOCKS``, ``SyncOptions.max_blocks``) stops the load with exit 3 and a
message naming it; the store keeps no more than the bound, the tree is untouched. The bound is lowered
here so the DAG stays small; the mechanism is the one a real-sized attack meets.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import bundlekit.flows.sync as syncer
from bundlekit.blockstore import BlockStore
from bundlekit.bundle.build import file_cid
from bundlekit.bundle.manifest import canonical_json, make_manifest
from bundlekit.bundle.sources import Gateways
from bundlekit.car.writer import CarFileWriter
from bundlekit.cli import cli
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import DAGLimitExceeded
from bundlekit.gateway.server import serve_in_thread
from bundlekit.memory import Memory
from bundlekit.names.record import cid_value, create_record, name_from_key
from bundlekit.flows.sync import SyncOptions, sync
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile

WHEN = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
FILES, FILE_BYTES, CHUNK = 12, 400, 4  # 12 files x 100 distinct 4-byte leaves: 1,200 blocks, 4.8 KB
BOUND = 300


def _memory(i: int) -> bytes:
    head = (f"---\nname: m{i}\ndescription: about m{i}\ntype: project\ncreated: 2026-04-14T12:00:00Z\n"
            f"updated: 2026-04-14T12:00:00Z\n---\n\n").encode()
    body = b""
    seed = i.to_bytes(4, "big")
    while len(head) + len(body) < FILE_BYTES - 1:
        seed = hashlib.sha256(seed).digest()
        body += seed.hex().encode()
    return head + body[: FILE_BYTES - 1 - len(head)] + b"\n"


def _hostile_name(tmp_path: Path) -> tuple[Path, str]:
    """A store serving a name whose bundle is ``FILES`` files of ``CHUNK``-byte blocks; the store and name."""
    tiny = get_profile(chunk_size=CHUNK)
    stored = [("memory/MEMORY.md", b"# Memory\n")] + [(f"memory/m{i}.md", _memory(i)) for i in range(FILES)]
    manifest = make_manifest(namespace="agent", created=WHEN, profile=get_profile().name,
                             files={path: (file_cid(data, tiny), len(data)) for path, data in stored},
                             timeline=[], encryption=None)
    car = tmp_path / "hostile.car"
    with CarFileWriter(car) as writer:
        root = import_tree([("manifest.json", canonical_json(manifest)), *stored], writer, tiny).root
        writer.finish(root)
    store_dir = tmp_path / "hostile-store"
    store = BlockStore(store_dir, fsync=False)
    with open(car, "rb") as fh:
        store.import_car(fh, pin=True)
    signer = Ed25519Signer.generate()
    name = name_from_key(signer.public)
    store.put_record(name, create_record(signer, cid_value(root), sequence=0,
                                         validity=datetime.now(UTC) + timedelta(days=1), ttl_ns=60 * 10**9))
    return store_dir, name


@pytest.fixture
def follower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BUNDLEKIT_HOME", str(tmp_path / "home"))
    for var in ("BUNDLEKIT_GATEWAYS", "BUNDLEKIT_ROUTING", "BUNDLEKIT_MEMORY_DIR"):
        monkeypatch.delenv(var, raising=False)
    tree = tmp_path / "tree"
    Memory(tree).init()
    return tree


def _files(tree: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(tree.glob("*.md"))}


def test_sync_against_a_name_of_countless_tiny_blocks_exits_3_at_the_block_bound(
    tmp_path: Path, follower: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(syncer, "DEFAULT_MAX_BLOCKS", BOUND)
    store_dir, name = _hostile_name(tmp_path)
    before = _files(follower)
    with serve_in_thread(store=store_dir) as server:
        result = CliRunner().invoke(cli, ["sync", str(follower), "--name", name, "--gateway", server.url])
    assert result.exit_code == 3, result.output
    assert f"more than {BOUND} blocks" in result.stderr and "Traceback" not in result.output
    assert sum(1 for _ in BlockStore(tmp_path / "home").iter_blocks()) <= BOUND
    assert _files(follower) == before


def test_block_by_block_loads_meet_the_same_bound(tmp_path: Path, follower: Path) -> None:
    # The path a sync takes once its store holds an ancestor: blocks fetched level by level (prefetch), not
    # one CAR. The bound counts them the same.
    store_dir, name = _hostile_name(tmp_path)
    options = SyncOptions(max_blocks=BOUND, load=replace(SyncOptions().load, prefer_car=False))
    with serve_in_thread(store=store_dir) as server, pytest.raises(DAGLimitExceeded, match=f"more than {BOUND}"):
        sync(follower, name=name, source=Gateways([server.url], store=BlockStore(tmp_path / "home")),
             options=options)
    assert sum(1 for _ in BlockStore(tmp_path / "home").iter_blocks()) <= BOUND


def test_an_honest_name_within_the_bound_syncs(tmp_path: Path, follower: Path) -> None:
    store_dir, name = _hostile_name(tmp_path)
    with serve_in_thread(store=store_dir) as server:
        report = sync(follower, name=name, source=Gateways([server.url], store=BlockStore(tmp_path / "home")),
                      options=SyncOptions(max_blocks=FILES * 120))
    assert report.loaded is not None and len(_files(follower)) == FILES + 1  # a first follow: loaded

