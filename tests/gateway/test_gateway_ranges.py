"""`entity-bytes`: only the blocks needed to verify a byte range of a file."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.car.reader import read_car
from bundlekit.gateway.server import serve_in_thread
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid
from bundlekit.unixfs.importer import import_tree
from bundlekit.unixfs.profiles import get_profile

CHUNK = 1024
CONTENT = b"".join(hashlib.sha256(str(k).encode()).digest() for k in range(512))  # 16 KiB, 16 distinct chunks
LEAVES = [make_cid(1, RAW, CONTENT[i : i + CHUNK]) for i in range(0, len(CONTENT), CHUNK)]


@pytest.fixture
def file_url(store: BlockStore) -> Iterator[tuple[httpx.Client, str]]:
    # max_links=2 makes a deep tree (16 leaves, 4 levels), so ranges must prune inner nodes too.
    profile = get_profile("unixfs-v1-2025", chunk_size=CHUNK, max_links=2)
    result = import_tree([("f.bin", CONTENT)], store, profile)
    with serve_in_thread(store=store) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield client, f"/ipfs/{cid_to_str(result.root)}/f.bin?format=car"


def leaves_in(client: httpx.Client, url: str) -> list[int]:
    r = client.get(url)
    assert r.status_code == 200, r.text
    _roots, blocks = read_car(io.BytesIO(r.content), verify=True)
    return sorted(LEAVES.index(cid) for cid, _ in blocks if cid in LEAVES)


def test_a_range_in_the_first_chunk_sends_only_the_first_leaf(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=0:1023") == [0]


def test_a_range_across_a_chunk_boundary_sends_both_leaves(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=5000:6200") == [4, 5, 6]


def test_a_negative_from_counts_from_the_end(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=-100:*") == [15]


def test_a_negative_to_counts_from_the_end(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    # to = size + to: the last byte wanted is 2047, the end of leaf 1
    assert leaves_in(client, url + f"&entity-bytes=0:-{len(CONTENT) - 2047}") == [0, 1]


def test_zero_to_star_is_the_whole_file(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=0:*") == list(range(16))


def test_a_range_past_the_end_is_clamped(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=16000:99999") == [15]


def test_an_empty_range_is_the_block_scope(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert leaves_in(client, url + "&entity-bytes=10:5") == []


def test_a_range_starting_after_the_end_is_400(file_url) -> None:  # type: ignore[no-untyped-def]
    client, url = file_url
    assert client.get(url + f"&entity-bytes={len(CONTENT)}:*").status_code == 400


def test_the_range_blocks_are_enough_to_read_the_range(file_url) -> None:  # type: ignore[no-untyped-def]
    from bundlekit.ipld.dagpb import UnixFSData, decode_node

    client, url = file_url
    r = client.get(url + "&entity-bytes=3000:9000")
    _roots, blocks = read_car(io.BytesIO(r.content), verify=True)
    have = dict(blocks)
    file_cid = list(have)[1]  # after the bundle root directory (the path block)

    def read(cid: bytes, offset: int) -> list[tuple[int, bytes]]:
        """(offset, bytes) of every leaf reachable through the blocks sent."""
        if cid in LEAVES:
            return [(offset, have[cid])]
        links, payload = decode_node(have[cid])
        pieces = []
        for link, size in zip(links, UnixFSData.decode(payload or b"").blocksizes):
            if link.cid in have:
                pieces += read(link.cid, offset)
            offset += size
        return pieces

    pieces = read(file_cid, 0)
    start = pieces[0][0]
    got = b"".join(data for _off, data in pieces)
    assert start <= 3000 and start + len(got) > 9000
    assert got == CONTENT[start : start + len(got)]
