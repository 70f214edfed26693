"""The local trustless HTTP gateway (``bundlekit serve``), see ``specs/gateway.md``.

It answers ``GET``/``HEAD /ipfs/{cid}[/{path}]`` from a block source (the
local ``BlockStore``, CAR files indexed on disk, or anything with ``get`` and
``has``) following the IPFS trustless gateway spec: ``format=raw`` /
``application/vnd.ipld.raw`` for one block, ``format=car`` /
``application/vnd.ipld.car`` for a streamed CARv1 with ``dag-scope`` block,
entity or all, and ``entity-bytes``. Without either it behaves as a small path gateway: a file's
bytes, or a directory listing (``index.html`` when the directory has one).

It runs on uvicorn (h11, one asyncio event loop; ``gateway.transport`` holds the connection's
bounds): a connection is a protocol object and a few timers, so a slow client costs a socket,
never a thread, and thousands may wait at once while every other request is answered. At most
``max_connections`` (:data:`MAX_CONNECTIONS`) connections are open at once, and
``max_client_connections`` (:data:`MAX_CLIENT_CONNECTIONS`) from one address; one more is
answered ``503`` with ``Retry-After`` and closed at once. A request's head and body must arrive
within :data:`HEAD_TIMEOUT` of its first byte (an admitted ``SpooledBodyApp`` body: within
:data:`IDLE_TIMEOUT` of its last bytes), an idle connection closes after :data:`IDLE_TIMEOUT`. The request rules are synchronous (``GatewayResponder``, block reads from
disk): each answer is computed, and its streamed body pulled, on a small pool of
:data:`ANSWER_THREADS` threads, never on the event loop. A request body is read and dropped
within a bound before the answer, or the answer says ``Connection: close``
(``bundlekit.gateway.framing``): nothing served uses one but a mounted ``BodyApp`` (the routing
API's ``PUT``, which gets it read within its bound) or ``SpooledBodyApp`` (the push API's ``POST``:
admitted first, then read on the event loop into an unnamed temp file within its bound, closed
on every path once its answer is computed; ``gateway.bodies``), and its bytes must never be read
as the next request. A mounted app's headers carry the client's address (``PEER_HEADER``). Responses stream: a CAR goes out block by block with chunked transfer encoding, a file
chunk by chunk with a known ``Content-Length``. When a block turns out to be missing after the
status line went out, the connection is cut without the final chunk, so a client sees a
truncated transfer, never a short "complete" answer.

The request rules live in ``bundlekit.gateway.respond`` (``GatewayResponder``, plain
request -> response logic); this module wires them to HTTP
(``GatewayServer``), builds block sources (``make_source``), lists the roots a
source serves (``served_roots``), stops a foreground server on SIGINT/SIGTERM
(``stop_on_signals``) and runs one on a free loopback port for tests and
benchmarks (``serve_in_thread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, BinaryIO, cast

import uvicorn

try:
    import resource
except ImportError:  # not on Windows: no file limit to raise there
    resource = None  # type: ignore[assignment]

from bundlekit._redact import redact
from bundlekit._signals import is_ignored
from bundlekit.blockstore import BlockStore
from bundlekit.errors import BundlekitError, UsageError
from bundlekit.gateway.bodies import PEER_HEADER, App, BodyApp, SpooledBodyApp, read_body, spool_body
from bundlekit.gateway.car_cache import CarCache, CarCopy
from bundlekit.gateway.fastpath import SimpleGet
from bundlekit.gateway.framing import MAX_DISCARDED_BODY, MAX_HEAD_BYTES, request_framing
from bundlekit.gateway.respond import CLIENT_GONE, GatewayResponder, Response, error_response
from bundlekit.gateway.sources import ServedBlocks, CarFileSource, ChainSource, MemorySource
from bundlekit.gateway.transport import EXTENSION, ClientRates, ConnectionCounts, GatewayProtocol
from bundlekit.ipld.cid import cid_to_str
from bundlekit.ipld.walk import WalkCancelled
from bundlekit.net.loopback import allowed_hosts, is_loopback

__all__ = [
    "ANSWER_THREADS",
    "HEAD_TIMEOUT",
    "IDLE_TIMEOUT",
    "MAX_CLIENT_CONNECTIONS",
    "MAX_CLIENT_RATE",
    "MAX_CONNECTIONS",
    "STOP_POLL_INTERVAL",
    "PEER_HEADER",
    "App",
    "BodyApp",
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

Mounted = App | BodyApp | SpooledBodyApp
# A request body as an app is given it: bytes, a spooled file, or None (not read whole within its bound).
Body = bytes | BinaryIO | None


# Seconds between checks of a stop request in serve_forever: the longest a stop waits.
STOP_POLL_INTERVAL = 0.05

# Connections open at once; one more is answered 503 and closed. A waiting connection costs a socket
# and a few kilobytes, no thread: the bound is the process's file descriptors (raised to fit at start).
MAX_CONNECTIONS = 4096
# Connections open at once from one client address; one more is answered 503 and closed.
MAX_CLIENT_CONNECTIONS = 1024
# Requests a second from one client address (bursts of two seconds' worth); one more is answered 429.
# Loopback clients are not bounded by this default (``ClientRates``): ``serve --max-client-rate`` bounds them too.
MAX_CLIENT_RATE = 500
# Seconds an idle keep-alive connection stays open, and an answer may wait for a client not reading it.
IDLE_TIMEOUT = 120.0
# Seconds from a request's first byte to the end of its head and body: a client trickling them is cut off.
HEAD_TIMEOUT = 30.0
# Threads computing answers (GatewayResponder, mounted apps) and pulling their streamed bodies.
ANSWER_THREADS = 8
# Bytes of a streamed body pulled on a thread before it is handed to the event loop to send.
_PULL_BYTES = 256 * 1024
# Seconds a stopping server waits for the ``BodyApp`` answers under way (a routing ``PUT`` writing its
# record): a stop never cuts a record write in half.
WRITE_GRACE = 5.0

# Request headers that bear on a body's framing (``framing.request_framing``) or on reading it.
_FRAMING_HEADERS = frozenset({b"content-length", b"transfer-encoding", b"expect"})

_OPTIONS_HEADERS = [
    (b"Allow", b"GET, HEAD, OPTIONS"),
    (b"Access-Control-Allow-Origin", b"*"),
    (b"Access-Control-Allow-Methods", b"GET, HEAD, OPTIONS"),
    (b"Access-Control-Allow-Headers", b"Accept, Cache-Control, If-None-Match"),
    (b"Content-Length", b"0"),
]


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its signal handlers: ``stop_on_signals`` (or the caller) decides a stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6 as ``host`` says); raises ``OSError``."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # A burst of connections waits in the kernel to be accepted instead of having its SYNs dropped.
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def _raise_file_limit(wanted: int) -> None:
    """Raise the soft limit of open files towards ``wanted`` (bounded by the hard limit), where the OS has one."""
    if resource is None:
        return
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class GatewayServer:
    """uvicorn serving a ``GatewayResponder`` and mounted apps, within the connection bounds.

    ``idle_timeout`` bounds an idle connection (and a client not reading its answer);
    ``head_timeout`` a request's head and body from its first byte. Both, and the limits, are read
    by each connection as it is set up. ``serve_forever`` runs the event loop in the calling thread
    until ``shutdown``; ``server_close`` then waits for the writes under way and frees the socket.
    """

    def __init__(
        self,
        address: tuple[str, int],
        gateway: GatewayResponder,
        apps: Mapping[str, Mounted] | None = None,
        *,
        max_connections: int = MAX_CONNECTIONS,
        max_client_connections: int = MAX_CLIENT_CONNECTIONS,
        max_client_rate: int | None = None,
        idle_timeout: float = IDLE_TIMEOUT,
        head_timeout: float = HEAD_TIMEOUT,
    ) -> None:
        for name, value in (("connection", max_connections), ("per-client connection", max_client_connections)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"the {name} limit must be 1 or more, not {value!r}")
        self.max_connections = max_connections
        self.max_client_connections = max_client_connections
        self.idle_timeout = idle_timeout
        self.head_timeout = head_timeout
        self.counts = ConnectionCounts()
        # None: the default rate, loopback clients unbounded; a number (0: none) bounds every client.
        self.rates = ClientRates(MAX_CLIENT_RATE if max_client_rate is None else max_client_rate,
                                 loopback=max_client_rate is not None)
        self.cars = CarCache()  # streamed CAR answers kept as files (gateway.car_cache)
        self.gateway = gateway
        # Mount points such as "/ui/"; the gateway paths (/ipfs/, /ipns/, /) are never shadowed.
        self.apps = dict(apps or {})
        for prefix in self.apps:
            path = prefix.rstrip("/")
            if not prefix.startswith("/") or path in ("", "/ipfs", "/ipns") or path.startswith(("/ipfs/", "/ipns/")):
                raise UsageError(f"cannot mount an app at {prefix!r}: mount it under its own path, such as /ui/")
        # BodyApp answers under way, and whether the server is closing (server_close waits for them).
        self._writes = 0
        self._writes_done = threading.Condition()
        self._closing = False
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._uvicorn: _Uvicorn | None = None
        _raise_file_limit(max_connections + 64)
        self.socket = _listen(*address)
        self.server_address: tuple[Any, ...] = self.socket.getsockname()
        # Bound to loopback, the apps answer only loopback Host names (net/loopback: DNS rebinding).
        bound, port = str(self.server_address[0]), int(self.server_address[1])
        self.app_hosts = frozenset(allowed_hosts(bound, port)) if is_loopback(bound) else None
        self._threads = ThreadPoolExecutor(ANSWER_THREADS, thread_name_prefix="bundlekit-gateway-answer")

    # -- serving ------------------------------------------------------------------------------

    def serve_forever(self, poll_interval: float = STOP_POLL_INTERVAL) -> None:
        """Serve until ``shutdown`` (from another thread or a signal handler); returns at once after one."""
        try:
            if not self._stop.is_set():
                asyncio.run(self._serve(poll_interval))
        finally:
            self._stopped.set()

    async def _serve(self, poll_interval: float) -> None:
        protocol = type("BoundGatewayProtocol", (GatewayProtocol,), {"limits": self})
        # uvicorn warns of what clients send (a malformed request, an upgrade): the transport answers those
        # and logs them itself, so only uvicorn's errors are logged.
        config = uvicorn.Config(
            self._asgi, http=protocol, interface="asgi3", lifespan="off", log_config=None, log_level="error", access_log=False,
            proxy_headers=False, server_header=False, date_header=True,
            timeout_keep_alive=int(self.idle_timeout) + 1, timeout_graceful_shutdown=int(WRITE_GRACE),
            h11_max_incomplete_event_size=MAX_HEAD_BYTES + 8192, backlog=1024,
        )
        self._uvicorn = server = _Uvicorn(config)
        watch = asyncio.create_task(self._watch_stop(server, poll_interval))
        try:
            await server.serve(sockets=[self.socket])
        finally:
            watch.cancel()
            await self.counts.close_all()

    async def _watch_stop(self, server: _Uvicorn, poll_interval: float) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(poll_interval)
        server.should_exit = True

    def shutdown(self) -> None:
        """Ask ``serve_forever`` to stop and wait until it has (call it from another thread). From now on a
        ``BodyApp`` request is answered 503 (``answer_writing``); the ones under way finish first."""
        with self._writes_done:
            self._closing = True
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        """Stop taking connections, then wait (at most ``WRITE_GRACE`` seconds) for the ``BodyApp``
        answers under way: a stop (SIGTERM, Ctrl-C) never cuts a record write in half at exit."""
        with self._writes_done:
            self._closing = True
            self._writes_done.wait_for(lambda: self._writes == 0, timeout=WRITE_GRACE)
        self._stop.set()
        self.socket.close()
        self._threads.shutdown(wait=False, cancel_futures=True)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8080`` (no trailing slash)."""
        host, port = self.server_address[0], self.server_address[1]
        host_text = host.decode() if isinstance(host, bytes) else str(host)
        if ":" in host_text:
            host_text = f"[{host_text}]"
        return f"http://{host_text}:{port}"

    # -- one request ----------------------------------------------------------------------------

    def answer_at_once(self, request: SimpleGet, client: Any, gone: Callable[[], bool]) -> Response | None:
        """The gateway's answer to a plain raw-block GET the connection took without h11 (``gateway.fastpath``),
        computed on the event loop as ``_compute`` computes any one block's answer, after the same rate check
        and log line as ``_request``; None when its client is past its rate (the 429 is the whole way's)."""
        if not self.rates.allow(str(client[0]) if client else "?"):
            return None
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s %s", client, redact(f"GET {request.target}"))
        return self.gateway.respond("GET", request.target, request.headers, cancelled=gone)

    async def _asgi(self, scope: Any, receive: Any, send: Any) -> None:
        """One request; a failure of the transport is logged (``handle_error``) and ends the connection."""
        try:
            await self._request(scope, receive, send)
        except asyncio.CancelledError:  # a stop past its grace: the connection ends unanswered
            cast(GatewayProtocol, scope["extensions"][EXTENSION]).cut()
        except Exception:
            self.handle_error(None, scope.get("client"))
            cast(GatewayProtocol, scope["extensions"][EXTENSION]).cut()

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

    async def _request(self, scope: Any, receive: Any, send: Any) -> None:
        """One request: its app found (``_app_for``), admitted, its body settled (``_settle_body``), its
        answer computed (``_compute``), then sent."""
        conn = cast(GatewayProtocol, scope["extensions"][EXTENSION])
        method = str(scope["method"])
        client = scope.get("client")
        if not self.rates.allow(str(client[0]) if client else "?"):
            logger.info("refused %s: past %g requests a second", client, self.rates.rate)
            await self._send(send, conn, method, error_response(
                429, f"too many requests from one address (at most {self.rates.rate:g} a second); retry shortly",
                [("Retry-After", "1")]), [(b"Connection", b"close")])  # its body, if any, is never read
            return
        target = scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode("latin-1")
        headers: dict[str, str] = {}
        for raw_key, raw_value in scope["headers"]:
            key, value = raw_key.decode("latin-1"), raw_value.decode("latin-1")
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s %s", client, redact(f"{method} {target}"))
        app = self._app_for(target, headers, client)
        refusal = _admission(app, method, target, headers)
        try:
            body, close = await self._settle_body(scope, receive, conn, None if refusal else app, method)
        except _SpoolFailed as exc:
            body, close, refusal = None, True, error_response(
                507, f"this server cannot keep the request's body now: {exc}; retry later", [("Retry-After", "60")])
        if conn.closed():
            _discard(body)
            return  # the client left, its request took too long, or the server is stopping
        conn.writing = refusal is None and _writes(app, method)  # a stop lets this answer finish
        extra = [(b"Connection", b"close")] if close else []
        if method == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": _OPTIONS_HEADERS + extra})
            await send({"type": "http.response.body", "body": b""})
            return
        response = refusal or await self._compute(app, method, target, headers, body, conn)
        if response.status == CLIENT_GONE:
            logger.info("client %s went away before the answer to %s", scope.get("client"), redact(target))
            conn.cut()
            return
        await self._send(send, conn, method, response, extra)

    def _app_for(self, target: str, headers: dict[str, str], client: Any) -> Mounted:
        """The app ``target`` belongs to: the gateway's, a mounted app's (its ``headers`` given the client's
        address as ``PEER_HEADER``), or the ``421`` of an app asked under a ``Host`` it does not answer."""
        app = self.responder_for(target)
        if app == self.gateway.respond:
            return app
        headers[PEER_HEADER] = str(client[0]) if client else ""
        return app if self.answers_host(headers.get("host", "")) else self.misdirected

    async def _compute(
        self, app: Mounted, method: str, target: str, headers: Mapping[str, str], body: Body, conn: GatewayProtocol
    ) -> Response:
        """The answer of ``app``, on an answer thread (a spooled ``body`` closed once it is done with it)."""
        gone = conn.is_gone
        if app == self.gateway.respond and _one_block(target):
            # One block's answer (a root's block, a CAR's first block, a small file) is a read or two:
            # answered on the loop, it costs no thread hop; everything longer goes to a thread.
            return self.answer(app, method, target, headers, body, gone)
        job = self._threads.submit(self.answer, app, method, target, headers, body, gone)
        try:
            return await asyncio.wrap_future(job)
        finally:
            if not isinstance(body, bytes | None):
                job.cancel()  # not started yet (a stop): it never will
                job.add_done_callback(lambda _job: _discard(body))  # when the app is done with it, at once if it is

    async def _settle_body(
        self, scope: Any, receive: Any, conn: GatewayProtocol, app: Mounted | None, method: str
    ) -> tuple[Body, bool]:
        """The request body (``b""`` when none or dropped; a spooled file for a ``SpooledBodyApp``; None when
        an app's could not be read within its bound) and whether the connection closes after the answer
        (``framing``'s rule). ``app`` None: a refused request, whose body is dropped like any other."""
        names = {key for key, _value in scope["headers"]}
        if not names & _FRAMING_HEADERS:  # the common case: no body, nothing to decide but Connection
            return b"", any(key == b"connection" and b"close" in value.lower() and "close" in {
                t.strip() for t in value.decode("latin-1").lower().split(",")} for key, value in scope["headers"])
        message = Message()
        for raw_key, raw_value in scope["headers"]:
            message[raw_key.decode("latin-1")] = raw_value.decode("latin-1")
        framing = request_framing(message, http10=scope["http_version"] == "1.0")
        tokens = {t.strip().lower() for t in (message.get("connection") or "").split(",")}
        close = "close" in tokens or framing.close
        waits = (message.get("expect") or "").strip().lower() == "100-continue"
        limit = app.max_body if isinstance(app, BodyApp | SpooledBodyApp) and method in app.methods else 0
        if framing.kind == "none":
            return b"", close
        if framing.kind == "length" and framing.length > (limit or MAX_DISCARDED_BODY):
            return (None if limit else b""), True  # never read: the connection closes after the answer
        if limit:
            body = await _take_body(receive, conn, limit, spooled=isinstance(app, SpooledBodyApp))
            return body, close or body is None
        if framing.close or waits or await read_body(receive, conn, MAX_DISCARDED_BODY) is None:
            return b"", True
        return b"", close

    async def _send(
        self, send: Any, conn: GatewayProtocol, method: str, response: Response, extra: list[tuple[bytes, bytes]]
    ) -> None:
        """The status, headers and body of ``response``; a body that fails half-way cuts the connection."""
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
        no_body = method == "HEAD" or response.status in (204, 304)
        if response.length is not None:
            headers.append((b"Content-Length", str(response.length).encode()))
        elif not no_body:
            headers.append((b"Transfer-Encoding", b"chunked"))
        conn.cork()  # the head leaves with the body's first piece (all of a small body)
        try:
            await send({"type": "http.response.start", "status": response.status, "headers": headers + extra})
            if no_body:
                await send({"type": "http.response.body", "body": b""})
                return
            await self._send_body(send, conn, method, response)
        except BundlekitError as exc:
            # The status line is out; cutting the connection is the only honest signal left.
            logger.warning("response cut short: %s", exc)
            conn.cut()
            return
        except (OSError, WalkCancelled):
            conn.cut()
            return
        finally:
            conn.uncork()

    async def _send_body(self, send: Any, conn: GatewayProtocol, method: str, response: Response) -> None:
        """The body's pieces: as given, pulled from its iterator on a thread, or read from the kept CAR
        of the same answer (``car_cache``); a CAR streamed whole for the first time is kept."""
        loop = asyncio.get_running_loop()
        body = response.body
        if isinstance(body, (list, tuple)):
            for chunk in body:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        key = self.cars.key(method, response)
        kept = self.cars.get(key) if key is not None else None
        if kept is not None:
            _close(body)  # never started: the kept file holds its bytes
            offset = 0
            # Read on the loop: a kept CAR was just written, so its pages are cached; a thread hop per MiB
            # cost more than the read (bench/gateway.py, 16 connections).
            while data := kept.read(offset):
                offset += len(data)
                await send({"type": "http.response.body", "body": data, "more_body": True})
                conn.uncork()
            await send({"type": "http.response.body", "body": b""})
            return
        copy = self.cars.copy(key) if key is not None else None
        chunks = iter(body)
        try:
            while data := await loop.run_in_executor(self._threads, _pull, chunks, copy):
                await send({"type": "http.response.body", "body": data, "more_body": True})
                conn.uncork()
        except BaseException:
            if copy is not None:
                copy.drop()
            raise
        if copy is not None:
            copy.keep()
        await send({"type": "http.response.body", "body": b""})

    def answer(
        self, app: Mounted, method: str, target: str, headers: Mapping[str, str], body: Body, gone: Callable[[], bool]
    ) -> Response:
        """The answer of ``app`` (``_app_for``; on an answer thread): the gateway's or a mounted app's."""
        if app == self.gateway.respond:
            # The gateway's walks stop for a client that has gone (specs/gateway.md 3.5a).
            return self.gateway.respond(method, target, headers, cancelled=gone)
        if isinstance(app, BodyApp | SpooledBodyApp):
            return self.answer_writing(app, method, target, headers, body if method in app.methods else b"")
        return app(method, target, headers)

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

    def responder_for(self, target: str) -> Mounted:
        """The app mounted at the longest prefix of ``target``'s path, else the gateway."""
        path = target.split("?", 1)[0]
        if path.startswith(("/ipfs/", "/ipns/")):
            return self.gateway.respond  # never shadowed by an app (checked when they are mounted)
        for prefix in sorted(self.apps, key=len, reverse=True):
            if path == prefix.rstrip("/") or path.startswith(prefix):
                return self.apps[prefix]
        return self.gateway.respond

    def answer_writing(
        self, app: BodyApp | SpooledBodyApp, method: str, target: str, headers: Mapping[str, str], body: Body
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


class _SpoolFailed(Exception):
    """A body that could not be written to its temp file (a full disk): the request is answered 507."""


async def _take_body(receive: Any, conn: GatewayProtocol, limit: int, *, spooled: bool) -> Body:
    """An app's body within ``limit``: in memory, or (``spooled``: an admitted ``SpooledBodyApp``'s) in a
    temp file read under the idle timeout alone (``GatewayProtocol.admit_body``)."""
    if not spooled:
        return await read_body(receive, conn, limit)
    conn.admit_body()
    try:
        return await spool_body(receive, conn, limit)
    except OSError as exc:
        logger.warning("cannot spool a request body: %s", exc)
        raise _SpoolFailed(exc.strerror or str(exc)) from exc


def _admission(app: Mounted, method: str, target: str, headers: Mapping[str, str]) -> Response | None:
    """The refusal of a ``SpooledBodyApp``'s ``admit`` check, made before its body is read; None otherwise."""
    if isinstance(app, SpooledBodyApp) and app.admit is not None and method in app.methods:
        return app.admit(method, target, headers)
    return None


def _writes(app: Mounted, method: str) -> bool:
    """Whether ``app``'s answer to ``method`` may write (a routing ``PUT``, a push): a stop lets it finish."""
    return isinstance(app, BodyApp | SpooledBodyApp) and method in app.methods


def _discard(body: Body) -> None:
    """Close a spooled body (an unnamed file: nothing of it remains); bytes need nothing."""
    if not isinstance(body, bytes | None):
        body.close()


def _one_block(target: str) -> bool:
    """Whether ``target`` names a CID with no path under it (``/ipfs/{cid}``, any query): its answer is
    computed from the root's block, with no walk (a streamed body is still pulled on a thread)."""
    path = target.split("?", 1)[0]
    return path.startswith("/ipfs/") and "/" not in path[6:].rstrip("/")


def _pull(chunks: Iterator[bytes], copy: CarCopy | None) -> bytes:
    """The next ``_PULL_BYTES`` or so of a streamed body, copied to ``copy`` when one is made; empty at
    its end (on an answer thread)."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        if chunk:
            parts.append(chunk)
            size += len(chunk)
            if size >= _PULL_BYTES:
                break
    data = b"".join(parts)
    if copy is not None and data:
        copy.add(data)
    return data


def _close(body: object) -> None:
    """Close a streamed body that will not be read (a generator's ``close``), so it holds nothing."""
    close = getattr(body, "close", None)
    if callable(close):
        close()

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
    apps: Mapping[str, Mounted] | None = None,
    max_connections: int = MAX_CONNECTIONS,
    max_client_connections: int = MAX_CLIENT_CONNECTIONS,
    max_client_rate: int | None = None,
) -> GatewayServer:
    """A bound (not yet serving) gateway server; ``port=0`` picks a free port; ``apps`` are mounted beside it;
    at most ``max_connections`` connections are open at once, ``max_client_connections`` from one
    address (one more is answered 503).

    Raises ``UsageError`` when the address cannot be bound, or when ``host``
    is empty: the socket layer reads "" as every interface, which must be
    asked for explicitly (``0.0.0.0`` or ``::``), never reached by an unset variable.
    """
    if not host.strip():
        raise UsageError(
            "--host is empty; give an address to bind (default 127.0.0.1; 0.0.0.0 for every interface)"
        )
    try:
        return GatewayServer((host, port), GatewayResponder(source), apps, max_connections=max_connections,
                             max_client_connections=max_client_connections, max_client_rate=max_client_rate)
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
    apps: Mapping[str, Mounted] | None = None,
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
