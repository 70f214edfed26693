"""The local trustless HTTP gateway (``bundlekit serve``), see ``specs/gateway.md``.

It answers ``GET``/``HEAD /ipfs/{cid}[/{path}]`` from a block source (the
local ``BlockStore``, CAR files indexed on disk, or anything with ``get`` and
``has``) following the IPFS trustless gateway spec: ``format=raw`` /
``application/vnd.ipld.raw`` for one block, ``format=car`` /
``application/vnd.ipld.car`` for a streamed CARv1 with ``dag-scope`` block,
entity or all, and ``entity-bytes``. Without either it behaves as a small path gateway: a file's
bytes, or a directory listing (``index.html`` when the directory has one).

It runs on the standard library's ``ThreadingHTTPServer``: one thread per
connection is plenty for a loopback gateway, keeps the code synchronous like
the rest of bundlekit, and needs no extra dependency. The threads are bounded:
at most ``max_connections`` (:data:`MAX_CONNECTIONS`) connections are served at
once, and one more is answered ``503`` with ``Retry-After`` and closed at
once, so a flood of slow clients cannot grow the process without bound. A
request's head (request line and headers) must arrive within
:data:`HEAD_TIMEOUT` of its first byte, and each read waits at most
:data:`IDLE_TIMEOUT`, so a client trickling bytes cannot hold a connection
for ever. A request body is read and dropped within a bound before the answer, or the
answer says ``Connection: close`` (``bundlekit.gateway.framing``): nothing served uses one
but a mounted ``BodyApp`` (the routing API's ``PUT``, which gets it read within its bound) or
``SpooledBodyApp`` (the push API's ``POST``: admitted first, then read into a temp file within its
bound), and its bytes must never be read as the next request. Responses stream: a CAR
goes out block by block with chunked transfer encoding, a file chunk by chunk
with a known ``Content-Length``. When a block turns out to be missing after
the status line went out, the connection is cut without the final chunk, so
a client sees a truncated transfer, never a short "complete" answer.

The request rules live in ``bundlekit.gateway.respond`` (``GatewayResponder``, plain
request -> response logic); this module wires them to HTTP
(``GatewayServer``), builds block sources (``make_source``), lists the roots a
source serves (``served_roots``), stops a foreground server on SIGINT/SIGTERM
(``stop_on_signals``) and runs one on a free loopback port for tests and
benchmarks (``serve_in_thread``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO, cast

from bundlekit._redact import redact
from bundlekit._signals import is_ignored
from bundlekit.blockstore import BlockStore
from bundlekit.errors import BundlekitError, UsageError
from bundlekit.gateway.framing import (
    MAX_HEAD_BYTES,
    BodyFraming,
    discard_body,
    header_line_problem,
    read_body,
    request_framing,
    spool_body,
)
from bundlekit.gateway.respond import CLIENT_GONE, GatewayResponder, Response, error_response
from bundlekit.gateway.sources import ServedBlocks, CarFileSource, ChainSource, MemorySource
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import WalkCancelled
from bundlekit.net.loopback import allowed_hosts, is_loopback

__all__ = [
    "HEAD_TIMEOUT",
    "IDLE_TIMEOUT",
    "MAX_CONNECTIONS",
    "STOP_POLL_INTERVAL",
    "App",
    "BodyApp",
    "PEER_HEADER",
    "GatewayResponder",
    "GatewayServer",
    "Response",
    "ServedRoot",
    "SpooledBodyApp",
    "close_source",
    "create_server",
    "make_source",
    "serve_in_thread",
    "served_roots",
    "stop_on_signals",
]

logger = logging.getLogger("bundlekit.gateway")

# An extra application mounted beside the gateway paths: (method, target, lower-case headers) -> Response.
# It must never raise (like GatewayResponder.respond). The browsing interface (bundlekit.ui) is one, at /ui/.
# The headers of a mounted app's request also hold PEER_HEADER, the client's address: a name no HTTP header
# can have (a field name never starts with ":"), so a client cannot forge it.
App = Callable[[str, str, Mapping[str, str]], Response]
PEER_HEADER = ":peer"


@dataclass(frozen=True)
class BodyApp:
    """A mounted app that reads the body of its ``methods``' requests: the Delegated Routing API's ``PUT``.

    ``respond(method, target, headers, body)`` gets the body read within ``max_body`` bytes
    (``framing.read_body``: chunk sizes and trailers counted), ``b""`` for none, or None when it
    could not be read whole within the bound (nothing past it is read; the connection closes after
    the answer). Like ``App``, it must never raise.
    """

    respond: Callable[[str, str, Mapping[str, str], bytes | None], Response]
    max_body: int
    methods: frozenset[str] = frozenset({"PUT"})


@dataclass(frozen=True)
class SpooledBodyApp:
    """A ``BodyApp`` whose body goes to an unnamed temp file instead of memory: the team hub's pushed CARs.

    ``respond(method, target, headers, body)`` gets the body read within ``max_body`` bytes into a
    ``tempfile.TemporaryFile`` (positioned at its start, closed and so removed after the answer), or
    None when it could not be read whole within the bound. Like ``App``, it must never raise.
    """

    respond: Callable[[str, str, Mapping[str, str], BinaryIO | None], Response]
    max_body: int
    methods: frozenset[str] = frozenset({"POST"})
    # Judged before the body is read: (method, target, headers) -> a refusal, or None to read the body.
    # A refused body is never read (dropped within the usual bound, else the connection closes), so a
    # client without the app's credentials cannot make it spool anything. An admitted body is read
    # under the idle timeout alone (a large push may take longer than the head's deadline).
    admit: Callable[[str, str, Mapping[str, str]], Response | None] | None = None


# Seconds between checks of a stop request in serve_forever: the longest a stop waits.
# The check is one flag read, so a short interval costs nothing measurable.
STOP_POLL_INTERVAL = 0.05

# Connections served at once; one more is answered 503 and closed (each holds a thread).
MAX_CONNECTIONS = 64
# Seconds a read may wait: an idle keep-alive connection, or a stalled client, is closed after it.
IDLE_TIMEOUT = 120.0
# Seconds from a request's first byte to the end of its headers: a client trickling them is cut off.
HEAD_TIMEOUT = 30.0


# A connection closed with request bytes still unread: it is shut for writing (the answer is out,
# with its FIN) and read on for at most these seconds and bytes before the close, so the kernel does
# not answer the unread bytes with a reset that can destroy the answer at the client (Apache's
# "lingering close").
LINGER_TIME = 2.0
LINGER_BYTES = 16 * 1024 * 1024
# Seconds a stopping server waits for the ``BodyApp`` answers under way (a routing ``PUT`` writing its
# record): its handler threads are daemons, and one stopped mid-write at exit would leave a temp file.
WRITE_GRACE = 5.0


def _linger(sock: socket.socket) -> None:
    """Shut ``sock`` for writing, then read and drop what the client still sends, within the linger bounds."""
    deadline = time.monotonic() + LINGER_TIME
    budget = LINGER_BYTES
    try:
        sock.shutdown(socket.SHUT_WR)
        while budget > 0:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return
            sock.settimeout(wait)
            data = sock.recv(min(budget, 64 * 1024))
            if not data:
                return
            budget -= len(data)
    except OSError:
        pass  # gone, reset or timed out: closing is all that is left


class _CheckedLines:
    """The connection's reader while a request's header lines are read: each line is checked
    (``framing.header_line_problem``) and counted against ``MAX_HEAD_BYTES``; the first problem is
    kept, and past the bound every read answers the empty end of the head, so nothing more is read."""

    def __init__(self, stream: io.BufferedIOBase) -> None:
        self._stream = stream
        self._count = 0
        self.problem: str | None = None
        self.too_long = False

    def readline(self, size: int = -1) -> bytes:
        if self.too_long:
            return b"\r\n"
        line = self._stream.readline(size)
        self._count += len(line)
        if self._count > MAX_HEAD_BYTES:
            self.too_long = True
            self.problem = f"the header lines are over {MAX_HEAD_BYTES} bytes"
            return b"\r\n"
        if self.problem is None:
            self.problem = header_line_problem(line)
        return line


class _HeadReader(io.RawIOBase):
    """The connection's reads, each bounded by the idle timeout and, once a request has begun, by its
    head deadline (``start`` clears it for the next request)."""

    def __init__(self, sock: socket.socket, idle: float, head: float) -> None:
        self._sock = sock
        self._idle = idle
        self._head = head
        self._deadline: float | None = None
        self._in_body = False

    def start(self) -> None:
        self._deadline = None
        self._in_body = False

    def read_body(self) -> None:
        """From now until ``start``: an admitted body, each read bounded by the idle timeout alone."""
        self._in_body = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        wait = self._idle
        if self._deadline is not None and not self._in_body:
            wait = min(wait, self._deadline - time.monotonic())
            if wait <= 0:
                raise TimeoutError("the request headers took too long")
        self._sock.settimeout(wait)
        try:
            count = self._sock.recv_into(buffer)
        finally:
            self._sock.settimeout(self._idle)  # writes keep the idle bound
        if count and self._deadline is None:
            self._deadline = time.monotonic() + self._head
        return count


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked transfer encoding
    # Headers and body go out in separate writes; with Nagle on, a keep-alive
    # client waits for the delayed ACK (~40 ms) on every small response.
    disable_nagle_algorithm = True
    timeout = IDLE_TIMEOUT  # an idle keep-alive connection does not hold a thread for ever
    server: GatewayServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the standard reader, replaced by one that bounds the head
        self._reader = _HeadReader(self.connection, self.server.idle_timeout, self.server.head_timeout)
        self.connection.settimeout(self.server.idle_timeout)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._reader.start()  # the head deadline starts at the next request's first byte
        self._unread = False  # bytes of this request were left unread: close after the answer, lingering
        self._close_said = False
        self._body: bytes | BinaryIO | None = b""  # a BodyApp's body (None: not read whole within its bound)
        self._spooled = False  # the body goes to a temp file (a SpooledBodyApp's)
        self._refusal: Response | None = None  # a SpooledBodyApp's answer given before its body
        try:
            super().handle_one_request()
        finally:
            if not isinstance(self._body, bytes | None):
                self._body.close()

    def parse_request(self) -> bool:
        """The request line and headers (each header line checked as it is read), then its body
        settled (``framing``): read and dropped, or the connection marked to close after the answer;
        a malformed header line or invalid framing is answered 400 here, too many header bytes 431."""
        checked = _CheckedLines(self.rfile)
        self.rfile, plain = cast(io.BufferedReader, checked), self.rfile
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = plain
        if not parsed:
            return False
        if checked.problem is not None:
            self._unread = True
            status = 431 if checked.too_long else 400
            self.send_error(status, f"malformed request head: {checked.problem}")
            return False
        if "close" in (t.strip().lower() for t in self.headers.get("Connection", "").split(",")):
            self.close_connection = True
        framing = request_framing(self.headers, http10=self.request_version == "HTTP/1.0")
        if framing.kind == "invalid":
            self._unread = True
            self.send_error(400, f"invalid request framing: {framing.problem}")
            return False
        waits = self.headers.get("Expect", "").strip().lower() == "100-continue"
        wanted = self.server.body_limit(self.command, self.path)
        app = self.server.responder_for(self.path)
        self._spooled = isinstance(app, SpooledBodyApp)
        if wanted and isinstance(app, SpooledBodyApp) and app.admit is not None:
            self._refusal = app.admit(self.command, self.path, self._lower_headers())
            if self._refusal is not None:
                wanted = 0  # never spooled: dropped within the usual bound, or the connection closes
            else:
                self._reader.read_body()
        if wanted and framing.kind in ("length", "chunked"):
            return self._read_body(framing, wanted, waits)
        if framing.close or (framing.kind != "none" and (waits or not discard_body(self.rfile, framing))):
            self._unread = True
            self.close_connection = True
        return True

    def _read_body(self, framing: BodyFraming, limit: int, waits: bool) -> bool:
        """The body of a request a ``BodyApp`` answers, read within ``limit`` into ``self._body``.

        A declared length past the bound is not read (``None``: the app refuses it, the connection
        closes); a client waiting for ``100 Continue`` gets it only for a body that may fit.
        """
        if framing.kind == "length" and framing.length > limit:
            self._body = None
        else:
            if waits:
                self.send_response_only(100)
                self.end_headers()
            self._body = self._read_spooled(framing, limit) if self._spooled else read_body(self.rfile, framing, limit)
        if self._body is None:
            self._unread = True
        if self._body is None or framing.close:
            self.close_connection = True
        return True

    def _read_spooled(self, framing: BodyFraming, limit: int) -> BinaryIO | None:
        """A ``SpooledBodyApp``'s body, read within ``limit`` into a temp file (None past the bound)."""
        spool = tempfile.TemporaryFile()
        if not spool_body(self.rfile, framing, spool, limit):
            spool.close()
            return None
        spool.seek(0)
        return cast(BinaryIO, spool)

    def handle_expect_100(self) -> bool:
        """Never ``100 Continue`` here: an answer that reads no body comes at once (RFC 9110 10.1.1)
        and the unsent body closes the connection after it (``parse_request``); a ``BodyApp``'s
        request gets it once its body is known to fit (``_read_body``)."""
        return True

    def send_response(self, code: int, message: str | None = None) -> None:
        """The status line; ``Connection: close`` too whenever the connection closes after this answer."""
        super().send_response(code, message)
        if self.close_connection:
            self.send_header("Connection", "close")

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "connection" and value.lower() == "close":
            if self._close_said:
                return  # send_error says it too
            self._close_said = True
        super().send_header(keyword, value)

    def finish(self) -> None:
        super().finish()
        if self._unread:
            _linger(self.connection)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_OPTIONS(self) -> None:
        self.send_response(204)
        self.send_header("Allow", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "Accept, Cache-Control, If-None-Match")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _other(self) -> None:
        self._serve(self.command)

    do_POST = do_PUT = do_DELETE = do_PATCH = _other

    def _lower_headers(self) -> dict[str, str]:
        """The request's headers by lower-case name (repeated ones joined), with the client's address as
        ``PEER_HEADER``."""
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]}, {value}" if k in headers else value
        headers[PEER_HEADER] = str(self.client_address[0])
        return headers

    def _serve(self, method: str) -> None:
        headers = self._lower_headers()
        app = self.server.responder_for(self.path)
        if app != self.server.gateway.respond and not self.server.answers_host(headers.get("host", "")):
            app = self.server.misdirected
        if self._refusal is not None and app != self.server.misdirected:
            response = self._refusal
        elif app == self.server.gateway.respond:
            # The gateway's walks stop for a client that has gone (specs/gateway.md 3.5a).
            response = self.server.gateway.respond(method, self.path, headers, cancelled=self._client_gone)
        elif isinstance(app, BodyApp | SpooledBodyApp):
            response = self.server.answer_writing(app, method, self.path, headers,
                                                  self._body if method in app.methods else b"")
        else:
            response = app(method, self.path, headers)
        if response.status == CLIENT_GONE:
            logger.info("client %s went away before the answer to %s", self.address_string(), self.path)
            self.close_connection = True
            return
        self.send_response(response.status)
        for key, value in response.headers:
            self.send_header(key, value)
        no_body = method == "HEAD" or response.status in (204, 304)
        if response.length is not None:
            self.send_header("Content-Length", str(response.length))
        elif not no_body:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if no_body:
            return
        try:
            for chunk in response.body:
                if not chunk:
                    continue
                if response.length is None:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
            if response.length is None:
                self.wfile.write(b"0\r\n\r\n")
        except BundlekitError as exc:
            # The status line is out; cutting the connection is the only honest signal left.
            logger.warning("response to %s cut short: %s", redact(self.path), exc)
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, WalkCancelled):
            self.close_connection = True

    def _client_gone(self) -> bool:
        """Whether the client has closed its end: readable with nothing to read (EOF) or reset.

        Pipelined request bytes make the socket readable too; a peek tells them apart.
        """
        sock = self.connection
        try:
            readable, _w, _x = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def log_message(self, format: str, *args: object) -> None:
        # The request line holds the client's path and query: logged through the one output redaction.
        logger.info("%s %s", self.address_string(), redact(format % args))


