"""One connection of ``bundlekit serve``: uvicorn's h11 protocol within the gateway's bounds (specs/gateway.md 4).

The gateway is served by uvicorn (``server.GatewayServer``) on one asyncio event loop: a
connection is a protocol object and a few timers, never a thread, so a slow client costs
a socket and some bytes, not a worker. uvicorn 0.55's own ``H11Protocol`` parses and frames
HTTP/1.1 with h11; :class:`GatewayProtocol` adds what a server facing hostile clients needs:

* a connection limit, in all and per client address: one more is answered ``503`` with
  ``Retry-After`` and ``Connection: close`` as soon as it is accepted, and never counted;
* a request's head and body must arrive within ``head_timeout`` of its first byte (a body the
  app admitted, ``admit_body``: each of its pieces within ``idle_timeout`` of the last), an idle
  keep-alive connection closes after ``idle_timeout``, an answer whose client stops reading it
  (the transport's writing paused) for ``idle_timeout`` has its connection dropped;
* every request head is checked before h11 reads it: each header line
  (``framing.header_line_problem``: bare CR, NUL, obs-fold, whitespace before the colon, no
  colon) and its framing (``framing.request_framing``) are a ``400``, header lines over
  ``framing.MAX_HEAD_BYTES`` a ``431``; what h11 refuses itself is a ``400`` naming h11's reason.
  Each such answer has a ``Content-Length`` and ``Connection: close``;
* a connection closed with request bytes possibly unread is shut for writing and read on for at
  most :data:`LINGER_TIME` seconds and :data:`LINGER_BYTES` bytes (Apache's "lingering close"), so
  the kernel does not answer the unread bytes with a reset that destroys the answer at the client.

What the gateway's ASGI app needs of its connection, it reads from the scope's extension
``bundlekit.connection`` (:class:`GatewayProtocol`): whether the client has gone (a walk stops),
whether the request body was malformed, ``cut`` (end the connection without finishing the
answer) and ``writing`` (a stop lets this answer finish).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import time
from collections import Counter
from email.message import Message
from collections.abc import Callable
from typing import Any, Protocol, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from bundlekit.gateway.fastpath import SimpleGet, frame_response, simple_get
from bundlekit.gateway.framing import MAX_HEAD_BYTES, header_line_problem, request_framing
from bundlekit.gateway.respond import CLIENT_GONE, Response
from bundlekit.net.loopback import is_loopback

__all__ = ["CHECKED_CHUNKS", "EXTENSION", "LINGER_BYTES", "LINGER_TIME", "MIN_MEAN_CHUNK", "ClientRates", "ConnectionCounts", "GatewayProtocol", "Limits", "client_of", "StallBoundProtocol",
           "head_problem"]

logger = logging.getLogger("bundlekit.gateway")

#: Seconds and bytes a closing connection still reads and drops before the close (see the module doc).
LINGER_TIME = 2.0
LINGER_BYTES = 16 * 1024 * 1024
#: A chunked body of more than this many chunks must average :data:`MIN_MEAN_CHUNK` data bytes a chunk:
#: h11 parses each chunk in Python on the event loop (some microseconds), so a body of one-byte chunks
#: would stall every connection for a fraction of a second per request.
CHECKED_CHUNKS = 1024
MIN_MEAN_CHUNK = 256
#: The scope extension through which the gateway's ASGI app reaches its connection.
EXTENSION = "bundlekit.connection"


class Limits(Protocol):
    """The bounds a connection takes from its server as it is set up (``GatewayServer``)."""

    max_connections: int
    max_client_connections: int
    idle_timeout: float
    head_timeout: float
    counts: ConnectionCounts

    def answer_at_once(self, request: SimpleGet, client: Any, gone: Callable[[], bool]) -> Response | None:
        """The answer to a plain raw-block GET (``gateway.fastpath``), or None: it takes the whole way."""


class ConnectionCounts:
    """Connections open, in all and per client address (the event loop's thread only)."""

    def __init__(self) -> None:
        self.total = 0
        self.by_client: Counter[str] = Counter()
        # Every transport not yet lost, refused and lingering ones too: a stop closes them all.
        self.transports: set[asyncio.Transport] = set()

    async def close_all(self) -> None:
        """Abort every connection still open (a stopped server's lingering and refused ones), then let
        the event loop see them lost."""
        for transport in list(self.transports):
            transport.abort()
        for _turn in range(100):  # each abort is seen within a turn or two of the loop; never wait for ever
            if not self.transports:
                return
            await asyncio.sleep(0.001)

    def refusal(self, client: str, limits: Limits) -> str | None:
        """Why one more connection from ``client`` is refused, or None (then it is counted)."""
        if self.total >= limits.max_connections:
            return f"the gateway is serving its limit of {limits.max_connections} connections; retry shortly\n"
        if self.by_client[client] >= limits.max_client_connections:
            return (f"the gateway is serving its limit of {limits.max_client_connections} connections "
                    "from one address; retry shortly\n")
        self.total += 1
        self.by_client[client] += 1
        return None

    def release(self, client: str) -> None:
        self.total -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


# Whether a client address is loopback, remembered: asked once per request, parsed once per address.
_is_loopback = functools.lru_cache(maxsize=4096)(is_loopback)


def client_of(peer: str) -> str:
    """Who a client address counts as: an IPv4 address itself (an IPv4-mapped IPv6 one too), an IPv6 address
    by its /64 network (one host commonly holds a whole /64, so per address it would bring without bound)."""
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return peer
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


# Who a client address counts as, remembered likewise.
_client_of = functools.lru_cache(maxsize=4096)(client_of)


class ClientRates:
    """Requests per second from one client address, as token buckets (the event loop's thread only).

    A client may send ``rate`` requests a second, in bursts of up to two seconds' worth; one more is
    refused (``GatewayServer`` answers it ``429``). ``rate`` 0 bounds nothing. Loopback clients (the
    person's own machine: a benchmark, a browser on the interface) are bounded only when ``loopback``
    is set (``serve --max-client-rate`` given). At most :attr:`MAX_CLIENTS` buckets are kept: past that,
    the buckets of clients quiet for the burst's two seconds (full again) are dropped, then all.
    """

    MAX_CLIENTS = 65536

    def __init__(self, rate: float, *, loopback: bool = False) -> None:
        self.rate = rate
        self.loopback = loopback
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens left, when counted)

    def allow(self, address: str) -> bool:
        """Whether one more request from ``address`` is taken now (then it is counted against its client,
        ``client_of``: an IPv6 address's /64)."""
        if self.rate <= 0 or (not self.loopback and _is_loopback(address)):
            return True
        client = _client_of(address)
        now, burst = time.monotonic(), 2 * self.rate
        tokens, then = self._buckets.get(client, (burst, now))
        tokens = min(burst, tokens + (now - then) * self.rate)
        if tokens < 1:
            self._buckets[client] = (tokens, now)
            return False
        if client not in self._buckets and len(self._buckets) >= self.MAX_CLIENTS:
            self._buckets = {c: b for c, b in self._buckets.items() if now - b[1] < 2.0}
            if len(self._buckets) >= self.MAX_CLIENTS:
                self._buckets.clear()
        self._buckets[client] = (tokens - 1, now)
        return True


