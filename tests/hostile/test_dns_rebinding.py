"""Found while attacking the browsing interface after issue 24: DNS rebinding against ``serve --ui`` / ``open``.

A web page whose own name is re-pointed at 127.0.0.1 sends the loopback server requests
with that name as ``Host`` and reads the answers as same-origin. The interface answered
them all (its home page lists every root; its pages show every memory), so any site the
user visited while ``bundlekit open`` ran could read the memories. Bound to loopback, the
apps mounted beside the gateway now answer only loopback Host names (``net/loopback.py``,
the rule ``bundlekit mcp --http`` already follows); the gateway paths are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.gateway.respond import GatewayResponder, Response
from bundlekit.gateway.server import GatewayServer, serve_in_thread

SECRET = b"every memory of the bundle"


def _page(method: str, target: str, headers: Mapping[str, str]) -> Response:
    return Response(200, [("Content-Type", "text/plain")], [SECRET], len(SECRET))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GatewayServer]:
    with serve_in_thread(BlockStore(tmp_path), apps={"/ui/": _page}) as running:
        yield running


def _get(server: GatewayServer, target: str, host: str) -> httpx.Response:
    return httpx.get(server.url + target, headers={"Host": host}, timeout=30)


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "127.0.0.1:1", "bafkqaaa.ipfs.localhost:{port}", ""])
def test_an_app_refuses_a_host_that_is_not_a_loopback_name_of_the_server(server: GatewayServer, host: str) -> None:
    response = _get(server, "/ui/", host.format(port=server.server_address[1]))
    assert response.status_code == 421
    assert SECRET not in response.content


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_an_app_answers_the_loopback_names_with_the_servers_port(server: GatewayServer, name: str) -> None:
    response = _get(server, "/ui/", f"{name}:{server.server_address[1]}")
    assert response.status_code == 200
    assert response.content == SECRET


def test_the_gateway_paths_answer_any_host_as_before(server: GatewayServer) -> None:
    assert _get(server, "/ipfs/bafkqaaa?format=raw", "attacker.example").status_code == 200


def test_an_app_on_every_interface_answers_any_host(tmp_path: Path) -> None:
    """Binding beyond loopback is an explicit choice (``--host``); the Host is not checked there."""
    server = GatewayServer(("0.0.0.0", 0), GatewayResponder(BlockStore(tmp_path)), {"/ui/": _page})
    try:
        assert server.answers_host("attacker.example")
    finally:
        server.server_close()
