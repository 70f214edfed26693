"""The interface reads a bundle's files with a visit budget keyed to each file's size (review of issue 12).

A manifest that is one empty block linked a billion times claims 0 bytes, so
only counting block visits stops it. The walker's default allows a million
visits, seconds of work on every page request for a 138 KB CAR; the interface
reads like ``load`` does (``bundle._bounded.read_bounded``): at most
``1024 + size / 1024`` visits for a file of ``size`` bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundlekit.bundle._bounded import visit_budget
from bundlekit.car.writer import CarWriter
from bundlekit.errors import DAGLimitExceeded
from bundlekit.gateway.server import close_source, make_source
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, PBLink, UnixFSData, encode_node
from bundlekit.ui import model


def _put(blocks: dict[bytes, bytes], codec: int, data: bytes) -> bytes:
    cid = make_cid(1, codec, data)
    blocks[cid] = data
    return cid


def _empty_reused_manifest_car(path: Path) -> bytes:
    """A bundle whose manifest.json is 3 levels of 1000 links to one empty leaf (10**9 visits, 0 bytes)."""
    blocks: dict[bytes, bytes] = {}
    node = _put(blocks, RAW, b"")
    for _ in range(3):
        data = UnixFSData(type=FILE, filesize=0, blocksizes=[0] * 1000).encode()
        node = _put(blocks, DAG_PB, encode_node([PBLink(node, b"", 0)] * 1000, data))
    index = _put(blocks, RAW, b"# index\n")
    memory = _put(blocks, DAG_PB, encode_node([PBLink(index, b"MEMORY.md", 8)], UnixFSData(type=DIRECTORY).encode()))
    links = [PBLink(node, b"manifest.json", 0), PBLink(memory, b"memory", 0)]
    root = _put(blocks, DAG_PB, encode_node(links, UnixFSData(type=DIRECTORY).encode()))
    with open(path, "wb") as fh:
        writer = CarWriter(fh, [root])
        for cid, data in blocks.items():
            writer.put(cid, data)
        writer.close()
    return root


def test_a_manifest_reusing_an_empty_block_stops_at_the_size_keyed_visit_budget(tmp_path: Path) -> None:
    root = _empty_reused_manifest_car(tmp_path / "bomb.car")
    source = make_source(cars=[tmp_path / "bomb.car"])
    try:
        with pytest.raises(DAGLimitExceeded, match=f"more than {visit_budget(model.MAX_SHOWN_FILE)} block visits"):
            model.read_bundle(source.get, root)
    finally:
        close_source(source)
