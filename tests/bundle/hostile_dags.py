"""Hand-built hostile bundle DAGs for the loader's bounds (issue 12): a few KB claiming gigabytes.

Each function writes a CAR and returns its path. The DAGs are built block by
block with the project's own dag-pb/UnixFS encoders (``ipld.dagpb``), the way
an attacker would write them: every slot of a file node links the same child,
so one block stands for ``fanout ** depth`` visits.
"""

from __future__ import annotations

from pathlib import Path

from bundlekit.bundle.manifest import canonical_json
from bundlekit.car.writer import CarWriter
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, PBLink, UnixFSData, encode_node

Blocks = dict[bytes, bytes]


def _put(blocks: Blocks, codec: int, data: bytes) -> bytes:
    cid = make_cid(1, codec, data)
    blocks[cid] = data
    return cid


def reused_file(blocks: Blocks, *, leaf: bytes, fanout: int, depth: int) -> tuple[bytes, int]:
    """A file DAG whose every node links one child ``fanout`` times, ``depth`` levels deep; (cid, claimed size)."""
    cid, size = _put(blocks, RAW, leaf), len(leaf)
    for _ in range(depth):
        node = UnixFSData(type=FILE, filesize=size * fanout, blocksizes=[size] * fanout).encode()
        cid = _put(blocks, DAG_PB, encode_node([PBLink(cid, b"", size)] * fanout, node))
        size *= fanout
    return cid, size


def _directory(blocks: Blocks, entries: dict[str, bytes]) -> bytes:
    links = [PBLink(cid, name.encode(), 0) for name, cid in sorted(entries.items())]
    return _put(blocks, DAG_PB, encode_node(links, UnixFSData(type=DIRECTORY).encode()))


def bundle_car(path: Path, blocks: Blocks, manifest_cid: bytes, memory: dict[str, bytes]) -> Path:
    """A bundle-shaped DAG (``manifest.json`` + ``memory/``) over ``blocks``, written as a CAR at ``path``."""
    root = _directory(blocks, {"manifest.json": manifest_cid, "memory": _directory(blocks, memory)})
    with open(path, "wb") as fh:
        writer = CarWriter(fh, [root])
        for cid, data in blocks.items():
            writer.put(cid, data)
        writer.close()
    return path


def manifest_bytes(files: dict[str, tuple[bytes, int]]) -> bytes:
    """A valid plaintext manifest listing ``files`` (bundle path -> (cid, size))."""
    return canonical_json({
        "format": "bundlekit/1", "namespace": "hostile", "created": "2026-04-14T12:00:00Z",
        "profile": "unixfs-v1-2025", "encryption": None,
        "memory": {"index": "memory/MEMORY.md", "timeline": [],
                   "files": {p: {"cid": cid_to_str(c), "size": s} for p, (c, s) in files.items()}},
    })


def reused_manifest_car(path: Path) -> Path:
    """A 7 KB bundle whose ``manifest.json`` is a file DAG claiming 4 TiB through one reused subtree."""
    blocks: Blocks = {}
    manifest, _claimed = reused_file(blocks, leaf=b"{" * 1024, fanout=16, depth=8)
    index = _put(blocks, RAW, b"# index\n")
    return bundle_car(path, blocks, manifest, {"MEMORY.md": index})


def empty_reused_manifest_car(path: Path) -> Path:
    """A bundle whose ``manifest.json`` claims 0 bytes through 1000**3 visits of one empty block."""
    blocks: Blocks = {}
    manifest, _claimed = reused_file(blocks, leaf=b"", fanout=1000, depth=3)
    index = _put(blocks, RAW, b"# index\n")
    return bundle_car(path, blocks, manifest, {"MEMORY.md": index})


def reused_memory_file_car(path: Path, *, declared: int = 64) -> Path:
    """A bundle whose ``memory/big.md`` DAG claims 100 GB while the manifest says ``declared`` bytes."""
    blocks: Blocks = {}
    big, _claimed = reused_file(blocks, leaf=b"x" * 1024, fanout=100, depth=4)
    index_data = b"# index\n"
    index = _put(blocks, RAW, index_data)
    manifest = _put(blocks, RAW, manifest_bytes({
        "memory/MEMORY.md": (index, len(index_data)), "memory/big.md": (big, declared),
    }))
    return bundle_car(path, blocks, manifest, {"MEMORY.md": index, "big.md": big})
