"""Shared fixtures for the store and gateway tests.

Small UnixFS DAGs are built here directly with ``bundlekit.ipld.dagpb`` so the
tests do not depend on the importer's chunking choices: every block and CID
is known, which lets a test remove or damage exactly one block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.errors import MissingBlock
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import DIRECTORY, FILE, PBLink, UnixFSData, encode_node

FIXED_TIME = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class DictSource:
    """A block source over a dict: any object with get/has can be served."""

    def __init__(self, blocks: dict[bytes, bytes]) -> None:
        self.blocks = blocks

    def get(self, cid: bytes) -> bytes:
        try:
            return self.blocks[cid]
        except KeyError:
            raise MissingBlock(cid_to_str(cid)) from None

    def has(self, cid: bytes) -> bool:
        return cid in self.blocks


@dataclass
class Dag:
    """Blocks of a hand-built UnixFS DAG, in walk order (parents before children)."""

    blocks: dict[bytes, bytes] = field(default_factory=dict)
    root: bytes = b""
    # path -> (cid, kind, content for files)
    entries: dict[str, tuple[bytes, str, bytes | None]] = field(default_factory=dict)

    def add(self, cid: bytes, data: bytes) -> bytes:
        self.blocks.setdefault(cid, data)
        return cid

    def file(self, content: bytes, chunk: int = 4) -> tuple[bytes, int]:
        """A file: one raw leaf when small, else a dag-pb node over raw leaves. Returns (cid, tsize)."""
        if len(content) <= chunk:
            return self.add(make_cid(1, RAW, content), content), len(content)
        links = []
        sizes = []
        for i in range(0, len(content), chunk):
            piece = content[i : i + chunk]
            links.append(PBLink(self.add(make_cid(1, RAW, piece), piece), b"", len(piece)))
            sizes.append(len(piece))
        node = encode_node(links, UnixFSData(type=FILE, filesize=len(content), blocksizes=sizes).encode())
        return self.add(make_cid(1, DAG_PB, node), node), len(node) + sum(sizes)

    def directory(self, children: dict[str, tuple[bytes, int]]) -> tuple[bytes, int]:
        links = [PBLink(cid, name.encode(), tsize) for name, (cid, tsize) in sorted(children.items())]
        node = encode_node(links, UnixFSData(type=DIRECTORY).encode())
        return self.add(make_cid(1, DAG_PB, node), node), len(node) + sum(t for _c, t in children.values())


def build_tree(files: dict[str, bytes], chunk: int = 4) -> Dag:
    """A UnixFS directory DAG holding ``files`` ({"a/b.md": bytes}); nested dirs are created."""
    dag = Dag()
    tree: dict[str, object] = {}
    for path, content in files.items():
        node = tree
        parts = path.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})  # type: ignore[assignment]
        node[parts[-1]] = content  # type: ignore[index]

    def emit(node: dict[str, object], prefix: str) -> tuple[bytes, int]:
        children: dict[str, tuple[bytes, int]] = {}
        for name, value in node.items():
            path = f"{prefix}{name}"
            if isinstance(value, bytes):
                cid, tsize = dag.file(value, chunk)
                dag.entries[path] = (cid, "file", value)
            else:
                cid, tsize = emit(value, path + "/")  # type: ignore[arg-type]
                dag.entries[path] = (cid, "directory", None)
            children[name] = (cid, tsize)
        return dag.directory(children)

    dag.root, _ = emit(tree, "")
    dag.entries[""] = (dag.root, "directory", None)
    return dag


SAMPLE_FILES = {
    "manifest.json": b'{"format":"bundlekit/1"}',
    "memory/MEMORY.md": b"# Memory\n- [a](a.md)\n",
    "memory/a.md": b"---\nname: a\n---\nalpha body text\n",
    "memory/timeline/2026-01-02.jsonl": b'{"type":"note"}\n',
}


@pytest.fixture
def sample_dag() -> Dag:
    return build_tree(SAMPLE_FILES)


@pytest.fixture
def store(tmp_path: Path) -> BlockStore:
    return BlockStore(tmp_path / "store", fsync=False, clock=lambda: FIXED_TIME)


@pytest.fixture
def filled_store(store: BlockStore, sample_dag: Dag) -> Iterator[BlockStore]:
    for cid, data in sample_dag.blocks.items():
        store.put(cid, data)
    yield store


@pytest.fixture
def tree_builder():  # type: ignore[no-untyped-def]
    """``build_tree`` for tests that need their own DAG (conftest is not importable by name)."""
    return build_tree


@pytest.fixture
def gateway(filled_store: BlockStore) -> Iterator[str]:
    """Base URL of a real gateway on a free loopback port, serving ``filled_store``."""
    from bundlekit.gateway.server import serve_in_thread

    with serve_in_thread(store=filled_store) as server:
        yield server.url


@pytest.fixture(scope="session")
def _session_http() -> Iterator[httpx.Client]:
    # Building an httpx.Client loads the TLS trust store (most of a second on a busy
    # machine); one per session keeps the suite fast.
    with httpx.Client(timeout=10) as c:
        yield c


@pytest.fixture
def client(gateway: str, _session_http: httpx.Client) -> httpx.Client:
    """An HTTP client whose relative URLs go to the ``gateway`` fixture's server."""
    _session_http.base_url = httpx.URL(gateway)
    return _session_http


@pytest.fixture
def sample_car(tmp_path: Path, sample_dag: Dag) -> Path:
    """The sample DAG as a CAR file (blocks in walk order)."""
    from bundlekit.car.writer import CarWriter

    path = tmp_path / "sample.car"
    with path.open("wb") as fh:
        writer = CarWriter(fh, [sample_dag.root])
        for cid, data in sample_dag.blocks.items():
            writer.put(cid, data)
        writer.close()
    return path