def _refusal(body: str) -> bytes:
    data = body.encode()
    return (
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode() + data


def _error(status: int, message: str) -> bytes:
    """A transport-level error answer (a malformed head): plain text, its length, and the close."""
    data = f"{message}\n".encode()
    reason = {400: "Bad Request", 431: "Request Header Fields Too Large"}[status]
    return (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"X-Content-Type-Options: nosniff\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode() + data


class _HeadRefused(h11.RemoteProtocolError):
    """A request head refused by the gateway's own rules (``framing``), with the status to answer."""


def head_problem(buffer: bytes) -> _HeadRefused | None:
    """Why the request head at the start of ``buffer`` is refused, or None (fine, or not complete yet)."""
    end = buffer.find(b"\r\n\r\n")
    lf_end = buffer.find(b"\n\n")
    ends = [e + 4 for e in (end,) if e >= 0] + [e + 2 for e in (lf_end,) if e >= 0]
    if not ends:
        if len(buffer) > MAX_HEAD_BYTES + 8192:
            return _HeadRefused(f"the header lines are over {MAX_HEAD_BYTES} bytes", error_status_hint=431)
        return None
    head = buffer[: min(ends)]
    lines = head.splitlines(keepends=True)[1:]
    if sum(len(line) for line in lines) > MAX_HEAD_BYTES:
        return _HeadRefused(f"malformed request head: the header lines are over {MAX_HEAD_BYTES} bytes",
                            error_status_hint=431)
    message = Message()
    for line in lines:
        problem = header_line_problem(line)
        if problem is not None:
            return _HeadRefused(f"malformed request head: {problem}", error_status_hint=400)
        name, colon, value = line.partition(b":")
        if colon:
            message[name.decode("latin-1")] = value.strip().decode("latin-1")
    framing = request_framing(message)
    if framing.kind == "invalid":
        return _HeadRefused(f"invalid request framing: {framing.problem}", error_status_hint=400)
    return None


def _buffered(conn: h11.Connection) -> bool:
    """Whether h11 holds received bytes it has not read yet (without copying them, where h11 allows)."""
    buffer = getattr(conn, "_receive_buffer", None)
    return bool(buffer) if buffer is not None else bool(conn.trailing_data[0])


def _chunk_line_problem(conn: h11.Connection) -> h11.RemoteProtocolError | None:
    """A chunk-size line h11 would take but RFC 9112 7.1 does not: whitespace after the size with no
    extension after it (a proxy in front may read the chunk differently). h11 reads the line next when
    its chunk reader has no chunk bytes left; reader attributes h11 renames make this check a no-op."""
    reader = getattr(conn, "_reader", None)
    if type(reader).__name__ != "ChunkedReader" or getattr(reader, "_reading_trailer", True):
        return None
    if getattr(reader, "_bytes_in_chunk", 1) != 0:
        return None
    buffered = conn.trailing_data[0]
    start = len(getattr(reader, "_bytes_to_discard", b""))
    end = buffered.find(b"\r\n", start)
    if end < 0:
        return None
    size, semicolon, _extension = buffered[start:end].partition(b";")
    if not semicolon and size != size.rstrip(b" \t"):
        return h11.RemoteProtocolError("whitespace after a chunk size with no extension")
    return None


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: ``close`` lingers (see the module doc)."""

    def __init__(self, transport: asyncio.Transport, protocol: GatewayProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._corked: list[bytes] | None = None

    def cork(self) -> None:
        """Hold writes until ``uncork``: an answer's head and small body leave in one send, not two."""
        if self._corked is None:
            self._corked = []

    def uncork(self) -> None:
        held, self._corked = self._corked, None
        if held:
            self._transport.write(b"".join(held))

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._corked is not None:
            self._corked.append(bytes(data))
        else:
            self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def close(self) -> None:
        self.uncork()
        self._protocol.linger()


class StallBoundProtocol(H11Protocol):
    """uvicorn's h11 connection, dropped when its client stops reading an answer (the transport's writing
    paused) for ``stall_timeout`` seconds; shared by the gateway and ``bundlekit mcp --http``."""

    stall_timeout = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stall: asyncio.TimerHandle | None = None

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall is None:
            self._stall = self.loop.call_later(self.stall_timeout, self._not_reading)

    def resume_writing(self) -> None:
        super().resume_writing()
        self.cancel_stall()

    def cancel_stall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None

    def _not_reading(self) -> None:
        self._stall = None
        logger.info("closed a connection that read no answer for %g s", self.stall_timeout)
        self.abort()

    def abort(self) -> None:
        """Drop the connection at once (``close`` would wait for the unread answer to be sent)."""
        self.transport.abort()


class GatewayProtocol(StallBoundProtocol):
    """uvicorn's h11 connection with the gateway's bounds; ``limits`` is set on a subclass per server."""

    limits: Limits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gone = False  # the client closed or reset its end
        self.broken = False  # the request body was malformed (h11 refused it while the app read it)
        self.writing = False  # an answer a stop lets finish (a routing PUT writing its record)
        self.admitted = False  # this request's body is read under the idle timeout alone (``admit_body``)
        self._chunks = self._chunk_bytes = 0  # this request's body chunks parsed, and their data bytes
        self.lingering = False
        self._refused = False
        self._counted: str | None = None
        self._linger_budget = LINGER_BYTES
        self._timer: asyncio.TimerHandle | None = None
        self._timer_kind: str | None = None
        self._active = 0.0  # the loop's time of the last bytes received while the idle timer was kept
        self._raw: asyncio.Transport | None = None
        self._idle = self.stall_timeout = self.limits.idle_timeout
        self._head = self.limits.head_timeout

    def is_gone(self) -> bool:
        """Whether the client has closed or reset its end (polled by a walk, from an answer thread)."""
        return self.gone

    def closed(self) -> bool:
        """Whether this connection is gone or closing: nothing more will be answered on it."""
        return self.gone or self.lingering or self._raw is None or self._raw.is_closing()

    # -- connection life ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        assert isinstance(transport, asyncio.Transport)
        self._raw = transport
        self.limits.counts.transports.add(transport)
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        client = client_of(address)  # counted as: an IPv6 address by its /64
        refusal = self.limits.counts.refusal(client, self.limits)
        if refusal is not None:
            self._refused = True
            self.transport = transport
            logger.warning("refused %s: %s", address, refusal.strip())
            transport.write(_refusal(refusal))
            self.linger()
            return
        self._counted = client
        super().connection_made(_LingeringTransport(transport, self))  # type: ignore[arg-type]
        self.conn.next_event = self._next_event  # type: ignore[method-assign]
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.gone = True
        if self._raw is not None:
            self.limits.counts.transports.discard(self._raw)
        self._set_timer(None)
        self.cancel_stall()
        if self._counted is not None:
            self.limits.counts.release(self._counted)
            self._counted = None
        if self._refused:
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused or self.lingering:
            self._linger_budget -= len(data)
            if self._linger_budget <= 0 and self._raw is not None:
                self._raw.close()
            return
        if self._timer_kind == "body":
            self._set_timer(None)  # set again by ``_follow``: a body's bound runs from its last bytes
        elif self._timer_kind == "idle":
            # Kept, not set again for every request of a keep-alive connection: it counts from here (``_expired``).
            self._active = self.loop.time()
        if not self._answer_at_once(data):
            super().data_received(data)
        self._follow()

    def _answer_at_once(self, data: bytes) -> bool:
        """Whether ``data`` was one plain raw-block GET, answered here without h11 (``gateway.fastpath``):
        taken only on a connection with nothing pending, its last answer complete and its client reading."""
        conn = self.conn
        if (conn.their_state is not h11.IDLE or conn.our_state is not h11.IDLE or _buffered(conn)
                or self.flow.write_paused or (self.cycle is not None and not self.cycle.response_complete)):
            return False
        request = simple_get(data)
        if request is None:
            return False
        response = self.limits.answer_at_once(request, self.client, self.is_gone)
        if response is None:
            return False
        framed = frame_response(response, self.server_state.default_headers) if response.status != CLIENT_GONE else None
        if framed is None:  # the whole way cuts such a connection too (a client gone, an answer h11 refuses)
            if response.status != CLIENT_GONE:
                logger.error("cannot frame the answer to %s (status %d)", request.target[:200], response.status)
            self.cut()
            return True
        self.transport.write(framed)
        return True

    def eof_received(self) -> None:
        """A client's end of sending: the transport closes once it is lingering (nothing more to
        read), and as uvicorn decides otherwise."""
        super().eof_received()

    def on_response_complete(self) -> None:
        self.admitted = False
        super().on_response_complete()
        self._set_timer(None)  # uvicorn's keep-alive timer runs; ours follow the next request
        self._follow()

    def shutdown(self) -> None:
        """A stop: an answer that writes (``writing``) finishes, every other connection closes now."""
        if self.writing:
            super().shutdown()
        elif self._raw is not None:
            if self.cycle is not None:
                self.cycle.disconnected = True
                self.cycle.message_event.set()  # a body being read ends: the request is dropped
            # Aborted, not closed: ``close`` waits for the unsent answer, which a client not reading it never
            # takes, so its task would hold the stop until uvicorn's grace cancelled it (5 s, an error line).
            self._raw.abort()

    # -- bounds -------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Set the timer for the phase the client is in: idle between requests, or sending one."""
        if self.transport is None or self.lingering or self.transport.is_closing():
            self._set_timer(None)
            return
        state = self.conn.their_state
        pending = _buffered(self.conn)
        if state is h11.IDLE and not pending:
            if self._timer_kind != "idle":
                self._set_timer("idle", self._idle)
        elif state is h11.SEND_BODY and self.admitted:
            if self._timer_kind != "body":
                self._set_timer("body", self._idle)
        elif state is h11.SEND_BODY or (state is h11.IDLE and pending):
            if self._timer_kind != "request":
                self._set_timer("request", self._head)
        else:
            self._set_timer(None)

    def admit_body(self) -> None:
        """This request's body was admitted (a ``SpooledBodyApp``'s check passed): until its answer, it is
        bounded by the idle timeout from its last bytes, not by the head's deadline (a large push may take
        longer; a client that stops sending is still cut off)."""
        self.admitted = True
        self._follow()

    def _set_timer(self, kind: str | None, seconds: float = 0.0) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_kind = None, kind
        if kind is not None:
            self._timer = self.loop.call_later(seconds, self._expired, kind)

    def _expired(self, kind: str) -> None:
        left = self._active + self._idle - self.loop.time()
        if kind == "idle" and left > 0:  # bytes came after the idle timer was set: it runs on from them
            self._timer = self.loop.call_later(left, self._expired, kind)
            return
        self._timer, self._timer_kind = None, None
        logger.info("closed a connection %s", {"idle": "idle too long", "body": "whose body stopped arriving"}.get(
            kind, "whose request took too long"))
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self._raw is not None:
            self._raw.close()

    def timeout_keep_alive_handler(self) -> None:
        """uvicorn's keep-alive timer: ours (``idle_timeout``) bounds an idle connection instead."""

    def abort(self) -> None:
        if self._raw is not None:
            self._raw.abort()

    def cork(self) -> None:
        """Hold this connection's writes until ``uncork`` (``_LingeringTransport.cork``)."""
        if isinstance(self.transport, _LingeringTransport):
            self.transport.cork()

    def uncork(self) -> None:
        if isinstance(self.transport, _LingeringTransport):
            self.transport.uncork()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None:  # the gateway's app reaches its connection through the scope
            extensions = cast(dict[str, object], self.cycle.scope.setdefault("extensions", {}))
            extensions[EXTENSION] = self

    # -- closing ------------------------------------------------------------------------------

    def linger(self) -> None:
        """Shut for writing once the answer is out, read and drop for the linger bounds, then close."""
        if self.lingering or self._raw is None:
            return
        self.uncork()  # held bytes of an answer leave before the shut for writing
        self.lingering = True
        self._set_timer(None)
        raw = self._raw
        if raw.is_closing():
            return
        try:
            if raw.can_write_eof():
                raw.write_eof()
        except (OSError, RuntimeError):
            raw.close()
            return
        self.loop.call_later(LINGER_TIME, raw.close)

    def cut(self) -> None:
        """End the connection without finishing the answer: a client sees a truncated transfer."""
        self.uncork()  # what was written goes out first
        if self.cycle is not None:
            self.cycle.disconnected = True
        if self._raw is not None:
            self._raw.close()

    # -- request heads ------------------------------------------------------------------------

    def _next_event(self) -> Any:
        """h11's next event, the head checked first by the gateway's rules (``head_problem``)."""
        conn = self.conn
        if conn.their_state is h11.IDLE:
            if _buffered(conn):
                problem: h11.RemoteProtocolError | None = head_problem(conn.trailing_data[0])
                if problem is not None:
                    self._refused_head = problem
                    raise problem
        elif conn.their_state is h11.SEND_BODY:
            problem = _chunk_line_problem(conn)
            if problem is None and self._chunks > CHECKED_CHUNKS and self._chunk_bytes < MIN_MEAN_CHUNK * self._chunks:
                problem = h11.RemoteProtocolError(f"a chunked body of more than {CHECKED_CHUNKS} chunks averaging "
                                                  f"under {MIN_MEAN_CHUNK} bytes a chunk")
            if problem is not None:
                self._refused_head = problem
                raise problem
        try:
            event = h11.Connection.next_event(conn)
        except h11.RemoteProtocolError as exc:
            self._refused_head = exc
            raise
        if isinstance(event, h11.Request):
            self._chunks = self._chunk_bytes = 0
        elif isinstance(event, h11.Data) and event.chunk_start:
            self._chunks += 1
            self._chunk_bytes += len(event.data)
        elif isinstance(event, h11.Data):
            self._chunk_bytes += len(event.data)
        return event

    _refused_head: h11.RemoteProtocolError | None = None

    def send_400_response(self, msg: str) -> None:
        """A request h11 or the head check refused: 400 (431 for too many header bytes), then the close.

        A malformed body met while the app reads it ends that read instead (``broken``): the app
        answers and the connection closes."""
        exc, self._refused_head = self._refused_head, None
        if self.cycle is not None and not self.cycle.response_complete:
            self.broken = True
            self.cycle.message_event.set()
            return
        if self.transport.is_closing() or self._raw is None:
            return
        status = 431 if exc is not None and exc.error_status_hint == 431 else 400
        message = str(exc) if isinstance(exc, _HeadRefused) else f"malformed request: {exc or msg}"
        # A malformed request pipelined behind a good one is met as the good one's answer completes, its
        # last bytes still corked: they leave first, so the answers keep the requests' order.
        self.uncork()
        self._raw.write(_error(status, message))
        self.linger()

