"""Payloads found to break the raw-block fast path (``gateway.fastpath``) or what came with it (issue 35).

Each was found by sending the same bytes over real sockets to a running ``serve`` with the fast path on
and off (``transport.simple_get`` replaced by one that takes nothing) and comparing the answers.
"""

from __future__ import annotations

import gc
import socket
import tracemalloc
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bundlekit.gateway.respond as respond
import bundlekit.gateway.transport as transport
from bundlekit.gateway.fastpath import simple_get
from bundlekit.gateway.respond import GatewayResponder
from bundlekit.gateway.server import serve_in_thread
from bundlekit.gateway.sources import MemorySource
from bundlekit.ipld.cid import DAG_PB, RAW, cid_to_str, make_cid
from bundlekit.ipld.dagpb import FILE, PBLink, UnixFSData, encode_node

LEAVES = [b"hello world, ", b"a file in two chunks"]
LEAF_CIDS = [make_cid(1, RAW, leaf) for leaf in LEAVES]
FILE_NODE = encode_node([PBLink(c, b"", len(leaf)) for c, leaf in zip(LEAF_CIDS, LEAVES, strict=True)],
                        UnixFSData(type=FILE, filesize=sum(map(len, LEAVES)), blocksizes=[len(x) for x in LEAVES]).encode())
FILE_CID = make_cid(1, DAG_PB, FILE_NODE)
BLOCKS = {FILE_CID: FILE_NODE, **dict(zip(LEAF_CIDS, LEAVES, strict=True))}


def _answers(url: str, request: bytes) -> bytes:
    """What the server sends for ``request`` on one connection until it has been quiet for half a second
    (its ``date`` lines dropped), and whether it closed the connection."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    out = b""
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        sock.settimeout(0.5)
        while True:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                return b"".join(line for line in out.splitlines(keepends=True) if not line.startswith(b"date: "))
            if not data:
                return out + b"<closed>"
            out += data


def test_a_fragment_in_the_target_takes_the_whole_way_and_gets_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``/ipfs/{cid}#?format=raw``: the request rules read the target with ``urlsplit``, for which ``#`` starts
    a fragment, so there is no query and the answer is the file's bytes, streamed. The fast path took it and,
    unable to frame a streamed body, cut the connection; the whole way answers 200 with the file."""
    request = f"GET /ipfs/{cid_to_str(FILE_CID)}#?format=raw HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    assert simple_get(request) is None
    with serve_in_thread(MemorySource(BLOCKS, [FILE_CID], "test")) as server:
        fast = _answers(server.url, request)
        monkeypatch.setattr(transport, "simple_get", lambda data: None)
        whole = _answers(server.url, request)
    assert fast == whole
    assert fast.startswith(b"HTTP/1.1 200 ") and fast.endswith(b"".join(LEAVES))


_TARGET_CHARS = "".join(chr(c) for c in range(0x21, 0x7F))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_TARGET_CHARS, min_size=1, max_size=40), st.sampled_from(["", "#", "?", "/", "%23", "#x"]))
def test_every_target_taken_is_read_by_the_request_rules_as_one_raw_block(cid: str, extra: str) -> None:
    """What the fast path takes, the request rules (``respond``: ``urlsplit``) read as ``/ipfs/{one segment}``
    with the query exactly ``format=raw`` and no fragment: its answer is a raw block's (or an error)."""
    for text in (cid + extra, extra + cid):
        taken = simple_get(f"GET /ipfs/{text}?format=raw HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        if taken is None:
            continue
        url = urlsplit(taken.target)
        assert (url.query, url.fragment) == ("format=raw", "")
        assert url.path.startswith("/ipfs/") and "/" not in url.path[len("/ipfs/"):]


def _identity_cid(index: int, size: int) -> str:
    digest = index.to_bytes(4, "big") + bytes(size)
    length = len(digest)
    varint = bytes([length & 0x7F | 0x80, length >> 7]) if length >= 0x80 else bytes([length])
    return cid_to_str(bytes([0x01, RAW, 0x00]) + varint + digest)


def test_long_cids_asked_for_are_not_kept_by_the_gateway() -> None:
    """An identity CID inlines its block, and a request may name one of thousands of bytes: the gateway's
    remembered CID names, parsed CIDs and paths (``respond._remembered``) kept each, 4,096 of them, so a client
    naming distinct long CIDs held over a gigabyte of the server (measured: 1,000 requests, +313 MiB)."""
    gateway = GatewayResponder(MemorySource({}, [], "empty"))
    for index in range(20):  # warm: whatever a first answer allocates once
        gateway.respond("GET", f"/ipfs/{_identity_cid(index, 16)}?format=raw", {"host": "a"})
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(400):
            answer = gateway.respond("GET", f"/ipfs/{_identity_cid(index, 2400)}?format=raw", {"host": "a"})
            assert answer.status == 200
        del answer
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Kept whole, 400 answers' names, CIDs and paths were about 8 MB; what stays is urlsplit's own 128 targets.
    assert kept < 3 * 1024 * 1024


def test_the_usual_cid_is_still_remembered() -> None:
    """A sha2-256 CID's name is computed once (the reason for remembering: base32 in Python)."""
    cid = make_cid(1, RAW, b"remembered")
    assert respond._name(cid) is respond._name(cid)
    long_cid = bytes([0x01, RAW, 0x00, 0x80 | 0x2C, 0x02]) + bytes(300)
    assert respond._name(long_cid) == cid_to_str(long_cid)
    assert respond._name(long_cid) is not respond._name(long_cid)
