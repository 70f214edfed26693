"""Issue 28's block cache attacked: what a hostile gateway or DAG can make a keeping sync fetch and keep.

A keeping ``Gateways`` source (``keep=True``, what ``bundlekit sync`` loads through) writes every block it
fetched into the local store. Each payload here tries to make it fetch, hold in memory or keep more than
the load's own bounds allow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bundlekit.blockstore import BlockStore
from bundlekit.bundle.ahead import _PREFETCH_SLICE, fetch_ahead
from bundlekit.bundle.sources import Gateways
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import PBLink, encode_node
from bundlekit.net.fetch import parse_uri
from bundlekit.net.http import HttpOptions
from tests.bundle.conftest import BlockGateway, block_gateway  # noqa: F401 (the fixture)

_CHILD_BYTES = 16 * 1024


def _wide_node(gw: BlockGateway, count: int) -> bytes:
    """A dag-pb node linking ``count`` distinct 16 KiB raw blocks, all served by ``gw``; its CID."""
    links = []
    for i in range(count):
        data = i.to_bytes(4, "big") * (_CHILD_BYTES // 4)
        cid = make_cid(1, RAW, data)
        gw.blocks[cid] = data
        links.append(PBLink(cid, b"", len(data)))
    node = encode_node(links, None)
    root = make_cid(1, DAG_PB, node)
    gw.blocks[root] = node
    return root


def test_a_prefetch_stops_inside_a_level_once_its_byte_bound_is_passed(
    block_gateway: tuple[BlockGateway, str, Any], tmp_path: Path  # noqa: F811
) -> None:
    # One node of 92 KB linking 2,000 blocks (32 MiB) while the files claim 100 KB: before the fix the
    # whole level was fetched, held in memory and kept in the store (2,001 requests, 2,001 blocks kept).
    gw, url, _server = block_gateway
    root = _wide_node(gw, 2000)
    store = BlockStore(tmp_path / "home", fsync=False)
    concurrency, bound = 8, 100_000
    session = Gateways([url], store=store, keep=True).open(parse_uri(f"ipfs://{cid_to_str(root)}"), HttpOptions())
    try:
        fetch_ahead(session).prefetch([root], bound, concurrency)
    finally:
        session.close()
    kept = [store.get(cid) for cid in store.iter_blocks()]
    # The bound is checked between slices of the level: it may be passed by one slice at most.
    assert sum(len(block) for block in kept) <= bound + _PREFETCH_SLICE * concurrency * _CHILD_BYTES
    assert len(gw.requests) == len(kept) < 2000
