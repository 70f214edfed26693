"""uvicorn serving the SDK's streamable HTTP app within bounds (``bundlekit mcp --http``, specs/mcp.md).

The SDK's own ``MCPServer.run("streamable-http")`` starts uvicorn with its
defaults (``mcp`` 2.3.0, ``run_streamable_http_async``): no connection limit,
and no deadline for a request's head, since uvicorn 0.54.0 times a connection
out only while it is idle between requests (``timeout_keep_alive``, a timer any
byte cancels: ``uvicorn/protocols/http/h11_impl.py``). A client trickling its
head a byte at a time, or a few hundred connections that never send, held the
server for as long as they liked. :func:`serve` runs the same app
(``MCPServer.streamable_http_app()``) in a ``uvicorn.Server`` of its own whose
connections are :class:`BoundedH11Protocol`:

* at most :data:`MAX_CONNECTIONS` are served at once; one more is answered
  ``503`` with ``Retry-After`` and ``Connection: close`` as soon as it is
  accepted, its bytes read and dropped for :data:`REFUSAL_LINGER` seconds (so
  the answer is not lost to a reset), then closed; it never counts against the
  connections being served;
* a request's head (request line and headers) must be complete within
  :data:`HEAD_TIMEOUT` of the moment the connection could send it (accepted, or
  the previous answer sent), and its body within :data:`BODY_TIMEOUT` of its
  head; otherwise the connection is closed;
* a head may be :data:`MAX_HEAD_BYTES` long (h11's incomplete-event limit: more
  is uvicorn's ``400``), a body the SDK's 4 MiB (``max_request_body_size``);
* an answer whose client stops reading it (the transport's writing paused) for
  :data:`WRITE_STALL_TIMEOUT` has its connection closed;
* an idle keep-alive connection is closed after :data:`KEEP_ALIVE_TIMEOUT`, and
  a stop waits at most :data:`SHUTDOWN_TIMEOUT` for open streams.

The head, body and write-stall deadlines are a :class:`Deadlines` value given to
:func:`serve`; :meth:`Deadlines.from_env` reads an operator's own from
``BUNDLEKIT_MCP_HEAD_DEADLINE``, ``BUNDLEKIT_MCP_BODY_DEADLINE`` and
``BUNDLEKIT_MCP_WRITE_STALL_DEADLINE`` (seconds; a slow link may need longer,
and the tests of each bound wait a fraction of a second instead of the defaults).

uvicorn's own ``limit_concurrency`` (a ``503`` when connections or running
requests reach it, checked only once a whole head has arrived) is set one above
:data:`MAX_CONNECTIONS`: admitted connections never reach it, requests left
running by clients that went away still do. uvicorn configures no logging here
(``log_config=None``, no access log): its records and the SDK's reach whatever
handles the root logger (the CLI's one-line warnings, ``cli/output``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from starlette.types import ASGIApp

from bundlekit.errors import UsageError
from bundlekit.gateway.framing import MAX_HEAD_BYTES
from bundlekit.gateway.transport import StallBoundProtocol
from bundlekit.pinning.polling import seconds_env

__all__ = [
    "BODY_TIMEOUT",
    "HEAD_TIMEOUT",
    "KEEP_ALIVE_TIMEOUT",
    "MAX_CONNECTIONS",
    "MAX_HEAD_BYTES",
    "REFUSAL_LINGER",
    "SHUTDOWN_TIMEOUT",
    "WRITE_STALL_TIMEOUT",
    "BoundedH11Protocol",
    "Deadlines",
    "serve",
]

#: Connections served at once (as the gateway's ``serve``); one more is answered 503.
MAX_CONNECTIONS = 64
#: Seconds for a request's head, from the moment the connection may send it.
HEAD_TIMEOUT = 10.0
#: Seconds for a request's body, from the end of its head (a JSON-RPC message is small).
BODY_TIMEOUT = 30.0
#: Seconds an idle keep-alive connection stays open (uvicorn's ``timeout_keep_alive``, its default).
KEEP_ALIVE_TIMEOUT = 5
#: Seconds a stop waits for open responses (an SSE stream never ends by itself) before cancelling them.
SHUTDOWN_TIMEOUT = 3
#: Seconds a refused connection's bytes are read and dropped before it is closed.
REFUSAL_LINGER = 1.0
#: Seconds an answer may wait for a client that stopped reading it (writing paused) before the connection
#: is closed; an event stream with nothing to send is not waiting, only one whose client does not read.
WRITE_STALL_TIMEOUT = 30.0

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deadlines:
    """Seconds a connection gets for a request's head, its body, and reading an answer (see the module's bounds)."""

    head: float = HEAD_TIMEOUT
    body: float = BODY_TIMEOUT
    write_stall: float = WRITE_STALL_TIMEOUT

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Deadlines:
        """``BUNDLEKIT_MCP_HEAD_DEADLINE``, ``BUNDLEKIT_MCP_BODY_DEADLINE``, ``BUNDLEKIT_MCP_WRITE_STALL_DEADLINE``:
        each a finite number of seconds above 0, else its default when unset; ``UsageError`` otherwise."""
        return cls(*(_positive_seconds(env, f"BUNDLEKIT_MCP_{part}_DEADLINE", default)
                     for part, default in (("HEAD", HEAD_TIMEOUT), ("BODY", BODY_TIMEOUT),
                                           ("WRITE_STALL", WRITE_STALL_TIMEOUT))))


def _positive_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    value = seconds_env(env, name, default)
    if value <= 0:
        raise UsageError(f"{name} must be more than 0 seconds")
    return value

_REFUSAL_BODY = b"the MCP server is serving its limit of connections; retry shortly\n"
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\n"
    b"connection: close\r\n"
    b"content-length: " + str(len(_REFUSAL_BODY)).encode("ascii") + b"\r\n\r\n" + _REFUSAL_BODY
)


class BoundedH11Protocol(StallBoundProtocol):
    """uvicorn's h11 connection with a connection limit and deadlines for a request's head and body
    (and, from ``StallBoundProtocol``, shared with the gateway, the write-stall bound).

    One timer per connection, set for the phase the peer is in (h11's
    ``their_state``): ``IDLE`` (a head is due) runs the ``head`` deadline,
    ``SEND_BODY`` runs the ``body`` one; any other state (the request is
    read and being answered, however long an event stream lasts) runs none.
    The phase is read again after every chunk received and every answer sent,
    and the timer is only set when it changes, so trickled bytes never move a
    deadline. The deadlines are the class's :attr:`deadlines` (the defaults;
    :func:`serve` runs a subclass holding the ones it is given).
    """

    #: A warning is logged once each time the server becomes full, not for every refusal.
    _full_warned = False
    deadlines: ClassVar[Deadlines] = Deadlines()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stall_timeout = self.deadlines.write_stall  # StallBoundProtocol's bound, as serve was given it
        self._refused = False
        self._phase: object = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        if len(self.connections) >= MAX_CONNECTIONS:
            self._refuse(transport)
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._follow_phase()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        self._follow_phase()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_phase()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        self.cancel_stall()
        if self._refused:
            return
        super().connection_lost(exc)
        if len(self.connections) < MAX_CONNECTIONS:
            BoundedH11Protocol._full_warned = False

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        """Answer 503 and close: the client learns why, and the limit of connections served holds."""
        self._refused = True
        self.transport = transport  # type: ignore[assignment]
        if not BoundedH11Protocol._full_warned:
            BoundedH11Protocol._full_warned = True
            logger.warning("refusing connections: already serving %d (each is answered 503)", MAX_CONNECTIONS)
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_REFUSAL)
        self._deadline = self.loop.call_later(REFUSAL_LINGER, transport.close)

    def _follow_phase(self) -> None:
        if self.transport is None or self.transport.is_closing():
            self._cancel_deadline()
            return
        state = self.conn.their_state
        phase = state if state in (h11.IDLE, h11.SEND_BODY) else None
        if phase is self._phase:
            return
        self._phase = phase
        self._cancel_deadline()
        if phase is h11.IDLE:
            self._deadline = self.loop.call_later(self.deadlines.head, self._too_slow, "head", self.deadlines.head)
        elif phase is h11.SEND_BODY:
            self._deadline = self.loop.call_later(self.deadlines.body, self._too_slow, "body", self.deadlines.body)

    def _too_slow(self, part: str, seconds: float) -> None:
        self._deadline = None
        logger.info("closed a connection whose request %s took over %g s", part, seconds)
        if not self.transport.is_closing():
            self.transport.close()

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def serve(app: ASGIApp, host: str, port: int, deadlines: Deadlines | None = None) -> None:
    """Serve ``app`` on ``host:port`` with :class:`BoundedH11Protocol` until a signal stops uvicorn, its connections
    held to ``deadlines`` (default: :class:`Deadlines`' own).

    uvicorn's startup failure (the address cannot be bound) is its ``SystemExit(3)``, as from the SDK's run.
    """

    class Bounded(BoundedH11Protocol):
        """:class:`BoundedH11Protocol` held to this server's deadlines."""

    Bounded.deadlines = deadlines or Deadlines()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=Bounded,
        lifespan="on",  # the SDK's session manager runs in the app's lifespan
        log_config=None,
        log_level="warning",
        access_log=False,
        limit_concurrency=MAX_CONNECTIONS + 1,
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        timeout_graceful_shutdown=SHUTDOWN_TIMEOUT,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
    uvicorn.Server(config).run()
