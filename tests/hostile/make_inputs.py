"""Build the hostile inputs of issue 12 as small CAR files: DAGs that reuse blocks to claim huge sizes.

Run ``python tests/hostile/make_inputs.py DIR`` to write them into DIR (the
tests call ``write_inputs`` into a temporary directory). Every input is a few
kilobytes of valid, verifying blocks; what makes each hostile is only how
often one block is linked:

* ``hamt-bomb.car``: a HAMT directory of four shards; every slot of the three
  upper shards links the one shard below it, and the last holds 256 entries,
  so the directory claims 256**4 (about 4 * 10**9) entries.
* ``file-bomb.car``: a file of 40 levels, each node linking the one below
  twice, over one 1 KiB raw leaf: it claims 2**50 bytes (1 PiB), and every
  ``blocksizes`` entry is consistent.
* ``dir-bomb.car``: 30 directories, each holding ``a`` and ``b`` that both
  link the one below, over one small file: 2**30 paths.

The shapes are UnixFS as boxo and js-ipfs-unixfs read them (ipfs/specs
``UNIXFS.md``: HAMT link names are the two uppercase hex digits of the slot,
followed by the entry name for an entry; fanout 256 and murmur3 0x22).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from bundlekit.car.writer import CarWriter
from bundlekit.ipld.cid import DAG_PB, RAW, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, HAMT_SHARD, PBLink, UnixFSData, encode_node

__all__ = ["INPUTS", "dir_bomb", "file_bomb", "hamt_bomb", "write_inputs"]

Blocks = list[tuple[bytes, bytes]]
_FANOUT = 256
_MURMUR3 = 0x22


def _node(blocks: Blocks, links: list[PBLink], ufs: UnixFSData) -> bytes:
    data = encode_node(links, ufs.encode())
    cid = make_cid(1, DAG_PB, data)
    blocks.append((cid, data))
    return cid


def _raw(blocks: Blocks, content: bytes) -> bytes:
    cid = make_cid(1, RAW, content)
    blocks.append((cid, content))
    return cid


def _shard(blocks: Blocks, links: list[PBLink]) -> bytes:
    ufs = UnixFSData(HAMT_SHARD, data=b"\xff" * (_FANOUT // 8), hash_type=_MURMUR3, fanout=_FANOUT)
    return _node(blocks, links, ufs)


def hamt_bomb(levels: int = 4) -> tuple[bytes, Blocks]:
    """A HAMT directory claiming ``256**levels`` entries from ``levels`` shards (root, blocks)."""
    blocks: Blocks = []
    leaf = _raw(blocks, b"hostile\n")
    shard = _shard(blocks, [PBLink(leaf, b"%02Xf%03d.md" % (slot, slot), 8) for slot in range(_FANOUT)])
    for _ in range(levels - 1):
        shard = _shard(blocks, [PBLink(shard, b"%02X" % slot, 0) for slot in range(_FANOUT)])
    return shard, blocks


def file_bomb(levels: int = 40, leaf_size: int = 1024) -> tuple[bytes, Blocks]:
    """A file claiming ``leaf_size * 2**levels`` bytes: each level links the one below twice."""
    blocks: Blocks = []
    node = _raw(blocks, b"x" * leaf_size)
    size = leaf_size
    for _ in range(levels):
        ufs = UnixFSData(FILE, filesize=2 * size, blocksizes=[size, size])
        node = _node(blocks, [PBLink(node, b"", size), PBLink(node, b"", size)], ufs)
        size *= 2
    return node, blocks


def dir_bomb(levels: int = 30) -> tuple[bytes, Blocks]:
    """A directory with ``2**levels`` file paths: each level holds ``a`` and ``b``, both the level below."""
    blocks: Blocks = []
    node = _raw(blocks, b"hostile\n")
    for _ in range(levels):
        node = _node(blocks, [PBLink(node, b"a", 8), PBLink(node, b"b", 8)], UnixFSData(DIRECTORY))
    return node, blocks


def _car(root: bytes, blocks: Blocks) -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out, [root])
    for cid, data in blocks:
        writer.put(cid, data)
    writer.close()
    return out.getvalue()


INPUTS = {"hamt-bomb.car": hamt_bomb, "file-bomb.car": file_bomb, "dir-bomb.car": dir_bomb}


def write_inputs(directory: Path) -> dict[str, Path]:
    """Write every input into ``directory``; return name -> path."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, build in INPUTS.items():
        path = directory / name
        path.write_bytes(_car(*build()))
        paths[name] = path
    return paths


if __name__ == "__main__":
    for name, path in write_inputs(Path(sys.argv[1] if len(sys.argv) > 1 else ".")).items():
        print(f"{name}\t{path.stat().st_size} bytes")
