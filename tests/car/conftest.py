"""Helpers that build UnixFS DAGs by hand (bundlekit.ipld.dagpb + bundlekit.ipld.cid).

They let the CAR/verify/unpack tests build honest and hostile DAGs alike
without the importer: cycles, `../` names, over-deep chains, duplicates.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from bundlekit.car.writer import CarWriter
from bundlekit.errors import MissingBlock
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, HAMT_SHARD, PBLink, UnixFSData, encode_node


class Blocks:
    """An ordered block collection that is also a sink and a getter."""

    def __init__(self) -> None:
        self.blocks: dict[bytes, bytes] = {}

    def put(self, cid: bytes, data: bytes) -> None:
        self.blocks.setdefault(cid, data)

    def get(self, cid: bytes) -> bytes:
        try:
            return self.blocks[cid]
        except KeyError:
            raise MissingBlock(f"no block {cid.hex()}") from None

    def raw(self, data: bytes) -> bytes:
        cid = make_cid(1, RAW, data)
        self.put(cid, data)
        return cid

    def node(self, links: list[PBLink], ufs: UnixFSData, version: int = 1) -> bytes:
        data = encode_node(links, ufs.encode())
        cid = make_cid(version, DAG_PB, data)
        self.put(cid, data)
        return cid

    def tsize(self, cid: bytes) -> int:
        # Honest cumulative size: the block plus every child's Tsize.
        from bundlekit.ipld.dagpb import decode_node

        data = self.blocks[cid]
        if cid[1:2] == bytes([RAW]):
            return len(data)
        links, _ = decode_node(data)
        return len(data) + sum(link.tsize for link in links)

    def file(self, content: bytes, chunk: int = 4, raw_leaves: bool = True, fanout: int = 3) -> bytes:
        """A balanced file DAG: leaves of ``chunk`` bytes, ``fanout`` links per node."""
        if len(content) <= chunk:
            if raw_leaves and content:
                return self.raw(content)
            return self.node([], UnixFSData(FILE, data=content, filesize=len(content)))
        level: list[tuple[bytes, int]] = []
        for i in range(0, len(content), chunk):
            piece = content[i : i + chunk]
            cid = self.raw(piece) if raw_leaves else self.node([], UnixFSData(FILE, data=piece, filesize=len(piece)))
            level.append((cid, len(piece)))
        while len(level) > 1:
            nxt = []
            for i in range(0, len(level), fanout):
                group = level[i : i + fanout]
                links = [PBLink(c, b"", self.tsize(c)) for c, _ in group]
                sizes = [s for _, s in group]
                nxt.append((self.node(links, UnixFSData(FILE, filesize=sum(sizes), blocksizes=sizes)), sum(sizes)))
            level = nxt
        return level[0][0]

    def directory(self, entries: dict[str, bytes] | list[tuple[bytes, bytes]]) -> bytes:
        """A flat directory; a dict is sorted by UTF-8 name bytes, a list is kept as given (hostile)."""
        if isinstance(entries, dict):
            items = sorted((name.encode(), cid) for name, cid in entries.items())
        else:
            items = list(entries)
        links = [PBLink(cid, name, self.tsize(cid)) for name, cid in items]
        return self.node(links, UnixFSData(DIRECTORY))

    def hamt(self, entries: dict[str, bytes], fanout: int = 256) -> bytes:
        """A one-level HAMT shard, entries placed in slots by order (the reader does not hash)."""
        width = len(f"{fanout - 1:X}")
        names = sorted(entries)
        # Put the first two entries in one sub-shard to exercise nesting.
        sub_names, top_names = names[:2], names[2:]
        sub_links = [
            PBLink(entries[n], f"{i:0{width}X}".encode() + n.encode(), self.tsize(entries[n]))
            for i, n in enumerate(sub_names)
        ]
        sub_bits = sum(1 << i for i in range(len(sub_names)))
        sub = self.node(sub_links, UnixFSData(HAMT_SHARD, data=_bitfield(sub_bits), hash_type=0x22, fanout=fanout))
        links = [PBLink(sub, f"{0:0{width}X}".encode(), self.tsize(sub))]
        bits = 1
        for i, n in enumerate(top_names, start=1):
            links.append(PBLink(entries[n], f"{i:0{width}X}".encode() + n.encode(), self.tsize(entries[n])))
            bits |= 1 << i
        return self.node(links, UnixFSData(HAMT_SHARD, data=_bitfield(bits), hash_type=0x22, fanout=fanout))

    def car(self, roots: list[bytes], skip: frozenset[bytes] = frozenset()) -> bytes:
        out = io.BytesIO()
        writer = CarWriter(out, roots)
        for cid, data in self.blocks.items():
            if cid not in skip:
                writer.put(cid, data)
        writer.close()
        return out.getvalue()


def _bitfield(bits: int) -> bytes:
    return bits.to_bytes(max(1, (bits.bit_length() + 7) // 8), "big")


@pytest.fixture
def blocks() -> Blocks:
    return Blocks()


@pytest.fixture
def sample_tree(blocks: Blocks) -> tuple[Blocks, bytes, dict[str, bytes]]:
    """A small honest tree: files of several layouts, a nested dir, an empty dir."""
    files = {
        "a.md": b"# alpha\n",
        "big.bin": bytes(range(256)) * 3,
        "empty.txt": b"",
        "sub/b.txt": b"bravo bravo bravo",
        "sub/deeper/c.txt": b"c",
    }
    deeper = blocks.directory({"c.txt": blocks.file(files["sub/deeper/c.txt"])})
    sub = blocks.directory({"b.txt": blocks.file(files["sub/b.txt"], raw_leaves=False), "deeper": deeper})
    root = blocks.directory(
        {
            "a.md": blocks.file(files["a.md"]),
            "big.bin": blocks.file(files["big.bin"], chunk=16, fanout=4),
            "empty.txt": blocks.file(b""),
            "sub": sub,
            "void": blocks.directory({}),
        }
    )
    return blocks, root, files


@pytest.fixture
def write_car(tmp_path: Path) -> Callable[[bytes, str], Path]:
    def write(data: bytes, name: str = "t.car") -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return write