class GatewayServer(ThreadingHTTPServer):
    """A threading HTTP server bound to a ``GatewayResponder``, serving at most ``max_connections`` at once.

    ``idle_timeout`` bounds each read (and write); ``head_timeout`` a request's head from its first byte.
    """

    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog: a burst of connections waits in the kernel to be accepted (and served or
    # answered 503) instead of having its SYNs dropped and retried a second later (the default is 5).
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        gateway: GatewayResponder,
        apps: Mapping[str, App | BodyApp | SpooledBodyApp] | None = None,
        *,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout: float = IDLE_TIMEOUT,
        head_timeout: float = HEAD_TIMEOUT,
    ) -> None:
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise UsageError(f"the connection limit must be 1 or more, not {max_connections!r}")
        # BodyApp answers under way, and whether the server is closing (server_close waits for them).
        self._writes = 0
        self._writes_done = threading.Condition()
        self._closing = False
        super().__init__(address, _Handler)
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.head_timeout = head_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self.gateway = gateway
        # Mount points such as "/ui/"; the gateway paths (/ipfs/, /ipns/, /) are never shadowed.
        self.apps = dict(apps or {})
        # Bound to loopback, the apps answer only loopback Host names (net/loopback: DNS rebinding).
        bound, port = str(self.server_address[0]), int(self.server_address[1])
        self.app_hosts = frozenset(allowed_hosts(bound, port)) if is_loopback(bound) else None
        for prefix in self.apps:
            path = prefix.rstrip("/")
            if not prefix.startswith("/") or path in ("", "/ipfs", "/ipns") or path.startswith(("/ipfs/", "/ipns/")):
                self.server_close()
                raise UsageError(f"cannot mount an app at {prefix!r}: mount it under its own path, such as /ui/")

    def answers_host(self, host: str) -> bool:
        """Whether a mounted app answers a request with this ``Host`` header: any, unless the server is
        bound to loopback; then only the loopback names with this server's port (``net.loopback``), so a
        page whose name was re-pointed at 127.0.0.1 (DNS rebinding) cannot read the app's pages."""
        return self.app_hosts is None or host.strip().lower() in self.app_hosts

    def misdirected(self, method: str, target: str, headers: Mapping[str, str]) -> Response:
        """The answer of a mounted app to a ``Host`` it does not answer: 421, naming the address to use."""
        logger.warning("refused %s %s: Host %r is not a loopback name of this server", method, target[:200],
                       headers.get("host", "")[:200])
        body = (f"this page answers only at a loopback address of this server, such as {self.url}/; "
                "a request for another host name is refused (DNS rebinding protection)\n").encode()
        return Response(421, [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store"),
                              ("X-Content-Type-Options", "nosniff")], [body], len(body))

    def body_limit(self, method: str, target: str) -> int:
        """Bytes of body read for this request: the ``max_body`` of a ``BodyApp`` mounted at ``target``
        for ``method``; 0 (the body is dropped, ``framing.discard_body``) for everything else."""
        app = self.responder_for(target)
        return app.max_body if isinstance(app, BodyApp | SpooledBodyApp) and method in app.methods else 0

    def responder_for(self, target: str) -> App | BodyApp | SpooledBodyApp:
        """The app mounted at the longest prefix of ``target``'s path, else the gateway."""
        path = target.split("?", 1)[0]
        for prefix in sorted(self.apps, key=len, reverse=True):
            if path == prefix.rstrip("/") or path.startswith(prefix):
                return self.apps[prefix]
        return self.gateway.respond

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8080`` (no trailing slash)."""
        host, port = self.server_address[0], self.server_address[1]
        host_text = host.decode() if isinstance(host, bytes) else str(host)
        if ":" in host_text:
            host_text = f"[{host_text}]"
        return f"http://{host_text}:{port}"

    def answer_writing(
        self, app: BodyApp | SpooledBodyApp, method: str, target: str, headers: Mapping[str, str],
        body: bytes | BinaryIO | None,
    ) -> Response:
        """``app``'s answer, counted as a write under way that ``server_close`` waits for; once the server
        is closing, a 503 instead (nothing is started that the exit could cut in half)."""
        with self._writes_done:
            if self._closing:
                return error_response(503, "this server is stopping; retry the request elsewhere or later",
                                      [("Retry-After", "1")])
            self._writes += 1
        try:
            if isinstance(app, SpooledBodyApp):  # no body (b""): an empty file is what it reads
                return app.respond(method, target, headers, io.BytesIO(body) if isinstance(body, bytes) else body)
            return app.respond(method, target, headers, body if isinstance(body, bytes) or body is None else None)
        finally:
            with self._writes_done:
                self._writes -= 1
                self._writes_done.notify_all()

    def server_close(self) -> None:
        """Stop taking connections, then wait (at most ``WRITE_GRACE`` seconds) for the ``BodyApp``
        answers under way: a stop (SIGTERM, Ctrl-C) never cuts a record write in half at exit."""
        with self._writes_done:
            self._closing = True
            self._writes_done.wait_for(lambda: self._writes == 0, timeout=WRITE_GRACE)
        super().server_close()

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        """Serve the connection on a thread of its own if a slot is free; otherwise answer 503 and close it."""
        if not self._slots.acquire(blocking=False):
            self._refuse(cast(socket.socket, request), client_address)
            return
        try:
            super().process_request(request, client_address)  # type: ignore[arg-type]
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: socket.socket | tuple[bytes, socket.socket], client_address: object) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[arg-type]
        finally:
            self._slots.release()

    def _refuse(self, request: socket.socket, client_address: object) -> None:
        """The over-the-limit answer, written from the accepting thread: small, bounded, then closed."""
        logger.warning("refused %s: already serving %d connections", client_address, self.max_connections)
        body = (
            f"the gateway is serving its limit of {self.max_connections} connections; retry shortly\n"
        ).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        try:
            request.settimeout(1.0)
            request.sendall(head + body)
        except OSError:
            pass  # the client is gone or not reading: closing is all that is left
        self.shutdown_request(request)

    def handle_error(self, request: object, client_address: object) -> None:
        """Log a failed connection: one quiet line for a client that hung up, a traceback otherwise.

        A client that closes its keep-alive connection (or resets it mid-request,
        as ``curl | head`` does) is routine, not a server fault: no traceback.
        """
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            logger.debug("client %s went away: %s", client_address, exc)
            return
        logger.exception("error while serving %s", client_address)


def make_source(
    store: BlockStore | str | Path | None = None,
    cars: Sequence[str | Path] = (),
    *,
    use_store: bool | None = None,
) -> ServedBlocks:
    """The gateway's block source: the CAR files (in order, indexed on disk), then the store.

    The store is used when ``store`` is given, or when no CAR is (``use_store``
    overrides). Raises ``CARError`` / ``BundlekitError`` for an unreadable CAR.
    """
    sources: list[ServedBlocks] = []
    try:
        for car in cars:
            sources.append(CarFileSource(car))
    except BaseException:
        for source in sources:
            cast(CarFileSource, source).close()
        raise
    if use_store is None:
        use_store = store is not None or not cars
    if use_store:
        sources.append(store if isinstance(store, BlockStore) else BlockStore(store))
    return sources[0] if len(sources) == 1 else ChainSource(sources)


def create_server(
    source: ServedBlocks,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    apps: Mapping[str, App | BodyApp | SpooledBodyApp] | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> GatewayServer:
    """A bound (not yet serving) gateway server; ``port=0`` picks a free port; ``apps`` are mounted beside it;
    at most ``max_connections`` connections are served at once (one more is answered 503).

    Raises ``UsageError`` when the address cannot be bound, or when ``host``
    is empty: the socket layer reads "" as every interface, which must be
    asked for explicitly (``0.0.0.0`` or ``::``), never reached by an unset variable.
    """
    if not host.strip():
        raise UsageError(
            "--host is empty; give an address to bind (default 127.0.0.1; 0.0.0.0 for every interface)"
        )
    try:
        return GatewayServer((host, port), GatewayResponder(source), apps, max_connections=max_connections)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port or --host"
        ) from exc


@dataclass(frozen=True)
class ServedRoot:
    """One root a gateway serves: its CID, where it comes from (a CAR path or ``store``), its pin name."""

    cid: str
    source: str
    name: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready form."""
        return {"cid": self.cid, "source": self.source, "name": self.name}


