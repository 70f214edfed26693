"""``bundlekit serve`` holds under a flood of slow clients: a bounded number of connections (each a thread),
503 for one more, and a deadline on each request's head. All on loopback."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from bundlekit.blockstore import BlockStore
from bundlekit.cli import cli
from bundlekit.errors import UsageError
from bundlekit.gateway.server import MAX_CLIENT_CONNECTIONS, MAX_CONNECTIONS, GatewayServer, create_server, serve_in_thread

# A request head left unfinished (no blank line): the server waits for the rest.
_PARTIAL_HEAD = b"GET /ipfs/bafkqaaa HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@contextmanager
def _slow_clients(server: GatewayServer, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections, each having sent part of a request head and then nothing."""
    host, port = server.server_address[0], server.server_address[1]
    with ExitStack() as stack:
        socks = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection((str(host), int(port)), timeout=10))
            sock.sendall(_PARTIAL_HEAD)
            socks.append(sock)
        yield socks


def _answer(server: GatewayServer) -> bytes:
    """What a fresh connection receives before the server closes it (or 10 s pass) without sending anything."""
    host, port = server.server_address[0], server.server_address[1]
    with socket.create_connection((str(host), int(port)), timeout=10) as sock:
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


def _until_served(url: str) -> httpx.Response:
    deadline = time.monotonic() + 10
    while True:
        answer = httpx.get(f"{url}/ipfs/bafkqaaa?format=raw")
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def test_the_default_limits_are_documented_and_bounded() -> None:
    # A waiting connection costs a socket, not a thread (issue 35 item 4): thousands, fewer from one address.
    assert MAX_CONNECTIONS == 4096 and MAX_CLIENT_CONNECTIONS == 1024


def test_a_connection_beyond_the_limit_is_answered_503_and_closed(tmp_path: Path) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "s"), max_connections=2) as server, _slow_clients(server, 2):
        answer = _answer(server)
    head, _sep, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ")
    assert b"\r\nRetry-After: 1" in head and b"\r\nConnection: close" in head
    assert body == b"the gateway is serving its limit of 2 connections; retry shortly\n"


def test_a_slot_freed_by_a_client_that_leaves_serves_the_next_one(tmp_path: Path) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "s"), max_connections=2) as server, \
            _slow_clients(server, 2) as socks:
        assert _answer(server).startswith(b"HTTP/1.1 503 ")
        socks[0].close()
        assert _until_served(server.url).status_code != 503


def test_a_flood_of_slow_clients_does_not_grow_the_threads(tmp_path: Path) -> None:
    before = threading.active_count()
    with serve_in_thread(store=BlockStore(tmp_path / "s"), max_connections=4) as server, \
            _slow_clients(server, 40) as socks:
        refused = sum(1 for sock in socks[4:] if sock.recv(64).startswith(b"HTTP/1.1 503 "))
        serving = threading.active_count() - before
    assert refused == 36
    assert serving <= 1 + 4  # the serving loop and one thread per admitted connection


def test_a_client_trickling_its_head_is_cut_off_at_the_head_deadline(tmp_path: Path) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "s")) as server:
        server.head_timeout = 0.3
        host, port = server.server_address[0], server.server_address[1]
        trickle = _PARTIAL_HEAD * 100  # at 20 ms a byte, minutes of head
        sent = 0
        with socket.create_connection((str(host), int(port)), timeout=10) as sock:
            try:
                while sent < len(trickle) and not _closed_by_peer(sock):
                    sock.sendall(trickle[sent : sent + 1])
                    sent += 1
                    time.sleep(0.02)
            except (BrokenPipeError, ConnectionResetError):
                pass
        assert sent < len(trickle)  # the server hung up long before the client was done
        assert _until_served(server.url).status_code != 503  # and serves on


def _closed_by_peer(sock: socket.socket) -> bool:
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


def test_a_limit_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="1 or more"):
        create_server(BlockStore(tmp_path / "s"), port=0, max_connections=0)


def test_serve_max_connections_below_one_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s"), "--max-connections", "0"])
    assert result.exit_code == 2 and "--max-connections" in result.stderr


def test_the_slot_of_a_client_cut_off_at_the_head_deadline_serves_the_next_one(tmp_path: Path) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "s"), max_connections=1) as server:
        server.head_timeout = 0.2  # taken by each connection as it is set up
        with _slow_clients(server, 1):
            assert _until_served(server.url).status_code != 503


def test_the_slot_of_an_idle_connection_serves_the_next_one_after_the_idle_timeout(tmp_path: Path) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "s"), max_connections=1) as server:
        server.idle_timeout = 0.2  # taken by each connection as it is set up
        host, port = server.server_address[0], server.server_address[1]
        with socket.create_connection((str(host), int(port)), timeout=10):
            assert _until_served(server.url).status_code != 503


def test_an_empty_host_is_refused_rather_than_binding_every_interface(tmp_path: Path) -> None:
    with (
        pytest.raises(UsageError, match="--host is empty"),
        serve_in_thread(store=BlockStore(tmp_path / "store"), host=""),
    ):
        pass


def test_a_connection_beyond_the_per_address_limit_is_answered_503_naming_it(tmp_path: Path) -> None:
    source = BlockStore(tmp_path / "s")
    server = create_server(source, port=0, max_connections=10, max_client_connections=2)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with _slow_clients(server, 2):
            answer = _answer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    head, _sep, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1" in head
    assert body == b"the gateway is serving its limit of 2 connections from one address; retry shortly\n"
