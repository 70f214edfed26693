"""A pushed body on the uvicorn server (``gateway/bodies.py``, ``SpooledBodyApp``): read under the idle timeout once
admitted, never left on disk.

Driven as a writer (or an attacker) would: raw sockets against ``serve_in_thread`` with the push API mounted.
Spooled bodies are unnamed temp files (``_fs.scratch_file``): while one is open this process holds a descriptor
of a deleted file under the temp folder, so counting those says whether one outlived its request.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.hub.kubo import MOUNT, KuboAPI
from bundlekit.gateway.server import GatewayServer, serve_in_thread
from tests.net.loopback import answer_head
from tests.pinners.conftest import build_car

TOKEN = "hub-token-0123456789abcdef"
BOUNDARY = "b0und4ry"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GatewayServer]:
    store = BlockStore(tmp_path / "hub", fsync=False)
    with serve_in_thread(store=store, apps={MOUNT: KuboAPI(store, TOKEN).app()}) as running:
        yield running


def _body(tmp_path: Path) -> bytes:
    car = build_car(tmp_path / "bundle.car", [b"hello team", b"second leaf"])
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"bundle.car\"\r\n"
            "Content-Type: application/vnd.ipld.car\r\n\r\n").encode() + car.path.read_bytes() + \
        f"\r\n--{BOUNDARY}--\r\n".encode()


def _head(server: GatewayServer, length: int, token: str = TOKEN) -> bytes:
    port = int(server.server_address[1])
    return (f"POST {MOUNT}dag/import HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n").encode()


def _spooled_files() -> int:
    """Descriptors of this process on deleted files of the temp folder (unnamed temp files)."""
    temp = os.path.realpath(tempfile.gettempdir())
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(temp) and target.endswith("(deleted)")
    return count


def _settles(before: int) -> bool:
    deadline = time.monotonic() + 5
    while _spooled_files() > before:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_push_cut_off_half_way_leaves_no_temp_file(server: GatewayServer, tmp_path: Path) -> None:
    body = _body(tmp_path)
    before = _spooled_files()
    with socket.create_connection(("127.0.0.1", int(server.server_address[1])), timeout=10) as sock:
        sock.sendall(_head(server, len(body)) + body[: len(body) // 2])
        time.sleep(0.3)  # the half is spooled by now
    assert _settles(before)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_a_push_past_its_bound_and_a_push_answered_leave_no_temp_file(tmp_path: Path) -> None:
    store = BlockStore(tmp_path / "hub", fsync=False)
    body = _body(tmp_path)
    before = _spooled_files()
    small = KuboAPI(store, TOKEN).app()
    with serve_in_thread(store=store, apps={MOUNT: type(small)(small.respond, len(body) - 10, small.methods,
                                                               small.admit)}) as server:
        chunked = (f"POST {MOUNT}dag/import HTTP/1.1\r\nHost: 127.0.0.1:{server.server_address[1]}\r\n"
                   f"Authorization: Bearer {TOKEN}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n"
        with socket.create_connection(("127.0.0.1", int(server.server_address[1])), timeout=10) as sock:
            sock.sendall(chunked)
            assert answer_head(sock).startswith(b"HTTP/1.1 413 ")
        assert _settles(before)
    with serve_in_thread(store=store, apps={MOUNT: KuboAPI(store, TOKEN).app()}) as server:
        with socket.create_connection(("127.0.0.1", int(server.server_address[1])), timeout=10) as sock:
            sock.sendall(_head(server, len(body)) + body)
            assert answer_head(sock).startswith(b"HTTP/1.1 200 ")
        assert _settles(before)


def test_an_admitted_push_is_bounded_by_the_idle_timeout_not_the_heads_deadline(server: GatewayServer,
                                                                             tmp_path: Path) -> None:
    server.head_timeout = 0.5  # read by each connection as it is set up
    body = _body(tmp_path)
    with socket.create_connection(("127.0.0.1", int(server.server_address[1])), timeout=10) as sock:
        sock.sendall(_head(server, len(body)))
        pieces = [body[i:i + len(body) // 6 + 1] for i in range(0, len(body), len(body) // 6 + 1)]
        for piece in pieces:  # about 1.4 s in all, well past the head's deadline, a piece every 0.2 s
            time.sleep(0.2)
            sock.sendall(piece)
        assert answer_head(sock).startswith(b"HTTP/1.1 200 ")


def test_a_body_no_app_takes_is_held_to_the_heads_deadline(server: GatewayServer) -> None:
    server.head_timeout = 0.5
    port = int(server.server_address[1])
    head = f"PUT {MOUNT}dag/import HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 60000\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + b"x")  # not a push method: its body is read only to be dropped, within the deadline
        started = time.monotonic()
        while sock.recv(4096):  # whatever comes, the connection closes long before the idle timeout
            pass
        assert time.monotonic() - started < 5


def test_a_client_cannot_forge_its_address_with_a_peer_header(server: GatewayServer) -> None:
    port = int(server.server_address[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST {MOUNT}id HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n:peer: 10.0.0.1\r\n\r\n".encode())
        assert answer_head(sock).startswith(b"HTTP/1.1 400 ")