def served_roots(source: ServedBlocks) -> list[ServedRoot]:
    """The roots ``source`` serves, in serving order: each CAR's (or blocks held in memory's) roots, then the store's pins.

    Each source names its own (``ServedBlocks.roots``): a store's pins come with
    their names (oldest pin first, as ``store ls`` lists them). Raises what
    ``BlockStore.pins`` raises for an unreadable pin file.
    """
    return [ServedRoot(cid_to_str(root.cid), root.where, root.name) for root in source.roots()]


@contextlib.contextmanager
def stop_on_signals(
    server: GatewayServer,
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
) -> Iterator[list[signal.Signals]]:
    """While in the block, each of ``signals`` asks ``server`` to stop; yields the signals received.

    Use it around ``server.serve_forever(poll_interval=STOP_POLL_INTERVAL)`` in
    the main thread, and announce the server inside the block, so a signal
    sent as soon as the announcement is seen is already handled. The handler
    asks the server to stop from a helper thread (``shutdown`` waits for
    ``serve_forever`` to return, so it cannot run in the serving thread)
    instead of raising inside whatever the server was doing; the serve loop
    sees the request within its poll interval, and a request made before the
    loop starts ends the loop at once. A signal set to be ignored (``nohup``'s
    SIGHUP) stays ignored. The previous handlers are restored on exit.
    """
    received: list[signal.Signals] = []

    def _stop(signum: int, _frame: object) -> None:
        received.append(signal.Signals(signum))
        threading.Thread(target=server.shutdown, name="bundlekit-gateway-stop", daemon=True).start()

    previous = {sig: signal.signal(sig, _stop) for sig in signals if not is_ignored(sig)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def serve_in_thread(
    source: ServedBlocks | None = None,
    *,
    store: BlockStore | str | Path | None = None,
    cars: Sequence[str | Path] = (),
    host: str = "127.0.0.1",
    port: int = 0,
    apps: Mapping[str, App | BodyApp | SpooledBodyApp] | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> Iterator[GatewayServer]:
    """Run a gateway in a background thread; yield the server (``.url``), stop it on exit.

    With no ``source``, one is made from ``store`` and ``cars`` as in
    ``make_source``. ``port=0`` (the default) picks a free port, so tests and
    benchmarks can run side by side.
    """
    owned = source is None
    if source is None:
        source = make_source(store, cars)
    try:
        server = create_server(source, host, port, apps=apps, max_connections=max_connections)
    except BaseException:
        if owned:
            close_source(source)
        raise
    # A short poll interval makes shutdown prompt (tests start and stop many servers).
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": STOP_POLL_INTERVAL},
        name=f"bundlekit-gateway-{server.server_address[1]}",
        daemon=True,
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        if owned:
            close_source(source)


def close_source(source: ServedBlocks) -> None:
    """Close the CAR files of a source ``make_source`` built (the store needs no closing)."""
    parts = source.sources if isinstance(source, ChainSource) else (source,)
    for part in parts:
        if isinstance(part, CarFileSource):
            part.close()
