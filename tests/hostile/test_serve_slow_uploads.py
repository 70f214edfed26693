"""Issue 35, item 4: slow clients held open cost `bundlekit serve` no worker, so every read is still answered.

Before, ``serve`` held one thread per connection and at most 64: 64 sockets that sent a request
head and then a byte of body every few seconds made every GET a ``503`` for 30 s. Driven as an
attacker would: raw sockets against a running ``bundlekit serve`` (its own process, as a user
starts it, with the hub's push API), :data:`SLOW` uploads held open with a byte of body each (pushes among them:
a push spooled to disk costs no thread either), then gateway and routing GETs,
each with the issue's 1 s bound as its client timeout.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

from bundlekit.blockstore import BlockStore
from bundlekit.ipld.cid import RAW, cid_to_str, make_cid

SLOW = 512  # uploads held open at once (the target)
ANSWER_WITHIN = 1.0  # seconds, the target for each GET while they are held
_GUARD = 30.0  # seconds: only so a hung server fails the test instead of hanging it
_NAME = "k51qzi5uqu5dlvj2baxnqndepeb86cbk3ng7n3i46uzyxzyqj2xjonzllnv0v8"  # well formed, unknown here
_TOKEN = "hub-token-0123456789abcdef"  # the hub's push API is mounted: a third of the uploads are pushes


@contextmanager
def _serve(store: Path) -> Iterator[str]:
    """``bundlekit serve --store STORE --port 0`` in a child process; yields its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "bundlekit", "serve", "--store", str(store), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "BUNDLEKIT_SERVE_TOKEN": _TOKEN})
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=_GUARD)
        assert proc.stdout is not None
        proc.stdout.close()


def _slow_uploads(stack: ExitStack, url: str, count: int) -> list[socket.socket]:
    """``count`` connections, each having sent a request head and one byte of the body it promises: a routing
    record's (read by the routing API), one the gateway reads to drop it, or a push with the token (spooled
    by the push API, 1 GiB promised), each within its bound."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    socks = []
    for i in range(count):
        sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=_GUARD))
        method, target, length, extra = [
            ("PUT", f"/routing/v1/ipns/{_NAME}", 5000, ""),
            ("PUT", "/ipfs/bafkqaaa", 60000, ""),
            ("POST", "/api/v0/dag/import", 1 << 30,
             f"Authorization: Bearer {_TOKEN}\r\nContent-Type: multipart/form-data; boundary=x\r\n"),
        ][i % 3]
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}Content-Length: {length}\r\n\r\nx"
                     .encode())
        socks.append(sock)
    return socks


def _answered(sock: socket.socket) -> bool:
    """Whether the server sent anything (a 503 refusal, an answer) or closed this connection."""
    return bool(select.select([sock], [], [], 0)[0])


def test_slow_uploads_held_open_leave_every_get_answered_within_a_second(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "store")
    data = b"a block served while the uploads trickle"
    cid = make_cid(1, RAW, data)
    store.put(cid, data)
    with _serve(tmp_path / "store") as url, ExitStack() as stack:
        slow = _slow_uploads(stack, url, SLOW)
        # The first answer may wait for the server to take in the 512 connections just opened.
        assert httpx.get(f"{url}/ipfs/{cid_to_str(cid)}?format=raw", timeout=_GUARD).status_code == 200
        with httpx.Client(base_url=url, timeout=ANSWER_WITHIN) as client:
            for _round in range(3):
                block = client.get(f"/ipfs/{cid_to_str(cid)}", params={"format": "raw"})
                assert block.status_code == 200 and block.content == data
                assert client.get(f"/routing/v1/ipns/{_NAME}").status_code < 500
                for sock in slow[:: SLOW // 8]:
                    sock.sendall(b"x")  # a byte of body now and then: still held, never answered
        assert not [sock for sock in slow if _answered(sock)]
