"""A gateway whose CAR opens with millions of tiny blocks nobody asked for cannot make a load outgrow its memory.

The loader keeps blocks that arrive before it asks for them, up to ``net.stream.WINDOW_BYTES`` (256 MiB). Each such
block costs about 165 bytes of Python objects beyond its data; counted by data alone, a CAR of distinct 4-byte raw
blocks (41 bytes each on the wire) never filled the window and the load held every one of them: 3,000,000 took
the load past this harness's 512 MiB address space ("out of memory", exit 1, nothing loaded). Counted with
``KEPT_BLOCK_COST``, the window fills after about 1.1 million of them, the stream is left, and the bundle's
blocks come one request each: the load succeeds (231 MiB peak RSS here).
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from bundlekit.bundle.build import build_bundle
from bundlekit.car.format import encode_header
from bundlekit.car.reader import read_car
from bundlekit.ipld.cid import as_cidv1, encode_varint, parse_cid
from bundlekit.memory import Memory
from tests.net.loopback import Answer, send, serve

from .conftest import TIMEOUT, bounded, child_env

JUNK = 3_000_000
_RAW_SHA256 = bytes((1, 0x55, 0x12, 0x20))
_JUNK_ENTRY = 1 + 36 + 4  # varint(40), the CID, four bytes of data


def _junk() -> Iterator[bytes]:
    """The CAR entries of ``JUNK`` distinct raw blocks of four bytes, in batches."""
    for start in range(0, JUNK, 20_000):
        parts = []
        for i in range(start, min(start + 20_000, JUNK)):
            data = i.to_bytes(4, "big")
            parts.append(b"\x28" + _RAW_SHA256 + hashlib.sha256(data).digest() + data)
        yield b"".join(parts)


def _gateway(blocks: dict[bytes, bytes], entries: bytes) -> Answer:
    """A trustless gateway: a CAR request gets the junk first, then the bundle's blocks; a raw request its block."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        url = urlparse(handler.path)
        cid = as_cidv1(parse_cid(url.path.split("/ipfs/", 1)[1].split("/")[0]))
        if parse_qs(url.query).get("format") != ["car"] and "car" not in handler.headers.get("Accept", ""):
            found = blocks.get(cid)
            send(handler, 200 if found is not None else 404, found or b"", {"Content-Type": "application/vnd.ipld.raw"})
            return
        header = encode_header([cid])
        handler.send_response(200)
        handler.send_header("Content-Type", "application/vnd.ipld.car; version=1; order=dfs; dups=y")
        handler.send_header("Content-Length", str(len(header) + JUNK * _JUNK_ENTRY + len(entries)))
        handler.end_headers()
        handler.wfile.write(header)
        for batch in _junk():
            handler.wfile.write(batch)
        handler.wfile.write(entries)

    return answer


def test_a_car_of_millions_of_tiny_unasked_blocks_leaves_the_load_within_its_memory(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "tree")
    for i in range(12):
        memory.write(f"note-{i}", name=f"Note {i}", description="a note", type="user", body=f"body {i} " * 40)
    memory.close()
    built = build_bundle(tmp_path / "tree", tmp_path / "b.car")
    with open(tmp_path / "b.car", "rb") as car:
        blocks = {as_cidv1(cid): bytes(data) for cid, data in read_car(car)[1]}
    entries = b"".join(encode_varint(len(cid) + len(data)) + cid + data for cid, data in blocks.items())
    env = child_env()
    env["BUNDLEKIT_HOME"] = str(tmp_path / "home")
    with serve(_gateway(blocks, entries)) as url:
        done = subprocess.run(
            bounded("load", f"ipfs://{built.root_cid}", "--gateway", url, "-o", str(tmp_path / "out")),
            capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False,
        )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("note-*.md")) == sorted(f"note-{i}.md" for i in range(12))
