"""A client hanging up is routine for the gateway: logged without a traceback, serving goes on."""

from __future__ import annotations

import logging
import socket
import struct
import time
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.gateway.server import serve_in_thread


def test_client_reset_is_logged_without_traceback(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "store")) as server:
        caplog.set_level(logging.DEBUG, logger="bundlekit.gateway")
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            server.handle_error(None, ("127.0.0.1", 1))
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]


def test_unexpected_server_error_still_logs_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "store")) as server:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            server.handle_error(None, ("127.0.0.1", 1))
    assert any(r.exc_info for r in caplog.records if r.name == "bundlekit.gateway")


def test_reset_connection_does_not_stop_serving(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with serve_in_thread(store=BlockStore(tmp_path / "store")) as server:
        host, port = server.server_address[0], server.server_address[1]
        sock = socket.create_connection((str(host), int(port)))
        sock.sendall(b"GET /ipfs/")  # half a request line, then a reset (SO_LINGER 0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        time.sleep(0.2)  # let the handler thread see the reset (not a timing assertion)
        response = httpx.get(f"{server.url}/ipfs/bafkqaaa", timeout=10)
    assert response.status_code == 200
    assert not [r for r in caplog.records if r.exc_info]

