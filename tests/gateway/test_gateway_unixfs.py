"""The gateway over DAGs made by the real importer: HAMT directories, multi-block files, CIDv0."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.dagpb import HAMT_SHARD, UnixFSData, decode_node
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile
from bundlekit.unixfs.reader import UnixFSReader

NAMES = [f"note-{i:03d}.md" for i in range(60)]
BIG = bytes(range(256)) * 64  # 16 KiB: several chunks at chunk_size 4096


@pytest.fixture
def hamt_store(store: BlockStore) -> tuple[BlockStore, bytes]:
    profile = dataclasses.replace(
        get_profile("unixfs-v1-2025", chunk_size=4096), hamt="count", hamt_threshold=10
    )
    files: list[tuple[str, bytes | object]] = [(f"memory/{n}", f"body of {n}\n".encode()) for n in NAMES]
    files.append(("memory/big.bin", BIG))
    result = import_tree(files, store, profile)  # type: ignore[arg-type]
    return store, result.root


@pytest.fixture
def hamt_client(hamt_store: tuple[BlockStore, bytes]) -> Iterator[httpx.Client]:
    with serve_in_thread(store=hamt_store[0]) as server, httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def is_shard(data: bytes) -> bool:
    _links, payload = decode_node(data)
    return payload is not None and UnixFSData.decode(payload).type == HAMT_SHARD


def test_the_fixture_directory_really_is_a_hamt(hamt_store: tuple[BlockStore, bytes]) -> None:
    store, root = hamt_store
    memory = UnixFSReader(store.get).resolve(root, "memory")
    assert is_shard(store.get(memory))


def test_a_file_inside_a_hamt_directory_resolves_to_its_bytes(hamt_client: httpx.Client, hamt_store) -> None:  # type: ignore[no-untyped-def]
    r = hamt_client.get(f"/ipfs/{cid_to_str(hamt_store[1])}/memory/note-042.md")
    assert r.status_code == 200
    assert r.content == b"body of note-042.md\n"


def test_a_multi_block_file_streams_whole(hamt_client: httpx.Client, hamt_store) -> None:  # type: ignore[no-untyped-def]
    r = hamt_client.get(f"/ipfs/{cid_to_str(hamt_store[1])}/memory/big.bin")
    assert r.content == BIG
    assert r.headers["content-type"] == "application/octet-stream"


def test_a_hamt_directory_listing_names_every_entry(hamt_client: httpx.Client, hamt_store) -> None:  # type: ignore[no-untyped-def]
    text = hamt_client.get(f"/ipfs/{cid_to_str(hamt_store[1])}/memory/").text
    assert all(f'href="{n}"' in text for n in NAMES)


def test_car_entity_of_a_hamt_directory_is_its_shards_only(hamt_client: httpx.Client, hamt_store) -> None:  # type: ignore[no-untyped-def]
    root = hamt_store[1]
    r = hamt_client.get(f"/ipfs/{cid_to_str(root)}/memory?format=car&dag-scope=entity")
    _roots, blocks = read_car(io.BytesIO(r.content))
    after_root = [data for cid, data in blocks if cid != root]
    assert after_root and all(is_shard(data) for data in after_root)


def test_car_for_a_path_through_a_hamt_is_enough_to_verify_and_read_the_file(
    hamt_client: httpx.Client, hamt_store
) -> None:  # type: ignore[no-untyped-def]
    root = hamt_store[1]
    r = hamt_client.get(f"/ipfs/{cid_to_str(root)}/memory/big.bin?format=car&dag-scope=entity")
    _roots, blocks = read_car(io.BytesIO(r.content), verify=True)
    only_these = dict(blocks)
    reader = UnixFSReader(lambda cid: only_these[cid])
    assert b"".join(reader.iter_file(reader.resolve(root, "memory/big.bin"))) == BIG


def test_car_scope_all_of_an_imported_tree_holds_every_stored_block(
    hamt_client: httpx.Client, hamt_store
) -> None:  # type: ignore[no-untyped-def]
    store, root = hamt_store
    r = hamt_client.get(f"/ipfs/{cid_to_str(root)}?format=car")
    _roots, blocks = read_car(io.BytesIO(r.content))
    assert sorted(cid for cid, _ in blocks) == sorted(store.iter_blocks())


def test_cidv0_dags_are_served_under_their_v0_cid(store: BlockStore) -> None:
    profile = get_profile("unixfs-v0-2015")
    result = import_tree([("a.md", b"alpha\n"), ("d/b.md", b"beta\n")], store, profile)
    root = cid_to_str(result.root)
    assert root.startswith("Qm")
    with serve_in_thread(store=store) as server, httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get(f"/ipfs/{root}/d/b.md").content == b"beta\n"
        _roots, blocks = read_car(io.BytesIO(c.get(f"/ipfs/{root}?format=car").content))
        assert next(blocks)[0] == result.root
