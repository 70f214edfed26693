"""Small hostile HTTP servers on loopback for the network rules (redirects, deadlines), and raw answers read."""

from __future__ import annotations

import random
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


def _ephemeral_low() -> int:
    """The lowest port the kernel hands out on its own (``bind`` to port 0, ``connect``): Linux's default 32768."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now, for a child process to listen on once it has started.

    Drawn below the kernel's ephemeral range: a port the kernel gave (``bind`` to port 0) is free again from the
    moment it is closed until the child binds it, a second or two later, and in that window the kernel may give it
    to any other test's server or client on the machine (CI runs three workers beside other suites). A port below
    the range is one the kernel never hands out; only another test drawing the same one of ~12,000 could take it.
    """
    low = _ephemeral_low()
    draw = random.SystemRandom()
    for _attempt in range(50):
        port = draw.randrange(20000, low) if low > 21000 else 0
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use: draw again
            found: int = sock.getsockname()[1]
            return found
    raise OSError("no free TCP port on 127.0.0.1 after 50 draws")


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
