"""Small hostile HTTP servers on loopback for the network rules (redirects, deadlines), and raw answers read."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def serve(answer: Answer) -> Iterator[str]:
    """A server on 127.0.0.1 whose every GET and POST is ``answer(handler)``; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            try:
                answer(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: that is what these servers test

        do_POST = do_GET  # an RPC API (kubo's) is POST only

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def redirect_to(target: Callable[[str], str]) -> Answer:
    """Answer every request with a 302 to ``target(path)``."""
    return lambda handler: send(handler, 302, headers={"Location": target(handler.path)})


def drip(every: float = 2.0, length: int = 1 << 20) -> Answer:
    """A 200 announcing ``length`` bytes, then one byte every ``every`` seconds (until the client leaves)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(length))
        handler.send_header("Content-Type", "application/vnd.ipld.car")
        handler.end_headers()
        for _ in range(length):
            handler.wfile.write(b"\x00")
            handler.wfile.flush()
            time.sleep(every)

    return answer


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answer_head(sock: socket.socket) -> bytes:
    """What a server sends on ``sock`` until the end of its answer's head (or it closes): the status
    line and headers, perhaps with the start of the body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received
