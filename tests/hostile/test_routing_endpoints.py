"""Issue 28: hostile routing endpoints, as the client meets them (``names/routing.py``).

An endpoint is a foreign server: what it sends is bounded in size (a record, 10 KiB) and time
(``ROUTING_DEADLINE``, or the caller's shorter deadline), never trusted (each record verified for
the name) and never followed elsewhere (a redirect to another origin is refused, as every request
of ``net/http``). Real servers on loopback (``tests/net/loopback.py``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bundlekit.blockstore import BlockStore
from bundlekit.crypto.signing import Ed25519Signer
from bundlekit.errors import LoadError
from bundlekit.names import resolve
from bundlekit.names.record import create_record, name_from_key
from bundlekit.names.routing import parse_routing
from bundlekit.net.http import HttpOptions, RetryPolicy
from tests.net.loopback import redirect_to, send, serve

SIGNER = Ed25519Signer.from_seed(bytes([7]) * 32)
NAME = name_from_key(SIGNER.public)
MEDIA = "application/vnd.ipfs.ipns-record"
RECORD = create_record(SIGNER, "/ipfs/bafkqaaa", sequence=1, validity=datetime.now(UTC) + timedelta(days=1), ttl_ns=0)
ONCE = RetryPolicy(attempts=1)


def dripping_record(handler: BaseHTTPRequestHandler) -> None:
    """A valid record announced whole, then sent one byte every half second."""
    handler.send_response(200)
    handler.send_header("Content-Type", MEDIA)
    handler.send_header("Content-Length", str(len(RECORD)))
    handler.end_headers()
    for byte in RECORD:
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.5)


def test_an_endpoint_dripping_a_record_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    with serve(dripping_record) as url, pytest.raises(LoadError, match="gave up at the total deadline"):
        resolve(NAME, store=BlockStore(tmp_path / "mine"), routing=[parse_routing(url)],
                http=HttpOptions(deadline=1.0, retry=ONCE))


def test_an_endpoint_redirecting_to_another_origin_is_not_followed(tmp_path: Path) -> None:
    asked: list[str] = []

    def elsewhere(handler: BaseHTTPRequestHandler) -> None:
        asked.append(handler.path)
        send(handler, 200, RECORD, {"Content-Type": MEDIA})

    with serve(elsewhere) as other, serve(redirect_to(lambda path: other + path)) as url:
        with pytest.raises(LoadError, match="redirect"):
            resolve(NAME, store=BlockStore(tmp_path / "mine"), routing=[parse_routing(url)],
                    http=HttpOptions(retry=ONCE))
    assert asked == []
