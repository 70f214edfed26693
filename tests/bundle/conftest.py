"""Shared fixtures for the bundle tests: a sample memory tree, built bundles, gateways on loopback."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from bundlekit.car.index import CarIndex
from bundlekit.car.writer import CarWriter
from bundlekit.ipld.cid import parse_cid
from bundlekit.memory import Memory

CREATED = datetime(2026, 4, 14, 12, 0, 0, tzinfo=UTC)
BODY_CANARY = "CANARY-BODY-7f3a9c"
TIMELINE_CANARY = "CANARY-TIMELINE-51e2d0"


def make_tree(root: Path, *, count: int = 0) -> Path:
    """A small agent memory tree (seed 003's example) plus ``count`` extra memories; fixed clock."""
    clock = lambda: CREATED
    mem = Memory(root, namespace="coach", clock=clock)
    mem.write("user_role", name="Role", description="Argentina fan, plays 5-a-side on Saturdays", type="user",
              body=f"Plays as a winger. {BODY_CANARY}-role")
    mem.write("feedback_tone", name="Tone", description="stay warm but direct", type="feedback",
              body=f"User asked for direct critique. {BODY_CANARY}-tone", tags=["style"])
    mem.write("project_season", name="Season goal", description="training for a June tournament", type="project",
              body="Tournament in June 2026.\n\nThree drills per session.")
    mem.write("reference_reel", name="Highlight reel", description="shared Drive folder", type="reference",
              body="Clips live in the team's Drive folder.")
    for i in range(count):
        mem.write(f"extra_{i:04d}", name=f"Extra {i}", description=f"extra memory {i}", type="project",
                  body=f"Body of extra memory {i}. " * 4)
    mem.note("session", summary=f"talked about drills {TIMELINE_CANARY}")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_tree(tmp_path / "coach")


class BlockGateway:
    """A minimal trustless gateway over a dict of blocks, with faults to inject.

    ``tamper`` CIDs are served with altered bytes (raw and in CARs); ``missing``
    CIDs are never served. ``dead`` answers every request with a 503.
    Requests are logged as (path, format); ``max_in_flight`` is the most
    requests it was answering at once.
    """

    def __init__(self, blocks: dict[bytes, bytes]) -> None:
        self.blocks = blocks
        self.tamper: set[bytes] = set()
        self.missing: set[bytes] = set()
        self.dead = False
        self.requests: list[tuple[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def body(self, cid: bytes) -> bytes | None:
        if cid in self.missing or cid not in self.blocks:
            return None
        data = self.blocks[cid]
        return data[:-1] + bytes([data[-1] ^ 1]) if cid in self.tamper and data else data


def _handler(gw: BlockGateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            with gw._lock:
                gw.in_flight += 1
                gw.max_in_flight = max(gw.max_in_flight, gw.in_flight)
            try:
                self._answer()
            finally:
                with gw._lock:
                    gw.in_flight -= 1

        def _answer(self) -> None:
            url = urlsplit(self.path)
            fmt = parse_qs(url.query).get("format", [""])[0]
            gw.requests.append((url.path, fmt))
            if gw.dead:
                self._send(503, b"down")
                return
            parts = url.path.split("/")
            if len(parts) != 3 or parts[1] != "ipfs":
                self._send(404, b"not found")
                return
            cid = parse_cid(parts[2])
            if fmt == "raw":
                data = gw.body(cid)
                if data is None:
                    self._send(404, b"not found")
                else:
                    self._send(200, data, "application/vnd.ipld.raw")
            elif fmt == "car":
                if gw.body(cid) is None:
                    self._send(404, b"not found")
                    return
                out = io.BytesIO()
                writer = CarWriter(out, [cid])
                for block_cid in gw.blocks:  # every block we have, in any order: loaders must cope
                    data = gw.body(block_cid)
                    if data is not None:
                        writer.put(block_cid, data)
                writer.close()
                self._send(200, out.getvalue(), "application/vnd.ipld.car")
            else:
                self._send(400, b"only trustless requests")

    return Handler


@pytest.fixture
def block_gateway() -> Iterator[tuple[BlockGateway, str, ThreadingHTTPServer]]:
    """Factory-less fixture: a fault-injecting gateway with no blocks; fill ``gw.blocks``."""
    gw = BlockGateway({})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(gw))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield gw, f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def car_blocks(car: Path) -> dict[bytes, bytes]:
    """Every block of a CAR file."""
    with CarIndex(car) as index:
        return {cid: index.get(cid) for cid in index.index}
